"""The verdict sentences of the A/B reports: the verdict line and its reason."""

from __future__ import annotations

from collections.abc import Iterable

from codemod.ab.result.model import CATEGORIES, REGRESSING, ABResult, Category, Verdict, device_of
from codemod.report.ab.facts import category_counts
from codemod.report.ab.fmt import Fmt
from codemod.report.shared.i18n import category_label, t


def count_parts(f: Fmt, counts: dict[Category, int], cats: Iterable[Category]) -> str:
    return f.sep().join(
        f.say("count.part", label=f.text(category_label(c, f.lang)), n=counts[c]) for c in cats if counts.get(c)
    )


def inconclusive_why(result: ABResult, f: Fmt) -> list[str]:
    why = []
    for arm in result.arms:
        if not arm.ran:
            why.append(f.say("reason.arm_not_run", arm=f.code(arm.name), error=f.code(arm.error or "?")))
    counts = category_counts(result)
    if counts.get(Category.NOT_RUN_HERE):
        here = [t.nodeid for t in result.tests if t.category == Category.NOT_RUN_HERE]
        devices = sorted({d for n in here if (d := device_of(n))})
        why.append(f.say("reason.not_run_here", n=counts[Category.NOT_RUN_HERE], devices=f.codes(devices)))
    if counts.get(Category.FLAKY):
        why.append(f.say("reason.flaky", n=counts[Category.FLAKY]))
    if not result.tests:
        why.append(f.say("reason.no_tests"))
    if not why:
        why.append(
            f.say("reason.runner", reason=f.code(result.verdict_reason))
            if result.verdict_reason
            else f.say("reason.unknown")
        )
    return why


def verdict_reason(result: ABResult, f: Fmt) -> str:
    """One sentence.  English keeps the runner's own words when it gave some."""
    if f.lang == "en" and result.verdict_reason:
        raw = result.verdict_reason.strip()
        reason = f.text(raw[:1].upper() + raw[1:])
        return reason if reason.endswith((".", "!", "?")) else reason + "."
    counts = category_counts(result)
    total = len(result.tests) or sum(counts.values())
    if result.verdict == Verdict.REGRESSION:
        n = sum(counts.get(c, 0) for c in REGRESSING)
        parts = count_parts(f, counts, [c for c in CATEGORIES if c in REGRESSING])
        return f.say("reason.regression", n=n, parts=parts) + not_shown(result, f)
    if result.verdict == Verdict.SAFE:
        pre = counts.get(Category.PRE_EXISTING, 0)
        said = f.say("reason.safe_pre", n=pre) if pre else f.say("reason.safe", n=total, total=total)
        return said + not_shown(result, f)
    why = f.text(t("list.sep", f.lang)).join(inconclusive_why(result, f))
    return f.say("reason.inconclusive", why=why) + not_shown(result, f)


def not_shown(result: ABResult, f: Fmt) -> str:
    """What the verdict does not cover: the devices a widened device set adds that this
    machine lacks, the tests whose labels do not reach them at run time."""
    parts = []
    if result.not_exercised:
        parts.append(f.say("reason.not_exercised", devices=f.codes(result.not_exercised)))
    unclassified = sum(r.tests for r in result.runtime)
    if unclassified:
        parts.append(f.say("reason.runtime", n=unclassified))
    return "".join(f.say("sentence.sep") + "⚠️ " + p + f.say("period") for p in parts)


def verdict_line(result: ABResult, f: Fmt) -> str:
    return f.say("verdict.line", verdict=f.strong(f.verdict(result.verdict)), reason=verdict_reason(result, f))
