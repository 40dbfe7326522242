"""The analysis of the A/B reports: what the run proves, and the cause of each failure group
(cause confirmed, not confirmed, probable or unknown, with the evidence and the remedy)."""

from __future__ import annotations

import re
from typing import Literal

from codemod.ab.comparison import causes
from codemod.ab.result.model import (
    CATEGORIES,
    REGRESSING,
    ABResult,
    Category,
    CauseFinding,
    CauseId,
    CauseStatus,
    ExperimentKind,
    OutcomeValue,
    Scope,
    Verdict,
    device_of,
)
from codemod.report.ab.coverage import widened_classes
from codemod.report.ab.facts import broken_engines, category_counts, compact_signature, failing_sets, ordered_tests
from codemod.report.ab.fmt import Fmt
from codemod.report.ab.tables import tests_cell
from codemod.report.ab.verdict import count_parts, inconclusive_why
from codemod.report.shared.i18n import t


def rich(f: Fmt, template: str, evidence: dict) -> str:
    """A cause-table template (`code` in backticks) filled with `evidence`, each part escaped
    by `f`: text as text, backtick spans as code."""
    parts = re.split(r"`([^`]*)`", template)
    out = []
    for i, part in enumerate(parts):
        filled = part.format_map(_Missing(evidence))
        out.append(f.code(filled) if i % 2 else f.text(filled))
    return "".join(out)


class _Missing(dict):
    def __missing__(self, key: str) -> str:
        return "?"


_VERBS = {"verb.failed", "verb.error", "verb.crashed", "verb.timeout"}


def _evidence_sentence(finding: CauseFinding, f: Fmt) -> str:
    ev = finding.evidence
    status = finding.status
    if finding.experiment == ExperimentKind.DIAG:
        variables = f.pairs(finding.variables)
        if status == CauseStatus.SUSPECTED:
            return f.say("cause.ev.diag_pending", vars=variables, cmd=f.code("decouple ab --diagnose"))
        return f.say(
            "cause.ev.diag",
            vars=variables,
            base=f.code(finding.based_on),
            k=ev.get("passed", "?"),
            n=int(ev.get("total", "0") or 0),
            arm=f.code(ev.get("diag", "?")),
        )
    if finding.cause == CauseId.QUANTIZED_ENGINE:
        if status == CauseStatus.CONFIRMED:
            return f.say(
                "cause.ev.prepack_fails", engine=f.code(ev.get("engine", "?")), error=f.code(ev.get("error", "?"))
            )
        if status == CauseStatus.NOT_CONFIRMED:
            return f.say("cause.ev.prepack_ok")
        return f.say("cause.ev.prepack_unknown")
    if finding.cause == CauseId.HW_CLASSIFICATION_MISSING:
        key = {CauseStatus.CONFIRMED: "cause.ev.hwc_missing", CauseStatus.NOT_CONFIRMED: "cause.ev.hwc_present"}.get(
            status, "cause.ev.hwc_unknown"
        )
        return f.say(key, torch=f.code(ev.get("torch", "?")))
    if finding.experiment == ExperimentKind.IMPORT:
        key = {
            CauseStatus.CONFIRMED: "cause.ev.import_missing",
            CauseStatus.NOT_CONFIRMED: "cause.ev.import_present",
        }.get(status, "cause.ev.import_pending")
        return f.say(key, module=f.code(ev.get("module", "?")), cmd=f.code("decouple ab --diagnose"))
    return ""


def finding_item(result: ABResult, finding: CauseFinding, f: Fmt) -> str:
    """One failure group: what fails, the cause and its status, the evidence, the remedy."""
    members = [c for c in result.tests if c.nodeid in set(finding.nodeids)]
    ref = (members[0].b or members[0].a) if members else None
    outcome = ref.outcome if ref else OutcomeValue.FAILED
    verb_key = f"verb.{outcome}" if f"verb.{outcome}" in _VERBS else "verb.failed"
    n = len(finding.nodeids)
    sig = f.code(compact_signature(ref)) if ref else f.code(finding.signature)
    where = {
        Scope.BOTH: "cause.group.both",
        Scope.B_CHANGED: "cause.group.b_changed",
        Scope.B_ONLY: "cause.group.b_only",
    }[finding.scope]
    parts = [f.say(where, n=n, verb=f.say(verb_key, n=n), sig=sig, tests=tests_cell(finding.nodeids, f))]
    cause = causes.BY_ID[finding.cause] if finding.cause is not None else None
    status = f.strong(f.say(f"cause.status.{finding.status}"))
    if cause is None:
        parts.append(f.say("cause.unknown", status=status))
    else:
        parts.append(f.say("cause.is", status=status, why=rich(f, cause.explanation[f.lang], finding.evidence)))
        evidence = _evidence_sentence(finding, f)
        if evidence:
            parts.append(f.say("cause.evidence", text=evidence))
        if finding.status != CauseStatus.NOT_CONFIRMED:
            parts.append(f.say("cause.remedy", text=rich(f, cause.remedy[f.lang], finding.evidence)))
    return f.say("sentence.sep").join(parts)


# A block of the analysis: a sub-heading ("h"), a paragraph ("p") or a list ("ul").
Block = tuple[Literal["h", "p", "ul"], str | list[str]]


def analysis(result: ABResult, f: Fmt) -> list[Block]:
    """The "what this proves" blocks: ("h", text) sub-headings, ("p", text)
    paragraphs and ("ul", [items]) lists, already formatted with `f`."""
    counts = category_counts(result)
    by_cat: dict[Category, list[str]] = {}
    for c in ordered_tests(result):
        by_cat.setdefault(c.category, []).append(c.nodeid)
    total = len(result.tests) or sum(counts.values())
    blocks: list[Block] = [("h", f.say("h.change_safe"))]

    if result.verdict == Verdict.REGRESSION:
        regressing = [n for c in CATEGORIES if c in REGRESSING for n in by_cat.get(c, [])]
        n = sum(counts.get(c, 0) for c in REGRESSING)
        blocks.append(
            (
                "p",
                f.say(
                    "an.regression",
                    n=n,
                    tests=f.tests(regressing),
                    parts=count_parts(f, counts, [c for c in CATEGORIES if c in REGRESSING]),
                ),
            )
        )
    elif result.verdict == Verdict.SAFE:
        key = "an.safe_here" if result.not_exercised else "an.safe"
        blocks.append(("p", f.say(key, n=total, total=total)))
    else:
        blocks.append(
            ("p", f.say("an.inconclusive", why=f.text(t("list.sep", f.lang)).join(inconclusive_why(result, f))))
        )
    if result.not_exercised:
        classes = f.codes(widened_classes(result)) or f.say("unknown")
        blocks.append(("p", f.say("an.not_exercised", devices=f.codes(result.not_exercised), classes=classes)))
    if by_cat.get(Category.NOT_RUN_HERE):
        here = by_cat[Category.NOT_RUN_HERE]
        devices = f.codes(sorted({d for n in here if (d := device_of(n))}))
        blocks.append(("p", f.say("an.not_run_here", n=len(here), devices=devices, tests=f.tests(here))))
    for cat, key in (
        (Category.COVERAGE_LOST, "an.coverage_lost"),
        (Category.DIFFERENT_FAILURE, "an.different"),
        (Category.SIMILAR_FAILURE, "an.similar"),
        (Category.NO_LONGER_RUN, "an.no_longer_run"),
        (Category.FLAKY, "an.flaky"),
        (Category.FIXED, "an.fixed"),
    ):
        if by_cat.get(cat):
            blocks.append(("p", f.say(key, n=len(by_cat[cat]), tests=f.tests(by_cat[cat]))))

    findings = causes.findings_of(result)
    both = [x for x in findings if x.scope == Scope.BOTH]
    b_only = [x for x in findings if x.scope != Scope.BOTH]
    fail_a, fail_b = failing_sets(result)
    env = result.environment
    blocks.append(("h", f.say("h.not_the_change")))
    if both:
        blocks.append(("p", f.say("an.not_the_change")))
        blocks.append(("ul", [finding_item(result, x, f) for x in both]))
    else:
        blocks.append(("p", f.say("an.env_clean")))
    if b_only:
        blocks.append(("h", f.say("h.b_only")))
        blocks.append(("ul", [finding_item(result, x, f) for x in b_only]))
    if fail_a or fail_b:
        if fail_a == fail_b:
            blocks.append(("p", f.say("an.identical_sets", n=len(fail_a))))
        else:
            blocks.append(("p", f.say("an.different_sets", a=len(fail_a), b=len(fail_b))))
    for engine, error, listed in broken_engines(env):
        if listed:
            blocks.append(("p", f.say("an.broken_engine", engine=f.code(engine), error=f.code(error))))
    if env.has_hw_classification is False:
        blocks.append(("p", f.say("an.no_hwc")))
    return blocks
