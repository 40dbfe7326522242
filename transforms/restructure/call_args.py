"""Transforms of the `instantiate_device_type_tests(...)` arguments: keyword-args,
inline-only-for, drop-only-for.  Each edits only the call; the tests do not move, and
the device sets before and after are reported per test."""

from __future__ import annotations

import ast
from collections.abc import Callable, Sequence

from transforms.core import analysis
from transforms.core.class_reading import last_line
from transforms.diagnosis.diagnose import ClassDiagnosis, diagnose
from transforms.diagnosis.reading import module_literals
from transforms.restructure.model import Move, Step
from transforms.restructure.textedit import Lines, SpanEdit, apply_spans, literal, quote_of
from transforms.rules.advice import Pattern

# The edits one of these transforms makes to one class's call (none: it leaves the call alone).
CallEdit = Callable[[ClassDiagnosis, ast.Call, Lines, ast.Module], list[SpanEdit]]


def calls_by_class(tree: ast.Module) -> dict[str, ast.Call]:
    """The last instantiate_device_type_tests call per class name (the one the linter checks)."""
    out = {}
    for stmt in analysis.module_level(tree.body):
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            call = stmt.value
            if analysis.instantiates_devices(call) and call.args and isinstance(call.args[0], ast.Name):
                out[call.args[0].id] = call
    return out


def device_moves(name: str, before: ClassDiagnosis, after: ClassDiagnosis) -> list[Move]:
    new = {t.name: t for t in after.tests}
    return [
        Move(
            transform=name,
            test=t.name,
            old_class=before.name,
            new_class=after.name,
            old_instantiated=before.instantiation is not None,
            new_instantiated=after.instantiation is not None,
            before=t.devices,
            after=new[t.name].devices,
        )
        for t in before.tests
        if t.name in new
    ]


def _edit_calls(
    name: Pattern, text: str, tree: ast.Module, diags: Sequence[ClassDiagnosis], edit_one: CallEdit
) -> Step:
    lines = Lines(text)
    calls = calls_by_class(tree)
    edits: list[SpanEdit] = []
    touched = []
    for diag in diags:
        call = calls.get(diag.name)
        if call is None or name not in diag.advice:
            continue
        found = edit_one(diag, call, lines, tree)
        if found:
            edits += found
            touched.append(diag)
    if not edits:
        return Step(text)
    new_text = apply_spans(text, edits)
    after = {d.name: d for d in diagnose(ast.parse(new_text), new_text)}
    moves = [m for d in touched for m in device_moves(name, d, after[d.name])]
    return Step(new_text, moves=moves)


# --------------------------------------------------------------------------- keyword-args

_SLOTS = {2: "except_for", 3: "only_for", 4: "include_lazy", 5: "allow_mps", 6: "allow_xpu"}


def _keywords(diag: ClassDiagnosis, call: ast.Call, lines: Lines, tree: ast.Module) -> list[SpanEdit]:
    if any(isinstance(a, ast.Starred) for a in call.args) or len(call.args) > 7:
        return []
    taken = {kw.arg for kw in call.keywords}
    edits = []
    for index, arg in enumerate(call.args[2:], start=2):
        if _SLOTS[index] in taken:
            return []  # a TypeError already; not ours to fix
        pos = lines.start(arg)
        edits.append((pos, pos, f"{_SLOTS[index]}="))
    return edits


def keyword_args(text: str, tree: ast.Module, diags: Sequence[ClassDiagnosis]) -> Step:
    return _edit_calls(Pattern.KEYWORD_ARGS, text, tree, diags, _keywords)


# --------------------------------------------------------------------------- inline-only-for


def _inline(diag: ClassDiagnosis, call: ast.Call, lines: Lines, tree: ast.Module) -> list[SpanEdit]:
    literals = module_literals(tree)
    edits = []
    for kw in call.keywords:
        if kw.arg in ("only_for", "except_for") and isinstance(kw.value, ast.Name) and kw.value.id in literals:
            assign = literals[kw.value.id][0]
            if assign.value.lineno != assign.value.end_lineno:
                continue  # a multi-line literal would need re-indenting: leave it
            edits.append((lines.start(kw.value), lines.end(kw.value), lines.segment(assign.value)))
    return edits


def inline_only_for(text: str, tree: ast.Module, diags: Sequence[ClassDiagnosis]) -> Step:
    return _edit_calls(Pattern.INLINE_ONLY_FOR, text, tree, diags, _inline)


# --------------------------------------------------------------------------- drop-only-for


def _keyword(call: ast.Call, name: str) -> ast.keyword | None:
    for kw in call.keywords:
        if kw.arg == name:
            return kw
    return None


def _drop(diag: ClassDiagnosis, call: ast.Call, lines: Lines, tree: ast.Module) -> list[SpanEdit]:
    kw = _keyword(call, "only_for")
    if kw is None or _keyword(call, "except_for") is not None:
        return []
    listed = analysis.device_list(kw.value)
    if not isinstance(listed, tuple) or len(listed) < 2:
        return []
    lowered = [d.lower() for d in listed]
    quote = quote_of(lines.segment(kw.value))
    edits: list[SpanEdit] = []
    if "cpu" in lowered:
        # Remove `, only_for=(...)`: from the end of the previous argument.
        args = list(call.args) + [k for k in call.keywords]
        args.sort(key=lambda a: (a.lineno, a.col_offset))
        prev = args[args.index(kw) - 1]
        start, end = lines.end(prev), lines.end(kw)
        removed = lines.text[start:end]
        if "#" in removed.replace(lines.segment(kw), ""):
            return []  # a comment would go with it
        if removed.lstrip().startswith(","):
            edits.append((start, end, ""))
        else:
            return []
    else:
        edits.append((lines.start(kw), lines.end(kw), f"except_for={literal(['cpu'], quote)}"))
    for device, flag in (("mps", "allow_mps"), ("xpu", "allow_xpu")):
        if device not in lowered:
            continue
        have = _keyword(call, flag)
        if have is None:
            edits.append(_append_keyword(call, lines, f"{flag}=True"))
        elif not (isinstance(have.value, ast.Constant) and have.value.value is True):
            edits.append((lines.start(have.value), lines.end(have.value), "True"))
    return edits


def _append_keyword(call: ast.Call, lines: Lines, new: str) -> SpanEdit:
    """Add `new` as the last argument, in the call's layout: one argument per line (with a
    trailing comma) gets a line of its own, else `, new` after the last argument."""
    arguments: list[ast.expr | ast.keyword] = [*call.args, *call.keywords]
    last = max(arguments, key=lambda a: (last_line(a), a.end_col_offset or 0))
    end = last_line(last)
    pos = lines.end(last)
    row = lines.lines[end - 1]
    rest = lines.text[pos : lines.line_start(end + 1)]
    if end > call.lineno and rest.strip() == "," and row.strip().startswith(lines.segment(last).split("\n")[0].strip()):
        indent = row[: len(row) - len(row.lstrip())]
        start = lines.line_start(end + 1)
        return (start, start, f"{indent}{new},{rest[len(rest.rstrip(chr(13) + chr(10))) :]}")
    return (pos, pos, f", {new}")


def drop_only_for(text: str, tree: ast.Module, diags: Sequence[ClassDiagnosis]) -> Step:
    return _edit_calls(Pattern.DROP_ONLY_FOR, text, tree, diags, _drop)
