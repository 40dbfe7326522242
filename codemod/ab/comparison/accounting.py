"""pytest's own account of a session, reconciled with the events of that session.

At its end every session writes what pytest itself concluded (the capture plugin's
``PytestAccount``: its exit status, ``session.testscollected`` and ``testsfailed``,
``shouldstop`` / ``shouldfail``, what ended it early, and the terminal reporter's node ids
per outcome category: what its "2 passed" line counts).  The events fold into outcomes
(``testevents``); this module holds the two accounts against each other and says, without a
list of option names, what the events alone cannot:

- the session stopped early (``pytest.exit()``, a ``KeyboardInterrupt``, ``-x``, exit status
  2, 3 or 4): its test that was running and those after it have no outcome;
- it collected tests and ran no call phase (``--setup-only``, ``--setup-plan``,
  ``--collect-only``, ``--fixtures``...);
- a test's outcome is not what pytest counted it as, or pytest counted a test the events
  hold nothing of; it collected or failed more than the events show; no account at all.

Each disagreement is an ``AccountFinding`` of the arm (the verdict is never SAFE while arm A
or B has one) and makes the tests it concerns ``incomplete`` (`Reconciled.doubts`).  Pure:
the view of a session and its account in, the findings out; the runners call it once per
session (a pack's session once, for all its files).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from codemod.ab.result.model import AccountFinding, AccountIssue, Outcome, OutcomeValue, Phase, file_of

if TYPE_CHECKING:  # the plugin's types (it imports pytest, which the runner's interpreter may lack)
    from codemod.target.eventtypes import PytestAccount

# What pytest's terminal reporter counts each concluded outcome as (its default categories).
COUNTED_AS = {
    OutcomeValue.PASSED: "passed",
    OutcomeValue.FAILED: "failed",
    OutcomeValue.ERROR: "error",
    OutcomeValue.SKIPPED: "skipped",
    OutcomeValue.XFAILED: "xfailed",
    OutcomeValue.XPASSED: "xpassed",
}
# pytest.ExitCode values that mean the session did not run to its end.
STOP_STATUSES = {2: "an interruption", 3: "an internal error", 4: "a usage error"}
_EXIT_TYPES = ("_pytest.outcomes.Exit", "pytest.Exit")
# session.shouldstop ends a session by this exception (pytest names its module "builtins")
_INTERRUPTED_TYPES = ("Interrupted", "_pytest.main.Interrupted")


@dataclass(kw_only=True)
class SessionView:
    """What the events of one pytest session hold (a pack's session: all its files')."""

    collected: list[str] = field(default_factory=list)  # the node ids it collected
    outcomes: dict[str, Outcome] = field(default_factory=dict)  # folded, for the tests it had events of
    stopped_in: dict[str, Phase] = field(default_factory=dict)  # where each incomplete test stopped
    failures: int = 0  # failed reports (xfail aside) and collection errors
    files: list[str] = field(default_factory=list)  # its test files


@dataclass(kw_only=True)
class Reconciled:
    findings: list[AccountFinding] = field(default_factory=list)
    doubts: dict[str, str] = field(default_factory=dict)  # node id -> why it is incomplete
    stopped_by: str = ""  # what ended the session early ("" = nothing did)
    ran_none: bool = False  # it collected tests and ran no call phase


def stopped_by(account: PytestAccount, exit_status: int) -> str:
    """What ended the session before its end, in words; "" when it ran to its end."""
    exc = account.get("interrupted")
    if exc:
        kind, message = exc.get("type") or "", (exc.get("message") or "").strip()
        if kind in _EXIT_TYPES:
            return f"pytest.exit({message!r})"
        if kind in _INTERRUPTED_TYPES and message:  # session.shouldstop
            return f"pytest was told to stop: {message}"
        return f"{kind}: {message}" if message else kind
    if account.get("shouldstop"):
        return f"pytest was told to stop: {account['shouldstop']}"
    if account.get("shouldfail"):
        return f"pytest was told to fail: {account['shouldfail']}"
    if exit_status in STOP_STATUSES:
        return STOP_STATUSES[exit_status]
    return ""


def reconcile(account: PytestAccount | None, exit_status: int, view: SessionView) -> Reconciled:
    """The session's findings and the tests they leave incomplete."""
    out = Reconciled()
    if account is None:
        out.findings.append(_finding(AccountIssue.NO_ACCOUNT, view, exit_status))
        _doubt_all(out, view, "pytest's own account of its session could not be read")
        return out
    out.stopped_by = stopped_by(account, exit_status)
    stats = account.get("stats")
    counted = _counted(stats or {})
    ran_none = out.ran_none = stats is not None and not counted and not out.stopped_by and bool(view.collected)
    for nid, o in view.outcomes.items():
        if o.outcome == OutcomeValue.INCOMPLETE:
            out.doubts[nid] = _why_incomplete(view.stopped_in.get(nid, Phase.CALL), out.stopped_by, ran_none)
    if out.stopped_by:
        stopped = _finding(AccountIssue.STOPPED, view, exit_status, tests=sorted(out.doubts))
        stopped.stopped_by = out.stopped_by
        out.findings.append(stopped)
    collected = account.get("testscollected", 0)
    if ran_none:
        figures = {"collected": collected, "run": 0}
        out.findings.append(_finding(AccountIssue.NO_TEST_RAN, view, exit_status, figures, tests=sorted(out.doubts)))
    if collected != len(view.collected):
        figures, events = {"collected": collected}, {"collected": len(view.collected)}
        out.findings.append(_finding(AccountIssue.COLLECTED_DIFFERS, view, exit_status, figures, events))
        _doubt_all(out, view, f"pytest collected {collected} tests in its session, the events {len(view.collected)}")
    failed = account.get("testsfailed", 0)
    if failed and not view.failures:
        figures, events = {"failures": failed}, {"failures": 0}
        out.findings.append(_finding(AccountIssue.FAILURES_UNSEEN, view, exit_status, figures, events))
        _doubt_all(out, view, f"pytest counted {failed} failures in its session, the events none")
    if stats is None:
        out.findings.append(_finding(AccountIssue.NO_REPORTER, view, exit_status))
    else:
        _compare_outcomes(out, view, counted, exit_status)
    return out


def _counted(stats: dict[str, list[str]]) -> dict[str, set[str]]:
    """Node id -> the categories pytest counted its reports in."""
    out: dict[str, set[str]] = {}
    for category, ids in stats.items():
        for nid in ids:
            out.setdefault(nid, set()).add(category)
    return out


def _compare_outcomes(out: Reconciled, view: SessionView, counted: dict[str, set[str]], exit_status: int) -> None:
    """Every concluded outcome must be what pytest counted the test as; every test pytest
    counted must have an outcome in the events."""
    said: Counter[str] = Counter()  # the events' words for the tests the accounts disagree on
    seen: Counter[str] = Counter()  # ... and pytest's
    for nid, o in view.outcomes.items():
        expected = COUNTED_AS.get(o.outcome)
        if expected is not None and expected not in counted.get(nid, set()):
            said[expected] += 1
            seen.update(counted.get(nid, set()))
            pytest_says = ", ".join(sorted(counted.get(nid, set()))) or "nothing"
            out.doubts[nid] = f"the events say {o.outcome}, pytest counted it as: {pytest_says}"
    for nid in sorted(set(counted) - set(view.outcomes)):
        if file_of(nid) in view.files or not view.files:
            seen.update(counted[nid])
            out.doubts[nid] = f"pytest counted it as {', '.join(sorted(counted[nid]))}, the events hold no report of it"
    if said or seen:
        names = sorted(set(said) | set(seen))
        finding = _finding(AccountIssue.OUTCOMES_DIFFER, view, exit_status)
        finding.pytest = {n: seen.get(n, 0) for n in names}
        finding.events = {n: said.get(n, 0) for n in names}
        finding.tests = sorted(n for n in out.doubts if n in view.outcomes or n in counted)
        out.findings.append(finding)


def _why_incomplete(phase: Phase, stop: str, ran_none: bool) -> str:
    if stop:
        return f"stopped in its {phase} phase: {stop} ended the session"
    if ran_none:
        return "pytest ran no call phase in its session (an option or a plugin that runs none)"
    return f"stopped in its {phase} phase: pytest reported no call phase of it"


def _doubt_all(out: Reconciled, view: SessionView, why: str) -> None:
    for nid, o in view.outcomes.items():
        if o.outcome in COUNTED_AS:
            out.doubts.setdefault(nid, why)


def _finding(
    issue: AccountIssue,
    view: SessionView,
    exit_status: int,
    pytest: dict[str, int] | None = None,
    events: dict[str, int] | None = None,
    tests: list[str] | None = None,
) -> AccountFinding:
    return AccountFinding(
        issue=issue,
        files=list(view.files),
        exit_status=exit_status,
        pytest=dict(pytest or {}),
        events=dict(events or {}),
        tests=list(tests or []),
    )


# ---------------------------------------------------------------------------
# in words (the verdict's reason; the reports' own languages: codemod/report/shared/i18n_accounting.py)


def files_text(files: list[str]) -> str:
    """The files of a session, the first few named."""
    shown = ", ".join(files[:3]) or "?"
    return shown + (f" and {len(files) - 3} more" if len(files) > 3 else "")


def describe(arm: str, finding: AccountFinding) -> str:
    """One finding in English."""
    where, p, e = files_text(finding.files), finding.pytest, finding.events
    issue = finding.issue
    if issue == AccountIssue.STOPPED:
        n = len(finding.tests)
        left = f": {n} test{'s' if n != 1 else ''} incomplete" if n else ""
        return (
            f"arm {arm}: pytest's session of {where} was ended early by {finding.stopped_by} "
            f"(exit status {finding.exit_status}){left}"
        )
    if issue == AccountIssue.NO_TEST_RAN:
        return f"arm {arm}: pytest reports 0 tests run of the {p.get('collected', 0)} it collected in {where}"
    if issue == AccountIssue.OUTCOMES_DIFFER:
        counts = "; ".join(f"pytest reports {p.get(k, 0)} {k}, the events {e.get(k, 0)}" for k in sorted(p))
        return f"arm {arm}: {counts} ({where})"
    if issue == AccountIssue.COLLECTED_DIFFERS:
        collected = p.get("collected", 0)
        return f"arm {arm}: pytest collected {collected} tests in {where}, the events {e.get('collected', 0)}"
    if issue == AccountIssue.FAILURES_UNSEEN:
        return f"arm {arm}: pytest counted {p.get('failures', 0)} failures in {where}, the events none"
    if issue == AccountIssue.NO_ACCOUNT:
        return f"arm {arm}: no account of pytest's session of {where} ({finding.stopped_by or 'it could not be read'})"
    if issue == AccountIssue.EXITED_AFTER_END:
        return (
            f"arm {arm}: the process of {where} ended with {finding.stopped_by} after pytest's session "
            f"ended with exit status {finding.exit_status}"
        )
    return f"arm {arm}: pytest ran {where} without its terminal reporter (-p no:terminal): its counts were not compared"


def summary(arms: list[tuple[str, list[AccountFinding]]]) -> list[str]:
    """The findings of the arms, one sentence per arm and issue (the first session's words,
    and how many more sessions say the same)."""
    out = []
    for arm, findings in arms:
        by_issue: dict[AccountIssue, list[AccountFinding]] = {}
        for f in findings:
            by_issue.setdefault(f.issue, []).append(f)
        for same in by_issue.values():
            more = len(same) - 1
            tail = f" (and {more} more session{'s' if more != 1 else ''})" if more else ""
            out.append(describe(arm, same[0]) + tail)
    return out
