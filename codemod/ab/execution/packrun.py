"""Several files of one arm in one pytest session (a pack), as plain pytest runs them.

Where no warm interpreter can be used (an out-of-tree backend that is loaded on ``import
torch`` makes forking unsafe; no ``fork()``), a fresh interpreter per file would import
torch, the backend and what a first test imports again for every file, every resumed rest
and every rerun: plain pytest pays that once per run.  Even forked, a file's own pytest
session costs about 0.1 s beyond its tests, so from PACK_FROM files on the files are packed
with a warm interpreter too (each pack forked from it).  So each arm's files are split into
packs (`plan_packs`: contiguous runs of the sorted files, the same packs in every arm), and
one pytest process runs a pack.  The tests of a pack's files share that process, as in
plain pytest; the files of different packs do not.

The events of a pack's process are routed by node id to each file's own events
(``filerun``'s per-file folding, unchanged), so every file gets the outcomes, collection
errors and crashes a run of it alone records.  A crash is pinned on the running test and
the rest of the pack resumes in a new process; a per-test timeout likewise; ``--file-timeout``
bounds a file from its first test to its last (collection, shared by the pack, is bounded
by the collection limit).  What cannot be pinned on one file (the process did not start
pytest, died or timed out during collection or between tests, or said something of a file
outside the pack, such as a conftest.py error) ends the pack: each of its unfinished
files then runs on its own, as without packs, from where it stopped.
"""

from __future__ import annotations

import fnmatch
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codemod.ab.arms.options import PACK_FROM
from codemod.ab.arms.trees import DEFAULT_PYTHON_FILES, within
from codemod.ab.comparison.accounting import Reconciled
from codemod.ab.execution import processes
from codemod.ab.execution.events import EventReader, FileEvents, FileRun, ProcessWatch, output_tail
from codemod.ab.execution.filerun import COLLECT_TIMEOUT_MIN, ArmRunner, Kill
from codemod.ab.execution.interpreter import PACK_PLUGIN_MODULE
from codemod.ab.execution.processes import Interrupted
from codemod.ab.result.model import AccountFinding, Outcome, OutcomeValue, file_of
from codemod.ab.result.notices import Notice

if TYPE_CHECKING:  # the plugin imports pytest, which the runner's own interpreter may lack
    from codemod.target.eventtypes import Event


def packing(choice: bool | None, fork: bool, warm: bool, files: int) -> bool:
    """Whether the arms' files run packed: as --pack / --no-pack say; else where no warm
    interpreter can be used (not with --no-fork: a fresh process per file, asked for), and
    from PACK_FROM files on."""
    if choice is not None:
        return choice
    return fork and (not warm or files >= PACK_FROM)


def packs_per_arm(jobs: int) -> int:
    """How many packs each arm's files are split into: arms A and B run side by side, so
    -j N slots hold N/2 processes of each (at least one)."""
    return max(1, jobs // 2)


def plan_packs(files: Sequence[str], packs: int) -> list[list[str]]:
    """`files` (sorted) in at most `packs` contiguous runs of nearly equal length."""
    n = max(1, min(packs, len(files)))
    size, extra = divmod(len(files), n)
    out, start = [], 0
    for i in range(n):
        end = start + size + (1 if i < extra else 0)
        if end > start:
            out.append(list(files[start:end]))
        start = end
    return out


def pack_arguments(todo: list[str], args: dict[str, list[str]], root: Path) -> tuple[list[str], list[str]]:
    """The pytest arguments of a process over the files `todo` (file -> its arguments) and
    the files it reaches through their directories (see packplugin.py: naming N files of
    one directory costs pytest N x N collectors).  A file is reached through its directory
    when it runs whole and pytest's default patterns match its name, and naming the
    directory collects nothing else: no named file lies below it (pytest would collect a
    named part of a file whole there), and no ``test*/conftest.py`` below it that naming the
    files would not load (pytest loads those of a named directory at start-up)."""
    walked = [f for f in todo if args[f] == [f] and _default_test_name(f)]
    named = [f for f in todo if f not in walked]
    dirs = sorted({_parent(f) for f in walked})
    while True:
        on_the_way = {str(p) for f in walked for p in Path(f).parents}
        unfit = [
            d
            for d in dirs
            if any(_below(_parent(f), d) for f in named)
            or any(str(c.parent.relative_to(root)) not in on_the_way for c in (root / d).glob("test*/conftest.py"))
        ]
        if not unfit:
            break
        dirs = [d for d in dirs if d not in unfit]
        named += [f for f in walked if _parent(f) in unfit]
        walked = [f for f in walked if _parent(f) not in unfit]
    tops = [d for d in dirs if not any(_below(d, other) for other in dirs if other != d)]
    return [a for f in todo if f in named for a in args[f]] + tops, walked


def _parent(file: str) -> str:
    return str(Path(file).parent)


def _default_test_name(file: str) -> bool:
    """pytest's default `python_files` match the name (a file named otherwise is collected only when named)."""
    return any(fnmatch.fnmatch(Path(file).name, pattern) for pattern in DEFAULT_PYTHON_FILES)


def _below(path: str, top: str) -> bool:
    """Whether the relative directory `path` is `top` or below it (`.`: the root)."""
    return within(path, "" if top == "." else top)


@dataclass
class _Process:
    """What one process of a pack said, as a whole and per file."""

    whole: ProcessWatch = field(default_factory=ProcessWatch)
    files: dict[str, ProcessWatch] = field(default_factory=dict)
    elsewhere: bool = False  # an event named a file outside the pack
    # the process's events unrouted: what `whole` watches (its running test, its collection)
    everyone: FileEvents = field(default_factory=lambda: FileEvents(FileRun(arm="", file=""), ()))


class PackRunner(ArmRunner):
    """An arm runner that also runs packs (see the module docstring)."""

    def run_pack(self, files: dict[str, list[str]], deselect: dict[str, tuple[str, ...]]) -> list[FileRun]:
        """The files (file -> its pytest arguments) in one session, resumed after crashes;
        one FileRun per file, in the order given."""
        shares = {f: FileEvents(FileRun(arm=self.spec.name, file=f), deselect.get(f, ()), False) for f in files}
        pack = _Pack(shares, files)
        attempts = 0
        while pack.unfinished():
            attempts += 1
            if attempts > 2 + sum(len(e.collected) for e in pack.files.values()) + 1:
                for f in pack.unfinished():
                    res = pack.files[f].res
                    res.notes.append(
                        Notice("file.gave-up-resuming", {"file": f, "processes": str(attempts - 1)}, arm=res.arm)
                    )
                break
            said, killed, rc, log = self._run_pack_process(pack)
            if said.whole.saw_end and not said.elsewhere:
                if killed is None:
                    pack.exited(said.everyone, rc, processes.signame(rc))
                break
            if not self._resume_pack(pack, said, killed, rc, output_tail(log)):
                self._alone(pack, pack.unfinished())
                break
        # a file the walk did not reach (the configured python_files do not match its name)
        self._alone(pack, pack.unseen())
        return pack.results()

    def _run_pack_process(self, pack: _Pack) -> tuple[_Process, Kill | None, int, Path]:
        """One pytest process over the pack's tests not yet run; (what it said, why it was
        killed, its exit status, its log)."""
        todo = pack.unfinished()
        env, path, log = self._prepare(pack.excluded(), None)
        if self.stop.is_set():
            raise Interrupted("stopped")
        notes = pack.files[todo[0]].res.notes
        args, walked = pack_arguments(todo, pack.args, self.spec.root)
        if walked:
            listed = path.with_suffix(".pack")
            listed.write_text("".join(f + "\n" for f in walked), encoding="utf-8", errors="surrogateescape")
            env["DECOUPLE_AB_PACK"] = str(listed)
        pack.walked.update(walked)
        argv = self._pytest_argv(args, (PACK_PLUGIN_MODULE,) if walked else ())
        proc = self._start(argv, env, log, notes)
        for f in todo:
            pack.files[f].res.processes += 1
        reader = EventReader(path)
        said = _Process(files={f: ProcessWatch() for f in pack.files})
        try:
            killed = self._watch_pack(proc, reader, pack, said)
        finally:
            rc = self._reap(proc)
        pack.consume(said, reader.read())
        return said, killed, rc, log

    def _watch_pack(self, proc: Any, reader: EventReader, pack: _Pack, said: _Process) -> Kill | None:
        """Follow the process's events until it exits (None) or a limit kills it (why)."""
        t_proc = time.time()
        while not processes.exited(proc, 0.1):
            pack.consume(said, reader.read())
            if self.stop.is_set():
                processes.kill_group(proc)
                proc.wait()
                raise Interrupted("stopped")
            now = time.time()
            current = said.whole.current
            if current is not None:
                if self.timeout and now - current.t_start > self.timeout:
                    return Kill.TEST_TIMEOUT
                began = pack.began.get(file_of(current.nodeid))
                if self.file_timeout and began is not None and now - began > self.file_timeout:
                    return Kill.FILE_TIMEOUT
            if self.timeout and not said.whole.collected and now - t_proc > max(self.timeout, COLLECT_TIMEOUT_MIN):
                return Kill.COLLECT_TIMEOUT
        return None

    def _resume_pack(self, pack: _Pack, said: _Process, killed: Kill | None, rc: int, tail: str) -> bool:
        """Record why a pack's process ended early on the test it concerns; whether the
        rest of the pack runs in a new process (False: its files go on alone)."""
        acc = said.whole.current
        if acc is None and killed is None and not said.elsewhere:
            pack.unaccounted(said.everyone, processes.signame(rc))  # it died between tests
        if said.elsewhere or killed == Kill.COLLECT_TIMEOUT or acc is None:
            return False  # nothing to pin it on (nor a test running when it was stopped)
        file = file_of(acc.nodeid)
        events = pack.files[file]
        own = events.accs[acc.nodeid]
        if killed is not None:
            option, limit = (
                ("timeout", self.timeout) if killed == Kill.TEST_TIMEOUT else ("file-timeout", self.file_timeout)
            )
            events.stopped(
                own, OutcomeValue.TIMEOUT, f"killed after exceeding --{option} {limit:g}s", tail, signal=None
            )
            if killed == Kill.FILE_TIMEOUT:
                params = {"file": file, "seconds": f"{self.file_timeout:g}"}
                events.res.notes.append(Notice("file.timeout", params, arm=events.res.arm))
                pack.stopped.add(file)
            return True
        sig = processes.signame(rc)
        events.stopped(
            own, OutcomeValue.CRASHED, f"the test process died ({sig}) while this test was running", tail, signal=sig
        )
        events.res.crashes.append(acc.nodeid)
        return True

    def _alone(self, pack: _Pack, files: list[str]) -> None:
        """The pack's `files`, each run on its own from where it stopped."""
        for f in files:
            events = pack.files[f]
            events.fold()
            finished = {n: o for n, o in events.res.outcomes.items() if n in events.excluded}
            alone = self.run_file(f, pack.args[f], deselect=tuple(sorted(events.excluded)))
            pack.went_alone(f, finished, alone)


class _Pack:
    """The files of a pack: their events, and what is left to run."""

    def __init__(self, files: dict[str, FileEvents], args: dict[str, list[str]]):
        self.files = files
        self.args = args
        self.began: dict[str, float] = {}  # file -> when its first test started
        self.last: dict[str, float] = {}  # file -> when it last said something
        self.stopped: set[str] = set()  # files ended by --file-timeout
        self.alone: dict[str, FileRun] = {}  # files that went on alone: their whole result
        self.walked: set[str] = set()  # files a process reached through their directories

    def excluded(self) -> set[str]:
        return set().union(*(e.excluded for e in self.files.values()))

    def unfinished(self) -> list[str]:
        """The files with tests still to run, or not yet collected."""
        return [
            f
            for f, e in self.files.items()
            if f not in self.stopped and f not in self.alone and (not e.ever_collected or e.remaining())
        ]

    def unseen(self) -> list[str]:
        """The files reached through their directories that no process collected."""
        return [
            f
            for f, e in self.files.items()
            if f in self.walked
            and f not in self.alone
            and not (e.collected or e.dropped or e.res.collection_errors or e.res.collection_skips)
        ]

    def consume(self, said: _Process, events: list[Event]) -> None:
        """Route each event to the file it concerns (node id lists are split; an event of
        the session goes to every file)."""
        for ev in events:
            said.everyone.consume(said.whole, [ev])
            nodeids = ev.get("nodeids")
            if isinstance(nodeids, list):
                # grouped once: a pack's collection event names every test of its files
                by_file: dict[str, list[str]] = {}
                for n in nodeids:
                    by_file.setdefault(file_of(n), []).append(n)
                for f, e in self.files.items():
                    mine: Any = {**ev, "nodeids": by_file.get(f, [])}
                    e.consume(said.files[f], [mine])
                said.elsewhere |= any(f not in self.files for f in by_file)
                continue
            nodeid = ev.get("nodeid")
            if not isinstance(nodeid, str):
                for f, e in self.files.items():
                    e.consume(said.files[f], [ev])
                if ev["ev"] == "end" and said.everyone.reconciled is not None:
                    self.settle(said.everyone.reconciled)
                continue
            f = file_of(nodeid)
            if f not in self.files:
                said.elsewhere = True
                continue
            t = float(ev.get("t") or time.time())
            if ev["ev"] == "start":
                self.began.setdefault(f, t)
            self.last[f] = t
            self.files[f].consume(said.files[f], [ev])

    def settle(self, reconciled: Reconciled) -> None:
        """A session's reconciliation with pytest's account, handed to its files: each its own
        tests' doubts, the first of the session's files its findings (which name them all)."""
        named = {f for finding in reconciled.findings for f in finding.files}
        owner = next((f for f in self.files if f in named), next(iter(self.files)))
        for f, e in self.files.items():
            doubts = {n: why for n, why in reconciled.doubts.items() if file_of(n) == f}
            findings = reconciled.findings if f == owner else []
            e.settle(replace(reconciled, findings=findings, doubts=doubts))

    def unaccounted(self, everyone: FileEvents, status: str) -> None:
        """The session ended between tests without pytest's account."""
        self._say_once(everyone.unaccounted(status))

    def exited(self, everyone: FileEvents, rc: int, status: str) -> None:
        """The process exited otherwise than its session ended."""
        self._say_once(everyone.exited(rc, status))

    def _say_once(self, finding: AccountFinding | None) -> None:
        """A finding about the pack's process: said once, on the first of the files it names."""
        if finding is not None:
            owner = next((f for f in self.files if f in finding.files), next(iter(self.files)))
            self.files[owner].res.accounting.append(finding)

    def went_alone(self, file: str, finished: dict[str, Outcome], alone: FileRun) -> None:
        """A file's result: what its pack finished, then what it did on its own."""
        res = self.files[file].res
        alone.outcomes = {**finished, **alone.outcomes}
        alone.collection_errors = {**res.collection_errors, **alone.collection_errors}
        alone.collection_skips = {**res.collection_skips, **alone.collection_skips}
        alone.crashes = res.crashes + alone.crashes
        alone.accounting = res.accounting + alone.accounting
        alone.processes += res.processes
        alone.notes = res.notes + alone.notes
        alone.duration += self.last.get(file, 0.0) - self.began.get(file, self.last.get(file, 0.0))
        self.alone[file] = alone

    def results(self) -> list[FileRun]:
        out = []
        for f, e in self.files.items():
            if f in self.alone:
                out.append(self.alone[f])
                continue
            e.fold()
            e.res.duration = self.last.get(f, 0.0) - self.began.get(f, self.last.get(f, 0.0))
            out.append(e.res)
        return out
