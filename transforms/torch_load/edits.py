"""The editor: a file's plan applied to its text.  The weights_only keywords in the call's
own style, the with-blocks (re-indenting what they wrap), the --explain comments and the
import lines; everything else stays byte-identical."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from transforms.torch_load.analysis.modes import WRAP_LINE_LIMIT
from transforms.torch_load.analysis.source import LoadSource
from transforms.torch_load.analysis.text import (
    NL_RE,
    SourceText,
    TextEdit,
    comment_lines,
    indent_of,
    string_interior_lines,
)
from transforms.torch_load.imports import RenderedImports
from transforms.torch_load.plan import FilePlan, Wrap

__all__ = ["apply_plan"]

# The text as lines, each [content, line end] (the last one's end is "").
_Lines = list[list[str]]
# (first line, last line, one level of indentation) of a with-block's body, in the new text.
_Range = tuple[int, int, str]


@dataclass(frozen=True)
class _Shift:
    """Where an old line is after the keyword edits (which may add lines)."""

    old: SourceText
    added: Sequence[tuple[int, int]]  # (offset in the old text, lines the edit there added)

    def new_line(self, old: int) -> int:
        t = self.old
        off = t.starts[old - 1] if old - 1 < len(t.starts) else len(t.text)
        return old + sum(n for o, n in self.added if o < off)

    def new_last(self, old_last: int) -> int:
        t = self.old
        end = t.starts[old_last] if old_last < len(t.starts) else len(t.text) + 1
        return old_last + sum(n for o, n in self.added if o < end)


def _apply_keywords(src: LoadSource, edits: Sequence[TextEdit]) -> tuple[str, _Shift]:
    text = src.text
    added: list[tuple[int, int]] = []  # (offset, newlines added)
    for start, end, rep in sorted(edits, key=lambda e: (e[0], e[1]), reverse=True):
        text = text[:start] + rep + text[end:]
        added.append((start, len(NL_RE.findall(rep)) - len(NL_RE.findall(src.text[start:end]))))
    return text, _Shift(src.lines, added)


def _unit(src: LoadSource, ind: str) -> str:
    """One indentation level in the style of the statement being wrapped."""
    u = src.indent_unit
    if ind.startswith("\t"):
        return "\t"
    if ind:
        return u if u and u.strip(" ") == "" else "    "
    return u if u and u.strip(" \t") == "" else "    "


def _outer(ranges: Sequence[_Range], a: int) -> str:
    """Indentation the wraps around line `a` add (their lines are re-indented below, lines
    inserted here are not): nested wraps need it on their head."""
    return "".join(u for s, e, u in reversed(ranges) if s < a <= e)


def _heads(
    lines: _Lines, spans: Sequence[tuple[Wrap, int, _Range]], torch_name: str, inserts: dict[int, list[str]]
) -> None:
    """The `with` line (or lines) of each block, its --explain comment above it."""
    ranges = [r for _, _, r in spans]
    for w, a, (_, _, unit) in spans:
        ind = _outer(ranges, a) + indent_of(lines[a - 1][0])
        head = f"{ind}with {torch_name}.serialization.safe_globals([{', '.join(w.entries)}]):"
        block = []
        if w.comment:
            block += comment_lines(ind, w.comment)
        if len(head) > WRAP_LINE_LIMIT:
            block.append(f"{ind}with {torch_name}.serialization.safe_globals([")
            block += [f"{ind}{unit}{e}," for e in w.entries]
            block.append(f"{ind}]):")
        else:
            block.append(head)
        inserts.setdefault(a, []).extend(block)


def _comments(
    lines: _Lines, shift: _Shift, comments: Mapping[int, str], ranges: Sequence[_Range], inserts: dict[int, list[str]]
) -> None:
    """The --explain comments above the statements that get weights_only=False."""
    comment_at = []
    for old, comment in comments.items():
        a = shift.new_line(old)
        comment_at.append((a, comment_lines(_outer(ranges, a) + indent_of(lines[a - 1][0]), comment)))
    for a, c in sorted(comment_at, reverse=True):
        inserts.setdefault(a, [])[0:0] = c


def _reindent(lines: _Lines, ranges: Sequence[_Range], interior: set[int]) -> None:
    """One level more for what each block wraps (not inside multi-line strings, not blank lines)."""
    for a, b, unit in ranges:
        for n in range(a, b + 1):
            if n in interior or not lines[n - 1][0].strip():
                continue
            lines[n - 1][0] = unit + lines[n - 1][0]


def _imports(lines: _Lines, shift: _Shift, imports: RenderedImports, inserts: dict[int, list[str]]) -> None:
    for ln, col_text_old, col_text_new in imports.edits:
        n = shift.new_line(ln)
        lines[n - 1][0] = lines[n - 1][0].replace(col_text_old, col_text_new, 1)
    by_line: dict[int, list[str]] = {}
    for at, line in imports.lines:
        n = shift.new_line(at) if at <= len(shift.old.starts) else len(lines) + 1
        by_line.setdefault(n, []).append(line)
    for n, new_imports in by_line.items():
        inserts[n] = new_imports + inserts.get(n, [])


def _join(lines: _Lines, inserts: Mapping[int, list[str]], nl: str) -> str:
    out: list[str] = []
    for i, (content, sep) in enumerate(lines, start=1):
        for extra in inserts.get(i, []):
            out.append(extra + nl)
        out.append(content + sep)
    tail = inserts.get(len(lines) + 1, [])
    if tail:
        if out and not out[-1].endswith(("\n", "\r")):
            out[-1] += nl
        out += [x + nl for x in tail]
    return "".join(out)


def apply_plan(
    src: LoadSource, plan: FilePlan, merged: Sequence[Wrap], imports: RenderedImports, torch_name: str
) -> str:
    """The new text: the plan's keyword edits, the `merged` with-blocks (merge_wraps of the
    plan's), its comments and the rendered `imports`."""
    text, shift = _apply_keywords(src, [e for k in plan.keywords for e in k.edits])
    lines = [[c, s] for c, s in zip(NL_RE.split(text), NL_RE.findall(text) + [""], strict=False)]
    spans = []
    for w in merged:
        a, b = shift.new_line(w.first), shift.new_last(w.last)
        spans.append((w, a, (a, b, _unit(src, indent_of(lines[a - 1][0])))))
    ranges = [r for _, _, r in spans]
    inserts: dict[int, list[str]] = {}  # new line number -> lines to insert before it
    _heads(lines, spans, torch_name, inserts)
    _comments(lines, shift, plan.comments, ranges, inserts)
    _reindent(lines, ranges, string_interior_lines(text))
    _imports(lines, shift, imports, inserts)
    return _join(lines, inserts, src.newline)
