"""The hw_classification transform: analyse, classify, edit, check.

Composition only: the facts come from `core.analysis`, the decisions from the rule
table in `classify` (refined by `diagnosis`), the byte-minimal edits from `hw_edit`.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import ClassVar

# By module: the engine's tests swap in a faulty editor to see its output refused.
import transforms.label.hw_edit as hw_edit
from transforms.core.analysis import analyse, labels_of_test_classes, may_have_test_class
from transforms.core.base import Severity, TransformResult
from transforms.core.facts import ModuleFacts
from transforms.core.members import Member
from transforms.diagnosis.diagnose import diagnose
from transforms.label.classify import (
    Status,
    decide,
    decision_findings,
    keep_deviation_advice,
    module_findings,
    refine,
)
from transforms.rules.generations import NEWEST, generation

# Decisions that leave a class for a human.
_MANUAL = {Status.NEEDS_MANUAL, Status.REFUSED, Status.INVALID_LABEL}


class LabelCheckError(Exception):
    """The edited source does not carry exactly the intended labels."""


@dataclass(frozen=True)
class HwLabel:
    name: ClassVar[str] = "hw-label"
    reads_path: ClassVar[bool] = False

    classification: str | None = None  # one value for every unlabelled class
    per_class: tuple[tuple[str, str], ...] = ()  # (class name, value) overrides
    force: bool = False  # apply overrides that break a rule
    rules: str = NEWEST  # the generation of the linter's rules (transforms.rules.generations)

    def triage(self, text: str) -> bool:
        return may_have_test_class(text)

    def run(self, text: str, tree: ast.Module, path: str | None = None) -> TransformResult:
        gen = generation(self.rules)
        facts = analyse(tree, text)
        findings = module_findings(facts, gen)
        overrides = dict(self.per_class)
        labels: dict[int, Member] = {}
        # A duplicate class or instantiation the linter reports fails it whatever the labels: a human's job.
        manual = sum(1 for f in findings if f.severity == Severity.ERROR)
        # The advice read from the facts alone is left out here: the classes left to a human or
        # forced get advice from the method bodies too (the diagnosis), which replaces it.
        decisions = [
            decide(cls, gen, overrides.get(cls.name, self.classification), self.force, advice=False)
            for cls in facts.classes
        ]
        advised = {
            cls.line for cls, d in zip(facts.classes, decisions, strict=True) if d.status in _MANUAL | {Status.FORCED}
        }
        precise = {d.line: d for d in diagnose(tree, text, gen, facts, only=advised)} if advised else {}
        for cls, decision in zip(facts.classes, decisions, strict=True):
            if cls.line in advised:
                decision = keep_deviation_advice(refine(decision, precise[cls.line]))
            elif decision.inferred is None:  # it may carry the inference's advice: read from the facts
                decision = decide(cls, gen, overrides.get(cls.name, self.classification), self.force)
            findings.extend(decision_findings(decision))
            if decision.edits and decision.value is not None:
                labels[cls.line] = decision.value
            elif decision.status in _MANUAL or (
                decision.status in (Status.ALREADY, Status.ALREADY_DISAGREES) and decision.violations
            ):
                # An existing label that breaks its own rules fails the linter all the same.
                manual += 1
        if not labels:
            return TransformResult(text, findings, manual)
        new_text = hw_edit.add_labels(text, tree, labels)
        new_tree = _check_labels(facts, labels, new_text)
        return TransformResult(new_text, findings, manual, tree=new_tree)

    def strip(self, tree: ast.Module) -> ast.Module:
        return hw_edit.strip_hw_edits(tree)


def _check_labels(before: ModuleFacts, labels: dict[int, Member], new_text: str) -> ast.Module:
    """Every intended class now has its label; every other class kept the one it had. Returns the
    new text's tree."""
    expected = [
        (c.name, str(labels[c.line]) if c.line in labels else (c.label.member if c.label else None))
        for c in before.classes
    ]
    new_tree = ast.parse(new_text)
    found = labels_of_test_classes(new_tree)
    if found != expected:
        raise LabelCheckError(f"labels after the edit {found} differ from the intended {expected}")
    return new_tree
