"""split-class: a class no single value fits becomes one class per value.

    class TestFooBase(<original bases>):   shared members (setUp, helpers, attributes); no tests
    class TestFoo(TestFooBase):             the device-free tests (GENERIC; keeps the name)
    class TestFooAccelerator(TestFooBase):  unguarded `device` tests (the original instantiation)
    class TestFooCpuOnly(TestFooBase):      @onlyCPU tests, instantiated only_for="cpu"
    class TestFooCudaOnly(TestFooBase):     @onlyCUDA tests using CUDA-only APIs, only_for="cuda"

A class instantiated `only_for` one device keeps its call for its device tests (labelled with
that device) and gives its device-free tests a GENERIC class, unless one of them needs the device
(the diagnosis leaves that to inject-device). A class that is not instantiated is split where the
generation of the rules declares the one device its other tests need (`ClassDiagnosis.split_device`:
its GENERIC label breaks accelerator_availability, or is accepted but false for those tests): the
tests that need no device stay GENERIC, the ones that need the one device go to a class of that
value (CUDA, XPU, MPS: only declared there), neither instantiated.

The original name goes to the first part of GENERIC, ACCELERATOR, CPU, CUDA, MPS, XPU that has
tests; the base exists only when there are shared members; class decorators are copied to every
part.  Statements are moved as text, comments and blank lines before them included.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping, Sequence

from transforms.core import analysis, class_reading
from transforms.core.base import Finding, Severity
from transforms.core.class_reading import FUNCTION_TYPES, last_line
from transforms.core.facts import UNKNOWN
from transforms.core.members import DEVICE_MEMBERS, HW_ATTRIBUTE, Member
from transforms.core.source_lines import newline_of
from transforms.diagnosis.devices import GENERIC, UNREAD
from transforms.diagnosis.diagnose import ClassDiagnosis, class_nodes, test_target
from transforms.restructure.call_args import calls_by_class
from transforms.restructure.model import Move, Step
from transforms.restructure.textedit import Lines, SpanEdit, apply_spans, quote_of
from transforms.rules.advice import Pattern

NAME = Pattern.SPLIT_CLASS
ORDER = (Member.GENERIC, Member.ACCELERATOR, Member.CPU, Member.CUDA, Member.MPS, Member.XPU)
SUFFIX = {
    Member.GENERIC: "Generic",
    Member.ACCELERATOR: "Accelerator",
    Member.CPU: "CpuOnly",
    Member.CUDA: "CudaOnly",
    Member.MPS: "MpsOnly",
    Member.XPU: "XpuOnly",
}

# value -> the names of the tests that go to its class, in their order.
Parts = dict[Member, list[str]]


class Refusal(Exception):
    """This class cannot be split safely; the message says why."""


def _names_in(nodes: Iterable[ast.AST]) -> set[str]:
    return {n.id for node in nodes for n in ast.walk(node) if isinstance(n, ast.Name)}


def _plan(
    diag: ClassDiagnosis, node: ast.ClassDef, tree: ast.Module, call: ast.Call | None
) -> tuple[Parts, Member | None, int]:
    """(the parts, the value of a one-device only_for, the class header's last line), or Refusal."""
    if call is None or diag.instantiation is None:
        if diag.split_device is None:
            raise Refusal("not instantiated")
        parts, single = _uninstantiated_parts(diag), None
    else:
        parts, single = _instantiated_parts(diag, tree, call)
    if len(parts) < 2:
        raise Refusal("nothing to split")
    if any(
        isinstance(s, ast.Assign) and any(getattr(x, "id", "") == HW_ATTRIBUTE for x in s.targets) for s in node.body
    ):
        raise Refusal("already labelled")
    if diag.name in _names_in(node.body) or diag.name in _names_in([*node.bases, *node.keywords, *node.decorator_list]):
        raise Refusal(f"the class refers to {diag.name} by name (super(...) or attribute access)")
    refs = sum(1 for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id == diag.name)
    calls = 1 if call is not None else 0
    if refs != calls:  # the instantiation call only
        raise Refusal(f"{diag.name} is used elsewhere in the module ({refs - calls} other references)")
    spans = [(class_reading.first_line(s), last_line(s)) for s in node.body]
    for (_a0, a1), (b0, _b1) in zip(spans, spans[1:], strict=False):
        if b0 <= a1:
            raise Refusal("two statements share a line")
    header_end = max([node.lineno] + [last_line(n) for n in node.bases + node.keywords])
    if spans[0][0] <= header_end:
        raise Refusal("the class body starts on the header line")
    return parts, single, header_end


def _instantiated_parts(diag: ClassDiagnosis, tree: ast.Module, call: ast.Call) -> tuple[Parts, Member | None]:
    if len([i for i in analysis.analyse(tree).instantiations if i.target == diag.name]) != 1:
        raise Refusal("instantiated more than once")
    only_for = analysis.device_list(next((k.value for k in call.keywords if k.arg == "only_for"), ast.Constant(None)))
    single = None
    if only_for == UNKNOWN:
        raise Refusal("only_for is not a literal (inline-only-for first)")
    if isinstance(only_for, tuple):
        named = sorted({d.lower() for d in only_for})
        if len(named) != 1:
            raise Refusal(f"only_for={list(only_for)!r} names {len(named) or 'no'} devices (drop-only-for first)")
        if named[0].upper() not in DEVICE_MEMBERS:
            raise Refusal(f"only_for={named[0]!r} is a device no label names")
        single = Member(named[0].upper())
    if any(UNREAD in t.devices for t in diag.tests):
        raise Refusal("the device set is unknown (a non-literal argument)")
    parts: Parts = {}
    for t in diag.tests:
        value = test_target(t, single, convert_cuda=False)
        if value is None:
            raise Refusal(f"{t.name}: no class fits its guards {', '.join(t.guards)}")
        if t.takes_device and not t.devices:
            raise Refusal(f"{t.name} runs on no device today")
        if not t.takes_device and t.parametrized:
            raise Refusal(f"{t.name} is device-free but parametrized")
        parts.setdefault(value, []).append(t.name)
    return parts, single


def _uninstantiated_parts(diag: ClassDiagnosis) -> Parts:
    """The device-free tests stay GENERIC; the tests that need `split_device` go to its class."""
    assert diag.split_device is not None
    parts: Parts = {}
    for t in diag.tests:
        parts.setdefault(diag.split_device if t.name in diag.split_tests else Member.GENERIC, []).append(t.name)
    return parts


def _names(diag: ClassDiagnosis, parts: Parts, taken: set[str]) -> tuple[dict[Member, str], str]:
    """(the class name of each part, the base's name); Refusal when one is taken."""
    names = {}
    kept = next(v for v in ORDER if v in parts)
    for value in ORDER:
        if value in parts:
            names[value] = diag.name if value == kept else diag.name + SUFFIX[value]
    base = diag.name + "Base"
    clash = [n for n in [*names.values(), base] if n != diag.name and n in taken]
    if clash:
        raise Refusal(f"{', '.join(clash)} already exists in the module")
    return names, base


def _strip_leading_blanks(chunk: str) -> str:
    rows = chunk.splitlines(keepends=True)
    while rows and not rows[0].strip():
        rows.pop(0)
    return "".join(rows)


def _indent(row: str) -> str:
    return row[: len(row) - len(row.lstrip(" \t"))]


def _parts_text(
    lines: Lines,
    diag: ClassDiagnosis,
    node: ast.ClassDef,
    parts: Parts,
    names: Mapping[Member, str],
    base: str,
    header_end: int,
) -> tuple[str, bool]:
    """The text of the classes that replace `node` (the base first, when there are shared
    members), and whether there is a base."""
    rows = lines.lines
    nl = newline_of(lines.text)
    first = class_reading.first_line(node)
    indent = _indent(rows[first - 1])
    decorators = "".join(rows[first - 1 : node.lineno - 1])
    header = "".join(rows[node.lineno - 1 : header_end])
    # Body statements as text chunks (comments and blank lines before them included).
    chunks = []
    prev = header_end
    for stmt in node.body:
        chunks.append((stmt, "".join(rows[prev : last_line(stmt)])))
        prev = last_line(stmt)
    tests = {t.name for t in diag.tests}
    doc = chunks[0][1] if class_reading.class_facts(node, (), ()).docstring_end_line else None
    shared = [c for s, c in chunks if not (isinstance(s, FUNCTION_TYPES) and s.name in tests) and c is not doc]
    kept_value = next(v for v in ORDER if v in parts)
    bases_src = (
        header[header.index("(", header.index(diag.name)) :].rstrip().rstrip(":") if node.bases or node.keywords else ""
    )
    out = []
    parent = base if shared else None
    if shared:
        out.append(header.replace(diag.name, base, 1) + "".join(shared).lstrip("\r\n"))
    for value in ORDER:
        if value not in parts:
            continue
        bases = f"({parent})" if parent else bases_src
        if "\n" in bases or "#" in bases:
            raise Refusal("multi-line class header")
        body = [doc] if (doc and value == kept_value) else []
        body += [c for s, c in chunks if isinstance(s, FUNCTION_TYPES) and s.name in parts[value]]
        body[0] = _strip_leading_blanks(body[0])
        out.append(decorators + f"{indent}class {names[value]}{bases}:{nl}" + "".join(body))
    sep = nl * (2 if indent == "" else 1)
    return sep.join(_ensure_eol(p, nl) for p in out), bool(shared)


def _instantiation_edits(
    lines: Lines,
    call: ast.Call,
    call_stmt: ast.Expr,
    names: Mapping[Member, str],
    original_for: Member | None,
    original: str,
) -> list[SpanEdit]:
    """The original call instantiates `original_for`'s part (renamed if it is not the
    original class); every other device part gets a call of its own, after it."""
    func = lines.segment(call.func)
    scope = lines.segment(call.args[1]) if len(call.args) > 1 else "globals()"
    quote = quote_of(lines.segment(call))
    call_indent = _indent(lines.lines[call_stmt.lineno - 1])
    nl = newline_of(lines.text)
    new_calls = [
        f"{call_indent}{func}({names[value]}, {scope}, only_for={quote}{value.lower()}{quote}){nl}"
        for value in ORDER
        if value in names and value != Member.GENERIC and value != original_for
    ]
    end = lines.line_start(last_line(call_stmt) + 1)
    if original_for is None:
        return [(lines.line_start(call_stmt.lineno), end, "".join(new_calls))]
    edits: list[SpanEdit] = []
    if names[original_for] != original:
        edits.append((lines.start(call.args[0]), lines.end(call.args[0]), names[original_for]))
    if new_calls:
        edits.append((end, end, "".join(new_calls)))
    return edits


def _moves(diag: ClassDiagnosis, parts: Parts, names: Mapping[Member, str], original_for: Member | None) -> list[Move]:
    devices = {t.name: t.devices for t in diag.tests}
    instantiated = diag.instantiation is not None
    moves = []
    for value in ORDER:
        for test in parts.get(value, ()):
            before = devices[test]
            if value == Member.GENERIC or not instantiated:  # runs once, without a device, as before
                after: Sequence[str] = (GENERIC,)
            else:
                after = before if value == original_for else (value.lower(),)
            moves.append(
                Move(
                    transform=NAME,
                    test=test,
                    old_class=diag.name,
                    new_class=names[value],
                    old_instantiated=instantiated,
                    new_instantiated=instantiated and value != Member.GENERIC,
                    before=before,
                    after=tuple(after),
                )
            )
    return moves


def split_one(
    text: str,
    tree: ast.Module,
    diag: ClassDiagnosis,
    node: ast.ClassDef,
    call: ast.Call | None,
    call_stmt: ast.Expr | None,
) -> tuple[list[SpanEdit], list[Move], list[str]]:
    """The edits that split `diag`'s class, its test moves and the class names it creates;
    Refusal when it cannot be split safely."""
    parts, single, header_end = _plan(diag, node, tree, call)
    taken = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | {
        s.name for s in ast.walk(tree) if isinstance(s, (ast.ClassDef,) + FUNCTION_TYPES)
    }
    names, base = _names(diag, parts, taken)
    lines = Lines(text)
    new_class, has_base = _parts_text(lines, diag, node, parts, names, base, header_end)
    region = (lines.line_start(class_reading.first_line(node)), lines.line_start(last_line(node) + 1))
    # The original call goes to the ACCELERATOR (or single-device) part; CPU / CUDA get new ones.
    original_for = (
        Member.ACCELERATOR
        if Member.ACCELERATOR in parts
        else (single if single is not None and single in parts else None)
    )
    edits: list[SpanEdit] = [(region[0], region[1], new_class)]
    if call is not None and call_stmt is not None:
        edits += _instantiation_edits(lines, call, call_stmt, names, original_for, diag.name)
    moves = _moves(diag, parts, names, original_for)
    created = [names[v] for v in ORDER if v in parts] + ([base] if has_base else [])
    return edits, moves, created


def _ensure_eol(chunk: str, nl: str) -> str:
    return chunk if chunk.endswith(("\n", "\r")) else chunk + nl


def split_class(text: str, tree: ast.Module, diags: Sequence[ClassDiagnosis]) -> Step:
    nodes = class_nodes(tree)
    calls = calls_by_class(tree)
    stmts = {
        s.value.lineno: s
        for s in analysis.module_level(tree.body)
        if isinstance(s, ast.Expr) and isinstance(s.value, ast.Call)
    }
    edits: list[SpanEdit] = []
    moves: list[Move] = []
    created: list[str] = []
    findings = []
    for diag in diags:
        if NAME not in diag.advice:
            continue
        call = calls.get(diag.name)
        try:
            found, found_moves, names = split_one(
                text, tree, diag, nodes[diag.line], call, stmts.get(call.lineno) if call else None
            )
        except Refusal as why:
            findings.append(
                Finding(
                    rule=f"restructure/{NAME}",
                    message=f"{diag.name}: not split: {why}",
                    line=diag.line,
                    severity=Severity.WARNING,
                    cls=diag.name,
                    data={"refused": str(why)},
                )
            )
            continue
        edits += found
        moves += found_moves
        created += names
    if not edits:
        return Step(text, findings=findings)
    return Step(
        apply_spans(text, edits), moves=moves, findings=findings, created=tuple(created), resolved=tuple(created)
    )
