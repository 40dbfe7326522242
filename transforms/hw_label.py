"""The hw_classification transform: analyse, classify, edit, check.

Composition only: the facts come from `analysis`, the decisions from the rule
table in `classify`, the byte-minimal edits from `hw_edit`.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import ClassVar

from transforms import analysis, classify, hw_edit
from transforms.base import TransformResult

COMMON_UTILS = "torch.testing._internal.common_utils"
ENUM = "HardwareClassification"
ATTRIBUTE = "hw_classification"

# Decisions that leave a class for a human.
_MANUAL = {"needs-manual", "refused", "invalid-label"}


class LabelCheckError(Exception):
    """The edited source does not carry exactly the intended labels."""


@dataclass(frozen=True)
class HwLabel:
    name: ClassVar[str] = "hw-label"

    classification: str | None = None          # one value for every unlabelled class
    per_class: tuple[tuple[str, str], ...] = ()  # (class name, value) overrides
    force: bool = False                          # apply overrides that break a rule

    def triage(self, text: str) -> bool:
        return analysis.may_have_test_class(text)

    def run(self, text: str, tree: ast.Module, path: str | None = None) -> TransformResult:
        facts = analysis.analyse(tree, text)
        findings = classify.module_findings(facts)
        overrides = dict(self.per_class)
        labels: dict[int, str] = {}
        manual = 0
        for cls in facts.classes:
            decision = classify.decide(cls, overrides.get(cls.name, self.classification), self.force)
            findings.extend(classify.decision_findings(decision))
            if decision.status in ("label", "forced"):
                labels[cls.line] = decision.value
            elif decision.status in _MANUAL:
                manual += 1
        if not labels:
            return TransformResult(text, findings, manual)
        new_text = hw_edit.add_labels(text, tree, labels, need_import=not facts.has_hw_import)
        _check_labels(facts, labels, new_text)
        return TransformResult(new_text, findings, manual)

    def strip(self, tree: ast.Module) -> ast.Module:
        """`tree` (modified in place) without hw_classification labels and the enum's import.

        Only statement lists are visited: labels and imports are statements, and a full
        `ast.walk` costs as much as the parse.
        """
        _strip_body(tree)
        return tree


def _strip_body(node: ast.AST) -> None:
    for attr in ("body", "orelse", "finalbody", "handlers", "cases"):
        stmts = getattr(node, attr, None)
        if not isinstance(stmts, list):
            continue
        kept = []
        for stmt in stmts:
            if isinstance(node, ast.ClassDef) and _is_label(stmt):
                continue
            if isinstance(stmt, ast.ImportFrom) and stmt.module == COMMON_UTILS and not stmt.level:
                stmt.names = [a for a in stmt.names if not (a.name == ENUM and a.asname is None)]
                if not stmt.names:
                    continue
            _strip_body(stmt)
            kept.append(stmt)
        setattr(node, attr, kept if kept or attr != "body" else [ast.Pass()])


def _is_label(stmt: ast.stmt) -> bool:
    if isinstance(stmt, ast.Assign):
        targets, value = stmt.targets, stmt.value
    elif isinstance(stmt, ast.AnnAssign):
        targets, value = [stmt.target], stmt.value
    else:
        return False
    return (
        len(targets) == 1
        and isinstance(targets[0], ast.Name)
        and targets[0].id == ATTRIBUTE
        and isinstance(value, ast.Attribute)
        and isinstance(value.value, ast.Name)
        and value.value.id == ENUM
    )


def _check_labels(before: analysis.ModuleFacts, labels: dict[int, str], new_text: str) -> None:
    """Every intended class now has its label; every other class kept the one it had."""
    expected = [
        (c.name, labels.get(c.line) or (c.label.member if c.label else None)) for c in before.classes
    ]
    after = analysis.analyse(ast.parse(new_text), new_text)
    found = [(c.name, c.label.member if c.label else None) for c in after.classes]
    if found != expected:
        raise LabelCheckError(f"labels after the edit {found} differ from the intended {expected}")
