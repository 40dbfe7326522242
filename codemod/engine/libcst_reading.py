"""Does LibCST still read an output? Parse the statements the edit touched, not the whole file.

Every output must stay readable by LibCST (the tools built on it, TorchFix among them, read
these files). Parsing each whole output was two thirds of `apply`'s time, though an edit touches
a few statements: the label line in each class, the import.

Why the touched statements answer for the file. A line diff finds the lines the edit touched;
every other line is the input's, byte for byte. Each touched line is widened to whole statements
of the innermost block that holds it (over `;`, backslash continuations and the neighbours of a
line that holds no statement), and those statements are parsed alone, inside `if True:` when
their block is indented (the same indentation, so LibCST's reading of the whitespace is the same).
LibCST, like CPython, reads a block statement by statement, and at the start of a line that
begins a statement its tokenizer carries nothing over but the indentation of the blocks around
it; `verify` (with each transform's `ast` check) also proves that both files hold the same
statements in the same blocks outside what the edit touched. So where LibCST read the input, it
reads the output if it reads each touched statement in its place. `tests/test_libcst_reading.py`
checks the two answers agree on real and generated files, and catches an edit LibCST cannot read.

A touched statement that does not parse alone proves nothing either way (it may need context the
snippet lacks): the caller then parses both whole files, as before.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Sequence
from difflib import SequenceMatcher

from transforms.core.class_reading import first_line
from transforms.core.source_lines import WS, code_before, continues, logical_span, split_lines, without_eol

__all__ = ["touched_snippets"]

_WRAPPER = "if True:\n"


def touched_snippets(old_text: str, new_text: str, new_tree: ast.Module) -> list[str]:
    """The statements of `new_text` (parsed as `new_tree`) that differ from `old_text`, each a
    module LibCST can parse on its own; in the order of the file, without repeats."""
    old_lines, new_lines = split_lines(old_text), split_lines(new_text)
    if not new_lines or not new_tree.body:
        return [new_text]
    regions: list[tuple[int, int, bool]] = []
    for tag, _i1, _i2, j1, j2 in SequenceMatcher(None, old_lines, new_lines).get_opcodes():
        if tag == "equal":
            continue
        # Lines j1..j2 (0-based, exclusive) are new; a deletion touches the two lines it joins.
        first, last = (j1 + 1, j2) if j2 > j1 else (max(1, j1), min(len(new_lines), j1 + 1))
        region = _region(new_lines, new_tree.body, first, last)
        if region not in regions:
            regions.append(region)
    return [_snippet(new_lines, *region) for region in sorted(regions)]


def _region(lines: Sequence[str], block: list[ast.stmt], first: int, last: int) -> tuple[int, int, bool]:
    """The whole statements of the innermost block holding 1-based lines first..last: their
    first and last line, and whether the block is indented."""
    nested = False
    while True:
        hit = [s for s in block if first_line(s) <= last and _end(s) >= first]
        inner = _inner_block(lines, hit[0], first, last) if len(hit) == 1 else None
        if inner is None:
            break
        block, nested = inner, True
    if not hit:  # comments or blank lines only: with the statements around them
        hit = [s for s in block if _end(s) < first][-1:] + [s for s in block if first_line(s) > last][:1]
    start, end = min(first, first_line(hit[0])), max(last, _end(hit[-1]))
    return (*_whole_statements(lines, block, start, end), nested)


def _inner_block(lines: Sequence[str], stmt: ast.stmt, first: int, last: int) -> list[ast.stmt] | None:
    """The block of `stmt` that holds lines first..last, if its statements start their own lines
    (not `if x: y`). An `elif` is a line of the `if`, its blocks are the `if`'s."""
    for block in _blocks(stmt):
        if first_line(block[0]) <= first and last <= _end(block[-1]):
            head = block[0]
            if len(block) == 1 and isinstance(head, ast.If) and _is_elif(lines, head):
                return _inner_block(lines, head, first, last)  # the blocks of the elif are its own
            return block if _opens_its_line(lines, head) else None
    return None


def _blocks(stmt: ast.stmt) -> Iterator[list[ast.stmt]]:
    for field in ("body", "orelse", "finalbody"):
        block = getattr(stmt, field, None)
        if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
            yield block
    for part in [*getattr(stmt, "handlers", ()), *getattr(stmt, "cases", ())]:
        yield part.body


def _opens_its_line(lines: Sequence[str], stmt: ast.stmt) -> bool:
    """Only indentation before it, on a line the one above does not continue (`if x: \\`)."""
    line = first_line(stmt)
    if line > 1 and continues(without_eol(lines[line - 2])):
        return False
    decorators = getattr(stmt, "decorator_list", None)
    if decorators:
        top = min(decorators, key=lambda d: (d.lineno, d.col_offset))
        return code_before(lines, top.lineno, top.col_offset).lstrip(WS).startswith("@")
    return code_before(lines, stmt.lineno, stmt.col_offset).strip(WS) == ""


def _is_elif(lines: Sequence[str], stmt: ast.If) -> bool:
    return lines[stmt.lineno - 1].lstrip(WS).startswith("elif")


def _whole_statements(lines: Sequence[str], block: list[ast.stmt], start: int, end: int) -> tuple[int, int]:
    """Widen start..end over every statement of `block` that shares a line with it (a `;`, a
    backslash continuation)."""
    widened = True
    while widened:
        widened = False
        for stmt in block:
            if first_line(stmt) > end or _end(stmt) < start - 1:
                continue
            s_start, s_end = logical_span(lines, block, stmt)
            if s_start <= end and s_end >= start and (s_start < start or s_end > end):
                start, end, widened = min(start, s_start), max(end, s_end), True
    return start, end


def _end(stmt: ast.stmt) -> int:
    return stmt.end_lineno or stmt.lineno


def _snippet(lines: Sequence[str], start: int, end: int, nested: bool) -> str:
    text = "".join(lines[start - 1 : end])
    return _WRAPPER + text if nested else text
