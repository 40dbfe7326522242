"""The events of one test, folded into its outcome: the worst phase wins (error > failed
> ...), subtests and the exception of the deciding report kept, a test that stopped
between phases said where (`next_phase`).

Only a report decides: a test is passed when its call report says so (and its subtests do),
skipped or failed when a report says so; a test no report decides (a setup report and no
call report: a session that ended during it, or that runs no call phase) is `incomplete`,
never passed by default."""

from __future__ import annotations

from typing import TYPE_CHECKING

from codemod.ab.result.model import Outcome, OutcomeValue, Phase

if TYPE_CHECKING:  # the plugin imports pytest, which the runner's own interpreter may lack
    from codemod.target.eventtypes import ExcInfo, ReportEvent


class TestEvents:
    __slots__ = ("nodeid", "reports", "subtests", "started", "finished", "t_start")

    def __init__(self, nodeid: str):
        self.nodeid = nodeid
        self.reports: dict[str, ReportEvent] = {}  # by phase
        self.subtests: list[ReportEvent] = []
        self.started = False
        self.finished = False
        self.t_start = 0.0


def _phase_result(rec: ReportEvent) -> OutcomeValue:
    out, when, xf = rec.get("outcome"), rec.get("when"), rec.get("xfail")
    if out == "failed":
        return OutcomeValue.FAILED if when == "call" else OutcomeValue.ERROR
    if out == "skipped":
        return OutcomeValue.XFAILED if xf else OutcomeValue.SKIPPED
    return OutcomeValue.XPASSED if (xf and when == "call") else OutcomeValue.PASSED


def _subtest_desc(rec: ReportEvent) -> str:
    sub = rec.get("subtest")
    parts = []
    if sub and sub.get("msg") is not None:
        parts.append(f"[{sub['msg']}]")
    if sub and sub.get("kwargs"):
        parts.append("(" + ", ".join(f"{k}={v}" for k, v in sub["kwargs"].items()) + ")")
    return " ".join(parts) or "(<subtest>)"


def exc_fields(exc: ExcInfo | None) -> tuple[str | None, list[str], str]:
    """(type, cause chain, message) of an exception the plugin described."""
    if not exc:
        return None, [], ""
    return exc.get("type"), list(exc.get("chain") or []), exc.get("message") or ""


def first_line(text: str) -> str:
    return next((ln for ln in text.splitlines() if ln.strip()), "")


def _rec_outcome(nodeid: str, rec: ReportEvent, result: OutcomeValue, phase: Phase) -> Outcome:
    exc_type, chain, msg = exc_fields(rec.get("exc"))
    msg = msg or rec.get("skip_reason") or ""
    if not msg and result != OutcomeValue.PASSED:
        msg = first_line(rec.get("longrepr") or "")
    return Outcome(
        nodeid=nodeid,
        outcome=result,
        phase=phase,
        exc_type=exc_type,
        exc_chain=chain,
        message=msg[:4000],
        traceback=rec.get("longrepr") or "",
        duration=float(rec.get("duration") or 0.0),
    )


# Outcomes a failing subtest turns into a failure.
_NOT_FAILING = (OutcomeValue.PASSED, OutcomeValue.XPASSED, OutcomeValue.SKIPPED, OutcomeValue.INCOMPLETE)


def build_outcome(acc: TestEvents) -> Outcome:
    """Fold the phase reports (and subtests) of one test into one Outcome."""
    setup, call, teardown = (acc.reports.get(w) for w in ("setup", "call", "teardown"))
    duration = sum(float(r.get("duration") or 0.0) for r in acc.reports.values())
    if setup is not None and _phase_result(setup) != OutcomeValue.PASSED:
        out = _rec_outcome(acc.nodeid, setup, _phase_result(setup), Phase.SETUP)
    elif call is not None:
        out = _rec_outcome(acc.nodeid, call, _phase_result(call), Phase.CALL)
        if out.outcome == OutcomeValue.PASSED:
            out.message, out.traceback, out.exc_type, out.exc_chain = "", "", None, []
    else:  # nothing decides it: it started and never concluded
        phase = stopped_in(acc)
        out = Outcome(nodeid=acc.nodeid, outcome=OutcomeValue.INCOMPLETE, phase=phase, message=no_decision(phase))
    out.subtests = [
        _rec_outcome(f"{acc.nodeid} {_subtest_desc(sub)}", sub, _phase_result(sub), Phase.CALL)
        for sub in acc.subtests
        if _phase_result(sub) != OutcomeValue.PASSED
    ]
    failing_subs = [s for s in out.subtests if s.outcome in (OutcomeValue.FAILED, OutcomeValue.ERROR)]
    if failing_subs and (out.outcome in _NOT_FAILING or (out.outcome == OutcomeValue.FAILED and not out.exc_type)):
        n = len(failing_subs)
        out.outcome, out.phase, out.exc_type, out.exc_chain = OutcomeValue.FAILED, Phase.CALL, None, []
        out.message = f"{n} failed subtest{'s' if n != 1 else ''}: " + "; ".join(
            f"{s.nodeid.split(' ', 1)[1] if ' ' in s.nodeid else ''} {s.exc_type or ''}".strip()
            for s in failing_subs[:5]
        )
        out.traceback = "\n\n".join(s.traceback for s in failing_subs)[:30000]
    if teardown is not None and teardown.get("outcome") == "failed":
        td = _rec_outcome(acc.nodeid, teardown, OutcomeValue.ERROR, Phase.TEARDOWN)
        if out.outcome in (OutcomeValue.FAILED, OutcomeValue.ERROR):
            out.message = (out.message + "\n[teardown] " + (td.exc_type or "") + ": " + td.message)[:4000]
            out.traceback = (out.traceback + "\n\n[teardown]\n" + td.traceback)[:40000]
        else:
            td.subtests = out.subtests
            out = td
    out.duration = duration
    return out


def stopped_in(acc: TestEvents) -> Phase:
    """The phase a test that no report decides stopped in."""
    return Phase.CALL if "setup" in acc.reports else Phase.SETUP


def no_decision(phase: Phase) -> str:
    """Why a test is incomplete when nothing more is known."""
    return f"stopped in its {phase} phase: no report decides its outcome"


def next_phase(acc: TestEvents) -> Phase:
    if "teardown" in acc.reports or "call" in acc.reports:
        return Phase.TEARDOWN
    if "setup" in acc.reports:
        return Phase.CALL
    return Phase.SETUP
