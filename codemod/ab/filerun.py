"""One test file in one arm: run pytest, read the capture events, resume after a crash.

``ArmRunner.run_file`` starts a pytest process for a file (through the
capture plugin), follows its event file while it runs, enforces the per-test,
collection and per-file limits, and when the process dies without the
session-end sentinel pins the crash on the test that was running and resumes
the rest of the file in a new process.
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
from typing import TYPE_CHECKING, Any

from codemod.ab import arms as _arms
from codemod.ab import procs
from codemod.ab.model import Outcome
from codemod.ab.notices import Notice
from codemod.ab.procs import Interrupted
from codemod.ab.warm import ServerError

if TYPE_CHECKING:
    from codemod.ab.warm import ForkServer

PLUGIN_MODULE = "decouple_ab_plugin"
_OUTPUT_TAIL = 4000
# Collection (interpreter start, imports) is bounded by max(--timeout, this):
# importing torch alone can take several seconds on a loaded machine.
COLLECT_TIMEOUT_MIN = 120.0


class _TestAcc:
    __slots__ = ("nodeid", "reports", "subtests", "started", "finished", "t_start")

    def __init__(self, nodeid: str):
        self.nodeid = nodeid
        self.reports: dict[str, dict] = {}
        self.subtests: list[dict] = []
        self.started = False
        self.finished = False
        self.t_start = 0.0


def _phase_result(rec: dict) -> str:
    out, when, xf = rec.get("outcome"), rec.get("when"), rec.get("xfail")
    if out == "failed":
        return "failed" if when == "call" else "error"
    if out == "skipped":
        return "xfailed" if xf else "skipped"
    return "xpassed" if (xf and when == "call") else "passed"


def _subtest_desc(sub: dict) -> str:
    parts = []
    if sub.get("msg") is not None:
        parts.append(f"[{sub['msg']}]")
    if sub.get("kwargs"):
        parts.append("(" + ", ".join(f"{k}={v}" for k, v in sub["kwargs"].items()) + ")")
    return " ".join(parts) or "(<subtest>)"


def _rec_outcome(nodeid: str, rec: dict, result: str, phase: str) -> Outcome:
    exc = rec.get("exc") or {}
    msg = exc.get("message") or rec.get("skip_reason") or ""
    if not msg and result not in ("passed",):
        msg = next((ln for ln in (rec.get("longrepr") or "").splitlines() if ln.strip()), "")
    return Outcome(
        nodeid=nodeid,
        outcome=result,
        phase=phase,
        exc_type=exc.get("type"),
        exc_chain=list(exc.get("chain") or []),
        message=msg[:4000],
        traceback=rec.get("longrepr") or "",
        duration=float(rec.get("duration") or 0.0),
    )


def build_outcome(acc: _TestAcc) -> Outcome:
    """Fold the phase reports (and subtests) of one test into one Outcome."""
    setup, call, teardown = (acc.reports.get(w) for w in ("setup", "call", "teardown"))
    duration = sum(float(r.get("duration") or 0.0) for r in acc.reports.values())
    out: Outcome | None = None
    if setup is not None and _phase_result(setup) != "passed":
        out = _rec_outcome(acc.nodeid, setup, _phase_result(setup), "setup")
    elif call is not None:
        out = _rec_outcome(acc.nodeid, call, _phase_result(call), "call")
        if out.outcome == "passed":
            out.message, out.traceback, out.exc_type, out.exc_chain = "", "", None, []
    else:
        out = Outcome(nodeid=acc.nodeid, outcome="passed", phase="call")
    subs = []
    for sub in acc.subtests:
        res = _phase_result(sub)
        if res == "passed":
            continue
        subs.append(_rec_outcome(f"{acc.nodeid} {_subtest_desc(sub.get('subtest') or {})}", sub, res, "call"))
    out.subtests = subs
    failing_subs = [s for s in subs if s.outcome in ("failed", "error")]
    if failing_subs:
        if out.outcome in ("passed", "xpassed", "skipped") or (out.outcome == "failed" and not out.exc_type):
            n = len(failing_subs)
            out.outcome, out.phase, out.exc_type, out.exc_chain = "failed", "call", None, []
            out.message = f"{n} failed subtest{'s' if n != 1 else ''}: " + "; ".join(
                f"{s.nodeid.split(' ', 1)[1] if ' ' in s.nodeid else ''} {s.exc_type or ''}".strip()
                for s in failing_subs[:5]
            )
            out.traceback = "\n\n".join(s.traceback for s in failing_subs)[:30000]
    if teardown is not None and teardown.get("outcome") == "failed":
        td = _rec_outcome(acc.nodeid, teardown, "error", "teardown")
        if out.outcome in ("failed", "error"):
            out.message = (out.message + "\n[teardown] " + (td.exc_type or "") + ": " + td.message)[:4000]
            out.traceback = (out.traceback + "\n\n[teardown]\n" + td.traceback)[:40000]
        else:
            td.subtests = out.subtests
            out = td
    out.duration = duration
    return out


@dataclass
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


class _EventReader:
    def __init__(self, path: Path):
        self.path = path
        self.pos = 0
        self.buf = b""

    def read(self) -> list[dict]:
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
                out.append(json.loads(line))
            except ValueError:
                continue
        return out


def _tail(path: Path, n: int = _OUTPUT_TAIL) -> str:
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


class ArmRunner:
    """Runs files of one arm; thread-safe (one call per worker thread)."""

    def __init__(
        self,
        spec: _arms.ArmSpec,
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

    def _start(self, argv: list[str], env: dict[str, str], log: Path, notes: list[Notice]):
        """A pytest process: forked by the warm interpreter, or a fresh `python -m pytest`."""
        proc: Any = None  # a ForkedProcess or a Popen: both poll/wait/kill
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
        procs.register(proc)
        return proc

    def run_file(
        self, file: str, args: list[str], only: set[str] | None = None, deselect: tuple[str, ...] = ()
    ) -> FileRun:
        res = FileRun(arm=self.spec.name, file=file)
        accs: dict[str, _TestAcc] = {}
        collected: list[str] = []
        excluded: set[str] = set(deselect)  # the node ids another shard runs, then crashed tests
        t_file = time.monotonic()
        attempts = 0
        ever_collected = False
        while True:
            attempts += 1
            if attempts > 2 + len(collected) + 1:
                res.notes.append(
                    Notice("file.gave-up-resuming", {"file": file, "processes": str(attempts - 1)}, arm=res.arm)
                )
                break
            seq = self._next()
            events = self.spec.workdir / "events" / f"{seq:05d}.jsonl"
            log = self.spec.workdir / "logs" / f"{seq:05d}.log"
            env = dict(self.spec.env)
            env["DECOUPLE_AB_EVENTS"] = str(events)
            if excluded:
                desel = self.spec.workdir / "events" / f"{seq:05d}.deselect"
                desel.write_text("".join(x + "\n" for x in sorted(excluded)), encoding="utf-8")
                env["DECOUPLE_AB_DESELECT"] = str(desel)
            if only is not None:
                onlyf = self.spec.workdir / "events" / f"{seq:05d}.only"
                onlyf.write_text("".join(x + "\n" for x in sorted(only)), encoding="utf-8")
                env["DECOUPLE_AB_ONLY"] = str(onlyf)
            argv = [
                "-p",
                PLUGIN_MODULE,
                *_arms.PYTEST_ARGS,
                "-q",
                "-rN",
                *[_arms.safe_arg(a) for a in args],
                *self.spec.extra_args,
            ]
            if self.stop.is_set():
                raise Interrupted("stopped")
            proc = self._start(argv, env, log, res.notes)
            res.processes += 1
            reader = _EventReader(events)
            current: _TestAcc | None = None
            saw_session = saw_end = False
            collected_now = False
            killed: str | None = None  # "test-timeout" | "file-timeout" | "collect-timeout"
            t_proc = time.time()
            progress = False
            rc = None

            def consume(evs: list[dict]) -> None:
                nonlocal current, saw_session, saw_end, collected_now, progress, ever_collected
                for ev in evs:
                    kind = ev.get("ev")
                    if kind == "session":
                        saw_session = True
                    elif kind == "collected":
                        collected_now = ever_collected = True
                        for nid in ev.get("nodeids", []):
                            if nid not in accs:
                                accs[nid] = _TestAcc(nid)
                                collected.append(nid)
                    elif kind == "collecterror":
                        key = ev.get("nodeid") or file
                        exc = ev.get("exc") or {}
                        etype, emsg = exc.get("type"), exc.get("message") or ""
                        if not etype:
                            etype, emsg = _parse_error_line(ev.get("longrepr") or "")
                        res.collection_errors[key] = Outcome(
                            nodeid=key,
                            outcome="error",
                            phase="collect",
                            exc_type=etype,
                            exc_chain=list(exc.get("chain") or []),
                            message=(
                                emsg or next((ln for ln in (ev.get("longrepr") or "").splitlines() if ln.strip()), "")
                            )[:4000],
                            traceback=ev.get("longrepr") or "",
                        )
                    elif kind == "collectskip":
                        key = ev.get("nodeid") or file
                        res.collection_skips[key] = Outcome(
                            nodeid=key,
                            outcome="skipped",
                            phase="collect",
                            message=(ev.get("reason") or "skipped at module level")[:4000],
                        )
                    elif kind == "start":
                        nid = ev["nodeid"]
                        acc = accs.get(nid)
                        if acc is None:
                            acc = accs[nid] = _TestAcc(nid)
                            collected.append(nid)
                        acc.started = True
                        acc.t_start = float(ev.get("t") or time.time())
                        current = acc
                        progress = True
                    elif kind == "report":
                        nid = ev["nodeid"]
                        acc = accs.get(nid) or accs.setdefault(nid, _TestAcc(nid))
                        if ev.get("subtest") is not None:
                            acc.subtests.append(ev)
                        else:
                            acc.reports[ev.get("when") or "call"] = ev
                    elif kind == "finish":
                        acc = accs.get(ev["nodeid"])
                        if acc is not None:
                            acc.finished = True
                            excluded.add(acc.nodeid)
                        if current is not None and current.nodeid == ev["nodeid"]:
                            current = None
                    elif kind == "end":
                        saw_end = True

            try:
                while True:
                    if procs.exited(proc, 0.1):
                        break
                    consume(reader.read())
                    if self.stop.is_set():
                        procs.kill_group(proc)
                        proc.wait()
                        raise Interrupted("stopped")
                    now = time.time()
                    if self.file_timeout and time.monotonic() - t_file > self.file_timeout:
                        killed = "file-timeout"
                    elif self.timeout and current is not None and now - current.t_start > self.timeout:
                        killed = "test-timeout"
                    elif self.timeout and not collected_now and now - t_proc > max(self.timeout, COLLECT_TIMEOUT_MIN):
                        killed = "collect-timeout"
                    if killed:
                        break
            finally:
                # The leader has exited but is not reaped yet (_exited uses
                # WNOWAIT), so its group id cannot have been reused: kill the
                # whole group (grandchildren a test left behind included),
                # then reap.
                procs.kill_group(proc)
                rc = proc.wait()
                procs.unregister(proc)
                if self.server is not None:
                    self.server.forget(proc)
            consume(reader.read())
            if saw_end:
                break
            tail = _tail(log)
            if killed == "collect-timeout" or (killed == "file-timeout" and not collected_now):
                res.collection_errors[file] = Outcome(
                    nodeid=file,
                    outcome="timeout",
                    phase="collect",
                    message=f"collection exceeded the {'file ' if killed == 'file-timeout' else ''}time limit",
                    traceback=tail,
                )
                break
            if killed in ("test-timeout", "file-timeout"):
                acc = current
                if acc is not None:
                    limit = self.timeout if killed == "test-timeout" else self.file_timeout
                    o = build_outcome(acc)
                    o.outcome = "timeout"
                    o.phase = _next_phase(acc)
                    option = "timeout" if killed == "test-timeout" else "file-timeout"
                    o.message = f"killed after exceeding --{option} {limit:g}s"
                    o.traceback = tail
                    o.exc_type, o.exc_chain = None, []
                    accs[acc.nodeid].finished = True
                    res.outcomes[acc.nodeid] = o
                    excluded.add(acc.nodeid)
                if killed == "file-timeout":
                    res.notes.append(
                        Notice("file.timeout", {"file": file, "seconds": f"{self.file_timeout:g}"}, arm=res.arm)
                    )
                    break
            elif not saw_session:
                etype, emsg = _parse_error_line(tail)
                res.collection_errors[file] = Outcome(
                    nodeid=file,
                    outcome="error" if rc is not None and rc >= 0 else "crashed",
                    phase="collect",
                    exc_type=etype,
                    message=emsg or f"pytest did not start ({procs.signame(rc if rc is not None else -9)})",
                    traceback=tail,
                    signal=procs.signame(rc) if rc is not None and rc < 0 else None,
                )
                break
            else:
                acc = current
                sig = procs.signame(rc if rc is not None else -9)
                if acc is not None and not acc.finished:
                    o = build_outcome(acc)
                    o.outcome, o.phase, o.signal = "crashed", _next_phase(acc), sig
                    o.exc_type, o.exc_chain = None, []
                    o.message = f"the test process died ({sig}) while this test was running"
                    o.traceback = tail
                    acc.finished = True
                    res.outcomes[acc.nodeid] = o
                    res.crashes.append(acc.nodeid)
                    excluded.add(acc.nodeid)
                elif not ever_collected:
                    res.collection_errors[file] = Outcome(
                        nodeid=file,
                        outcome="crashed",
                        phase="collect",
                        signal=sig,
                        message=f"the test process died ({sig}) during collection",
                        traceback=tail,
                    )
                    break
                elif not progress:
                    res.notes.append(Notice("file.died-between-tests", {"file": file, "status": sig}, arm=res.arm))
                    break
                else:
                    res.notes.append(Notice("file.died-outside-test", {"file": file, "status": sig}, arm=res.arm))
            remaining = [n for n in collected if n not in excluded]
            if not remaining:
                break
        # fold, in collection order
        special = res.outcomes
        res.outcomes = {}
        for nid in collected:
            if nid in special:
                res.outcomes[nid] = special[nid]
                continue
            acc = accs[nid]
            if acc.finished or acc.reports:
                res.outcomes[nid] = build_outcome(acc)
            else:
                res.outcomes[nid] = Outcome(
                    nodeid=nid, outcome="not-run", phase="setup", message="not run (the file was stopped before it)"
                )
        res.duration = time.monotonic() - t_file
        return res


def _next_phase(acc: _TestAcc) -> str:
    if "teardown" in acc.reports:
        return "teardown"
    if "call" in acc.reports:
        return "teardown"
    if "setup" in acc.reports:
        return "call"
    return "setup"
