"""Facts about the test classes of one module, read with `ast` only: the module-wide scan.

This module is pure and cheap: it never imports LibCST (about 15x slower to
parse) and never edits anything.  `analyse(tree)` turns a parsed module into a
`ModuleFacts` value (the plain frozen dataclasses of `facts.py`), which
`label/classify.py` checks against the linter's rules and the CLI can dump as JSON
(`dataclasses.asdict`).  This module decides which classes and calls the linter
sees and reads the instantiation calls; each test class's own body is read by
`class_reading.py`.

What counts as a test class follows PyTorch's test linter exactly: a class in a
scanned statement (the module body and, at any depth, the bodies of `if`/`else`,
`try` (body, else, finally, then the `except` handlers, in that order), `with`,
`for`/`else` and `while`/`else`) whose own body defines a method (`def` or
`async def`) whose name starts with `test`.  A class defined twice counts once:
the last definition is the one the linter checks.  Classes without such
methods, classes nested in functions or classes, classes under `try/except*`
or `match` (the linter does not look there) and earlier definitions of a
redefined class are not checked; they are reported in `ModuleFacts.ignored`.

Instantiation options (`only_for`, `except_for`, `allow_mps`, `allow_xpu`) are
read the linter's way, as keyword arguments only; what the linter cannot see
(the same options passed positionally or through `*args`/`**kwargs`, a call
under `try/except*`) is recorded separately so the rules can refuse a label
the linter would check against the wrong facts.
"""

from __future__ import annotations

import ast
import bisect
import re
from collections.abc import Iterable, Iterator

from transforms.core.class_reading import FUNCTION_TYPES, class_facts, class_label, defines_tests, dotted_name
from transforms.core.facts import (
    UNKNOWN,
    CallForm,
    DeviceList,
    Flag,
    IgnoredClass,
    IgnoredReason,
    Instantiation,
    ModuleFacts,
    Option,
)
from transforms.core.module_needs import inherited_needs, module_flags, module_guards

__all__ = [
    "INSTANTIATE_DEVICE",
    "INSTANTIATE_PARAMETRIZED",
    "POSITIONAL_SLOTS",
    "analyse",
    "call_kind",
    "device_list",
    "instantiates_devices",
    "labels_of_test_classes",
    "may_have_test_class",
    "module_level",
]

INSTANTIATE_DEVICE = "instantiate_device_type_tests"
INSTANTIATE_PARAMETRIZED = "instantiate_parametrized_tests"

# Positional slots of instantiate_device_type_tests(generic_test_class, scope,
# except_for=None, only_for=None, include_lazy=False, allow_mps=False,
# allow_xpu=False).  The linter reads these options as keywords only.
POSITIONAL_SLOTS = {2: Option.EXCEPT_FOR, 3: Option.ONLY_FOR, 5: Option.ALLOW_MPS, 6: Option.ALLOW_XPU}

# try/except* (Python 3.11+; this tool runs on 3.10 too): every module tests for it by this name.
TRY_STAR_TYPES: tuple[type[ast.stmt], ...] = (ast.TryStar,) if hasattr(ast, "TryStar") else ()
# Blocks the linter does not enter although module-level code runs there.
_UNSCANNED_TYPES: tuple[type, ...] = (ast.Match, *TRY_STAR_TYPES)

_LINE_END = re.compile(r"\r\n?|\n")  # the line ends `ast` counts
# The keyword `class` (not `hw_classification`, `subclass`): whitespace or a line continuation
# separates it from the class's name.
_CLASS_KEYWORD = re.compile(r"(?<!\w)class[ \t\f\\]")


# --------------------------------------------------------------------------- triage

_DEF_TEST = re.compile(r"\bdef\s+test")


def may_have_test_class(text: str) -> bool:
    """Cheap substring pre-check: False means "certainly no test method here".

    A test method is any name starting with `test` (`testAdd` counts).
    `async def testx` contains `def test` too; the regex fallback catches the
    rare `def  test_x` spelled with extra blanks or a tab.
    """
    if "def test" in text:
        return True
    return "test" in text and _DEF_TEST.search(text) is not None


# --------------------------------------------------------------------------- the linter's scan


def module_level(stmts: Iterable[ast.stmt]) -> Iterator[ast.stmt]:
    """The statements the linter scans, in its order: module level, and at any depth
    the bodies of if/else, try (body, else, finally, then handlers), with, for/else
    and while/else."""
    for stmt in stmts:
        yield stmt
        if isinstance(stmt, (ast.If, ast.For, ast.While)):
            yield from module_level(stmt.body)
            yield from module_level(stmt.orelse)
        elif isinstance(stmt, ast.With):
            yield from module_level(stmt.body)
        elif isinstance(stmt, ast.Try):
            yield from module_level(stmt.body)
            yield from module_level(stmt.orelse)
            yield from module_level(stmt.finalbody)
            for handler in stmt.handlers:
                yield from module_level(handler.body)


# --------------------------------------------------------------------------- calls


def device_list(node: ast.expr) -> DeviceList:
    if isinstance(node, ast.Constant):
        if node.value is None:
            return None
        if isinstance(node.value, str):
            return (node.value,)
        return UNKNOWN
    if isinstance(node, (ast.List, ast.Tuple)):
        items = []
        for elt in node.elts:
            if not (isinstance(elt, ast.Constant) and isinstance(elt.value, str)):
                return UNKNOWN
            items.append(elt.value)
        return tuple(items)
    return UNKNOWN


def _flag(node: ast.expr) -> Flag:
    """True/False for a bool literal, else UNKNOWN (a literal None too, as the linter reads it)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, bool):
        return node.value
    return UNKNOWN


def call_kind(call: ast.Call) -> tuple[str, CallForm] | None:
    """(function name, form) of a call by name or by attribute (`f(...)`, `mod.f(...)`), else None."""
    func = call.func
    if isinstance(func, ast.Name):
        return func.id, CallForm.NAME
    if isinstance(func, ast.Attribute):
        return func.attr, CallForm.ATTRIBUTE
    return None


def instantiates_devices(call: ast.Call) -> bool:
    """Is `call` an instantiate_device_type_tests(...) call, as the linter spots them?"""
    kind = call_kind(call)
    return kind is not None and kind[0] == INSTANTIATE_DEVICE


def _option(name: str, node: ast.expr) -> DeviceList | Flag:
    return device_list(node) if name.endswith("_for") else _flag(node)


def _instantiation(call: ast.Call, form: CallForm) -> Instantiation | None:
    if not call.args or not isinstance(call.args[0], ast.Name):
        return None
    lists: dict[str, DeviceList] = {"except_for": None, "only_for": None}
    flags: dict[str, Flag] = {"allow_mps": None, "allow_xpu": None}
    positional = []
    given = []
    star = False
    for index, arg in enumerate(call.args):
        if isinstance(arg, ast.Starred):
            star = True
        elif index in POSITIONAL_SLOTS:
            slot = POSITIONAL_SLOTS[index]
            positional.append(slot)
            given.append((slot, _option(slot, arg)))
    for kw in call.keywords:
        if kw.arg is None:
            star = True
        elif kw.arg in lists:
            lists[kw.arg] = device_list(kw.value)
        elif kw.arg in flags:
            flags[kw.arg] = _flag(kw.value)
    return Instantiation(
        line=call.lineno,
        target=call.args[0].id,
        only_for=lists["only_for"],
        except_for=lists["except_for"],
        allow_mps=flags["allow_mps"],
        allow_xpu=flags["allow_xpu"],
        form=form,
        text=ast.unparse(call),
        positional=tuple(positional),
        star=star,
        positional_values=tuple(given),
    )


# --------------------------------------------------------------------------- analysis


def _child_statements(stmt: ast.AST) -> Iterator[ast.stmt]:
    """Statements directly inside `stmt` (bodies, branches, handlers, match cases)."""
    for field in ("body", "orelse", "finalbody"):
        block = getattr(stmt, field, None)
        if isinstance(block, list):
            yield from block
    for handler in getattr(stmt, "handlers", ()):
        yield from handler.body
    for case in getattr(stmt, "cases", ()):
        yield from case.body


# The statements that can hold statements; the rest (most of a test body) are not looked into.
_COMPOUND_TYPES: tuple[type[ast.stmt], ...] = (
    ast.If,
    ast.For,
    ast.AsyncFor,
    ast.While,
    ast.With,
    ast.AsyncWith,
    ast.Try,
    ast.Match,
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.ClassDef,
    *TRY_STAR_TYPES,
)


def statements_below(node: ast.AST) -> Iterator[ast.stmt]:
    """Every statement at any depth below `node`, in no particular order. Only statements are
    visited (a class or a function can only be a statement): several times cheaper than `ast.walk`."""
    stack = list(_child_statements(node))
    while stack:
        stmt = stack.pop()
        yield stmt
        if isinstance(stmt, _COMPOUND_TYPES):
            stack.extend(_child_statements(stmt))


def _class_keyword_lines(lines: list[str]) -> list[int]:
    """The numbers of the lines that may start a class statement (they spell the keyword), in order."""
    return [n for n, line in enumerate(lines, 1) if "class" in line and _CLASS_KEYWORD.search(line)]


def _nested_test_classes(node: ast.stmt, keyword_lines: list[int] | None) -> Iterator[ast.ClassDef]:
    """Test-defining ClassDefs anywhere below `node` (for the `ignored` report). `keyword_lines`:
    _class_keyword_lines of the module's source, if known. A class statement below `node` starts on
    a line after its header (a compound statement never follows a colon on its line) and spells the
    keyword there (a keyword cannot be split across lines): a body whose lines never do is not walked."""
    if keyword_lines is not None:
        after_header = bisect.bisect_right(keyword_lines, node.lineno)
        if after_header == len(keyword_lines) or keyword_lines[after_header] > (node.end_lineno or node.lineno):
            return
    for stmt in statements_below(node):
        if isinstance(stmt, ast.ClassDef) and defines_tests(stmt):
            yield stmt


def _hidden_instantiations(block: ast.stmt) -> Iterator[Instantiation]:
    """instantiate_device_type_tests calls at any depth of a block the linter skips
    (function and class bodies excluded: those do not run at import)."""
    stack = list(_child_statements(block))
    while stack:
        stmt = stack.pop()
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            kind = call_kind(stmt.value)
            if kind is not None and kind[0] == INSTANTIATE_DEVICE:
                inst = _instantiation(stmt.value, kind[1])
                if inst is not None:
                    yield inst
        elif not isinstance(stmt, (ast.ClassDef,) + FUNCTION_TYPES):
            stack.extend(_child_statements(stmt))


def _last_definitions(class_nodes: list[ast.ClassDef]) -> list[ast.ClassDef]:
    """A class defined twice: the linter checks the last definition only."""
    last = {node.name: node for node in class_nodes}
    return [node for node in class_nodes if last[node.name] is node]


def labels_of_test_classes(tree: ast.Module) -> list[tuple[str, str | None]]:
    """The name and label member of each test class `analyse` reads, in its order, without the
    rest of the facts (a tenth of their cost): what a label edit is checked against."""
    nodes = [s for s in module_level(tree.body) if isinstance(s, ast.ClassDef) and defines_tests(s)]
    return [(node.name, label.member if (label := class_label(node)) else None) for node in _last_definitions(nodes)]


def _duplicates(pairs: Iterable[tuple[str, int]]) -> tuple[tuple[str, tuple[int, ...]], ...]:
    lines: dict = {}
    for name, line in pairs:
        lines.setdefault(name, []).append(line)
    return tuple((name, tuple(ls)) for name, ls in lines.items() if len(ls) > 1)


def analyse(tree: ast.Module, text: str | None = None) -> ModuleFacts:
    """Read the test classes, instantiations and labels of one parsed module.

    `text`, the source `tree` was parsed from, is optional: when given, a test
    method without any device word in its lines skips the walk for its device needs.
    """
    lines = _LINE_END.split(text) if text is not None else None
    keyword_lines = _class_keyword_lines(lines) if lines is not None else None
    class_nodes = []
    helper_nodes = []
    nested: list[tuple[ast.ClassDef, IgnoredReason]] = []
    instantiations = []
    hidden: list = []
    parametrized: dict = {}

    for stmt in module_level(tree.body):
        if isinstance(stmt, ast.ClassDef):
            if defines_tests(stmt):
                class_nodes.append(stmt)
            else:
                helper_nodes.append(stmt)
            nested.extend((c, IgnoredReason.NESTED) for c in _nested_test_classes(stmt, keyword_lines))
        elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            kind = call_kind(stmt.value)
            name = kind[0] if kind is not None else None
            if kind is not None and name == INSTANTIATE_DEVICE:
                inst = _instantiation(stmt.value, kind[1])
                if inst is not None:
                    instantiations.append(inst)
            elif name == INSTANTIATE_PARAMETRIZED:
                args = stmt.value.args
                if args and isinstance(args[0], ast.Name):
                    parametrized.setdefault(args[0].id, []).append(stmt.lineno)
        elif isinstance(stmt, FUNCTION_TYPES):
            nested.extend((c, IgnoredReason.NESTED) for c in _nested_test_classes(stmt, keyword_lines))
        elif isinstance(stmt, _UNSCANNED_TYPES):
            nested.extend((c, IgnoredReason.UNSCANNED) for c in _nested_test_classes(stmt, keyword_lines))
            hidden.extend(_hidden_instantiations(stmt))

    kept = _last_definitions(class_nodes)
    redefined = [node for node in class_nodes if node not in kept]

    by_target: dict = {}
    for inst in instantiations:
        by_target.setdefault(inst.target, []).append(inst)
    hidden_by_target: dict = {}
    for inst in hidden:
        hidden_by_target.setdefault(inst.target, []).append(inst)

    flags = module_flags(tree)
    everywhere, around = module_guards(tree, flags)
    inherited = inherited_needs(tree, lines, flags)
    classes = tuple(
        class_facts(
            node,
            tuple(by_target.get(node.name, ())),
            tuple(parametrized.get(node.name, ())),
            lines,
            tuple(hidden_by_target.get(node.name, ())),
            everywhere + around.get(node.lineno, ()),
            flags,
            inherited.get(node.lineno, {}),
        )
        for node in kept
    )

    test_names = {c.name for c in classes}
    base_names = {b.rsplit(".", 1)[-1] for c in classes for b in c.bases}
    ignored = [
        IgnoredClass(node.name, node.lineno, IgnoredReason.HELPER)
        for node in helper_nodes
        if _looks_like_test_helper(node, base_names, test_names)
    ]
    ignored += [IgnoredClass(node.name, node.lineno, reason) for node, reason in nested]
    ignored += [IgnoredClass(node.name, node.lineno, IgnoredReason.REDEFINED) for node in redefined]
    ignored.sort(key=lambda c: c.line)

    return ModuleFacts(
        classes=classes,
        ignored=tuple(ignored),
        instantiations=tuple(instantiations),
        duplicate_classes=_duplicates((c.name, c.lineno) for c in class_nodes),
        duplicate_instantiations=_duplicates((i.target, i.line) for i in instantiations),
    )


def _looks_like_test_helper(node: ast.ClassDef, base_names: set, test_names: set) -> bool:
    """A test-less class worth explaining: a base of a test class, or test-like by name/base.

    Plain helpers (`class MyModule(nn.Module)`) are not listed: they would only be noise.
    """
    name = node.name
    if name in base_names or name.startswith("Test") or name.endswith(("Test", "Tests")):
        return True
    for base in node.bases:
        base_name = dotted_name(base)
        if base_name is None:
            continue
        if base_name.endswith("TestCase") or base_name.rsplit(".", 1)[-1] in test_names:
            return True
    return False
