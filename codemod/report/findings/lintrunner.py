"""Lint messages: lintrunner's LintMessage JSON lines, one per line (and the plain
text lines the GitHub and SARIF views share the stream with).

PyTorch's lint front end shows these next to its own test linter, and applies a
message's `replacement` as the autofix (the upstream linter offers none: its
original/replacement are always null).

Severities follow the upstream linter, which reports every rule violation as an
`error`: a test class without a valid label (the file the autofix edits, a class
left for manual work, an invalid label), a label that breaks its value's rules
(forced, or existing), a duplicate class or instantiation where the generation of
its rules reports them (the finding is an error then). The tool's own
judgement beyond the linter's letter (a valid label the inference disagrees
with, torch.load findings) keeps the finding's own severity.

Upstream's linter skips the files its allowlist names, silently. `decouple lint` is its
neighbour: by default such a file gets one `advice` instead, saying what `decouple
refactor` would do with it, and no autofix (`allowlisted_as_upstream`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator

from codemod.engine.result import CHANGED, FAILED, FileResult, Mode, RunResult
from codemod.util.lintmessage import LintMessage, LintSeverity
from transforms.core.base import Finding, Severity

CODE = "DECOUPLE"


# A finding's own severity -> lintrunner's.
SEVERITY = {
    Severity.ERROR: LintSeverity.ERROR,
    Severity.WARNING: LintSeverity.WARNING,
    Severity.INFO: LintSeverity.ADVICE,
}
# Findings that describe an edit the replacement makes.
_EDITS = ("hw/label", "hw/forced", "torch-load/weights-only-false", "torch-load/safe-globals", "torch-load/fallback")
# Findings the upstream linter itself reports (as errors) on the file as it is.
_UPSTREAM_ERRORS = frozenset(
    {
        "hw/needs-manual",
        "hw/invalid-label",
        "hw/refused",
        "hw/forced",
        "engine/no-autofix",
    }
)  # a file that needs labels lintrunner cannot fix


def severity(finding: Finding) -> LintSeverity:
    """The lintrunner severity of a finding: `error` wherever the upstream linter says error."""
    if finding.rule in _UPSTREAM_ERRORS or (finding.rule.startswith("hw/already") and finding.data.get("violations")):
        return LintSeverity.ERROR
    return SEVERITY[finding.severity]


def _message(
    path: str,
    line: int | None,
    severity: LintSeverity,
    name: str,
    description: str,
    original: str | None = None,
    replacement: str | None = None,
) -> LintMessage:
    return {
        "path": path,
        "line": line,
        "char": None,
        "code": CODE,
        "severity": severity,
        "name": name,
        "original": original,
        "replacement": replacement,
        "description": description,
    }


def _rules_note(run: RunResult, rule: str) -> str:
    """The generation of the rules, for the messages that apply them (labels, the gate)."""
    if run.generation is None or not (rule.startswith(("hw/", "gate/")) or rule == "autofix"):
        return ""
    return f" [rules: {run.generation.name}]"


ALLOWLISTED = "allowlisted"  # the name of the one message an allowlisted file gets by default
_LABELS = ("hw/label", "hw/forced")


def refactor_would(f: FileResult) -> str:
    """What `decouple refactor` would do with the file, after the verb: from the engine's own
    result of it (doable is what a refactor batch picks)."""
    if f.status == FAILED:
        return f"skip it: {f.reason}"
    if not f.doable:
        problems = [x.message for x in f.findings if x.severity != Severity.INFO]
        first = problems[0] if problems else "the linter would still reject it"
        more = f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""
        return f"skip it, for manual work: {first}{more}"
    labels = [f"{x.cls} as {x.data.get('value')}" for x in f.findings if x.rule in _LABELS]
    if labels:
        return f"label {', '.join(labels)} and remove its allowlist entry"
    if f.status == CHANGED:
        return "edit it and remove its allowlist entry"
    return GRADUATE_ONLY


GRADUATE_ONLY = "remove its allowlist entry and nothing else: the linter accepts the file as it is"


def _allowlisted(run: RunResult, f: FileResult) -> LintMessage:
    would = refactor_would(f)
    show = "" if would == GRADUATE_ONLY else "; `decouple lint --include-allowlisted` shows the work in it"
    description = (
        f"on the allowlist, which the upstream linter skips; `decouple refactor` would {would}{show}"
        + _rules_note(run, "autofix")
    )
    return _message(f.path, None, LintSeverity.ADVICE, ALLOWLISTED, description)


def messages(run: RunResult, allowlisted_as_upstream: bool = False) -> Iterator[LintMessage]:
    """`allowlisted_as_upstream`: a file the run's allowlist names (RunResult.on_allowlist) gets
    one advice, as upstream's linter skips it, instead of its messages."""
    listed = set(run.on_allowlist) if allowlisted_as_upstream else set()
    for f in run.files:
        if f.path in listed:
            yield _allowlisted(run, f)
            continue
        if f.status == FAILED:
            yield _message(f.path, None, LintSeverity.ERROR, "input-error", f.reason)
            continue
        # lint mode keeps the texts (the autofix); a file it cannot give one for says so itself
        if f.replacement is not None or (f.status == CHANGED and run.mode != Mode.LINT):
            edits = [x for x in f.findings if x.rule in _EDITS]
            first = min((x.line for x in edits), default=None)
            what = "; ".join(x.message for x in edits) or "edits this file"
            # an unlabelled test class is the upstream linter's [hw_classification] error
            level = LintSeverity.ERROR if any(x.rule.startswith("hw/") for x in edits) else LintSeverity.WARNING
            description = f"decouple apply: {what}" + _rules_note(run, "autofix")
            yield _message(f.path, first, level, "autofix", description, f.original, f.replacement)
        for x in f.findings:
            if x.severity != Severity.INFO:
                detail = f"{x.message} (suggested: {x.fix})" if x.fix and x.data.get("patterns") else x.message
                yield _message(f.path, x.line, severity(x), x.rule, detail + _rules_note(run, x.rule))


def render(lint_messages: Iterable[LintMessage]) -> str:
    return "".join(json.dumps(m) + "\n" for m in lint_messages)


def render_text(lint_messages: Iterable[LintMessage]) -> str:
    """`path:line: severity: [name] description`, one message a line (pre-commit, terminals)."""
    out = []
    for m in lint_messages:
        where = f"{m['path']}:{m['line']}" if m["line"] else m["path"]
        out.append(f"{where}: {m['severity']}: [{m['name']}] {m['description']}\n")
    return "".join(out)
