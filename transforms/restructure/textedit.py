"""Span edits on source text, addressed by `ast` positions (UTF-8 byte columns)."""

from __future__ import annotations

import ast
from collections.abc import Iterable, Sequence
from typing import Any

from transforms.core.source_lines import split_lines

SpanEdit = tuple[int, int, str]  # (start offset, end offset, replacement) in characters


class Lines:
    def __init__(self, text: str):
        self.text = text
        self.lines = split_lines(text)
        self.starts: list[int] = []
        pos = 0
        for line in self.lines:
            self.starts.append(pos)
            pos += len(line)
        self.starts.append(pos)

    def offset(self, lineno: int, col: int) -> int:
        """Character offset of (1-based line, UTF-8 byte column)."""
        if lineno > len(self.lines):
            return len(self.text)
        line = self.lines[lineno - 1]
        return self.starts[lineno - 1] + len(line.encode("utf-8")[:col].decode("utf-8", "replace"))

    def start(self, node: Any) -> int:  # any node with positions (stmt, expr, alias, keyword, ...)
        return self.offset(node.lineno, node.col_offset)

    def end(self, node: Any) -> int:
        return self.offset(node.end_lineno, node.end_col_offset)

    def segment(self, node: ast.AST) -> str:
        return self.text[self.start(node) : self.end(node)]

    def line_start(self, lineno: int) -> int:
        return self.starts[min(lineno - 1, len(self.lines))]


def apply_spans(text: str, edits: Iterable[SpanEdit]) -> str:
    ordered = sorted(edits, key=lambda e: (e[0], e[1]))
    out, pos = [], 0
    for start, end, new in ordered:
        if start < pos:
            raise ValueError("overlapping edits")
        out.append(text[pos:start])
        out.append(new)
        pos = end
    out.append(text[pos:])
    return "".join(out)


def quote_of(sample: str) -> str:
    """The quote a call's existing string literals use (double by default, as black)."""
    single, double = sample.count("'"), sample.count('"')
    return "'" if single > double else '"'


def literal(devices: Sequence[str], quote: str, as_tuple: bool = True) -> str:
    items = [f"{quote}{d}{quote}" for d in devices]
    if len(items) == 1 and not as_tuple:
        return items[0]
    return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
