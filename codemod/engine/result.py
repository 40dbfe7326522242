"""The codemod result model: what happened to every file, as typed dataclasses.

The text table, the summary, JSON and lintrunner output are all views of this.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

from transforms.core.base import Finding
from transforms.core.strenum import StrEnum

SCHEMA_VERSION = 1


class Mode(StrEnum):
    """What a run does with the files it looks at."""

    CLASSIFY = "classify"  # look only
    CHECK = "check"  # write nothing; exit 1 if a change is needed
    DIFF = "diff"  # print the unified diffs, write nothing
    LINT = "lint"  # check, keeping both texts (lintrunner's original/replacement)
    WRITE = "write"


class FileStatus(StrEnum):
    """The bucket a file lands in: exactly one, worst first."""

    FAILED = "failed"  # could not be processed: unreadable, undecodable, syntax error, internal error
    SKIPPED = "skipped"  # nothing to look at (no test classes, excluded)
    CHANGED = "changed"  # an edit was made (or would be, under --diff/--check)
    NEEDS_MANUAL = "needs-manual"  # no edit, but some class needs a human
    ALREADY = "already"  # every test class already carries a valid label
    UNCHANGED = "unchanged"  # looked at, nothing to do (e.g. no torch.load call to edit)


# The members by their short names, as `re` and `signal` export theirs.
FAILED = FileStatus.FAILED
SKIPPED = FileStatus.SKIPPED
CHANGED = FileStatus.CHANGED
NEEDS_MANUAL = FileStatus.NEEDS_MANUAL
ALREADY = FileStatus.ALREADY
UNCHANGED = FileStatus.UNCHANGED
STATUSES = (CHANGED, ALREADY, UNCHANGED, NEEDS_MANUAL, SKIPPED, FAILED)  # the summary's order


@dataclass(kw_only=True)
class FileResult:
    path: str
    status: FileStatus
    reason: str = ""  # why skipped / failed
    findings: list[Finding] = field(default_factory=list)
    manual: int = 0  # classes/calls that need manual work
    diff: str = ""  # unified diff when changed
    written: bool = False
    fully_classified: bool = False  # the linter will accept the file afterwards (graduation)
    # Whole texts, kept only in lint mode (lintrunner's original/replacement); not in the JSON.
    original: str | None = None
    replacement: str | None = None

    @property
    def doable(self) -> bool:
        """The file ends up linter-clean with no human: labelled (or labelled already), every
        class's label accepted, nothing left for manual work. What a refactor batch picks and
        what the survey calls ready."""
        return self.status in (CHANGED, ALREADY) and self.fully_classified and not self.manual

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        del data["original"], data["replacement"]
        data["findings"] = [f.to_json() for f in self.findings]
        return data


@dataclass(frozen=True, kw_only=True)
class RulesChoice:
    """Which generation of the linter's rules a run applied, and why (codemod/engine/rules_choice.py)."""

    name: str  # the generation applied (transforms.rules.generations)
    setting: str  # auto, or the generation asked for (--rules, [tool.decouple] rules)
    linters: tuple[str, ...] = ()  # auto: the checkout linters it was read from (none: the newest)
    differences: tuple[str, ...] = ()  # how those linters differ from `name`, the nearest known

    @property
    def exact(self) -> bool:
        return not self.differences

    def to_json(self) -> dict[str, Any]:
        return asdict(self) | {"exact": self.exact}


@dataclass(kw_only=True)
class GateSummary:
    """What the linter gate (codemod/engine/linter_gate.py) judged in one run."""

    setting: str  # auto | PATH
    linters: list[str]  # the linter files that ran
    checked: int = 0  # files the linter judged
    agree: int = 0  # ... whose messages are the ones the tool predicted
    disagree: int = 0
    rejected: list[str] = field(default_factory=list)  # files not written (nor graduated)
    # Files the linter did not judge (outside its repository or its file patterns, unreadable to
    # it): never counted as agreement, not written, not graduated.
    not_judged: list[str] = field(default_factory=list)
    unjudged: int = 0  # files no linter was found for

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(kw_only=True)
class RunResult:
    mode: Mode
    files: list[FileResult] = field(default_factory=list)
    graduated: list[str] = field(default_factory=list)  # allowlist entries removed
    stale: list[str] = field(default_factory=list)  # allowlist entries whose file is gone (the warning names a few)
    warnings: list[str] = field(default_factory=list)
    strict: bool = False  # --strict: manual work fails --check/--diff too
    linter_gate: GateSummary | None = None  # None when the gate is off
    generation: RulesChoice | None = None  # the generation of the linter's rules applied (None: no rules applied)

    def count(self) -> Counter[FileStatus]:
        return Counter(f.status for f in self.files)

    def rule_counts(self) -> Counter[str]:
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
        if self.mode in (Mode.CHECK, Mode.DIFF, Mode.LINT) and counts[CHANGED]:
            return 1
        if self.manual and (self.strict or self.mode not in (Mode.CHECK, Mode.DIFF)):
            return 1
        return 0

    def to_json(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "mode": self.mode,
            "summary": {s: self.count()[s] for s in STATUSES} | {"manual": self.manual},
            "rules": dict(sorted(self.rule_counts().items())),
            "graduated": self.graduated,
            "stale": self.stale,
            "warnings": self.warnings,
            "linter_gate": self.linter_gate.to_json() if self.linter_gate is not None else None,
            "generation": self.generation.to_json() if self.generation is not None else None,
            "files": [f.to_json() for f in self.files],
        }
