"""What the pytest processes of one file said: the capture events read as they are written, and
folded into the file's outcomes.

Both runners read them: a process per file (``filerun``) and several files to a session
(``packrun``, which routes a pack's events to each file's own ``FileEvents``).  The events are the
capture plugin's (``plugin.Event``: the JSON lines are read as those types).
"""

from __future__ import annotations

import json
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from codemod.ab.comparison.testevents import TestEvents, build_outcome, exc_fields, first_line, next_phase
from codemod.ab.result.model import Outcome, OutcomeValue, Phase
from codemod.ab.result.notices import Notice

if TYPE_CHECKING:  # the plugin imports pytest, which the runner's own interpreter may lack
    from codemod.target.plugin import (
        CollectedEvent,
        CollectErrorEvent,
        CollectSkipEvent,
        DeselectedEvent,
        Event,
        FinishEvent,
        ReportEvent,
        StartEvent,
    )

_OUTPUT_TAIL = 4000
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
    """Everything the processes of one file said, in order, and the outcomes folded from it."""

    def __init__(self, res: FileRun, deselect: tuple[str, ...]):
        self.res = res
        self.accs: dict[str, TestEvents] = {}
        self.collected: list[str] = []  # node ids, in collection order
        self.excluded: set[str] = set(deselect)  # the node ids another shard runs, then finished tests
        self.ever_collected = False
        self.census: dict[str, str | None] = {}  # node id -> its class's label at run time
        self.dropped: dict[str, str] = {}  # node id -> why the collection dropped it (-k, a hook...)
        self.runs = True  # the last session runs its tests (not --collect-only)
        self.ended: int | None = None  # the last process's exit status, when it reached its end

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
                self.ended = ev.get("exitstatus", 0)

    def _collected(self, watch: ProcessWatch, ev: CollectedEvent) -> None:
        watch.collected = self.ever_collected = True
        self.ended = None
        self.runs = ev.get("runs", True)
        self.census.update(ev.get("hw") or {})
        for nid in ev.get("nodeids", []):
            self._known(nid)

    def _deselected(self, ev: DeselectedEvent) -> None:
        self.census.update(ev.get("hw") or {})
        for nid in ev.get("nodeids", []):
            self.dropped.setdefault(nid, ev.get("reason") or "deselected")

    def _collect_error(self, ev: CollectErrorEvent) -> None:
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
        watch.current = acc
        watch.progress = True

    def _report(self, ev: ReportEvent) -> None:
        nid = ev["nodeid"]
        acc = self.accs.get(nid) or self.accs.setdefault(nid, TestEvents(nid))  # not a collected test
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
        """The outcomes, in collection order, then the tests the collection dropped."""
        special = self.res.outcomes
        self.res.outcomes = {}
        for nid in self.collected:
            if nid in special:
                self.res.outcomes[nid] = special[nid]
            elif self.accs[nid].finished or self.accs[nid].reports:
                self.res.outcomes[nid] = build_outcome(self.accs[nid])
            else:
                self.res.outcomes[nid] = self._never_started(nid)
        for nid, why in self.dropped.items():
            o = Outcome(nodeid=nid, outcome=OutcomeValue.DESELECTED, phase=Phase.COLLECT, message=why)
            self.res.outcomes.setdefault(nid, o)
        for nid, o in self.res.outcomes.items():
            o.hw_classification = self.census.get(nid)

    def _never_started(self, nid: str) -> Outcome:
        if self.ended is not None and not self.runs:
            why = "the session runs no test (--collect-only)"
            return Outcome(nodeid=nid, outcome=OutcomeValue.DESELECTED, phase=Phase.COLLECT, message=why)
        why = "not run (the file was stopped before it)"
        if self.ended is not None:
            why = f"not run: the pytest session ended before it (exit status {self.ended})"
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
