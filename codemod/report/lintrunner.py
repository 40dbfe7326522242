"""lintrunner's LintMessage JSON lines, one per line.

PyTorch's lint front end shows these next to its own test linter, and applies a
message's `replacement` as the autofix (the upstream linter offers none: its
original/replacement are always null).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from codemod.result import FAILED, RunResult

CODE = "DECOUPLE"
SEVERITY = {"error": "error", "warning": "warning", "info": "advice"}
# Findings that describe an edit the replacement makes.
_EDITS = ("hw/label", "hw/forced", "torch-load/weights-only-false", "torch-load/safe-globals", "torch-load/fallback")


def _message(path: str, line: int | None, severity: str, name: str, description: str,
             original: str | None = None, replacement: str | None = None) -> dict[str, Any]:
    return {"path": path, "line": line, "char": None, "code": CODE, "severity": severity, "name": name,
            "original": original, "replacement": replacement, "description": description}


def messages(run: RunResult) -> Iterator[dict[str, Any]]:
    for f in run.files:
        if f.status == FAILED:
            yield _message(f.path, None, "error", "input-error", f.reason)
            continue
        if f.replacement is not None:
            edits = [x for x in f.findings if x.rule in _EDITS]
            first = min((x.line for x in edits), default=None)
            what = "; ".join(x.message for x in edits) or "edits this file"
            yield _message(f.path, first, "warning", "autofix", f"decouple apply: {what}",
                           f.original, f.replacement)
        for x in f.findings:
            if x.severity != "info":
                detail = f"{x.message} (suggested: {x.fix})" if x.fix and x.data.get("patterns") else x.message
                yield _message(f.path, x.line, SEVERITY[x.severity], x.rule, detail)


def render(run: RunResult) -> str:
    return "".join(json.dumps(m) + "\n" for m in messages(run))
