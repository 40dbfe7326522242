"""SARIF 2.1.0: the lint messages as one run of one tool, for code-scanning uploads.

Paths inside the working directory are written relative to the `%SRCROOT%` base
(the working directory, given as an absolute file URI); others as absolute file URIs.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any
from urllib.parse import quote

from codemod.util.lintmessage import LintMessage, LintSeverity

SARIF_VERSION = "2.1.0"
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
# lintrunner severities -> SARIF levels
_LEVEL = {
    LintSeverity.ERROR: "error",
    LintSeverity.WARNING: "warning",
    LintSeverity.ADVICE: "note",
    LintSeverity.DISABLED: "none",
}


def _location(path: str) -> dict[str, Any]:
    full = Path(os.path.abspath(path))
    rel = os.path.relpath(full)
    if rel.startswith(".."):
        return {"uri": full.as_uri()}
    return {"uri": quote(Path(rel).as_posix()), "uriBaseId": "%SRCROOT%"}


def _tool_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("test-decouple")
    except PackageNotFoundError:
        return "0+unknown"


def render(messages: Iterable[LintMessage]) -> dict[str, Any]:
    rules: dict[str, int] = {}
    results = []
    for m in messages:
        index = rules.setdefault(m["name"], len(rules))
        physical: dict[str, Any] = {"artifactLocation": _location(m["path"])}
        line = m.get("line")
        if isinstance(line, int) and line >= 1:
            physical["region"] = {"startLine": line}
        results.append(
            {
                "ruleId": m["name"],
                "ruleIndex": index,
                "level": _LEVEL[m["severity"]],
                "message": {"text": m["description"]},
                "locations": [{"physicalLocation": physical}],
            }
        )
    return {
        "$schema": SARIF_SCHEMA,
        "version": SARIF_VERSION,
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "decouple",
                        "semanticVersion": _tool_version(),
                        "rules": [{"id": name} for name in rules],
                    }
                },
                "originalUriBaseIds": {"%SRCROOT%": {"uri": Path.cwd().as_uri() + "/"}},
                "columnKind": "unicodeCodePoints",
                "results": results,
            }
        ],
    }
