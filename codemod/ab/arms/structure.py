"""What the diff between the arms does to a test file's structure, read from both versions
with `ast`: the options of each `instantiate_device_type_tests(Cls, ...)` (and the devices
they make the class for: a widened set is something the run may not exercise), the device
sets B narrows (lost coverage on machines with those devices, which this one may lack), the
tests that moved to another class, and the imports added or extended (the whole statement).

Part of "What changed" (`changes.py` reads the git diff; this module, its two sides).  The
device set of an instantiation and of each test (its guards) is `transforms.diagnosis`'s
(the one source of the default device list and of what a guard keeps).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator

from codemod.ab.result.diff import DeviceNarrowing, FileChange, InstantiationChange, NarrowedBy, TestMove
from transforms.core.analysis import analyse
from transforms.core.facts import UNKNOWN, TestClassFacts
from transforms.core.members import Member
from transforms.diagnosis.devices import ACCELERATORS, GENERIC, OTHER, UNREAD, instantiated_devices, ordered
from transforms.diagnosis.diagnose import ClassDiagnosis, diagnose

_CALL = "instantiate_device_type_tests"
# instantiate_device_type_tests(generic_test_class, scope, except_for, only_for, include_lazy, allow_mps, allow_xpu)
_POSITIONAL = ("scope", "except_for", "only_for", "include_lazy", "allow_mps", "allow_xpu")


def _parse(source: str) -> ast.Module | None:
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError):
        return None


def _module_statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Module-level statements, also inside if / try / with / for blocks (not functions, classes)."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, (ast.If, ast.For, ast.While, ast.With, ast.Try)):
            for block in ("body", "orelse", "finalbody"):
                yield from _module_statements(getattr(stmt, block, []))
            for handler in getattr(stmt, "handlers", []):
                yield from _module_statements(handler.body)


# ---------------------------------------------------------------------------
# instantiations


def _instantiations(tree: ast.Module) -> dict[str, dict[str, str]]:
    """Class -> its options as written (`name` -> source text), the last call winning."""
    out: dict[str, dict[str, str]] = {}
    for stmt in _module_statements(tree.body):
        call = stmt.value if isinstance(stmt, ast.Expr) else None
        if not isinstance(call, ast.Call) or not call.args or not isinstance(call.args[0], ast.Name):
            continue
        func = call.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        if name != _CALL:
            continue
        options = {_POSITIONAL[i]: ast.unparse(a) for i, a in enumerate(call.args[1:]) if i < len(_POSITIONAL)}
        options.update({k.arg: ast.unparse(k.value) for k in call.keywords if k.arg})
        options.pop("scope", None)
        out[call.args[0].id] = options
    return out


def _value(text: str | None) -> object:
    if text is None:
        return None
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return UNKNOWN
    if isinstance(value, str):
        return (value,)
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return tuple(value)
    return value if value is None or isinstance(value, bool) else UNKNOWN


def devices(options: dict[str, str] | None) -> list[str]:
    """The devices the options make the class for ([] when not instantiated or unknown)."""
    if options is None:
        return []
    found = instantiated_devices(
        *(_value(options.get(k)) for k in ("only_for", "except_for", "allow_mps", "allow_xpu"))
    )
    return list(found or [])


def _shown(options: dict[str, str] | None) -> str:
    if options is None:
        return ""
    return ", ".join(f"{k}={v}" for k, v in options.items()) or "(no options)"


def instantiation_changes(old: ast.Module | None, new: ast.Module | None) -> list[InstantiationChange]:
    a = _instantiations(old) if old is not None else {}
    b = _instantiations(new) if new is not None else {}
    out = []
    for cls in sorted(set(a) | set(b)):
        before, after = a.get(cls), b.get(cls)
        if before == after:
            continue
        was, now = devices(before), devices(after)
        out.append(
            InstantiationChange(
                cls=cls,
                before=_shown(before),
                after=_shown(after),
                removed=[f"{k}={v}" for k, v in (before or {}).items() if (after or {}).get(k) != v],
                added=[f"{k}={v}" for k, v in (after or {}).items() if (before or {}).get(k) != v],
                devices_before=was,
                devices_after=now,
                widened=[d for d in now if d not in was] if before is not None and was else [],
            )
        )
    return out


# ---------------------------------------------------------------------------
# device sets B narrows

# The devices the linter's rules tie a label to (GENERIC runs once, on no device: never narrowed).
LABEL_DEVICES: dict[str, tuple[str, ...]] = {
    Member.ACCELERATOR: (*ACCELERATORS, OTHER),
    Member.CPU: ("cpu",),
    Member.CUDA: ("cuda",),
    Member.MPS: ("mps",),
    Member.XPU: ("xpu",),
}


def _known(devices: tuple[str, ...]) -> bool:
    """A device set read from the source: instantiated, every option literal."""
    return bool(devices) and UNREAD not in devices and devices != (GENERIC,)


def _lost(before: tuple[str, ...], after: tuple[str, ...], told: Iterable[str] = ()) -> list[str]:
    """The devices of `before` that `after` lacks, but those already `told`."""
    return list(ordered(d for d in before if d not in after and d not in told))


def narrowings(old: ast.Module, new: ast.Module) -> list[DeviceNarrowing]:
    """Every class (and test) B runs on fewer devices than A: its instantiate options, a
    device guard on a test, or its label moved to one the linter's rules tie to fewer devices."""
    facts_a, facts_b = analyse(old), analyse(new)
    diag_a = {d.name: d for d in diagnose(old, facts=facts_a)}
    diag_b = {d.name: d for d in diagnose(new, facts=facts_b)}
    out: list[DeviceNarrowing] = []
    for name in sorted(set(diag_a) & set(diag_b)):
        out += _class_narrowings(diag_a[name], diag_b[name])
    for cls_a in facts_a.classes:
        cls_b = facts_b.get(cls_a.name)
        if cls_b is not None:
            out += _label_narrowing(cls_a, cls_b)
    return out


def _class_narrowings(a: ClassDiagnosis, b: ClassDiagnosis) -> list[DeviceNarrowing]:
    out = []
    lost: list[str] = []
    if _known(a.devices) and _known(b.devices):
        lost = _lost(a.devices, b.devices)
        if lost:
            before, after = a.instantiation or "", b.instantiation or ""
            out.append(
                DeviceNarrowing(cls=a.name, by=NarrowedBy.INSTANTIATION, devices=lost, before=before, after=after)
            )
    tests_b = {t.name: t for t in b.tests}
    for ta in a.tests:
        tb = tests_b.get(ta.name)
        if tb is None or not (_known(ta.devices) and _known(tb.devices)):
            continue
        gone = _lost(ta.devices, tb.devices, lost)
        if gone:
            guards = (", ".join(f"@{g}" for g in t.guards) or "no device guard" for t in (ta, tb))
            out.append(
                DeviceNarrowing(
                    cls=a.name,
                    test=ta.name,
                    by=NarrowedBy.DECORATOR,
                    devices=gone,
                    before=next(guards),
                    after=next(guards),
                )
            )
    return out


def _label_narrowing(a: TestClassFacts, b: TestClassFacts) -> list[DeviceNarrowing]:
    was = a.label.member if a.label is not None and a.label.valid else None
    now = b.label.member if b.label is not None and b.label.valid else None
    if was not in LABEL_DEVICES or now not in LABEL_DEVICES or was == now:
        return []
    lost = _lost(LABEL_DEVICES[str(was)], LABEL_DEVICES[str(now)])
    if not lost:
        return []
    return [DeviceNarrowing(cls=a.name, by=NarrowedBy.LABEL, devices=lost, before=str(was), after=str(now))]


# ---------------------------------------------------------------------------
# tests that moved to another class


def _tests_by_class(tree: ast.Module) -> dict[str, set[str]]:
    """Test function name -> the module-level classes that define it."""
    out: dict[str, set[str]] = {}
    for stmt in _module_statements(tree.body):
        if isinstance(stmt, ast.ClassDef):
            for m in stmt.body:
                if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef)) and m.name.startswith("test"):
                    out.setdefault(m.name, set()).add(stmt.name)
    return out


def moved_tests(old: ast.Module | None, new: ast.Module | None) -> list[TestMove]:
    """Tests defined in exactly one class in each arm, a different one in B."""
    if old is None or new is None:
        return []
    a, b = _tests_by_class(old), _tests_by_class(new)
    out = []
    for test in sorted(set(a) & set(b)):
        if len(a[test]) == 1 and len(b[test]) == 1 and a[test] != b[test]:
            out.append(TestMove(test=test, old_class=next(iter(a[test])), new_class=next(iter(b[test]))))
    return out


# ---------------------------------------------------------------------------
# imports


def _imports(tree: ast.Module) -> dict[tuple[str, int, str], ast.stmt]:
    """(module, level, names-or-"") -> the statement: `from` imports keyed by their module,
    plain imports by their whole text."""
    out: dict[tuple[str, int, str], ast.stmt] = {}
    for stmt in _module_statements(tree.body):
        if isinstance(stmt, ast.ImportFrom):
            out[(stmt.module or "", stmt.level, "")] = stmt
        elif isinstance(stmt, ast.Import):
            out[("", 0, ast.unparse(stmt))] = stmt
    return out


def _names(stmt: ast.stmt) -> list[str]:
    return [ast.unparse(alias) for alias in getattr(stmt, "names", [])]


def import_changes(old: ast.Module | None, new: ast.Module | None) -> tuple[list[str], list[str]]:
    """(statements added, statements extended), each whole, as B writes it (one line)."""
    if new is None:
        return [], []
    a = _imports(old) if old is not None else {}
    added, extended = [], []
    for key, stmt in _imports(new).items():
        before = a.get(key)
        if before is None:
            added.append(ast.unparse(stmt))
        elif set(_names(stmt)) - set(_names(before)):
            extended.append(ast.unparse(stmt))
    return added, extended


def read_structure(fc: FileChange, old_source: str, new_source: str) -> bool:
    """Fill `fc` with the instantiation changes, moves and imports; False when a side does
    not parse (the caller falls back to the lines of the diff)."""
    old = _parse(old_source) if old_source else ast.Module(body=[], type_ignores=[])
    new = _parse(new_source)
    if old is None or new is None:
        return False
    fc.instantiations = instantiation_changes(old, new)
    fc.narrowed = narrowings(old, new)
    fc.moves = moved_tests(old, new)
    fc.imports, fc.imports_extended = import_changes(old, new)
    return True
