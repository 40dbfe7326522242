"""One test file in one arm: run pytest, read the capture events, resume after a crash.

``ArmRunner.run_file`` starts a pytest process for a file (through the capture
plugin), follows its event file while it runs, enforces the per-test, collection
and per-file limits, and when the process dies without the session-end sentinel
pins the crash on the test that was running and resumes the rest of the file in
a new process.  What its processes said is read and folded by ``events``.
"""

from __future__ import annotations

import copy
import itertools
import os
import subprocess
import threading
import time
from pathlib import Path
from typing import Any, TypeVar

from codemod.ab.arms.sources import ArmSpec
from codemod.ab.execution import processes
from codemod.ab.execution.envprobe import PROBE_MODULE, PROBE_VAR
from codemod.ab.execution.events import EventReader, FileEvents, FileRun, ProcessWatch, output_tail, parse_error_line
from codemod.ab.execution.interpreter import PLUGIN_MODULE, ForkServer, ServerError
from codemod.ab.execution.processes import Interrupted
from codemod.ab.result.model import PYTEST_ARGS, OutcomeValue, safe_arg
from codemod.ab.result.notices import Notice
from transforms.core.strenum import StrEnum

# Collection (interpreter start, imports) is bounded by max(--timeout, this):
# importing torch alone can take several seconds on a loaded machine.
COLLECT_TIMEOUT_MIN = 120.0


class Kill(StrEnum):
    """Why the runner killed a test process."""

    TEST_TIMEOUT = "test-timeout"
    FILE_TIMEOUT = "file-timeout"
    COLLECT_TIMEOUT = "collect-timeout"


# ---------------------------------------------------------------------------
# the processes of one file

_Runner = TypeVar("_Runner", bound="ArmRunner")


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
        self._seq = itertools.count(1)  # numbers the processes' event files and logs

    def _next(self) -> int:
        return next(self._seq)  # (atomic: one C call)

    def elsewhere(self: _Runner, spec: ArmSpec) -> _Runner:
        """This runner on `spec` (the arm moved to a replay tree), numbering its processes'
        files in the arm's scratch folder with this one."""
        other = copy.copy(self)
        other.spec = spec
        return other

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
            if watch.saw_end:
                exited = events.exited(rc, processes.signame(rc)) if killed is None else None
                res.accounting += [exited] if exited is not None else []
                break
            if not self._resume(events, watch, killed, rc, output_tail(log)):
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
            etype, emsg = parse_error_line(tail)
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
        unaccounted = events.unaccounted(sig)
        res.accounting += [unaccounted] if unaccounted is not None else []
        if not watch.progress:
            res.notes.append(Notice("file.died-between-tests", {"file": res.file, "status": sig}, arm=res.arm))
            return False
        res.notes.append(Notice("file.died-outside-test", {"file": res.file, "status": sig}, arm=res.arm))
        return True
