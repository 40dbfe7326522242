"""The codemod result model: what happened to every file, as plain dataclasses.

The text table, the summary, JSON and lintrunner output are all views of this.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

from transforms.core.base import Finding

SCHEMA_VERSION = 1

# A file lands in exactly one bucket, worst first.
FAILED = "failed"  # could not be processed: unreadable, undecodable, syntax error, internal error
SKIPPED = "skipped"  # nothing to look at (no test classes, excluded)
CHANGED = "changed"  # an edit was made (or would be, under --diff/--check)
NEEDS_MANUAL = "needs-manual"  # no edit, but some class needs a human
ALREADY = "already"  # every test class already carries a valid label
UNCHANGED = "unchanged"  # looked at, nothing to do (e.g. no torch.load call to edit)
STATUSES = (CHANGED, ALREADY, UNCHANGED, NEEDS_MANUAL, SKIPPED, FAILED)


@dataclass
class FileResult:
    path: str
    status: str
    reason: str = ""  # why skipped / failed
    findings: list[Finding] = field(default_factory=list)
    manual: int = 0  # classes/calls that need manual work
    diff: str = ""  # unified diff when changed
    written: bool = False
    fully_classified: bool = False  # the linter will accept the file afterwards (graduation)
    # Whole texts, kept only in lint mode (lintrunner's original/replacement); not in the JSON.
    original: str | None = None
    replacement: str | None = None

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        del data["original"], data["replacement"]
        data["findings"] = [f.to_json() for f in self.findings]
        return data


@dataclass
class RunResult:
    mode: str  # classify | check | diff | lint | write
    files: list[FileResult] = field(default_factory=list)
    graduated: list[str] = field(default_factory=list)  # allowlist entries removed
    warnings: list[str] = field(default_factory=list)
    strict: bool = False  # --strict: manual work fails --check/--diff too
    # The linter gate's summary (codemod/linter_gate.py), None when the gate is off.
    linter_gate: dict[str, Any] | None = None

    def count(self) -> Counter:
        return Counter(f.status for f in self.files)

    def rule_counts(self) -> Counter:
        return Counter(x.rule for f in self.files for x in f.findings)

    @property
    def manual(self) -> int:
        return sum(f.manual for f in self.files)

    def exit_code(self) -> int:
        """0 done / nothing to do; 1 changes needed (diff/check) or manual work left (under
        check/diff only when strict: a CI gate on a partly migrated tree can pass);
        2 some file could not be processed."""
        counts = self.count()
        if counts[FAILED]:
            return 2
        if self.mode in ("check", "diff", "lint") and counts[CHANGED]:
            return 1
        if self.manual and (self.strict or self.mode not in ("check", "diff")):
            return 1
        return 0

    def to_json(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "mode": self.mode,
            "summary": {s: self.count()[s] for s in STATUSES} | {"manual": self.manual},
            "rules": dict(sorted(self.rule_counts().items())),
            "graduated": self.graduated,
            "warnings": self.warnings,
            "linter_gate": self.linter_gate,
            "files": [f.to_json() for f in self.files],
        }
