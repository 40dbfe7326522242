"""What the module around a test class says about the devices its tests need (`ast` only).

- `module_flags`: the module's own device flags (`GPU_HOME = CUDA_HOME or ROCM_HOME`);
- `module_guards`: a module-level `if` around the class (`if HAS_GPU:`, `if torch.mtia.is_available()
  and has_triton():`, compound conditions read by `device_needs.requires`), a guarded `run_tests()`
  (`if HAS_GPU: run_tests()`), an `if not TEST_CUDA: TestCase = NoTest` that disables the module;
- `inherited_needs`: what the methods a class inherits from the module's other classes need
  (`device_needs.method_needs`): helpers its tests use on `self`, setUp-style methods that run
  before each of them.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from transforms.core.device_needs import Flags, dotted_name, method_needs, requires, short_text, unique
from transforms.core.facts import DeviceNeed, Need

__all__ = ["inherited_needs", "module_flags", "module_guards"]


def module_flags(tree: ast.Module) -> dict[str, Need]:
    """The module's own flags: module-level names bound to a condition that needs a device
    (`GPU_HOME = CUDA_HOME or ROCM_HOME`, `TEST_MULTIGPU = TEST_CUDA and ...`)."""
    found: dict[str, Need] = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            needs = requires(stmt.value, True, found)
            if len(needs) == 1:
                found[stmt.targets[0].id] = next(iter(needs))
            else:
                found.pop(stmt.targets[0].id, None)
    return found


def _is_main_block(stmt: ast.stmt) -> bool:
    test = stmt.test if isinstance(stmt, ast.If) else None
    return (
        isinstance(test, ast.Compare)
        and isinstance(test.left, ast.Name)
        and test.left.id == "__name__"
        and any(isinstance(c, ast.Constant) and c.value == "__main__" for c in test.comparators)
    )


def _runs_tests(stmts: list[ast.stmt]) -> bool:
    return any(
        isinstance(s, ast.Expr)
        and isinstance(s.value, ast.Call)
        and (dotted_name(s.value.func) or "").rsplit(".", 1)[-1] in ("run_tests", "main")
        for s in stmts
    )


def _guarded_runs(stmts: list[ast.stmt], held: dict[Need, str], flags: Flags) -> list[dict[Need, str]]:
    """For each run_tests() call under the `if`s of `stmts`: the needs of the conditions around it."""
    runs: list[dict[Need, str]] = []
    if _runs_tests(stmts):
        runs.append(held)
    for s in stmts:
        if isinstance(s, ast.If):
            for branch, truth in ((s.body, True), (s.orelse, False)):
                extra = {need: f"if {short_text(s.test)}" for need in requires(s.test, truth, flags)}
                runs += _guarded_runs(branch, {**held, **extra}, flags)
    return runs


def _disables_module(stmt: ast.If) -> bool:
    """`if not TEST_CUDA: TestCase = NoTest` (or sys.exit / raise SkipTest): nothing runs then."""
    for s in stmt.body:
        if isinstance(s, ast.Assign) and isinstance(s.value, ast.Name) and s.value.id == "NoTest":
            return True
        if isinstance(s, ast.Raise) or (
            isinstance(s, ast.Expr)
            and isinstance(s.value, ast.Call)
            and (dotted_name(s.value.func) or "") in ("sys.exit", "exit", "unittest.skip", "pytest.skip")
        ):
            return True
    return False


def module_guards(tree: ast.Module, flags: Flags) -> tuple[tuple[DeviceNeed, ...], dict[int, tuple[DeviceNeed, ...]]]:
    """(the needs the module puts on every class: its run or itself guarded; class line -> the
    needs of the module-level `if`s around that class)."""
    everywhere: list[DeviceNeed] = []
    around: dict[int, tuple[DeviceNeed, ...]] = {}
    for stmt in tree.body:
        if _is_main_block(stmt):
            assert isinstance(stmt, ast.If)
            runs = _guarded_runs(stmt.body, {}, flags)
            if runs:  # every run of the module needs what all of them share
                common = set(runs[0]).intersection(*runs[1:])
                everywhere += [DeviceNeed(n, stmt.lineno, f"{runs[0][n]}: run_tests()") for n in common]
        elif isinstance(stmt, ast.If) and _disables_module(stmt):
            everywhere += [
                DeviceNeed(n, stmt.lineno, f"if {short_text(stmt.test)}: the module's tests are disabled")
                for n in requires(stmt.test, False, flags)
            ]
    _classes_under_ifs(tree.body, (), around, flags)
    return unique(everywhere), around


def _classes_under_ifs(stmts: list[ast.stmt], held: tuple[DeviceNeed, ...], out: dict, flags: Flags) -> None:
    for s in stmts:
        if isinstance(s, ast.ClassDef) and held:
            out[s.lineno] = held
        elif isinstance(s, ast.If) and not _is_main_block(s):
            for branch, truth in ((s.body, True), (s.orelse, False)):
                extra = tuple(
                    DeviceNeed(n, s.lineno, f"under if {short_text(s.test)}") for n in requires(s.test, truth, flags)
                )
                _classes_under_ifs(branch, held + extra, out, flags)


def _module_classes(stmts: list[ast.stmt]) -> Iterator[ast.ClassDef]:
    """The classes defined at module level, under `if`, `try`, `with`, `for` and `while` too
    (not in functions or classes)."""
    for stmt in stmts:
        if isinstance(stmt, ast.ClassDef):
            yield stmt
        elif isinstance(stmt, (ast.If, ast.For, ast.While, ast.With, ast.Try)):
            yield from _module_classes(stmt.body + getattr(stmt, "orelse", []) + getattr(stmt, "finalbody", []))
            for handler in getattr(stmt, "handlers", []):
                yield from _module_classes(handler.body)


def _base_names(cls: ast.ClassDef) -> list[str]:
    return [b.id for b in cls.bases if isinstance(b, ast.Name)]


def inherited_needs(
    tree: ast.Module, lines: list[str] | None, flags: Flags
) -> dict[int, dict[str, tuple[DeviceNeed, ...]]]:
    """Class line -> the needs of the methods it inherits from the module's classes (by name, the
    nearest base first), for the classes that inherit any."""
    classes = {c.name: c for c in _module_classes(tree.body)}
    if not any(name in classes for c in classes.values() for name in _base_names(c)):
        return {}
    methods: dict[str, dict[str, tuple[DeviceNeed, ...]]] = {}
    out = {}
    for cls in classes.values():
        found: dict[str, tuple[DeviceNeed, ...]] = {}
        seen = {cls.name}
        queue = _base_names(cls)
        while queue:
            name = queue.pop(0)
            if name in seen or name not in classes:
                continue
            seen.add(name)
            if name not in methods:
                methods[name] = method_needs(classes[name], lines, flags)
            for method, needs in methods[name].items():
                found.setdefault(method, needs)
            queue += _base_names(classes[name])
        if found:
            out[cls.lineno] = found
    return out
