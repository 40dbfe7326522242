"""Which generation a checkout's test linter is, read from its source with `ast` (never run,
never imported, never a checksum: small upstream edits still match).

`read_features(source)` collects what decides the linter's behaviour:
- the rule table (value -> rule names): functions decorated with `@_register(<values>)` named by
  the `[rule]` literal they (or the module functions they call) print, or `Rule` subclasses
  decorated so, named by their `id = RuleId.X` (the enum member's value);
- which files it judges: `INCLUDE_PATTERNS` / `EXCLUDE_PREFIXES` (none: by basename, anywhere);
- whether it prints `[duplicate_class]` and `[parse_error]` messages, whether it has `--regenerate`;
- the set of accelerator modules its availability check looks for, the forbidden `@only*` set.
`identify(source)` compares them with every known generation and names the nearest, with the
differences (empty: it is exactly that generation).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from transforms.core.members import MEMBERS, Member
from transforms.rules.generations import GENERATIONS
from transforms.rules.registry import Generation

__all__ = ["Identification", "LinterFeatures", "identify", "read_features"]

_RULE_LITERAL = re.compile(r"^\[(\w+)\]$")


@dataclass(frozen=True, kw_only=True)
class LinterFeatures:
    rules: Mapping[Member, frozenset[str]] = field(default_factory=dict)
    include: tuple[str, ...] | None = None
    exclude_prefixes: tuple[str, ...] = ()
    reports_duplicates: bool = False
    reports_unparseable: bool = False
    regenerates: bool = False
    accelerator_modules: frozenset[str] = frozenset()
    forbidden_decorators: frozenset[str] = frozenset()
    problem: str = ""  # why nothing could be read (not Python, ...)


@dataclass(frozen=True, kw_only=True)
class Identification:
    generation: str  # the nearest known generation (the one the tool applies)
    differences: tuple[str, ...] = ()  # how the linter differs from it; empty: exactly it

    @property
    def exact(self) -> bool:
        return not self.differences


# --------------------------------------------------------------------------- reading


def _strings(node: ast.AST | None) -> tuple[str, ...] | None:
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        items = [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
        return tuple(items) if len(items) == len(node.elts) else None
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("frozenset", "set"):
        return _strings(node.args[0]) if node.args else ()
    return None


def _members(node: ast.AST, assigned: Mapping[str, ast.AST]) -> list[Member]:
    """The classification values an argument of `_register(...)` names."""
    if isinstance(node, ast.Starred):
        node = node.value
    if isinstance(node, ast.Name) and node.id in assigned:
        node = assigned[node.id]
    if isinstance(node, (ast.Set, ast.Tuple, ast.List)):
        return [m for e in node.elts for m in _members(e, assigned)]
    if isinstance(node, ast.Attribute) and node.attr in MEMBERS:
        return [Member(node.attr)]
    return []


def _registered_values(node: ast.FunctionDef | ast.ClassDef, assigned: Mapping[str, ast.AST]) -> list[Member] | None:
    for dec in node.decorator_list:
        if isinstance(dec, ast.Call) and isinstance(dec.func, ast.Name) and dec.func.id == "_register":
            return [m for arg in dec.args for m in _members(arg, assigned)]
    return None


def _literal_rules(node: ast.AST) -> list[str]:
    return [
        m.group(1)
        for n in ast.walk(node)
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and (m := _RULE_LITERAL.match(n.value))
    ]


def _function_rule(fn: ast.FunctionDef, functions: Mapping[str, ast.FunctionDef], depth: int = 3) -> str | None:
    """The `[rule]` a registered function prints, itself or through a module function it calls."""
    found = _literal_rules(fn)
    if found:
        return found[0]
    if depth == 0:
        return None
    for n in ast.walk(fn):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in functions:
            inner = _function_rule(functions[n.func.id], functions, depth - 1)
            if inner:
                return inner
    return None


def _enum_values(tree: ast.Module, name: str) -> dict[str, str]:
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            return {
                t.id: s.value.value
                for s in node.body
                if isinstance(s, ast.Assign) and isinstance(s.value, ast.Constant) and isinstance(s.value.value, str)
                for t in s.targets
                if isinstance(t, ast.Name)
            }
    return {}


def _class_rule(node: ast.ClassDef, rule_ids: Mapping[str, str]) -> str | None:
    for s in node.body:
        if (
            isinstance(s, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "id" for t in s.targets)
            and isinstance(s.value, ast.Attribute)
        ):
            return rule_ids.get(s.value.attr, s.value.attr.lower())
    return None


def _rule_table(tree: ast.Module) -> dict[Member, frozenset[str]]:
    assigned: dict[str, ast.AST] = {}
    for s in tree.body:
        if isinstance(s, (ast.Assign, ast.AnnAssign)) and s.value is not None:
            for t in s.targets if isinstance(s, ast.Assign) else [s.target]:
                if isinstance(t, ast.Name):
                    assigned[t.id] = s.value
    functions = {s.name: s for s in tree.body if isinstance(s, ast.FunctionDef)}
    rule_ids = _enum_values(tree, "RuleId")
    table: dict[Member, set[str]] = {m: set() for m in MEMBERS}
    for s in tree.body:
        if not isinstance(s, (ast.FunctionDef, ast.ClassDef)):
            continue
        values = _registered_values(s, assigned)
        if values is None:
            continue
        name = _function_rule(s, functions) if isinstance(s, ast.FunctionDef) else _class_rule(s, rule_ids)
        for value in values:
            table[value].add(name or s.name)
    return {m: frozenset(names) for m, names in table.items()}


def _options(tree: ast.Module) -> set[str]:
    return {
        a.value
        for n in ast.walk(tree)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "add_argument"
        for a in n.args
        if isinstance(a, ast.Constant) and isinstance(a.value, str)
    }


def _string_sets(tree: ast.Module) -> Iterable[tuple[str, tuple[str, ...]]]:
    """(name of the enclosing function or target, strings) for every literal set of strings."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            for sub in ast.walk(node):
                if isinstance(sub, ast.Set) and (found := _strings(sub)):
                    yield node.name, found
        elif isinstance(node, ast.Assign) and (found := _strings(node.value)):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    yield t.id, found


def read_features(source: str) -> LinterFeatures:
    """What decides the behaviour of the linter whose source is `source`."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError) as e:
        return LinterFeatures(problem=f"not Python that parses ({e.__class__.__name__})")
    assigned = {
        t.id: s.value for s in tree.body if isinstance(s, ast.Assign) for t in s.targets if isinstance(t, ast.Name)
    }
    literals = set(_literal_rules(tree))
    accelerator: frozenset[str] = frozenset()
    forbidden: frozenset[str] = frozenset()
    for owner, strings in _string_sets(tree):
        if "onlyCPU" in strings:
            forbidden = frozenset(strings)
        elif "accelerator" in owner.lower() and "cuda" in strings:
            accelerator = frozenset(strings)
    return LinterFeatures(
        rules=_rule_table(tree),
        include=_strings(assigned.get("INCLUDE_PATTERNS")),
        exclude_prefixes=_strings(assigned.get("EXCLUDE_PREFIXES")) or (),
        reports_duplicates="duplicate_class" in literals,
        reports_unparseable="parse_error" in literals,
        regenerates="--regenerate" in _options(tree),
        accelerator_modules=accelerator,
        forbidden_decorators=forbidden,
    )


# --------------------------------------------------------------------------- comparing


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"


def differences(found: LinterFeatures, gen: Generation) -> list[str]:
    """How the linter read as `found` differs from `gen`, one sentence each."""
    out: list[str] = []
    if found.problem:
        return [found.problem]
    known = gen.rule_table()
    for value in MEMBERS:
        extra = sorted(found.rules.get(value, frozenset()) - known[value])
        missing = sorted(known[value] - found.rules.get(value, frozenset()))
        if extra:
            out.append(f"{value}: the linter also checks {', '.join(extra)}")
        if missing:
            out.append(f"{value}: the linter does not check {', '.join(missing)}")
    if found.include != gen.files.include or tuple(found.exclude_prefixes) != gen.files.exclude_prefixes:
        out.append(f"files judged: {found.include or 'by basename'} minus {found.exclude_prefixes or 'nothing'}")
    for what, theirs, ours in (
        ("reports duplicates", found.reports_duplicates, gen.reports_duplicates),
        ("reports an unparseable file", found.reports_unparseable, gen.reports_unparseable),
        ("has --regenerate", found.regenerates, gen.regenerates),
    ):
        if theirs != ours:
            out.append(f"{what}: {_yes(theirs)} (the {gen.name} rules: {_yes(ours)})")
    if found.accelerator_modules and found.accelerator_modules != gen.accelerator_modules:
        out.append(f"accelerator modules: {', '.join(sorted(found.accelerator_modules))}")
    if found.forbidden_decorators and found.forbidden_decorators != gen.forbidden_decorators:
        out.append(f"forbidden decorators: {', '.join(sorted(found.forbidden_decorators))}")
    return out


def identify(source: str) -> Identification:
    """The known generation nearest to the linter `source` (ties: the newer), with the differences."""
    features = read_features(source)
    best: tuple[tuple[int, int], str, list[str]] | None = None
    for index, (name, gen) in enumerate(GENERATIONS.items()):
        diff = differences(features, gen)
        key = (len(diff), -index)
        if best is None or key < best[0]:
            best = (key, name, diff)
    assert best is not None  # GENERATIONS is never empty
    return Identification(generation=best[1], differences=tuple(best[2]))
