"""Markdown text that stays what it says: a code span or fence that survives any backticks, a table
cell that survives newlines and pipes. Both Markdown reports (A/B and survey) and the PR body use them."""

from __future__ import annotations

import re


def one_line(s: str, joiner: str = " ") -> str:
    """`s` with every line break replaced by `joiner`."""
    return re.sub(r"\r\n|\r|\n", joiner, s)


def md_code(s: str) -> str:
    """A Markdown code span that survives backticks and newlines."""
    s = one_line(s, " ↵ ")
    if not s:
        return ""
    longest = max((len(run) for run in re.findall(r"`+", s)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if (s[0] == "`" or s[-1] == "`" or (s[0] == " " and s[-1] == " " and s.strip())) else ""
    return f"{fence}{pad}{s}{pad}{fence}"


def md_cell(s: str) -> str:
    """Make already-formatted Markdown safe inside a table cell."""
    return one_line(s, "<br>").replace("|", "\\|")


def md_fence(body: str, info: str = "") -> str:
    """A fenced code block whose fence is longer than any backtick run inside."""
    body = body.replace("\r\n", "\n").replace("\r", "\n").rstrip("\n")
    longest = max((len(run) for run in re.findall(r"`+", body)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{info}\n{body}\n{fence}"
