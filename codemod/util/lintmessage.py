"""lintrunner's LintMessage: what the upstream test linter prints (one JSON object a line) and
what `decouple lint` writes; the GitHub and SARIF views render the same messages."""

from __future__ import annotations

from typing import TypedDict

from transforms.core.strenum import StrEnum


class LintSeverity(StrEnum):
    """lintrunner's severities."""

    ERROR = "error"
    WARNING = "warning"
    ADVICE = "advice"
    DISABLED = "disabled"


class LintMessage(TypedDict):
    """lintrunner's LintMessage, the unit every lint view (text, GitHub, SARIF) renders."""

    path: str
    line: int | None
    char: int | None
    code: str
    severity: LintSeverity
    name: str
    original: str | None
    replacement: str | None
    description: str
