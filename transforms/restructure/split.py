"""split-class: a class no single value fits becomes one class per value.

    class TestFooBase(<original bases>):   shared members (setUp, helpers, attributes); no tests
    class TestFoo(TestFooBase):             the device-free tests (GENERIC; keeps the name)
    class TestFooAccelerator(TestFooBase):  unguarded `device` tests (the original instantiation)
    class TestFooCpuOnly(TestFooBase):      @onlyCPU tests, instantiated only_for="cpu"
    class TestFooCudaOnly(TestFooBase):     @onlyCUDA tests using CUDA-only APIs, only_for="cuda"

The original name goes to the first part of GENERIC, ACCELERATOR, CPU, CUDA that has tests;
the base exists only when there are shared members; class decorators are copied to every
part.  Statements are moved as text, comments and blank lines before them included.
"""

from __future__ import annotations

import ast

from transforms.core import analysis, class_reading
from transforms.core.base import WARNING, Finding
from transforms.core.class_reading import FUNCTION_TYPES
from transforms.core.members import HW_ATTRIBUTE
from transforms.core.source_lines import newline_of
from transforms.diagnosis.devices import GENERIC
from transforms.diagnosis.diagnose import ClassDiagnosis, class_nodes, test_target
from transforms.restructure.call_args import _calls
from transforms.restructure.model import Move, Step
from transforms.restructure.textedit import Lines, SpanEdit, apply_spans, quote_of

NAME = "split-class"
ORDER = ("GENERIC", "ACCELERATOR", "CPU", "CUDA")
SUFFIX = {"GENERIC": "Generic", "ACCELERATOR": "Accelerator", "CPU": "CpuOnly", "CUDA": "CudaOnly"}


class Refusal(Exception):
    """This class cannot be split safely; the message says why."""


def _names_in(nodes) -> set:
    return {n.id for node in nodes for n in ast.walk(node) if isinstance(n, ast.Name)}


def _plan(diag: ClassDiagnosis, node: ast.ClassDef, tree: ast.Module, call: ast.Call | None):
    if call is None or diag.instantiation is None:
        raise Refusal("not instantiated")
    if len([i for i in analysis.analyse(tree).instantiations if i.target == diag.name]) != 1:
        raise Refusal("instantiated more than once")
    only_for = analysis.device_list(next((k.value for k in call.keywords if k.arg == "only_for"), ast.Constant(None)))
    single = None
    if isinstance(only_for, tuple) and len(only_for) == 1 and only_for[0] in ("cpu", "cuda"):
        single = only_for[0].upper()
    elif only_for is not None:
        raise Refusal("only_for names several devices or is not a literal (drop-only-for / inline-only-for first)")
    if any("unknown" in t.devices for t in diag.tests):
        raise Refusal("the device set is unknown (a non-literal argument)")
    parts: dict[str, list[str]] = {}
    for t in diag.tests:
        value = test_target(t, single, convert_cuda=False)
        if value is None:
            raise Refusal(f"{t.name}: no class fits its guards {', '.join(t.guards)}")
        if t.takes_device and not t.devices:
            raise Refusal(f"{t.name} runs on no device today")
        if not t.takes_device and t.parametrized:
            raise Refusal(f"{t.name} is device-free but parametrized")
        parts.setdefault(value, []).append(t.name)
    if len(parts) < 2:
        raise Refusal("nothing to split")
    if any(
        isinstance(s, ast.Assign) and any(getattr(x, "id", "") == HW_ATTRIBUTE for x in s.targets) for s in node.body
    ):
        raise Refusal("already labelled")
    if diag.name in _names_in(node.body) or diag.name in _names_in(node.bases + node.keywords + node.decorator_list):
        raise Refusal(f"the class refers to {diag.name} by name (super(...) or attribute access)")
    refs = sum(1 for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id == diag.name)
    if refs != 1:  # the instantiation call only
        raise Refusal(f"{diag.name} is used elsewhere in the module ({refs - 1} other references)")
    spans = [(class_reading.first_line(s), s.end_lineno) for s in node.body]
    for (_a0, a1), (b0, _b1) in zip(spans, spans[1:], strict=False):
        if b0 <= a1:
            raise Refusal("two statements share a line")
    header_end = max([node.lineno] + [n.end_lineno for n in node.bases + node.keywords])
    if spans[0][0] <= header_end:
        raise Refusal("the class body starts on the header line")
    return parts, single, header_end


def _names(diag: ClassDiagnosis, parts: dict[str, list[str]], taken: set) -> dict[str, str]:
    names = {}
    kept = next(v for v in ORDER if v in parts)
    for value in ORDER:
        if value in parts:
            names[value] = diag.name if value == kept else diag.name + SUFFIX[value]
    names["base"] = diag.name + "Base"
    clash = [n for k, n in names.items() if n != diag.name and n in taken]
    if clash:
        raise Refusal(f"{', '.join(clash)} already exists in the module")
    return names


def _strip_leading_blanks(chunk: str) -> str:
    rows = chunk.splitlines(keepends=True)
    while rows and not rows[0].strip():
        rows.pop(0)
    return "".join(rows)


def split_one(
    text: str, tree: ast.Module, diag: ClassDiagnosis, node: ast.ClassDef, call: ast.Call, call_stmt: ast.Expr
) -> tuple[list[SpanEdit], list[Move], list[str], str]:
    parts, single, header_end = _plan(diag, node, tree, call)
    taken = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | {
        s.name for s in ast.walk(tree) if isinstance(s, (ast.ClassDef,) + FUNCTION_TYPES)
    }
    names = _names(diag, parts, taken)
    lines = Lines(text)
    rows = lines.lines
    nl = newline_of(text)
    first = class_reading.first_line(node)
    indent = rows[first - 1][: len(rows[first - 1]) - len(rows[first - 1].lstrip(" \t"))]
    decorators = "".join(rows[first - 1 : node.lineno - 1])
    header = "".join(rows[node.lineno - 1 : header_end])
    # Body statements as text chunks (comments and blank lines before them included).
    chunks = []
    prev = header_end
    for stmt in node.body:
        chunks.append((stmt, "".join(rows[prev : stmt.end_lineno])))
        prev = stmt.end_lineno
    test_of = {t.name: t for t in diag.tests}
    doc = chunks[0][1] if class_reading.class_facts(node, (), ()).docstring_end_line else None
    shared = [c for s, c in chunks if not (isinstance(s, FUNCTION_TYPES) and s.name in test_of) and c is not doc]
    kept_value = next(v for v in ORDER if v in parts)
    sep = nl * (2 if indent == "" else 1)
    bases_src = (
        header[header.index("(", header.index(diag.name)) :].rstrip().rstrip(":") if node.bases or node.keywords else ""
    )
    out = []
    parent = names["base"] if shared else None
    if shared:
        out.append(header.replace(diag.name, names["base"], 1) + "".join(shared).lstrip("\r\n"))
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
    new_class = sep.join(_ensure_eol(p, nl) for p in out)
    region = (lines.line_start(first), lines.line_start(node.end_lineno + 1))
    # Instantiations: the original call for the ACCELERATOR (or single-device) part, new ones for CPU / CUDA.
    device_values = [v for v in ORDER if v in parts and v != "GENERIC"]
    func = lines.segment(call.func)
    scope = lines.segment(call.args[1]) if len(call.args) > 1 else "globals()"
    quote = quote_of(lines.segment(call))
    call_line = rows[call_stmt.lineno - 1]
    call_indent = call_line[: len(call_line) - len(call_line.lstrip(" \t"))]
    original_for = "ACCELERATOR" if "ACCELERATOR" in parts else (single if single in parts else None)
    new_calls = []
    for value in device_values:
        if value == original_for:
            continue
        new_calls.append(f"{call_indent}{func}({names[value]}, {scope}, only_for={quote}{value.lower()}{quote}){nl}")
    edits: list[SpanEdit] = [(region[0], region[1], new_class)]
    if original_for is not None:
        if names[original_for] != diag.name:
            edits.append((lines.start(call.args[0]), lines.end(call.args[0]), names[original_for]))
        if new_calls:
            pos = lines.line_start(call_stmt.end_lineno + 1)
            edits.append((pos, pos, "".join(new_calls)))
    else:
        edits.append(
            (lines.line_start(call_stmt.lineno), lines.line_start(call_stmt.end_lineno + 1), "".join(new_calls))
        )
    moves = []
    for value in ORDER:
        for test in parts.get(value, ()):
            t = test_of[test]
            after = (GENERIC,) if value == "GENERIC" else (t.devices if value == original_for else (value.lower(),))
            moves.append(Move(NAME, test, diag.name, names[value], True, value != "GENERIC", t.devices, after))
    created = [names[v] for v in ORDER if v in parts] + ([names["base"]] if shared else [])
    return edits, moves, created, names[kept_value]


def _ensure_eol(chunk: str, nl: str) -> str:
    return chunk if chunk.endswith(("\n", "\r")) else chunk + nl


def split_class(text: str, tree: ast.Module, diags) -> Step:
    nodes = class_nodes(tree)
    calls = _calls(tree)
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
            found, found_moves, names, _ = split_one(
                text, tree, diag, nodes[diag.line], call, stmts.get(call.lineno) if call else None
            )
        except Refusal as why:
            findings.append(
                Finding(
                    f"restructure/{NAME}",
                    f"{diag.name}: not split: {why}",
                    diag.line,
                    WARNING,
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
    return Step(apply_spans(text, edits), moves, findings, created=tuple(created), resolved=tuple(created))
