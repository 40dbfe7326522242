"""One test file in one arm: run pytest, read the capture events, resume after a crash.

``ArmRunner.run_file`` starts a pytest process for a file (through the capture
plugin), follows its event file while it runs, enforces the per-test, collection
and per-file limits, and when the process dies without the session-end sentinel
pins the crash on the test that was running and resumes the rest of the file in
a new process.  The events are the capture plugin's (``plugin.Event``: the JSON
lines are read as those types); ``FileEvents`` folds what all the processes of
one file said into its outcomes.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from codemod.ab import processes
from codemod.ab.arms import ArmSpec
from codemod.ab.envprobe import PROBE_MODULE, PROBE_VAR
from codemod.ab.interpreter import PLUGIN_MODULE, ForkServer, ServerError
from codemod.ab.model import PYTEST_ARGS, Outcome, OutcomeValue, Phase, safe_arg
from codemod.ab.notices import Notice
from codemod.ab.processes import Interrupted
from codemod.ab.testevents import TestEvents, build_outcome, exc_fields, first_line, next_phase
from transforms.core.strenum import StrEnum

if TYPE_CHECKING:  # the plugin imports pytest, which the runner's own interpreter may lack
    from codemod.ab.plugin import (
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
# Collection (interpreter start, imports) is bounded by max(--timeout, this):
# importing torch alone can take several seconds on a loaded machine.
COLLECT_TIMEOUT_MIN = 120.0
# The event kinds of the plugin (plugin.Event); a line of any other kind is ignored.
_EVENT_KINDS = frozenset(
    "session deselected collected collecterror collectskip start report finish end plugin-error".split()
)


class Kill(StrEnum):
    """Why the runner killed a test process."""

    TEST_TIMEOUT = "test-timeout"
    FILE_TIMEOUT = "file-timeout"
    COLLECT_TIMEOUT = "collect-timeout"


# ---------------------------------------------------------------------------
# the events of all processes of one file


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
            etype, emsg = _parse_error_line(ev.get("longrepr") or "")
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


def _parse_error_line(text: str) -> tuple[str | None, str]:
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


# ---------------------------------------------------------------------------
# the processes of one file


class ArmRunner:
    """Runs files of one arm; thread-safe (one call per worker thread)."""

    def __init__(
        self,
        spec: ArmSpec,
        python: str,
        timeout: float,
        file_timeout: float,
        stop: threading.Event,
        server: ForkServer | None = None,
    ):
        self.spec = spec
        self.python = python
        self.timeout = timeout
        self.file_timeout = file_timeout
        self.stop = stop
        self.server = server  # the arm's warm interpreter; None = a fresh process per run
        self._seq = 0
        self._lock = threading.Lock()

    def _next(self) -> int:
        with self._lock:
            self._seq += 1
            return self._seq

    def _start(self, argv: list[str], env: dict[str, str], log: Path, notes: list[Notice]) -> Any:
        """A pytest process: forked by the warm interpreter, or a fresh `python -m pytest`
        (a ForkedProcess or a Popen: both poll/wait/kill)."""
        proc: Any = None
        if self.server is not None:
            try:
                proc = self.server.start(argv, self.spec.root, env, log)
            except ServerError as err:
                self.server = None
                notes.append(Notice("file.warm-interpreter-failed", arm=self.spec.name, reasons=[err.notice]))
        if proc is None:
            # die with the runner (the plugin sets PR_SET_PDEATHSIG when its parent is this pid)
            env = {**env, "DECOUPLE_AB_PARENT": str(os.getpid())}
            with open(log, "wb") as logfh:
                proc = subprocess.Popen(
                    [self.python, "-m", "pytest", *argv],
                    cwd=str(self.spec.root),
                    env=env,
                    stdout=logfh,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    start_new_session=True,
                )
        processes.register(proc)
        return proc

    def run_file(
        self, file: str, args: list[str], only: set[str] | None = None, deselect: tuple[str, ...] = ()
    ) -> FileRun:
        res = FileRun(arm=self.spec.name, file=file)
        events = FileEvents(res, deselect)
        t_file = time.monotonic()
        attempts = 0
        while True:
            attempts += 1
            if attempts > 2 + len(events.collected) + 1:
                res.notes.append(
                    Notice("file.gave-up-resuming", {"file": file, "processes": str(attempts - 1)}, arm=res.arm)
                )
                break
            watch, killed, rc, log = self._run_process(args, only, events, t_file)
            if watch.saw_end or not self._resume(events, watch, killed, rc, output_tail(log)):
                break
            if not events.remaining():
                break
        events.fold()
        res.duration = time.monotonic() - t_file
        return res

    def _run_process(
        self, args: list[str], only: set[str] | None, events: FileEvents, t_file: float
    ) -> tuple[ProcessWatch, Kill | None, int, Path]:
        """One pytest process over the file's tests not yet run; (what it said, why it
        was killed, its exit status, its log)."""
        env, path, log = self._prepare(events.excluded, only)
        if self.stop.is_set():
            raise Interrupted("stopped")
        proc = self._start(self._pytest_argv(args), env, log, events.res.notes)
        events.res.processes += 1
        reader = EventReader(path)
        watch = ProcessWatch()
        try:
            killed = self._watch(proc, reader, events, watch, t_file)
        finally:
            rc = self._reap(proc)
        events.consume(watch, reader.read())
        return watch, killed, rc, log

    def _prepare(self, excluded: set[str], only: set[str] | None) -> tuple[dict[str, str], Path, Path]:
        """A new process's environment (its event file, the node ids it leaves out or
        keeps), its event file and its log."""
        seq = self._next()
        scratch = self.spec.workdir / "events"
        path = scratch / f"{seq:05d}.jsonl"
        log = self.spec.workdir / "logs" / f"{seq:05d}.log"
        env = dict(self.spec.env)
        env["DECOUPLE_AB_EVENTS"] = str(path)
        # (an empty `only` set selects nothing; an empty deselection is none)
        for name, ids in (("deselect", excluded or None), ("only", only)):
            if ids is not None:
                listed = scratch / f"{seq:05d}.{name}"
                listed.write_text("".join(x + "\n" for x in sorted(ids)), encoding="utf-8")
                env[f"DECOUPLE_AB_{name.upper()}"] = str(listed)
        return env, path, log

    def _pytest_argv(self, args: list[str], plugins: tuple[str, ...] = ()) -> list[str]:
        answers = (PROBE_MODULE,) if PROBE_VAR in self.spec.env else ()  # the environment probe's facts
        loads = [a for name in (PLUGIN_MODULE, *plugins, *answers) for a in ("-p", name)]
        return [*loads, *PYTEST_ARGS, "-q", "-rN", *[safe_arg(a) for a in args], *self.spec.extra_args]

    def _reap(self, proc: Any) -> int:
        """Kill what is left of a process that has exited or is to die; its exit status."""
        # The leader has exited but is not reaped yet (processes.exited uses
        # WNOWAIT), so its group id cannot have been reused: kill the whole
        # group (grandchildren a test left behind included), then reap.
        processes.kill_group(proc)
        rc = proc.wait()
        processes.unregister(proc)
        if self.server is not None:
            self.server.forget(proc)
        return rc

    def _watch(
        self, proc: Any, reader: EventReader, events: FileEvents, watch: ProcessWatch, t_file: float
    ) -> Kill | None:
        """Follow the process's events until it exits (None) or a limit kills it (why)."""
        t_proc = time.time()
        while not processes.exited(proc, 0.1):
            events.consume(watch, reader.read())
            if self.stop.is_set():
                processes.kill_group(proc)
                proc.wait()
                raise Interrupted("stopped")
            now = time.time()
            if self.file_timeout and time.monotonic() - t_file > self.file_timeout:
                return Kill.FILE_TIMEOUT
            if self.timeout and watch.current is not None and now - watch.current.t_start > self.timeout:
                return Kill.TEST_TIMEOUT
            if self.timeout and not watch.collected and now - t_proc > max(self.timeout, COLLECT_TIMEOUT_MIN):
                return Kill.COLLECT_TIMEOUT
        return None

    def _resume(self, events: FileEvents, watch: ProcessWatch, killed: Kill | None, rc: int, tail: str) -> bool:
        """Record why a process ended before the sentinel; whether the rest of the file
        runs in a new process."""
        res = events.res
        if killed == Kill.COLLECT_TIMEOUT or (killed == Kill.FILE_TIMEOUT and not watch.collected):
            which = "file " if killed == Kill.FILE_TIMEOUT else ""
            events.file_failed(OutcomeValue.TIMEOUT, f"collection exceeded the {which}time limit", tail)
            return False
        if killed is not None:  # a test or the file ran out of time
            limit = self.timeout if killed == Kill.TEST_TIMEOUT else self.file_timeout
            option = "timeout" if killed == Kill.TEST_TIMEOUT else "file-timeout"
            if watch.current is not None:
                message = f"killed after exceeding --{option} {limit:g}s"
                events.stopped(watch.current, OutcomeValue.TIMEOUT, message, tail, signal=None)
            if killed == Kill.FILE_TIMEOUT:
                res.notes.append(
                    Notice("file.timeout", {"file": res.file, "seconds": f"{self.file_timeout:g}"}, arm=res.arm)
                )
                return False
            return True
        if not watch.saw_session:
            etype, emsg = _parse_error_line(tail)
            died = rc < 0
            outcome = OutcomeValue.CRASHED if died else OutcomeValue.ERROR
            message = emsg or f"pytest did not start ({processes.signame(rc)})"
            events.file_failed(outcome, message, tail, exc_type=etype, signal=processes.signame(rc) if died else None)
            return False
        return self._crashed(events, watch, processes.signame(rc), tail)

    def _crashed(self, events: FileEvents, watch: ProcessWatch, sig: str, tail: str) -> bool:
        """The process died during the session: pin the crash on the running test."""
        res = events.res
        acc = watch.current
        if acc is not None and not acc.finished:
            message = f"the test process died ({sig}) while this test was running"
            events.stopped(acc, OutcomeValue.CRASHED, message, tail, signal=sig)
            res.crashes.append(acc.nodeid)
            return True
        if not events.ever_collected:
            message = f"the test process died ({sig}) during collection"
            events.file_failed(OutcomeValue.CRASHED, message, tail, signal=sig)
            return False
        if not watch.progress:
            res.notes.append(Notice("file.died-between-tests", {"file": res.file, "status": sig}, arm=res.arm))
            return False
        res.notes.append(Notice("file.died-outside-test", {"file": res.file, "status": sig}, arm=res.arm))
        return True
