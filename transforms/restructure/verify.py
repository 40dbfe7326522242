"""Checks every restructuring step passes before its output is used (and so before
anything is written): the output parses; every original test function appears exactly
once with an identical body (after the step's own planned change, `Step.normalise`); the
other class members and the rest of the module are unchanged apart from the
instantiation calls; the classes a step claims to resolve satisfy exactly one value."""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

from transforms.core import analysis
from transforms.core.class_reading import FUNCTION_TYPES, is_test_name
from transforms.label.classify import Status, infer
from transforms.rules.generations import GENERATIONS, NEWEST
from transforms.rules.registry import Generation

DEVICE_TYPE = "torch.testing._internal.common_device_type"


class RestructureCheckError(Exception):
    """A restructured output failed verification; nothing is written."""


def _dump(node: ast.AST) -> str:
    return ast.dump(node, include_attributes=False)


def _class_nodes(tree: ast.Module, names: Iterable[str]) -> list:
    wanted = set(names)
    return [s for s in analysis.module_level(tree.body) if isinstance(s, ast.ClassDef) and s.name in wanted]


def _is_instantiation(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and analysis.instantiates_devices(stmt.value)


def _rest(stmts: list[ast.stmt], skip: set, imports: frozenset = frozenset()) -> list:
    """The module without the given classes and instantiation calls (bodies of if/try kept),
    and without the names in `imports` in from-imports of common_device_type."""
    out: list[Any] = []
    for stmt in stmts:
        if isinstance(stmt, ast.ImportFrom) and stmt.module == DEVICE_TYPE and imports:
            kept = [a for a in stmt.names if a.name not in imports]
            out.append(_dump(ast.ImportFrom(stmt.module, kept, stmt.level)))
            continue
        if isinstance(stmt, ast.ClassDef) and stmt.name in skip:
            continue
        if _is_instantiation(stmt):
            out.append("<instantiation>")
            continue
        if isinstance(stmt, (ast.If, ast.With, ast.Try, *analysis.TRY_STAR_TYPES)):
            out.append(
                (
                    type(stmt).__name__,
                    _dump_shallow(stmt),
                    _rest(getattr(stmt, "body", []), skip, imports),
                    _rest(getattr(stmt, "orelse", []), skip, imports),
                    _rest(getattr(stmt, "finalbody", []), skip, imports),
                    [_rest(h.body, skip, imports) for h in getattr(stmt, "handlers", [])],
                )
            )
            continue
        out.append(_dump(stmt))
    return [x for x in out if x != "<instantiation>"]


def _dump_shallow(stmt: ast.stmt) -> str:
    test = getattr(stmt, "test", None)
    items = getattr(stmt, "items", None)
    return _dump(test) if test is not None else ("".join(_dump(i) for i in items) if items else "")


def check_step(
    old_text: str,
    new_text: str,
    touched: Iterable[str],
    created: Iterable[str],
    resolved: Iterable[str] = (),
    normalise: Callable[[ast.AST], ast.AST] | None = None,
    imports: Iterable[str] = (),
    gen: Generation = GENERATIONS[NEWEST],
) -> None:
    try:
        old_tree, new_tree = ast.parse(old_text), ast.parse(new_text)
    except SyntaxError as e:
        raise RestructureCheckError(f"restructured output does not parse: {e}") from None
    touched, created = set(touched), set(created)
    old_classes = _class_nodes(old_tree, touched)
    new_classes = _class_nodes(new_tree, touched | created)
    norm: Callable[[ast.AST], ast.AST] = normalise or (lambda fn: fn)

    def tests(classes: list[ast.ClassDef], fix: Callable[[ast.AST], ast.AST]) -> Counter[str]:
        return Counter(
            _dump(fix(s)) for c in classes for s in c.body if isinstance(s, FUNCTION_TYPES) and is_test_name(s.name)
        )

    before, after = tests(old_classes, norm), tests(new_classes, lambda fn: fn)
    if before != after:
        lost = sorted(_name(d) for d in (before - after))
        extra = sorted(_name(d) for d in (after - before))
        raise RestructureCheckError(
            f"test inventory changed: missing or altered {lost or '-'}, unexpected {extra or '-'}"
        )

    def members(classes: list[ast.ClassDef]) -> Counter[str]:
        return Counter(
            _dump(s) for c in classes for s in c.body if not (isinstance(s, FUNCTION_TYPES) and is_test_name(s.name))
        )

    decorators = {_dump(ast.Module(c.decorator_list, [])) for c in old_classes}
    for c in new_classes:
        has_tests = any(isinstance(s, FUNCTION_TYPES) and is_test_name(s.name) for s in c.body)
        if (
            has_tests
            and c.name in created | touched
            and len(old_classes) == 1
            and _dump(ast.Module(c.decorator_list, [])) not in decorators
        ):
            raise RestructureCheckError(f"{c.name} lost the class decorators of the original")
    if members(old_classes) != members(new_classes):
        raise RestructureCheckError("class members other than tests changed")
    names = frozenset(imports)
    if _rest(old_tree.body, touched, names) != _rest(new_tree.body, touched | created, names):
        raise RestructureCheckError("the module changed outside the restructured classes and calls")
    facts = analysis.analyse(new_tree, new_text)
    for name in resolved:
        cls = facts.get(name)
        if cls is None:
            continue  # a test-less base
        decision = infer(cls, gen)
        if decision.status != Status.LABEL:
            raise RestructureCheckError(f"{name} still satisfies no classification: {decision.message}")


def _name(dump: str) -> str:
    start = dump.find("name='")
    return dump[start + 6 : dump.find("'", start + 6)] if start >= 0 else "?"
