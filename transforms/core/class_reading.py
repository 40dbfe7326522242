"""One test class's facts, read from its own `ast.ClassDef` (`ast` only, like analysis.py).

`class_facts(node, ...)` reads what the class itself says: its test methods (parameters,
decorators, the devices they need: `device_needs.py`), its other methods, bases, decorators,
docstring, `hw_classification` label and its calls of `torch.<...>`.
Which classes are test classes and which calls instantiate them is read module-wide by
`analysis.py`, which passes those calls in; the values are the dataclasses of `facts.py`.

A test method is, as for the linter, a `def` or `async def` directly in the class body
whose name starts with `test`.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import replace

from transforms.core.device_needs import ClassDevices, Flags, dotted_name, read_class, unique
from transforms.core.facts import DeviceNeed, ExistingLabel, Instantiation, TestClassFacts, TestMethod
from transforms.core.members import ENUM_NAME, HW_ATTRIBUTE, MEMBERS

__all__ = [
    "FUNCTION_TYPES",
    "class_facts",
    "class_label",
    "defines_tests",
    "dotted_name",
    "first_line",
    "is_test_name",
    "last_line",
]

FUNCTION_TYPES = (ast.FunctionDef, ast.AsyncFunctionDef)


# --------------------------------------------------------------------------- names and lines


def _render_decorator(node: ast.expr) -> str:
    target = node.func if isinstance(node, ast.Call) else node
    name = dotted_name(target)
    return name if name is not None else ast.unparse(target)


def last_line(node: ast.stmt | ast.expr | ast.keyword) -> int:
    """The last line of a node (`ast` records it for every node it parses)."""
    return node.end_lineno if node.end_lineno is not None else node.lineno


def first_line(node: ast.stmt) -> int:
    """The first line of a statement, decorators included."""
    decorators = getattr(node, "decorator_list", None)
    if decorators:
        return min(node.lineno, *(d.lineno for d in decorators))
    return node.lineno


# --------------------------------------------------------------------------- test methods


def _params(args: ast.arguments) -> tuple[str, ...]:
    names = [a.arg for a in args.posonlyargs]
    names += [a.arg for a in args.args]
    if args.vararg is not None:
        names.append("*" + args.vararg.arg)
    names += [a.arg for a in args.kwonlyargs]
    if args.kwarg is not None:
        names.append("**" + args.kwarg.arg)
    return tuple(names)


def _test_method(fn: ast.FunctionDef | ast.AsyncFunctionDef, devices: ClassDevices) -> TestMethod:
    return TestMethod(
        name=fn.name,
        line=fn.lineno,
        params=_params(fn.args),
        is_async=isinstance(fn, ast.AsyncFunctionDef),
        decorators=tuple(_render_decorator(d) for d in fn.decorator_list),
        needs=devices.methods.get(fn.lineno, ()),
    )


def is_test_name(name: str) -> bool:
    return name.startswith("test")


def defines_tests(cls: ast.ClassDef) -> bool:
    return any(isinstance(s, FUNCTION_TYPES) and is_test_name(s.name) for s in cls.body)


# --------------------------------------------------------------------------- labels


def _label_value(value: ast.expr | None) -> tuple[str | None, str, str | None]:
    """(member, form, problem) for the value of a hw_classification assignment."""
    if value is None:
        return None, "", "annotation without a value"
    form = ast.unparse(value)
    if not isinstance(value, ast.Attribute):
        return None, form, f"not a {ENUM_NAME} member: {form}"
    member = value.attr
    owner = dotted_name(value.value)
    if owner != ENUM_NAME:
        shown = owner if owner is not None else ast.unparse(value.value)
        return (
            member,
            form,
            (
                f"aliased enum {shown!r}: only {ENUM_NAME}.<MEMBER> is accepted"
                if member in MEMBERS
                else f"not a {ENUM_NAME} member: {form}"
            ),
        )
    if member not in MEMBERS:
        return member, form, f"unknown member {member!r} (expected one of {', '.join(MEMBERS)})"
    return member, form, None


def _is_attribute(target: ast.expr) -> bool:
    return isinstance(target, ast.Name) and target.id == HW_ATTRIBUTE


def _label_of(stmt: ast.stmt) -> ExistingLabel | None:
    if isinstance(stmt, ast.Assign):
        if not any(_is_attribute(t) for t in stmt.targets):
            return None
        member, form, problem = _label_value(stmt.value)
        if len(stmt.targets) > 1:
            # `a = hw_classification = X.Y`: the linter skips such a statement.
            problem = "assigned together with other names (the linter reads only `hw_classification = ...`)"
    elif isinstance(stmt, ast.AnnAssign):
        if not (isinstance(stmt.target, ast.Name) and stmt.target.id == HW_ATTRIBUTE):
            return None
        member, form, problem = _label_value(stmt.value)
        if problem is None and not (isinstance(stmt.annotation, ast.Name) and stmt.annotation.id == ENUM_NAME):
            problem = f"annotation must be exactly {ENUM_NAME}, found {ast.unparse(stmt.annotation)}"
    else:
        return None
    return ExistingLabel(line=stmt.lineno, member=member, form=form, valid=problem is None, problem=problem)


def class_label(cls: ast.ClassDef) -> ExistingLabel | None:
    """The linter's reading: the first single-target assignment decides (a multi-target
    one is skipped by it, and reported here only when nothing else decides)."""
    labels = [lab for lab in map(_label_of, cls.body) if lab is not None]
    if not labels:
        return None
    multi = "assigned together"
    deciding = [lab for lab in labels if not (lab.problem or "").startswith(multi)]
    if not deciding:
        return labels[0]
    first = deciding[0]
    later = tuple(lab.line for lab in labels if lab.line > first.line)
    return replace(first, shadowed_by=later) if later else first


# --------------------------------------------------------------------------- the class


def class_facts(
    node: ast.ClassDef,
    instantiations: tuple[Instantiation, ...],
    parametrized: tuple[int, ...],
    lines: list[str] | None = None,
    hidden: tuple[Instantiation, ...] = (),
    module_needs: tuple[DeviceNeed, ...] = (),
    flags: Flags = {},  # noqa: B006 - read only
    inherited: Mapping[str, tuple[DeviceNeed, ...]] = {},  # noqa: B006 - read only
) -> TestClassFacts:
    """The facts of the test class `node`, given the calls that instantiate it (`hidden`: those the
    linter does not see), the lines of instantiate_parametrized_tests(node), the needs the
    module puts on it (`module_needs.module_guards`), the module's own device flags and what the
    methods it inherits from the module's classes need (`module_needs.inherited_needs`).
    `lines`, the module's source split at the line ends `ast` counts, lets a method without any
    device word skip the walk for its needs."""
    body = node.body
    docstring_end = None
    first = body[0]
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
        docstring_end = first.end_lineno
    devices = read_class(node, lines, flags, inherited)
    tests = []
    others = []
    for stmt in body:
        if isinstance(stmt, FUNCTION_TYPES):
            if is_test_name(stmt.name):
                tests.append(_test_method(stmt, devices))
            else:
                others.append(stmt.name)
    return TestClassFacts(
        name=node.name,
        line=node.lineno,
        end_line=node.end_lineno or node.lineno,
        decorators=tuple(_render_decorator(d) for d in node.decorator_list),
        bases=tuple(dotted_name(b) or ast.unparse(b) for b in node.bases),
        docstring_end_line=docstring_end,
        first_stmt_line=first_line(first),
        test_methods=tuple(tests),
        other_methods=tuple(others),
        instantiations=instantiations,
        parametrized=parametrized,
        label=class_label(node),
        nested_in=None,
        hidden_instantiations=hidden,
        needs=unique(module_needs + devices.own),
        device_calls=devices.calls,
    )
