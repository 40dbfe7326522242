"""Source text as physical lines, and edits that replace whole lines.

Lines are split as the Python tokenizer splits them and keep their line ends, so
``"".join(split_lines(text)) == text``. Positions come from the ``ast`` tree the caller
already has (1-based lines, UTF-8 byte columns); ``logical_span`` widens a statement over
the statements sharing its lines (``;``) and its backslash continuations. An ``Edit``
replaces whole lines; ``insertion`` keeps a leading BOM first and a missing final
newline missing, and ``apply`` splices a set of them in one pass.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from transforms.core.class_reading import first_line

__all__ = [
    "BOM",
    "WS",
    "Edit",
    "EditError",
    "apply",
    "code_after",
    "code_before",
    "continues",
    "eol_of",
    "indent_of",
    "insertion",
    "is_blank",
    "is_comment",
    "logical_end",
    "logical_span",
    "newline_of",
    "split_lines",
    "without_eol",
]

BOM = "\ufeff"

WS = " \t\x0c"
_EOLS = ("\r\n", "\r", "\n")
_LINE_RE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+")


class EditError(Exception):
    """The requested edit cannot be made safely; the file must stay untouched."""


def split_lines(text: str) -> list[str]:
    """Split like the Python tokenizer: only ``\\r\\n``, ``\\r`` and ``\\n`` end a
    line (not ``\\x0c``, ``\\x1c``, ``\\u2028`` ... as ``str.splitlines`` does).
    Line ends are kept, so ``"".join(split_lines(t)) == t``."""
    return _LINE_RE.findall(text)


def newline_of(text_or_lines: str | Sequence[str]) -> str:
    """The file's newline: the first line ending found, ``"\\n"`` if none."""
    lines = split_lines(text_or_lines) if isinstance(text_or_lines, str) else text_or_lines
    for line in lines:
        eol = eol_of(line)
        if eol:
            return eol
    return "\n"


def eol_of(line: str) -> str:
    """The line's own line end, ``""`` for a last line without one."""
    for eol in _EOLS:  # "\r\n" first
        if line.endswith(eol):
            return eol
    return ""


def without_eol(line: str) -> str:
    """The line without its line end."""
    eol = eol_of(line)
    return line[: len(line) - len(eol)] if eol else line


def is_blank(line: str) -> bool:
    return not without_eol(line).strip(WS)


def is_comment(line: str) -> bool:
    return without_eol(line).lstrip(WS).startswith("#")


def indent_of(line: str) -> str:
    text = line.lstrip(BOM)
    # A form feed resets the tokenizer's column count: it is no part of the indentation.
    return text[: len(text) - len(text.lstrip(WS))].replace("\x0c", "")


@dataclass(frozen=True)
class Edit:
    """Replace ``lines[start:end]`` (0-based) by ``new``; start == end inserts."""

    start: int
    end: int
    new: tuple[str, ...]


def insertion(lines: Sequence[str], pos: int, new: Sequence[str]) -> Edit:
    """Insert whole lines before 0-based line ``pos`` (``len(lines)``: at the end).

    Keeps a leading BOM first and keeps "no newline at end of file" as it was."""
    new = list(new)
    if pos == 0 and lines and lines[0].startswith(BOM):
        new[0] = BOM + new[0]
        return Edit(0, 1, (*new, lines[0][len(BOM) :]))
    if pos == len(lines) and lines and not eol_of(lines[-1]):
        newline = newline_of(lines)
        new[-1] = without_eol(new[-1])
        return Edit(pos - 1, pos, (lines[-1] + newline, *new))
    return Edit(pos, pos, tuple(new))


def apply(lines: Sequence[str], edits: Iterable[Edit]) -> str:
    out = list(lines)
    floor = len(out)
    for edit in sorted(edits, key=lambda e: (e.start, e.end), reverse=True):
        if edit.end > floor:
            raise EditError("internal error: overlapping edits")
        out[edit.start : edit.end] = edit.new
        floor = edit.start
    return "".join(out)


def code_after(lines: Sequence[str], lineno: int, col_offset: int) -> str:
    """The text of line ``lineno`` (1-based) from UTF-8 byte column ``col_offset``."""
    line = without_eol(lines[lineno - 1])
    if lineno == 1:
        line = line.lstrip(BOM)
    return line.encode("utf-8")[col_offset:].decode("utf-8", "replace")


def code_before(lines: Sequence[str], lineno: int, col_offset: int) -> str:
    """The text of line ``lineno`` (1-based) before UTF-8 byte column ``col_offset``."""
    line = without_eol(lines[lineno - 1])
    if lineno == 1:
        line = line.lstrip(BOM)
    return line.encode("utf-8")[:col_offset].decode("utf-8", "replace")


def continues(rest: str) -> bool:
    """Does code text ``rest`` (the end of a physical line) end with a line
    continuation backslash? A comment ending in a backslash does not."""
    rest = rest.strip(WS)
    return rest.endswith("\\") and not rest.startswith("#")


def logical_span(lines: Sequence[str], siblings: Sequence[ast.stmt], stmt: ast.stmt) -> tuple[int, int]:
    """1-based inclusive line span of ``stmt``, extended over statements sharing
    a line with it (``;``) and over trailing backslash continuations."""
    start, end = first_line(stmt), stmt.end_lineno or stmt.lineno
    changed = True
    while changed:
        changed = False
        for other in siblings:
            o_start, o_end = first_line(other), other.end_lineno or other.lineno
            if o_start <= end and o_end >= start and (o_start < start or o_end > end):
                start, end = min(start, o_start), max(end, o_end)
                changed = True
    # The code after the last statement ending on the last line.
    last_col = max(
        (o.end_col_offset or 0 for o in [stmt, *siblings] if o.end_lineno == end),
        default=0,
    )
    rest = code_after(lines, end, last_col)
    while end < len(lines) and continues(rest):
        end += 1
        rest = without_eol(lines[end - 1])
    return start, end


def logical_end(lines: Sequence[str], siblings: Sequence[ast.stmt], stmt: ast.stmt) -> int:
    """1-based last physical line of ``stmt``'s logical line(s)."""
    return logical_span(lines, siblings, stmt)[1]
