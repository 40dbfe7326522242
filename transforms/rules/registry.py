"""What a generation of the upstream linter's rules is made of: a registry of small named
rules, each with its valid and invalid examples, and the facts about the linter around them.

A rule is a small pure function of a `TestClassFacts` and the value being checked; it
returns `Violation`s named as the linter prints them.  A `RuleCheck` is such a function with
its examples (Fixit style): modules in which the class `TestFoo`, labelled with the given
value, passes or breaks exactly this rule.  A generation's `RuleSet` registers checks for the
values it applies them to (`add`), keeping the examples of those values; the test-suite runs
every example, so a rule and its documentation cannot drift apart.  `Generation` adds what the
linter does besides its rules (which files it judges, duplicates, unparseable files,
`--regenerate`), so the tool can predict it and recognise it in a checkout (`identify.py`).
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from transforms.core.facts import TestClassFacts
from transforms.core.members import MEMBERS, Member, normalise_member

__all__ = ["Check", "Example", "FileSelection", "Generation", "Rule", "RuleCheck", "RuleSet", "Violation"]


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
class RuleCheck:
    """A rule's check and its examples, for any value a generation registers it for."""

    name: str  # as the linter prints it, without brackets
    check: Check
    valid: tuple[Example, ...]
    invalid: tuple[Example, ...]


@dataclass(frozen=True, kw_only=True)
class Rule:
    name: str
    values: tuple[Member, ...]
    check: Check
    valid: tuple[Example, ...]
    invalid: tuple[Example, ...]


class RuleSet:
    """The rules of one generation of the linter, in registration order (the order the
    linter reports them in)."""

    def __init__(self) -> None:
        self.rules: list[Rule] = []
        self._by_value: Mapping[Member, tuple[Rule, ...]] | None = None  # by_value(), once asked

    def add(self, rule: RuleCheck, *values: Member) -> None:
        """Register `rule` for `values`, with its examples for those values."""
        self._by_value = None
        self.rules.append(
            Rule(
                name=rule.name,
                values=values,
                check=rule.check,
                valid=tuple(e for e in rule.valid if e.value in values),
                invalid=tuple(e for e in rule.invalid if e.value in values),
            )
        )

    def by_value(self) -> Mapping[Member, tuple[Rule, ...]]:
        """value -> its rules, in registration order. Listed once (until a rule is added): check()
        asks for the six values of every class."""
        if self._by_value is None:
            self._by_value = MappingProxyType({v: tuple(r for r in self.rules if v in r.values) for v in MEMBERS})
        return self._by_value

    def check(self, cls: TestClassFacts, value: str) -> list[Violation]:
        """Every rule of `value` that `cls` breaks (empty: the linter accepts the label)."""
        member = value if isinstance(value, Member) else normalise_member(value)
        found: list[Violation] = []
        for r in self.by_value()[member]:
            found.extend(r.check(cls, member))
        return found


@dataclass(frozen=True, kw_only=True)
class FileSelection:
    """Which files the linter judges when it is named them.

    `include` None: every file whose basename is `test_*.py` or `*_test.py`, wherever it is
    (outside the repository too).  Else repository-relative `fnmatch` patterns (whose `*` also
    matches `/`; a pattern is also tried with its `**/` removed), minus `exclude_prefixes`;
    anything outside the repository is skipped."""

    include: tuple[str, ...] | None
    exclude_prefixes: tuple[str, ...] = ()

    def judges(self, rel: str, inside: bool = True) -> tuple[bool, str]:
        """(judged?, why not) for a repository-relative POSIX path (`inside` False: a path outside
        the repository, of which only the name counts)."""
        if self.include is None:
            name = os.path.basename(rel)
            ok = name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py"))
            return ok, "" if ok else "its name is neither test_*.py nor *_test.py"
        if not inside:
            return False, "outside the linter's repository"
        for prefix in self.exclude_prefixes:
            if rel.startswith(prefix):
                return False, f"under {prefix}, which the linter excludes"
        for pattern in self.include:
            if fnmatch.fnmatchcase(rel, pattern) or fnmatch.fnmatchcase(rel, pattern.replace("**/", "")):
                return True, ""
        return False, f"matches none of the linter's patterns {', '.join(self.include)}"


@dataclass(frozen=True, kw_only=True)
class Generation:
    """One generation of the upstream test linter: its rules and what it does around them."""

    name: str  # what --rules and [tool.decouple] rules call it
    summary: str  # one line for the summary and the docs
    rules: RuleSet
    files: FileSelection
    reports_duplicates: bool  # [duplicate_class] / [duplicate_instantiation]
    reports_unparseable: bool  # [parse_error] (else: only a log line on stderr, no message)
    regenerates: bool  # has --regenerate (rewrites the allowlist from its own results)
    forbidden_decorators: frozenset[str]  # ACCELERATOR's [decorator] rule
    accelerator_modules: frozenset[str] = frozenset()  # GENERIC's [accelerator_availability] rule

    def check(self, cls: TestClassFacts, value: str) -> list[Violation]:
        return self.rules.check(cls, value)

    def rule_table(self) -> Mapping[Member, frozenset[str]]:
        """value -> the names of its rules."""
        return {value: frozenset(r.name for r in rules) for value, rules in self.rules.by_value().items()}
