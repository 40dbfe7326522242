"""Restructuring advice: what fits when a label alone cannot satisfy the rules.

The advice text and the choice of the transforms that fit a class live with the
restructuring transforms (`transforms/diagnosis.py`: `ADVICE`, `diagnose_facts`);
this module is the rules' view of them, plus the one piece of advice only a
deliberate deviation calls for (moving an instantiation the linter cannot see).
"""

from __future__ import annotations

from collections.abc import Mapping

from transforms import diagnosis
from transforms.facts import TestClassFacts

__all__ = ["PATTERNS", "pick_patterns"]

PATTERNS: Mapping[str, str] = {
    **diagnosis.ADVICE,
    "move-instantiation": (
        "move the instantiate_device_type_tests call out of the try/except* (or match) block, "
        "e.g. to module level (the linter does not look inside)"
    ),
}


def pick_patterns(cls: TestClassFacts, violations: Mapping[str, tuple[object, ...]]) -> tuple[str, ...]:
    """The restructuring transforms that fit `cls`, from its facts alone (hw_label refines them
    with the method bodies, see diagnosis.refine)."""
    return diagnosis.diagnose_facts(cls).advice
