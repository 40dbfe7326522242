"""Counted nouns in what the tool prints and writes: `1 file`, `2 files`, never `2 file(s)`.

The one place the rule lives. It sits at the bottom floor because every floor above it prints
counts (the transforms' findings, the engine's warnings, the A/B runner, the reports); English
only: the reports' other languages count without a plural.
"""

from __future__ import annotations


def noun(n: int, one: str, many: str | None = None) -> str:
    """The noun for `n` things: `one` for exactly one, else `many` (default `one` + s)."""
    return one if n == 1 else many or one + "s"


def plural(n: int, one: str, many: str | None = None) -> str:
    """`1 file`, `2 files`, `0 files` (`many`: the plural when it is not `one` + s)."""
    return f"{n} {noun(n, one, many)}"
