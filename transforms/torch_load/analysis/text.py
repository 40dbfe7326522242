"""Line/offset arithmetic over the source text, shared by the edit steps."""

from __future__ import annotations

import io
import re
import textwrap
import tokenize

COMMENT_LIMIT = 120  # PyTorch's line-length limit (flake8/ruff config)

NL_RE = re.compile(r"\r\n|\r|\n")

# Replace text[start:end] with the string (offsets into the text; start == end inserts).
TextEdit = tuple[int, int, str]


class SourceText:
    """The text with the offset of every line's start (lines and columns as LibCST counts them)."""

    def __init__(self, text: str):
        self.text = text
        self.starts = [0]
        for m in NL_RE.finditer(text):
            self.starts.append(m.end())

    def off(self, line: int, col: int) -> int:
        return self.starts[line - 1] + col

    def line_of(self, off: int) -> int:
        lo, hi = 0, len(self.starts) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self.starts[mid] <= off:
                lo = mid
            else:
                hi = mid - 1
        return lo + 1

    def line(self, n: int) -> str:
        s = self.starts[n - 1]
        e = self.starts[n] if n < len(self.starts) else len(self.text)
        return self.text[s:e]

    def line_body(self, n: int) -> str:
        return self.line(n).rstrip("\r\n")


def indent_of(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t"))]


def skip_to(text: str, i: int, target: str) -> int:
    """Index of `target` at/after i, skipping only whitespace, comments and
    backslash-newlines; anything else before `target` raises ValueError (the caller
    then refuses the edit instead of writing into the wrong place)."""
    n = len(text)
    while i < n:
        ch = text[i]
        if ch == target:
            return i
        if ch == "#":
            while i < n and text[i] not in "\r\n":
                i += 1
            continue
        if ch in " \t\f\r\n" or (ch == "\\" and i + 1 < n and text[i + 1] in "\r\n"):
            i += 1
            continue
        raise ValueError(f"{target!r} expected at offset {i}, found {ch!r}")
    raise ValueError(f"{target!r} not found")


def skip_rpar(text: str, i: int, node: object) -> int:
    """Offset just after the closing parentheses of `node` (an expression whose
    LibCST position excludes its own ``(``...``)``), starting at its end offset `i`."""
    for _ in getattr(node, "rpar", ()) or ():
        i = skip_to(text, i, ")") + 1
    return i


def string_interior_lines(text: str) -> set[int]:
    """Lines that start inside a multi-line string (must not be re-indented)."""
    inside: set[int] = set()
    fstack: list[int] = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            name = tokenize.tok_name.get(tok.type, "")
            if name == "FSTRING_START":
                fstack.append(tok.start[0])
            elif name == "FSTRING_END" and fstack:
                a = fstack.pop()
                inside.update(range(a + 1, tok.end[0] + 1))
            elif tok.type == tokenize.STRING and tok.end[0] > tok.start[0]:
                inside.update(range(tok.start[0] + 1, tok.end[0] + 1))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass
    return inside


def comment_lines(indent: str, text: str) -> list[str]:
    """`# text` at `indent`, wrapped at word boundaries to stay within COMMENT_LIMIT
    columns (a single word longer than that stays whole)."""
    width = max(COMMENT_LIMIT - len(indent.expandtabs(8)) - 2, 40)
    parts = textwrap.wrap(text, width, break_long_words=False, break_on_hyphens=False)
    return [f"{indent}# {part}" for part in parts] or [f"{indent}#"]
