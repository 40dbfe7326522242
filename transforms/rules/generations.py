"""The generations of the upstream linter the tool knows, and the tool's prediction of what a
generation's linter prints for a module.

`GENERATIONS` maps each name (what `--rules` and `[tool.decouple] rules` say) to its
`Generation`, oldest first; `NEWEST` is the one applied when the checkout has no linter.
`lint_module(facts, generation)` applies the generation to a module the way its linter does
(missing/invalid labels, duplicates where that generation reports them): the linter gate
compares it with the real linter's output.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from transforms.core.facts import ModuleFacts
from transforms.rules.gen1 import GEN1
from transforms.rules.gen2 import GEN2
from transforms.rules.registry import Generation

__all__ = ["GENERATIONS", "NEWEST", "LinterMessage", "generation", "lint_module"]

GENERATIONS: Mapping[str, Generation] = {g.name: g for g in (GEN1, GEN2)}
NEWEST: str = GEN2.name


def generation(name: str) -> Generation:
    """The generation called `name`; ValueError for a name the tool does not know."""
    try:
        return GENERATIONS[name]
    except KeyError:
        raise ValueError(f"unknown rules generation {name!r}: expected one of {', '.join(GENERATIONS)}") from None


@dataclass(frozen=True)
class LinterMessage:
    """What the linter reports, reduced to what can be compared: name (with brackets), line."""

    name: str
    line: int
    cls: str = ""


def lint_module(facts: ModuleFacts, gen: Generation) -> list[LinterMessage]:
    """The error messages `gen`'s linter prints for a module (that parses), as the tool predicts them."""
    out: list[LinterMessage] = []
    if gen.reports_duplicates:
        for name, lines in facts.duplicate_classes:
            out += [LinterMessage("[duplicate_class]", line, name) for line in lines[1:]]
        for name, lines in facts.duplicate_instantiations:
            out += [LinterMessage("[duplicate_instantiation]", line, name) for line in lines[1:]]
    for cls in facts.classes:
        label = cls.label
        if label is None or not label.valid:
            out.append(LinterMessage("[hw_classification]", cls.line, cls.name))
            continue
        out += [LinterMessage(f"[{v.rule}]", v.line, cls.name) for v in gen.check(cls, label.member or "")]
    return sorted(out, key=lambda m: (m.line, m.name))
