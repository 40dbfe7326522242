"""What a generation of the upstream linter's rules is made of: a registry of small named
rules, each with its valid and invalid examples.

A rule is a small pure function of a `TestClassFacts` and the value being checked; it
returns `Violation`s named as the linter prints them.  `RuleSet.rule(...)` registers it for
the values it applies to, together with valid and invalid examples (Fixit style): modules
in which the class `TestFoo`, labelled with the given value, passes or breaks exactly this
rule.  The test-suite runs every example, so a rule and its documentation cannot drift
apart.  Each generation of the linter the tool knows is one `RuleSet` (`linter.py` holds
the one it follows).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from transforms.core.facts import TestClassFacts
from transforms.core.members import MEMBERS, Member, normalise_member

__all__ = ["Check", "Example", "Rule", "RuleSet", "Violation"]


@dataclass(frozen=True)
class Violation:
    """One broken linter rule: `value` is the classification, `rule` the linter's name."""

    value: Member
    rule: str
    message: str
    line: int

    @property
    def code(self) -> str:
        """The linter's spelling: `ACCELERATOR[decorator]`."""
        return f"{self.value}[{self.rule}]"


@dataclass(frozen=True)
class Example:
    """A module in which `TestFoo`, labelled `value`, passes (valid) or breaks (invalid) a rule."""

    value: Member
    source: str


# A rule's check: the violations of `value`'s rule by the class (empty: it passes).
Check = Callable[[TestClassFacts, Member], list[Violation]]


@dataclass(frozen=True, kw_only=True)
class Rule:
    name: str  # as the linter prints it, without brackets
    values: tuple[Member, ...]
    check: Check
    valid: tuple[Example, ...]
    invalid: tuple[Example, ...]


class RuleSet:
    """The rules of one generation of the linter, in registration order (the order the
    linter reports them in)."""

    def __init__(self) -> None:
        self.rules: list[Rule] = []

    def rule(
        self, name: str, *values: str, valid: tuple[Example, ...], invalid: tuple[Example, ...]
    ) -> Callable[[Check], Check]:
        """Register a rule function for the values named, with its examples."""

        def register(fn: Check) -> Check:
            self.rules.append(
                Rule(name=name, values=tuple(map(Member, values)), check=fn, valid=valid, invalid=invalid)
            )
            return fn

        return register

    def by_value(self) -> Mapping[Member, tuple[Rule, ...]]:
        """value -> its rules, in registration order."""
        return {value: tuple(r for r in self.rules if value in r.values) for value in MEMBERS}

    def check(self, cls: TestClassFacts, value: str) -> list[Violation]:
        """Every rule of `value` that `cls` breaks (empty: the linter accepts the label)."""
        member = normalise_member(value)
        found: list[Violation] = []
        for r in self.rules:
            if member in r.values:
                found.extend(r.check(cls, member))
        return found
