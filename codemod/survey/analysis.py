"""One file's survey, read from the engine's results for it: the run with the transforms
`apply` would use (labels alone), the run with `--restructure auto` in front of them when
labels alone do not finish the file, and the torch.load planner's findings.

Readiness is the engine's own `FileResult.doable` (what a refactor batch picks), so the survey
and `refactor` cannot disagree on it; everything else here only says why.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import partial

from codemod.engine.result import CHANGED, FAILED, FileResult
from codemod.survey.model import ClassDecision, FileSurvey, ManualItem, SurveyStatus, TorchLoadFacts, Widening
from transforms.core.base import Finding, Severity
from transforms.label.classify import Status
from transforms.restructure import REGISTRY as RESTRUCTURE_REGISTRY
from transforms.restructure import widenings_from_findings
from transforms.torch_load.analysis.modes import LoadRule, Mode
from transforms.torch_load.analysis.triage import CENSUS_RULE

# The label transform's decisions, as finding rules; the ones after which a class carries a label.
CLASS_RULES = {f"hw/{s}": s for s in Status}
LABELLED = {Status.LABEL, Status.ALREADY, Status.ALREADY_DISAGREES, Status.FORCED}
# The gate's findings that keep a file from graduating: its linter rejects the output, or did not judge it.
GATE_BLOCKERS = ("gate/rejected", "gate/not-judged")

# What became of each torch.load call: the rule of its last finding.
_LOAD_EDITS = {LoadRule.SAFE_GLOBALS, LoadRule.WEIGHTS_ONLY_FALSE, LoadRule.FALLBACK}
_LOAD_LEFT = {LoadRule.SKIP_EXPLICIT, LoadRule.SKIP_PICKLE_MODULE, LoadRule.SKIP_STATE_DICT, LoadRule.SKIP_COVERED}
_LOAD_MANUAL = {
    LoadRule.SKIP_KWARGS,
    LoadRule.INVALID_GLOBAL,
    LoadRule.NO_DISCOVERY,
    LoadRule.UNRESOLVED,
    LoadRule.PARSE_ERROR,
}
# ... of which these are decided without discovery evidence when the file has none for the call.
_LOAD_UNDISCOVERED = {LoadRule.WEIGHTS_ONLY_FALSE, LoadRule.FALLBACK, LoadRule.NO_DISCOVERY}
_LOAD_RULES = {r.finding_rule: r for r in LoadRule}


def one_line(text: str) -> str:
    return " ".join(str(text).split())


def _class_message(f: Finding) -> str:
    return one_line(f.message).removeprefix(f"{f.cls}: ")


def class_decisions(fr: FileResult) -> tuple[ClassDecision, ...]:
    return tuple(
        ClassDecision(name=f.cls or "?", line=f.line, decision=CLASS_RULES[f.rule], value=f.data.get("value"))
        for f in fr.findings
        if f.rule in CLASS_RULES
    )


def _refusals(fr: FileResult) -> dict[str | None, str]:
    """Per class, why a restructuring `--restructure auto` tried refused to touch it."""
    out: dict[str | None, str] = {}
    for f in fr.findings:
        if f.rule.startswith("restructure/") and "refused" in f.data:
            name = f.rule.removeprefix("restructure/")
            out[f.cls] = f"--restructure auto tried {name}: {_class_message(f)}"
    return out


def blockers(fr: FileResult) -> tuple[ManualItem, ...]:
    """Everything that keeps the file from passing the linter untouched by a human."""
    items: list[ManualItem] = []
    refused = _refusals(fr)
    for f in fr.findings:
        status = CLASS_RULES.get(f.rule)
        if status is not None:
            if status in LABELLED and not f.data.get("violations"):
                continue
            fits = "" if status in LABELLED else refused.get(f.cls) or one_line(f.fix or "")
            items.append(ManualItem(cls=f.cls or "?", line=f.line, reason=_class_message(f), fits=fits))
        elif f.rule in GATE_BLOCKERS:
            items.append(ManualItem(cls=f.cls or "(file)", line=f.line, reason=one_line(f.message)))
        elif _LOAD_RULES.get(f.rule) in _LOAD_MANUAL:
            items.append(ManualItem(cls="torch.load", line=f.line, reason=one_line(f.message)))
        elif f.severity == Severity.ERROR:  # a duplicate class or instantiation, ...
            items.append(ManualItem(cls=f.cls or "(file)", line=f.line, reason=one_line(f.message)))
    if not items:  # the engine's own judgement, when no finding says more
        items.append(ManualItem(cls="(file)", line=1, reason="the linter would still reject it"))
    return tuple(items)


def applied_transforms(fr: FileResult) -> tuple[str, ...]:
    """The restructuring transforms that changed a class (registry order)."""
    applied = {f.rule.removeprefix("restructure/") for f in fr.findings if f.data.get("moves") is not None}
    return tuple(name for name in RESTRUCTURE_REGISTRY if name in applied)


def could_widen(fr: FileResult | None) -> tuple[Widening, ...]:
    """The widening steps the restructuring found fitting but did not run (auto never widens)."""
    if fr is None:
        return ()
    return tuple(
        Widening(cls=cls, step=str(w.step), tests=w.tests, adds=w.adds)
        for cls, found in widenings_from_findings(fr.findings).items()
        for w in found
    )


def torch_load_facts(findings: Iterable[Finding], mode: Mode) -> TorchLoadFacts:
    """From the census (no --torch-load: every call `--torch-load auto` would edit needs
    discovery to choose), else from the planner: per call, the rule of its deciding finding
    (informational ones, a dangerous global or a call discovery did not see, do not count)."""
    counts = {"edits": 0, "left_alone": 0, "manual": 0, "undiscovered": 0}
    for f in findings:
        if f.rule == CENSUS_RULE:
            d = f.data
            edits = d["calls"] - d["explicit"] - d["pickle_module"] - d["starred"]
            return TorchLoadFacts(
                calls=d["calls"],
                edits=edits,
                left_alone=d["explicit"] + d["pickle_module"],
                manual=d["starred"],
                undiscovered=edits,
            )
        rule = _LOAD_RULES.get(f.rule)
        if rule is None:
            continue
        if rule in _LOAD_EDITS:
            counts["edits"] += 1
        elif rule in _LOAD_LEFT:
            counts["left_alone"] += 1
        elif rule in _LOAD_MANUAL:
            counts["manual"] += 1
        else:
            continue
        if rule in _LOAD_UNDISCOVERED and "evidence" not in f.data and mode != Mode.WEIGHTS_ONLY_FALSE:
            counts["undiscovered"] += 1
    calls = counts["edits"] + counts["left_alone"] + counts["manual"]
    return TorchLoadFacts(calls=calls, **counts)


NEW_LABEL = (Status.LABEL, Status.FORCED)  # decisions that write a label


def _labels_reason(classes: Sequence[ClassDecision]) -> str:
    new = [c for c in classes if c.decision in NEW_LABEL]
    values: dict[str, int] = {}
    for c in new:
        values[str(c.value)] = values.get(str(c.value), 0) + 1
    return "labels: " + ", ".join(f"{n} {v}" for v, n in sorted(values.items()))


def _ready_reason(classes: Sequence[ClassDecision], changed: bool) -> str:
    """Why a file is ready: the labels it gets, else (nothing to write) why the linter accepts it."""
    if any(c.decision in NEW_LABEL for c in classes):
        return _labels_reason(classes)
    if changed:
        return "no label to add; the other edits (torch.load) leave it linter-clean"
    if not classes:
        return "graduate only: no test class, nothing for the linter to check"
    return "graduate only: every test class is labelled already and the linter accepts it"


def _manual_reason(items: Sequence[ManualItem]) -> str:
    first = items[0]
    where = "" if first.cls in ("(file)", "torch.load") else f"{first.cls}: "
    more = f" (+{len(items) - 1} more)" if len(items) > 1 else ""
    return f"{where}{first.reason}{more}"


def file_survey(
    *,
    path: str,
    directory: str,
    owners: tuple[str, ...],
    labels: FileResult,
    restructured: FileResult | None,
    torch_load: TorchLoadFacts,
) -> FileSurvey:
    """`labels`: the run with apply's transforms; `restructured`: the run with `--restructure
    auto` in front of them (None when restructuring cannot touch the file: then it would be
    the same run)."""
    survey = partial(
        FileSurvey,
        path=path,
        directory=directory,
        owners=owners,
        torch_load=torch_load,
        could_widen=could_widen(restructured),
    )
    if labels.status == FAILED:
        return survey(status=SurveyStatus.ERROR, reason=one_line(labels.reason))
    if labels.doable:
        classes = class_decisions(labels)
        changed = labels.status == CHANGED
        reason = _ready_reason(classes, changed)
        return survey(status=SurveyStatus.READY, reason=reason, classes=classes, graduate_only=not changed)
    final = labels if restructured is None else restructured
    if final.status == FAILED:
        reason = f"with --restructure auto: {one_line(final.reason)}"
        return survey(status=SurveyStatus.ERROR, reason=reason, classes=class_decisions(labels))
    classes = class_decisions(final)
    if final.doable:
        names = applied_transforms(final)
        then = f", then {_labels_reason(classes)}" if any(c.decision in NEW_LABEL for c in classes) else ""
        reason = f"--restructure auto ({', '.join(names)}){then}"
        return survey(status=SurveyStatus.RESTRUCTURE, reason=reason, classes=classes, transforms=names)
    items = blockers(final)
    return survey(status=SurveyStatus.MANUAL, reason=_manual_reason(items), classes=classes, manual=items)
