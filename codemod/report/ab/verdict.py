"""The verdict sentences of the A/B reports: the verdict line and its reason."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from codemod.ab.result.diff import lost_devices
from codemod.ab.result.model import (
    CATEGORIES,
    REGRESSING,
    ABResult,
    AccountFinding,
    AccountIssue,
    Category,
    Verdict,
    device_of,
)
from codemod.report.ab.facts import category_counts
from codemod.report.ab.fmt import Fmt
from codemod.report.shared.i18n import category_label, t


def count_parts(f: Fmt, counts: dict[Category, int], cats: Iterable[Category]) -> str:
    return f.sep().join(
        f.say("count.part", label=f.text(category_label(c, f.lang)), n=counts[c]) for c in cats if counts.get(c)
    )


def inconclusive_why(result: ABResult, f: Fmt) -> list[str]:
    why = missing_shards(result, f) + accounting(result, f)
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
    if not why or why == accounting(result, f):
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
        found = [f.say("reason.regression", n=n, parts=parts)] if n else []
        found += [x + f.say("period") for x in narrowed(result, f) + missing_shards(result, f) + accounting(result, f)]
        return f.say("sentence.sep").join(found) + not_shown(result, f)
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


def narrowed(result: ABResult, f: Fmt) -> list[str]:
    """The device sets B narrows that no --map entry explains: lost coverage elsewhere."""
    lost = lost_devices(result.changes)
    if not lost:
        return []
    parts = [
        f.say(
            f"narrowed.{n.by}",
            what=f.code(f"{n.cls}.{n.test}" if n.test else n.cls),
            file=f.code(file),
            devices=f.codes(n.devices),
        )
        for file, n in lost
    ]
    return [f.say("reason.narrowed", what=f.text(t("list.sep", f.lang)).join(parts))]


def missing_shards(result: ABResult, f: Fmt) -> list[str]:
    """The shards a merge lacked (its notice), whose tests the verdict knows nothing of."""
    notice = next((w for w in result.warnings if w.code == "merge.missing-shards"), None)
    return [f.say("reason.missing_shards", shards=f.code(notice.params.get("shards", "?")))] if notice else []


def accounting(result: ABResult, f: Fmt) -> list[str]:
    """Arm A's and B's sessions whose own pytest account disagrees with the events: one
    sentence per arm and kind (the first session's, and how many more say the same)."""
    out = []
    for arm in (result.arm("A"), result.arm("B")):
        by_issue: dict[AccountIssue, list[AccountFinding]] = defaultdict(list)
        for finding in arm.accounting if arm is not None else []:
            by_issue[finding.issue].append(finding)
        for same in by_issue.values():
            more = f.say("acc.more", n=len(same) - 1) if len(same) > 1 else ""
            out.append(_finding(arm.name if arm is not None else "?", same[0], f) + more)
    return out


def _finding(arm: str, finding: AccountFinding, f: Fmt) -> str:
    files = f.codes(finding.files[:3])
    if len(finding.files) > 3:
        files = f.say("acc.files_more", files=files, n=len(finding.files) - 3)
    p, e = finding.pytest, finding.events
    common = {"arm": f.text(arm), "files": files}
    if finding.issue == AccountIssue.STOPPED:
        said = f.say("acc.stopped", by=f.code(finding.stopped_by), status=finding.exit_status, **common)
        return said + (f.say("acc.stopped_tests", n=len(finding.tests)) if finding.tests else "")
    if finding.issue == AccountIssue.NO_TEST_RAN:
        return f.say("acc.no-test-ran", n=p.get("collected", 0), **common)
    if finding.issue == AccountIssue.OUTCOMES_DIFFER:
        counts = [f.say("acc.count", p=p.get(k, 0), name=f.code(k), e=e.get(k, 0)) for k in sorted(p)]
        return f.say("acc.outcomes-differ", counts=f.text(t("list.sep", f.lang)).join(counts), **common)
    if finding.issue in (AccountIssue.COLLECTED_DIFFERS, AccountIssue.FAILURES_UNSEEN):
        key = "collected" if finding.issue == AccountIssue.COLLECTED_DIFFERS else "failures"
        return f.say(f"acc.{finding.issue}", p=p.get(key, 0), e=e.get(key, 0), **common)
    if finding.issue == AccountIssue.NO_REPORTER:
        return f.say("acc.no-reporter", option=f.code("-p no:terminal"), **common)
    if finding.issue == AccountIssue.EXITED_AFTER_END:
        return f.say("acc.exited-after-end", status=f.code(finding.stopped_by), session=finding.exit_status, **common)
    why = f.code(finding.stopped_by) if finding.stopped_by else f.say("acc.unreadable")
    return f.say("acc.no-account", why=why, **common)


def verdict_line(result: ABResult, f: Fmt) -> str:
    return f.say("verdict.line", verdict=f.strong(f.verdict(result.verdict)), reason=verdict_reason(result, f))
