"""What the pytest processes of one file said: the capture events read as they are written, and
folded into the file's outcomes.

Both runners read them: a process per file (``filerun``) and several files to a session
(``packrun``, which routes a pack's events to each file's own ``FileEvents``).  The events are the
capture plugin's (``eventtypes.Event``: the JSON lines are read as those types).

At the end of each session the events are reconciled with pytest's own account of it
(``accounting``): what it finds is the file's (the arm's) ``accounting`` and the tests it
concerns are folded as ``incomplete``.  A pack's session is reconciled once, by the
``FileEvents`` that sees all of it (``reconciles``); the pack hands the result to its files.
"""

from __future__ import annotations

import json
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from codemod.ab.comparison.accounting import Reconciled, SessionView, reconcile
from codemod.ab.comparison.testevents import (
    TestEvents,
    build_outcome,
    exc_fields,
    first_line,
    next_phase,
    stopped_in,
)
from codemod.ab.result.model import AccountFinding, AccountIssue, Outcome, OutcomeValue, Phase, file_of
from codemod.ab.result.notices import Notice

if TYPE_CHECKING:  # the plugin imports pytest, which the runner's own interpreter may lack
    from codemod.target.eventtypes import (
        CollectedEvent,
        CollectErrorEvent,
        CollectSkipEvent,
        DeselectedEvent,
        EndEvent,
        Event,
        FinishEvent,
        ReportEvent,
        StartEvent,
    )

_OUTPUT_TAIL = 4000
# A session's test whose outcome is folded at the session's end.
_PENDING = Outcome(nodeid="", outcome=OutcomeValue.INCOMPLETE)
# The event kinds of the plugin (plugin.Event); a line of any other kind is ignored.
_EVENT_KINDS = frozenset(
    "session deselected collected collecterror collectskip start report finish end plugin-error".split()
)


@dataclass(kw_only=True)
class FileRun:
    arm: str
    file: str
    outcomes: dict[str, Outcome] = field(default_factory=dict)
    collection_errors: dict[str, Outcome] = field(default_factory=dict)
    collection_skips: dict[str, Outcome] = field(default_factory=dict)  # module-level pytest.skip
    crashes: list[str] = field(default_factory=list)
    accounting: list[AccountFinding] = field(default_factory=list)  # its sessions' disagreements with pytest
    processes: int = 0
    duration: float = 0.0
    notes: list[Notice] = field(default_factory=list)  # warnings for the run result, scoped to this arm


@dataclass
class ProcessWatch:
    """What the current pytest process of a file has said so far."""

    current: TestEvents | None = None  # the test running now
    saw_session: bool = False
    saw_end: bool = False
    collected: bool = False
    progress: bool = False  # a test started


class FileEvents:
    """Everything the processes of one file said, in order, and the outcomes folded from it;
    `reconciles`: it sees whole sessions, and reconciles each with pytest's account at its end."""

    def __init__(self, res: FileRun, deselect: tuple[str, ...], reconciles: bool = True):
        self.res = res
        self.reconciles = reconciles
        self.accs: dict[str, TestEvents] = {}
        self.collected: list[str] = []  # node ids, in collection order
        self.excluded: set[str] = set(deselect)  # the node ids another shard runs, then finished tests
        self.ever_collected = False
        self.census: dict[str, str | None] = {}  # node id -> its class's label at run time
        self.dropped: dict[str, str] = {}  # node id -> why the collection dropped it (-k, a hook...)
        self.ended: int | None = None  # the last process's exit status, when it reached its end
        self.stopped_by = ""  # what ended the last session early ("" = nothing)
        self.ran_none = False  # the last session ran no test (no call phase at all)
        self.doubts: dict[str, str] = {}  # node id -> why it is incomplete (pytest's account disagrees)
        self.session = SessionView()  # the current session's events
        self.reconciled: Reconciled | None = None  # the last session's reconciliation (`reconciles`)

    def _known(self, nodeid: str) -> TestEvents:
        acc = self.accs.get(nodeid)
        if acc is None:
            acc = self.accs[nodeid] = TestEvents(nodeid)
            self.collected.append(nodeid)
        return acc

    def consume(self, watch: ProcessWatch, events: list[Event]) -> None:
        for ev in events:
            if ev["ev"] == "session":
                watch.saw_session = True
                self.session = SessionView()
            elif ev["ev"] == "collected":
                self._collected(watch, ev)
            elif ev["ev"] == "deselected":
                self._deselected(ev)
            elif ev["ev"] == "collecterror":
                self._collect_error(ev)
            elif ev["ev"] == "collectskip":
                self._collect_skip(ev)
            elif ev["ev"] == "start":
                self._start(watch, ev)
            elif ev["ev"] == "report":
                self._report(ev)
            elif ev["ev"] == "finish":
                self._finish(watch, ev)
            elif ev["ev"] == "end":
                watch.saw_end = True
                self._end(ev)

    def _collected(self, watch: ProcessWatch, ev: CollectedEvent) -> None:
        watch.collected = self.ever_collected = True
        self.ended = None
        self.census.update(ev.get("hw") or {})
        for nid in ev.get("nodeids", []):
            self._known(nid)
            self.session.collected.append(nid)

    def _deselected(self, ev: DeselectedEvent) -> None:
        self.census.update(ev.get("hw") or {})
        for nid in ev.get("nodeids", []):
            self.dropped.setdefault(nid, ev.get("reason") or "deselected")

    def _collect_error(self, ev: CollectErrorEvent) -> None:
        self.session.failures += 1
        key = ev.get("nodeid") or self.res.file
        etype, chain, emsg = exc_fields(ev.get("exc"))
        if not etype:
            etype, emsg = parse_error_line(ev.get("longrepr") or "")
        self.res.collection_errors[key] = Outcome(
            nodeid=key,
            outcome=OutcomeValue.ERROR,
            phase=Phase.COLLECT,
            exc_type=etype,
            exc_chain=chain,
            message=(emsg or first_line(ev.get("longrepr") or ""))[:4000],
            traceback=ev.get("longrepr") or "",
        )

    def _collect_skip(self, ev: CollectSkipEvent) -> None:
        key = ev.get("nodeid") or self.res.file
        self.res.collection_skips[key] = Outcome(
            nodeid=key,
            outcome=OutcomeValue.SKIPPED,
            phase=Phase.COLLECT,
            message=(ev.get("reason") or "skipped at module level")[:4000],
        )

    def _start(self, watch: ProcessWatch, ev: StartEvent) -> None:
        acc = self._known(ev["nodeid"])
        acc.started = True
        acc.t_start = float(ev.get("t") or time.time())
        self.session.outcomes.setdefault(acc.nodeid, _PENDING)
        watch.current = acc
        watch.progress = True

    def _report(self, ev: ReportEvent) -> None:
        nid = ev["nodeid"]
        acc = self.accs.get(nid) or self.accs.setdefault(nid, TestEvents(nid))  # not a collected test
        self.session.outcomes.setdefault(nid, _PENDING)
        if ev.get("outcome") == "failed" and not ev.get("xfail"):
            self.session.failures += 1
        if ev.get("subtest") is not None:
            acc.subtests.append(ev)
        else:
            acc.reports[ev.get("when") or "call"] = ev

    def _finish(self, watch: ProcessWatch, ev: FinishEvent) -> None:
        acc = self.accs.get(ev["nodeid"])
        if acc is not None:
            acc.finished = True
            self.excluded.add(acc.nodeid)
        if watch.current is not None and watch.current.nodeid == ev["nodeid"]:
            watch.current = None

    def _end(self, ev: EndEvent) -> None:
        """The session reached its end: reconcile its events with pytest's account of it."""
        self.ended = ev.get("exitstatus", 0)
        if not self.reconciles:
            return
        view = self.session
        for nid in view.outcomes:
            view.outcomes[nid] = build_outcome(self.accs[nid])
            view.stopped_in[nid] = stopped_in(self.accs[nid])
        named = [*view.collected, *view.outcomes, *self.res.collection_errors]
        view.files = sorted({file_of(n) for n in named}) or [self.res.file]
        self.reconciled = reconcile(ev.get("account"), self.ended, view)
        self.settle(self.reconciled)

    def settle(self, reconciled: Reconciled) -> None:
        """What the reconciliation of a session found: its findings, recorded on this file,
        and the tests it leaves incomplete."""
        self.stopped_by, self.ran_none = reconciled.stopped_by, reconciled.ran_none
        self.doubts.update(reconciled.doubts)
        self.res.accounting.extend(reconciled.findings)

    def unaccounted(self, status: str) -> AccountFinding | None:
        """The process ended between tests, before its session did: the tests it ran keep what
        their reports say, but pytest never gave its account of them (never SAFE then); None
        when it ran none."""
        if not self.session.outcomes:
            return None
        why = f"the process ended ({status}) between tests, before the session did"
        files = sorted({file_of(n) for n in self.session.outcomes})
        return AccountFinding(issue=AccountIssue.NO_ACCOUNT, files=files, stopped_by=why)

    def exited(self, rc: int, status: str) -> AccountFinding | None:
        """The process reached its session's end and then exited otherwise (an atexit handler
        calling os._exit(1), a crash at interpreter exit): plain pytest's caller sees that
        status, so the run is never SAFE; None when it exited as its session ended."""
        if self.ended is None or rc == self.ended:
            return None
        files = sorted({file_of(n) for n in self.session.collected}) or [self.res.file]
        return AccountFinding(
            issue=AccountIssue.EXITED_AFTER_END, files=files, exit_status=self.ended, stopped_by=status
        )

    def remaining(self) -> list[str]:
        return [n for n in self.collected if n not in self.excluded]

    # -- after a process died ------------------------------------------------

    def stopped(self, acc: TestEvents, outcome: OutcomeValue, message: str, tail: str, signal: str | None) -> None:
        """The test that was running when its process was killed or died."""
        o = build_outcome(acc)
        o.outcome, o.phase, o.signal = outcome, next_phase(acc), signal
        o.exc_type, o.exc_chain = None, []
        o.message = message
        o.traceback = tail
        acc.finished = True
        self.res.outcomes[acc.nodeid] = o
        self.excluded.add(acc.nodeid)

    def file_failed(self, outcome: OutcomeValue, message: str, tail: str, **fields: Any) -> None:
        """The file's own outcome: it could not be collected."""
        file = self.res.file
        self.res.collection_errors[file] = Outcome(
            nodeid=file, outcome=outcome, phase=Phase.COLLECT, message=message, traceback=tail, **fields
        )

    def fold(self) -> None:
        """The outcomes, in collection order (a test pytest counted that the events never
        collected after them), then the tests the collection dropped."""
        special = self.res.outcomes
        self.res.outcomes = {}
        for nid in [*self.collected, *(n for n in self.doubts if n not in self.accs)]:
            acc = self.accs.get(nid) or TestEvents(nid)
            if nid in special:
                self.res.outcomes[nid] = special[nid]
            elif nid in self.doubts:
                self.res.outcomes[nid] = self._incomplete(acc, self.doubts[nid])
            elif acc.started or acc.reports:
                self.res.outcomes[nid] = build_outcome(acc)
            else:
                self.res.outcomes[nid] = self._never_started(nid)
        for nid, why in self.dropped.items():
            o = Outcome(nodeid=nid, outcome=OutcomeValue.DESELECTED, phase=Phase.COLLECT, message=why)
            self.res.outcomes.setdefault(nid, o)
        for nid, o in self.res.outcomes.items():
            o.hw_classification = self.census.get(nid)

    @staticmethod
    def _incomplete(acc: TestEvents, why: str) -> Outcome:
        """A test pytest's account leaves without an outcome: what the events said, kept
        in the traceback, under `why`."""
        o = build_outcome(acc)
        was = "" if o.outcome == OutcomeValue.INCOMPLETE else f"[the events: {o.outcome}] {o.message}".strip()
        phase = o.phase if o.outcome != OutcomeValue.INCOMPLETE else stopped_in(acc)
        return Outcome(
            nodeid=acc.nodeid,
            outcome=OutcomeValue.INCOMPLETE,
            phase=phase,
            message=why[:4000],
            traceback="\n".join(x for x in (was, o.traceback) if x),
            duration=o.duration,
        )

    def _never_started(self, nid: str) -> Outcome:
        why = "not run (the file was stopped before it)"
        if self.ended is not None:
            why = f"not run: the pytest session ended before it (exit status {self.ended})"
            if self.stopped_by:
                why = f"not run: {self.stopped_by} ended the pytest session before it (exit status {self.ended})"
            elif self.ran_none:
                why = "not run: its pytest session ran no test (an option or a plugin that runs none)"
        return Outcome(nodeid=nid, outcome=OutcomeValue.NOT_RUN, phase=Phase.SETUP, message=why)


class EventReader:
    """The new complete lines of an event file, as events."""

    def __init__(self, path: Path):
        self.path = path
        self.pos = 0
        self.buf = b""

    def read(self) -> list[Event]:
        try:
            with open(self.path, "rb") as fh:
                fh.seek(self.pos)
                data = fh.read()
        except FileNotFoundError:
            return []
        self.pos += len(data)
        self.buf += data
        *lines, self.buf = self.buf.split(b"\n")
        out = []
        for line in lines:
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if isinstance(record, dict) and record.get("ev") in _EVENT_KINDS:
                out.append(cast("Event", record))
        return out


def output_tail(path: Path, n: int = _OUTPUT_TAIL) -> str:
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - n))
            return fh.read().decode("utf-8", "replace")
    except OSError:
        return ""


def parse_error_line(text: str) -> tuple[str | None, str]:
    """Exception type and message from the last `E   Type: msg` line, if any."""
    found = None
    for line in text.splitlines():
        m = re.match(r"^E\s+([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Warning))(?::\s*(.*))?$", line)
        if m:
            found = (m.group(1), m.group(2) or "")
    if found:
        return found
    for line in reversed(text.splitlines()):
        m = re.match(r"^([A-Za-z_][\w.]*(?:Error|Exception)):\s*(.*)$", line.strip())
        if m:
            return m.group(1), m.group(2)
    return None, ""
