"""Facts about the test classes of one module, read with `ast` only.

This module is pure and cheap: it never imports LibCST (about 15x slower to
parse) and never edits anything.  `analyse(tree)` turns a parsed module into a
`ModuleFacts` value made of plain frozen dataclasses, which `classify.py` checks
against the linter's rules and the CLI can dump as JSON (`dataclasses.asdict`).

What counts as a test class follows PyTorch's test linter: a class defined at
module level (also under module-level `if` / `with` / `try` blocks, in any of
their branches, recursively) whose own body defines `test_*` methods (`def` or
`async def`).  Classes without such methods, and classes nested in functions
or other classes, are not checked; they are reported in `ModuleFacts.ignored`
so that a user can see why nothing happened to them.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Iterable, Iterator, List, Optional, Tuple, Union

__all__ = [
    "COMMON_UTILS",
    "DEVICE_PARAMS",
    "ENUM_NAME",
    "HW_ATTRIBUTE",
    "MEMBERS",
    "UNKNOWN",
    "ExistingLabel",
    "IgnoredClass",
    "Instantiation",
    "ModuleFacts",
    "TestClassFacts",
    "TestMethod",
    "analyse",
    "dotted_name",
    "may_have_test_class",
]

# The enum, its home and its members (values are the lowercase names).
ENUM_NAME = "HardwareClassification"
COMMON_UTILS = "torch.testing._internal.common_utils"
MEMBERS = ("GENERIC", "ACCELERATOR", "CPU", "CUDA", "MPS", "XPU")
HW_ATTRIBUTE = "hw_classification"

# Parameter names through which instantiate_device_type_tests passes the device.
DEVICE_PARAMS = ("device", "devices")

# Marker for an argument whose value cannot be read statically.
UNKNOWN = "unknown"

INSTANTIATE_DEVICE = "instantiate_device_type_tests"
INSTANTIATE_PARAMETRIZED = "instantiate_parametrized_tests"

# Reasons given for classes that are not test classes.
REASON_HELPER = "no test methods (helper base)"
REASON_NESTED = "nested in function/class"
REASON_LOOP = "defined inside a module-level for/while loop"

# Positional slots of instantiate_device_type_tests(generic_test_class, scope,
# except_for=None, only_for=None, include_lazy=False, allow_mps=False,
# allow_xpu=False); keywords are by far the common spelling.
_POSITIONAL_SLOTS = {2: "except_for", 3: "only_for", 5: "allow_mps", 6: "allow_xpu"}

# Device strings worth flagging when a test hard-codes them ("cpu" is left out:
# device-agnostic tests legitimately move results to the CPU).
_HARDCODED_DEVICE = re.compile(r"^(cuda|xpu|mps)(:\d+)?$")
_DEVICE_METHODS = {"cuda": "cuda", "xpu": "xpu", "mps": "mps"}

_TRY_TYPES: Tuple[type, ...] = (ast.Try,)
if hasattr(ast, "TryStar"):  # Python 3.11+
    _TRY_TYPES = _TRY_TYPES + (ast.TryStar,)  # type: ignore[attr-defined]

_FUNCTION_TYPES = (ast.FunctionDef, ast.AsyncFunctionDef)

# only_for / except_for: None (absent or literal None), a tuple of strings, or UNKNOWN.
DeviceList = Union[None, Tuple[str, ...], str]
# allow_mps / allow_xpu: None (absent), a bool literal, or UNKNOWN.
Flag = Union[None, bool, str]


@dataclass(frozen=True)
class TestMethod:
    """A `test_*` method defined directly in a test class body."""

    __test__ = False  # not a pytest test class

    name: str
    line: int  # the `def` line
    params: Tuple[str, ...]  # every parameter name, `self` included
    is_async: bool
    decorators: Tuple[str, ...]  # dotted names; a call is rendered by its callee
    # Device names the body hard-codes ("cuda", "xpu", "mps"), from string
    # literals such as "cuda" / "cuda:0" and calls such as `.cuda()`.
    hardcoded_devices: Tuple[str, ...] = ()

    @property
    def takes_device(self) -> bool:
        return any(p in DEVICE_PARAMS for p in self.params)

    def signature(self) -> str:
        return f"{self.name}({', '.join(self.params)})"


@dataclass(frozen=True)
class Instantiation:
    """A module-level `instantiate_device_type_tests(Cls, ...)` statement."""

    line: int
    target: str  # the class name
    only_for: DeviceList = None
    except_for: DeviceList = None
    allow_mps: Flag = None
    allow_xpu: Flag = None
    form: str = "name"  # "name" or "attribute" (module.instantiate_device_type_tests)
    text: str = ""  # the call, as `ast.unparse` renders it


@dataclass(frozen=True)
class ExistingLabel:
    """A `hw_classification` assignment found in a class body."""

    line: int
    member: Optional[str]  # the attribute name when the value is `X.MEMBER`, else None
    form: str  # source text of the value
    valid: bool
    problem: Optional[str] = None

    def render(self) -> str:
        return f"{HW_ATTRIBUTE} = {self.form}"


@dataclass(frozen=True)
class IgnoredClass:
    """A class the linter does not check, with the reason why."""

    name: str
    line: int
    reason: str


@dataclass(frozen=True)
class TestClassFacts:
    """Everything the rule table needs to know about one test class."""

    __test__ = False  # not a pytest test class

    name: str
    line: int  # the `class` keyword line (ast.ClassDef.lineno)
    end_line: int
    decorators: Tuple[str, ...]
    bases: Tuple[str, ...]
    docstring_end_line: Optional[int]
    first_stmt_line: int  # first body statement's first line, decorators included
    test_methods: Tuple[TestMethod, ...]
    other_methods: Tuple[str, ...]
    instantiations: Tuple[Instantiation, ...] = ()
    parametrized: Tuple[int, ...] = ()  # lines of instantiate_parametrized_tests(Cls)
    label: Optional[ExistingLabel] = None
    nested_in: None = None

    @property
    def instantiated(self) -> bool:
        return bool(self.instantiations)


@dataclass(frozen=True)
class ModuleFacts:
    classes: Tuple[TestClassFacts, ...]
    ignored: Tuple[IgnoredClass, ...] = ()
    instantiations: Tuple[Instantiation, ...] = ()
    duplicate_classes: Tuple[Tuple[str, Tuple[int, ...]], ...] = ()
    duplicate_instantiations: Tuple[Tuple[str, Tuple[int, ...]], ...] = ()

    def get(self, name: str) -> Optional[TestClassFacts]:
        """The first test class called `name`, if any."""
        for cls in self.classes:
            if cls.name == name:
                return cls
        return None


# --------------------------------------------------------------------------- triage

_DEF_TEST = re.compile(r"\bdef\s+test_")


def may_have_test_class(text: str) -> bool:
    """Cheap substring pre-check: False means "certainly no test method here".

    `async def test_x` contains `def test_` too; the regex fallback catches the
    rare `def  test_x` spelled with extra blanks or a tab.
    """
    if "def test_" in text:
        return True
    return "test_" in text and _DEF_TEST.search(text) is not None


# --------------------------------------------------------------------------- helpers


def dotted_name(node: ast.AST) -> Optional[str]:
    """`a.b.c` for a Name/Attribute chain, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def _render_decorator(node: ast.expr) -> str:
    target = node.func if isinstance(node, ast.Call) else node
    name = dotted_name(target)
    return name if name is not None else ast.unparse(target)


def _first_line(node: ast.stmt) -> int:
    decorators = getattr(node, "decorator_list", None)
    if decorators:
        return min(node.lineno, *(d.lineno for d in decorators))
    return node.lineno


def _module_level(stmts: Iterable[ast.stmt]) -> Iterator[ast.stmt]:
    """Module-level statements, descending into if / with / try blocks."""
    for stmt in stmts:
        yield stmt
        if isinstance(stmt, ast.If):
            yield from _module_level(stmt.body)
            yield from _module_level(stmt.orelse)
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            yield from _module_level(stmt.body)
        elif isinstance(stmt, _TRY_TYPES):
            yield from _module_level(stmt.body)  # type: ignore[attr-defined]
            for handler in stmt.handlers:  # type: ignore[attr-defined]
                yield from _module_level(handler.body)
            yield from _module_level(stmt.orelse)  # type: ignore[attr-defined]
            yield from _module_level(stmt.finalbody)  # type: ignore[attr-defined]


def _params(args: ast.arguments) -> Tuple[str, ...]:
    names = [a.arg for a in args.posonlyargs]
    names += [a.arg for a in args.args]
    if args.vararg is not None:
        names.append(args.vararg.arg)
    names += [a.arg for a in args.kwonlyargs]
    if args.kwarg is not None:
        names.append(args.kwarg.arg)
    return tuple(names)


def _hardcoded_devices(fn: ast.AST) -> Tuple[str, ...]:
    """Device names `fn` hard-codes: "cuda" / "cuda:0" literals and `.cuda()` calls."""
    found = set()
    for node in ast.walk(fn):
        if isinstance(node, ast.Constant):
            if isinstance(node.value, str) and len(node.value) <= 8:
                m = _HARDCODED_DEVICE.match(node.value)
                if m:
                    found.add(m.group(1))
        elif isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr in _DEVICE_METHODS:
                # `x.cuda()`; `torch.cuda.is_available()` ends in another attr.
                found.add(_DEVICE_METHODS[func.attr])
    return tuple(sorted(found))


_LINE_END = re.compile(r"\r\n?|\n")  # the line ends `ast` counts
_HARDCODED_TEXT = re.compile(r"""["'](cuda|xpu|mps)(?::\d+)?["']|\.(cuda|xpu|mps)\(""")


def _hardcoded_devices_text(lines: List[str], fn: ast.AST) -> Tuple[str, ...]:
    """Same question as `_hardcoded_devices`, answered by a regex over the source
    lines of `fn` (about 5x cheaper than walking its expressions; may also see
    quoted device names in comments, which is fine for a hint)."""
    chunk = "\n".join(lines[fn.lineno - 1 : fn.end_lineno])
    if "cuda" not in chunk and "xpu" not in chunk and "mps" not in chunk:
        return ()
    return tuple(sorted({a or b for a, b in _HARDCODED_TEXT.findall(chunk)}))


def _test_method(
    fn: Union[ast.FunctionDef, ast.AsyncFunctionDef], lines: Optional[List[str]] = None
) -> TestMethod:
    if lines is not None and fn.end_lineno is not None:
        hardcoded = _hardcoded_devices_text(lines, fn)
    else:
        hardcoded = _hardcoded_devices(fn)
    return TestMethod(
        name=fn.name,
        line=fn.lineno,
        params=_params(fn.args),
        is_async=isinstance(fn, ast.AsyncFunctionDef),
        decorators=tuple(_render_decorator(d) for d in fn.decorator_list),
        hardcoded_devices=hardcoded,
    )


def _is_test_name(name: str) -> bool:
    return name.startswith("test_")


def _defines_tests(cls: ast.ClassDef) -> bool:
    return any(isinstance(s, _FUNCTION_TYPES) and _is_test_name(s.name) for s in cls.body)


# --------------------------------------------------------------------------- labels


def _label_value(value: Optional[ast.expr]) -> Tuple[Optional[str], str, Optional[str]]:
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
        return member, form, (
            f"aliased enum {shown!r}: only {ENUM_NAME}.<MEMBER> is accepted"
            if member in MEMBERS
            else f"not a {ENUM_NAME} member: {form}"
        )
    if member not in MEMBERS:
        return member, form, f"unknown member {member!r} (expected one of {', '.join(MEMBERS)})"
    return member, form, None


def _label_of(stmt: ast.stmt) -> Optional[ExistingLabel]:
    if isinstance(stmt, ast.Assign):
        if not any(isinstance(t, ast.Name) and t.id == HW_ATTRIBUTE for t in stmt.targets):
            return None
        member, form, problem = _label_value(stmt.value)
    elif isinstance(stmt, ast.AnnAssign):
        if not (isinstance(stmt.target, ast.Name) and stmt.target.id == HW_ATTRIBUTE):
            return None
        member, form, problem = _label_value(stmt.value)
        if problem is None and not (
            isinstance(stmt.annotation, ast.Name) and stmt.annotation.id == ENUM_NAME
        ):
            problem = (
                f"annotation must be exactly {ENUM_NAME}, found {ast.unparse(stmt.annotation)}"
            )
    else:
        return None
    return ExistingLabel(
        line=stmt.lineno, member=member, form=form, valid=problem is None, problem=problem
    )


def _class_label(cls: ast.ClassDef) -> Optional[ExistingLabel]:
    labels = [lab for lab in map(_label_of, cls.body) if lab is not None]
    if not labels:
        return None
    first = labels[0]
    if len(labels) > 1:
        lines = ", ".join(str(lab.line) for lab in labels)
        return ExistingLabel(
            line=first.line,
            member=first.member,
            form=first.form,
            valid=False,
            problem=f"{HW_ATTRIBUTE} assigned more than once (lines {lines})",
        )
    return first


# --------------------------------------------------------------------------- calls


def _device_list(node: ast.expr) -> DeviceList:
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
    """True/False for a bool literal, None for a literal None (same as absent), else UNKNOWN."""
    if isinstance(node, ast.Constant) and (node.value is None or isinstance(node.value, bool)):
        return node.value
    return UNKNOWN


def _call_kind(call: ast.Call) -> Tuple[Optional[str], str]:
    """(function name, form) for instantiate_* calls, else (None, "")."""
    func = call.func
    if isinstance(func, ast.Name):
        return func.id, "name"
    if isinstance(func, ast.Attribute):
        return func.attr, "attribute"
    return None, ""


def _instantiation(call: ast.Call, form: str) -> Optional[Instantiation]:
    if not call.args or not isinstance(call.args[0], ast.Name):
        return None
    values = {"except_for": None, "only_for": None, "allow_mps": None, "allow_xpu": None}
    starred = False
    for index, arg in enumerate(call.args):
        if isinstance(arg, ast.Starred):
            starred = True
            break
        slot = _POSITIONAL_SLOTS.get(index)
        if slot is not None:
            values[slot] = _device_list(arg) if slot.endswith("_for") else _flag(arg)
    seen = set()
    for kw in call.keywords:
        if kw.arg is None:  # **kwargs may carry any of them
            starred = True
        elif kw.arg in values:
            seen.add(kw.arg)
            values[kw.arg] = _device_list(kw.value) if kw.arg.endswith("_for") else _flag(kw.value)
    if starred:
        # *args / **kwargs may supply anything we did not see spelled out.
        for slot in values:
            if slot not in seen and values[slot] is None:
                values[slot] = UNKNOWN
    return Instantiation(
        line=call.lineno,
        target=call.args[0].id,
        only_for=values["only_for"],
        except_for=values["except_for"],
        allow_mps=values["allow_mps"],
        allow_xpu=values["allow_xpu"],
        form=form,
        text=ast.unparse(call),
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


def _nested_test_classes(node: ast.AST) -> Iterator[ast.ClassDef]:
    """Test-defining ClassDefs anywhere below `node` (for the `ignored` report).

    Only statements are visited (a class can only be a statement), which keeps
    this several times cheaper than `ast.walk`.
    """
    stack = list(_child_statements(node))
    while stack:
        stmt = stack.pop()
        if isinstance(stmt, ast.ClassDef) and _defines_tests(stmt):
            yield stmt
        stack.extend(_child_statements(stmt))


def _duplicates(pairs: Iterable[Tuple[str, int]]) -> Tuple[Tuple[str, Tuple[int, ...]], ...]:
    lines: dict = {}
    for name, line in pairs:
        lines.setdefault(name, []).append(line)
    return tuple((name, tuple(ls)) for name, ls in lines.items() if len(ls) > 1)


def analyse(tree: ast.Module, text: Optional[str] = None) -> ModuleFacts:
    """Read the test classes, instantiations and labels of one parsed module.

    `text`, the source `tree` was parsed from, is optional: when given, the
    hard-coded-device hint of each test method is found with a regex over its
    lines instead of a walk over its expressions (several times faster).
    """
    lines = _LINE_END.split(text) if text is not None else None
    class_nodes = []
    helper_nodes = []
    nested = []
    instantiations = []
    parametrized: dict = {}

    for stmt in _module_level(tree.body):
        if isinstance(stmt, ast.ClassDef):
            if _defines_tests(stmt):
                class_nodes.append(stmt)
            else:
                helper_nodes.append(stmt)
            nested.extend((c, REASON_NESTED) for c in _nested_test_classes(stmt))
        elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            name, form = _call_kind(stmt.value)
            if name == INSTANTIATE_DEVICE:
                inst = _instantiation(stmt.value, form)
                if inst is not None:
                    instantiations.append(inst)
            elif name == INSTANTIATE_PARAMETRIZED:
                args = stmt.value.args
                if args and isinstance(args[0], ast.Name):
                    parametrized.setdefault(args[0].id, []).append(stmt.lineno)
        elif isinstance(stmt, _FUNCTION_TYPES):
            nested.extend((c, REASON_NESTED) for c in _nested_test_classes(stmt))
        elif isinstance(stmt, (ast.For, ast.AsyncFor, ast.While)):
            nested.extend((c, REASON_LOOP) for c in _nested_test_classes(stmt))

    by_target: dict = {}
    for inst in instantiations:
        by_target.setdefault(inst.target, []).append(inst)

    classes = tuple(
        _class_facts(
            node,
            tuple(by_target.get(node.name, ())),
            tuple(parametrized.get(node.name, ())),
            lines,
        )
        for node in class_nodes
    )

    test_names = {c.name for c in classes}
    base_names = {b.rsplit(".", 1)[-1] for c in classes for b in c.bases}
    ignored = [
        IgnoredClass(node.name, node.lineno, REASON_HELPER)
        for node in helper_nodes
        if _looks_like_test_helper(node, base_names, test_names)
    ]
    ignored += [IgnoredClass(node.name, node.lineno, reason) for node, reason in nested]
    ignored.sort(key=lambda c: c.line)

    return ModuleFacts(
        classes=classes,
        ignored=tuple(ignored),
        instantiations=tuple(instantiations),
        duplicate_classes=_duplicates((c.name, c.line) for c in classes),
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


def _class_facts(
    node: ast.ClassDef,
    instantiations: Tuple[Instantiation, ...],
    parametrized: Tuple[int, ...],
    lines: Optional[List[str]] = None,
) -> TestClassFacts:
    body = node.body
    docstring_end = None
    first = body[0]
    if (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
    ):
        docstring_end = first.end_lineno
    tests = []
    others = []
    for stmt in body:
        if isinstance(stmt, _FUNCTION_TYPES):
            if _is_test_name(stmt.name):
                tests.append(_test_method(stmt, lines))
            else:
                others.append(stmt.name)
    return TestClassFacts(
        name=node.name,
        line=node.lineno,
        end_line=node.end_lineno or node.lineno,
        decorators=tuple(_render_decorator(d) for d in node.decorator_list),
        bases=tuple(dotted_name(b) or ast.unparse(b) for b in node.bases),
        docstring_end_line=docstring_end,
        first_stmt_line=_first_line(first),
        test_methods=tuple(tests),
        other_methods=tuple(others),
        instantiations=instantiations,
        parametrized=parametrized,
        label=_class_label(node),
        nested_in=None,
    )
