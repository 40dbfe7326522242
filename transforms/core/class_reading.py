"""One test class's facts, read from its own `ast.ClassDef` (`ast` only, like analysis.py).

`class_facts(node, ...)` reads what the class itself says: its test methods (parameters,
decorators, the device names they hard-code, the decorators that skip them without a
GPU), its other methods, bases, decorators, docstring and `hw_classification` label.
Which classes are test classes and which calls instantiate them is read module-wide by
`analysis.py`, which passes those calls in; the values are the dataclasses of `facts.py`.

A test method is, as for the linter, a `def` or `async def` directly in the class body
whose name starts with `test`.
"""

from __future__ import annotations

import ast
import re
from dataclasses import replace

from transforms.core.facts import ExistingLabel, Instantiation, TestClassFacts, TestMethod
from transforms.core.members import ENUM_NAME, HW_ATTRIBUTE, MEMBERS

__all__ = ["FUNCTION_TYPES", "class_facts", "defines_tests", "dotted_name", "first_line", "is_test_name", "last_line"]

# Device strings worth flagging when a test hard-codes them ("cpu" is left out:
# device-agnostic tests legitimately move results to the CPU).
_HARDCODED_DEVICE = re.compile(r"^(cuda|xpu|mps)(:\d+)?$")
_DEVICE_METHODS = {"cuda": "cuda", "xpu": "xpu", "mps": "mps"}

FUNCTION_TYPES = (ast.FunctionDef, ast.AsyncFunctionDef)


# --------------------------------------------------------------------------- names and lines


def dotted_name(node: ast.AST) -> str | None:
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


_GPU_FLAGS = {"TEST_CUDA", "TEST_GPU", "TEST_MULTIGPU", "TEST_CUDNN"}


def _needs_gpu(test: ast.expr) -> bool:
    """`TEST_CUDA`, `common_cuda.TEST_CUDA`, `torch.cuda.is_available()` and the like."""
    if isinstance(test, ast.Call):
        name = dotted_name(test.func) or ""
        return name.endswith("cuda.is_available") or name.endswith("cuda.device_count")
    flag = dotted_name(test)
    return flag is not None and flag.rsplit(".", 1)[-1] in _GPU_FLAGS


def _gpu_guards(decorators: list[ast.expr]) -> tuple[str, ...]:
    """Decorators that skip unless a GPU is there: skipIf(not TEST_CUDA), skipUnless(TEST_GPU)."""
    found = []
    for dec in decorators:
        if not (isinstance(dec, ast.Call) and dec.args):
            continue
        callee = (dotted_name(dec.func) or "").rsplit(".", 1)[-1]
        cond = dec.args[0]
        if callee == "skipIf" and isinstance(cond, ast.UnaryOp) and isinstance(cond.op, ast.Not):
            hit = _needs_gpu(cond.operand)
        elif callee == "skipUnless":
            hit = _needs_gpu(cond)
        else:
            hit = False
        if hit:
            found.append(ast.unparse(dec))
    return tuple(found)


def _hardcoded_devices(fn: ast.AST) -> tuple[str, ...]:
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


_HARDCODED_TEXT = re.compile(r"""["'](cuda|xpu|mps)(?::\d+)?["']|\.(cuda|xpu|mps)\(""")


def _hardcoded_devices_text(lines: list[str], fn: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[str, ...]:
    """Same question as `_hardcoded_devices`, answered by a regex over the source
    lines of `fn` (about 5x cheaper than walking its expressions; may also see
    quoted device names in comments, which is fine for a hint)."""
    chunk = "\n".join(lines[fn.lineno - 1 : fn.end_lineno])
    if "cuda" not in chunk and "xpu" not in chunk and "mps" not in chunk:
        return ()
    return tuple(sorted({a or b for a, b in _HARDCODED_TEXT.findall(chunk)}))


def _test_method(fn: ast.FunctionDef | ast.AsyncFunctionDef, lines: list[str] | None = None) -> TestMethod:
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
        gpu_guards=_gpu_guards(fn.decorator_list),
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


def _class_label(cls: ast.ClassDef) -> ExistingLabel | None:
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
) -> TestClassFacts:
    """The facts of the test class `node`, given the calls that instantiate it (`hidden`: those the
    linter does not see) and the lines of instantiate_parametrized_tests(node).  `lines`, the
    module's source split at the line ends `ast` counts, makes the hard-coded-device hint of each
    test method a regex over its lines; without it, a walk over its expressions."""
    body = node.body
    docstring_end = None
    first = body[0]
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
        docstring_end = first.end_lineno
    tests = []
    others = []
    for stmt in body:
        if isinstance(stmt, FUNCTION_TYPES):
            if is_test_name(stmt.name):
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
        first_stmt_line=first_line(first),
        test_methods=tuple(tests),
        other_methods=tuple(others),
        instantiations=instantiations,
        parametrized=parametrized,
        label=_class_label(node),
        nested_in=None,
        hidden_instantiations=hidden,
        gpu_guards=_gpu_guards(node.decorator_list),
    )
