"""The A/B orchestration: prepare the arms, run their files in parallel, compare, confirm.

The phases have modules of their own: ``options`` (what the run is asked), ``arms``
(where the arms come from, their specs and roots; ``trees`` the files in them),
``interpreter`` (the target interpreter: checked, probed, warmed), ``filerun`` (one
file in one arm: events, crash resume) on the slots of ``processes``, ``compare``
(categories, verdict), ``confirm`` (the reruns of discordant tests).  Here: every
file in every arm on the slots, the arm results gathered from them, and the order
of it all.

Entry point: ``run_ab(RunOptions) -> ABResult`` (the options are not changed).
Raises ``UsageError`` for bad input (exit 2) and ``Interrupted`` after
SIGINT/SIGTERM (temp roots and child process groups are gone by then).
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as _dt
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codemod.ab.arms import changes as _changes
from codemod.ab.arms import isolation as _isolation
from codemod.ab.arms import shard as _shard
from codemod.ab.arms import sources as _arms
from codemod.ab.arms import trees as _trees
from codemod.ab.arms.options import RunOptions, UsageError, check_options, parse_shard
from codemod.ab.arms.replay import Replays
from codemod.ab.arms.sources import ArmSpec, Sources
from codemod.ab.comparison import compare as _cmp
from codemod.ab.comparison import coverage as _coverage
from codemod.ab.comparison import merge as _merge
from codemod.ab.comparison import signature as _sig
from codemod.ab.execution import envprobe as _envprobe
from codemod.ab.execution import interpreter as _interp
from codemod.ab.execution import labelfilter as _filter
from codemod.ab.execution import processes
from codemod.ab.execution import testplan as _testplan
from codemod.ab.execution.confirm import Replayer, confirm_discordant, packs_upto
from codemod.ab.execution.envprobe import PROBE_MODULE
from codemod.ab.execution.events import FileRun
from codemod.ab.execution.filerun import PLUGIN_MODULE, ArmRunner
from codemod.ab.execution.interpreter import ForkServer
from codemod.ab.execution.packrun import PackRunner, packing, packs_per_arm, plan_packs
from codemod.ab.execution.processes import Interrupted, SlotPool, kill_all_children, wait_all
from codemod.ab.result.model import ABResult, ArmResult, Environment, RunIdentity, file_of
from codemod.ab.result.notices import Notice
from codemod.target import SOURCES as TARGET_FILES
from codemod.util.reaper import orphans_reaped
from transforms.core.words import plural

TEMP_PREFIX = "decouple-ab-"


# ---------------------------------------------------------------------------
# the whole run


def _tool_version() -> str:
    try:
        from importlib import metadata

        return metadata.version("test-decouple")
    except Exception:
        return ""


def _quiet(_message: str) -> None:
    pass


def _temp_base(opts: RunOptions) -> tuple[str, tuple[str, str] | None]:
    """Where the run's temporary root goes (`isolation.temp_base`): never in a git work tree
    nor in a tree being compared; exit 2 before anything runs when no folder will do."""
    trees = [Path(r).resolve() for r in (opts.a_root, opts.b_root) if r]  # as resolve_sources reads them
    try:
        return _isolation.temp_base(trees, dict(os.environ))
    except _isolation.NoTempRoot as err:
        raise UsageError(
            f"no temporary folder outside a git work tree for the arms ({err}): set TMPDIR to a folder outside"
        ) from None


def run_ab(opts: RunOptions) -> ABResult:
    with orphans_reaped():  # a test's process that left its group is killed too
        return _run_ab(opts)


def _run_ab(opts: RunOptions) -> ABResult:
    old = processes.install_signal_handlers()
    stop = threading.Event()
    work: Path | None = None
    pool: SlotPool | None = None
    lock: int | None = None
    servers: list[ForkServer] = []
    try:
        base, moved = _temp_base(opts)
        for stale in processes.reap_stale_roots(Path(base), TEMP_PREFIX):
            (opts.progress or _quiet)(f"removed {stale}, left by an A/B run that was killed")
        work = Path(tempfile.mkdtemp(prefix=TEMP_PREFIX, dir=base))
        lock = processes.claim_root(work)
        pool = SlotPool(max(1, opts.jobs or os.cpu_count() or 1), "decouple-ab")
        result = _run(opts, work, pool, stop, servers)
        if moved is not None:
            result.warnings.insert(0, Notice("run.temp-moved", {"tmpdir": moved[0], "tree": moved[1], "used": base}))
        return result
    except Interrupted:
        stop.set()
        raise
    finally:
        prev = processes.block_signals()
        try:
            stop.set()
            kill_all_children()
            if pool is not None:
                pool.shutdown(wait=True, cancel_futures=True)
            kill_all_children()
            for server in servers:
                server.close()
            if work is not None and not opts.keep_temp:
                shutil.rmtree(work, ignore_errors=True)
            if lock is not None:
                os.close(lock)
        finally:
            if prev is not None:
                signal.pthread_sigmask(signal.SIG_SETMASK, prev)
            processes.restore_signal_handlers(old)


def _run(opts: RunOptions, work: Path, pool: SlotPool, stop: threading.Event, servers: list[ForkServer]) -> ABResult:
    t0 = time.monotonic()
    say = opts.progress or _quiet
    cwd = Path(opts.cwd or os.getcwd()).resolve()
    shard = parse_shard(opts.shard)
    check_options(opts)
    # every process runs with cwd = an arm root: the interpreter's path, made absolute
    opts = dataclasses.replace(opts, python=_interp.resolve_python(opts.python, cwd))
    checked = processes.aside("check", _interp.check_python, opts.python)  # answered while the arms are made
    result = ABResult(
        tool_version=_tool_version(),
        normaliser_version=_sig.NORMALISER_VERSION,
        started=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        python=opts.python,
        shard=opts.shard,
        base_ref=opts.base or None,
        mapping=dict(opts.mapping),
    )
    support = _support_files(work, "probe.py")
    with _outranked_by(checked):
        sources = _arms.resolve_sources(opts, cwd)
        result.paths = list(sources.sel.paths)
        base_env = dict(os.environ)
        arm_env = _arm_environment(opts, base_env, sources, result, say)
        specs, arm_errors = _arms.prepare_arms(opts, sources, work, support, base_env, arm_env, result.warnings, say)
        _arms.name_walked_dirs(specs, sources.sel, work)
        files = _select_files(specs, arm_errors, sources.sel, shard, opts, say)
        result.identity = _identity(specs, files, shard[1] if shard else 1, opts, result.tool_version)
        filtered = _label_filter(opts, specs, arm_errors, files, work)
        # warm interpreters: they import in the background while the interpreter check ends
        # and the probe and the --hw-classification check run
        t_warm = time.monotonic()
        launched = _interp.launch(opts.fork, opts.python, specs, files.by_arm, support, servers, say)
        # (while they import) what the confirmation reruns replay, before anything runs in the arms
        replays = {n: Replays.snapshot(specs[n]) for n in ("A", "B") if n not in arm_errors} if opts.confirm > 0 else {}
    info = _interpreter_info(checked, opts.python, say)
    # the diff between the git arms, read while the warm interpreters import (an idle core)
    changes = processes.aside("changes", _changes.git_changes, str(cwd), opts.base, result.paths) if opts.base else None
    packs = _packs(files, opts)
    unforked_packs = _most_packs(packs) if opts.pack is not False else 0  # how they run without the server
    warm = _interp.settle(opts.fork, launched, t_warm, stop, say, result.warnings, unforked_packs)
    probed = _envprobe.start_probe(opts, warm.get("A"), specs, support, base_env, arm_env, work)
    if opts.hw_classification:
        _pass_hw_classification(opts, specs, probed, result.warnings)
    runners = {
        n: PackRunner(s, opts.python, opts.timeout, opts.file_timeout, stop, warm.get(n)) for n, s in specs.items()
    }
    jobs = _Jobs(opts, sources, specs, arm_errors, files, stop, result)
    jobs.start(pool, runners, say, packs if _packed(opts, packs, bool(warm), result.warnings) else [])

    # A and B first: their discordant tests are confirmed while the diagnostic
    # arms' files still run
    arms = jobs.results(["A", "B"], work)
    a, b = arms["A"], arms["B"]
    rows = _cmp.compare_arms(a, b, opts.mapping, result.paths)
    if opts.confirm > 0 and a.ran and b.ran:
        confirm_discordant(rows, *jobs.replayers(runners, replays), a, b, opts.confirm, pool, stop, say)
    result.tests = rows
    arms.update(jobs.results([n for n in specs if n not in arms], work))
    result.arms = [arms[n] for n in specs]
    for d in opts.diags:
        summary = _cmp.diagnostic_summary(d.name, d.based_on, d.variables, arms[d.based_on], arms[d.name])
        result.diagnostics.append(summary)
    if filtered[0]:
        result.label_filter = _filter.summarise(arms["B"], arms[_filter.ARM], *filtered)
    if opts.test_plan and b.ran:
        spec = specs["B"]
        b_files = [f for f in files.run if f in files.by_arm["B"]]
        limit = opts.file_timeout or _testplan.DEFAULT_LIMIT
        logs = spec.workdir / "logs"
        result.test_plan = _testplan.run_plan(
            b_files, spec.root, spec.env, opts.python, support, logs, limit, pool, stop
        )
    result.environment = _environment(probed(), opts.python, info)
    reason_given = any(w.code.startswith("hw-classification.") for w in result.warnings)
    if opts.hw_classification and not b.extra_args and not reason_given:
        result.warnings.append(Notice("hw-classification.not-passed"))
    result.changes = changes.result() if changes is not None else None
    _conclude(result, opts, specs["B"].root)
    result.duration = round(time.monotonic() - t0, 3)
    return result


def _conclude(result: ABResult, opts: RunOptions, b_root: Path) -> None:
    """What the comparison adds up to: the moves to devices this machine lacks, the counts,
    every arm's totals and census, the census's findings, the diff between git arms, the
    devices a widened device set does not exercise here, and the verdict."""
    _coverage.mark_not_run_here(result.tests, result.environment)
    _cmp.sort_rows(result.tests)
    result.counts = _cmp.count(result.tests)
    for arm in result.arms:
        _coverage.count_arm(arm)
    b = result.arm("B")
    if b is not None and b.ran:
        files = sorted({file_of(n) for n in b.outcomes})
        result.runtime = _coverage.runtime_findings(b, _coverage.read_sources(b_root, files))
    result.not_exercised = _coverage.not_exercised(result.changes, result.environment)
    _coverage.explain_narrowed(result.changes, result.mapping, result.arm("A"))
    result.verdict, result.verdict_reason = _cmp.verdict(result)


def _identity(specs: dict[str, ArmSpec], files: _Files, shards: int, opts: RunOptions, tool: str) -> RunIdentity:
    """What makes this run's shards one run (`ab merge` checks it)."""
    code = {n: (specs[n].commit, specs[n].tree or _merge.tree_digest(specs[n].root, files.by_arm[n])) for n in "AB"}
    return _merge.identify(code, shards, tool, _merge.request_of(opts))


def _label_filter(
    opts: RunOptions, specs: dict[str, ArmSpec], arm_errors: dict[str, str], files: _Files, work: Path
) -> tuple[list[str], list[str]]:
    """Add the arm that runs B's labelled files under PyTorch's label filter, where the tree
    offers it (and --hw-classification does not already filter B itself): (files, values)."""
    if not opts.label_filter or opts.hw_classification or "B" in arm_errors:
        return [], []
    planned, values = _filter.plan(specs["B"], files.by_arm["B"])
    chosen = [f for f in planned if f in files.run]
    if chosen:
        specs[_filter.ARM] = _filter.arm_spec(specs["B"], work, values)
        files.by_arm[_filter.ARM] = {f: files.by_arm["B"][f] for f in chosen}
    return chosen, values


def _support_files(work: Path, probe: str) -> Path:
    """The standalone files the target interpreter runs, under private names."""
    support = work / "support"
    support.mkdir()
    _interp.install_server(support)  # and the capture plugin beside it
    shutil.copy2(TARGET_FILES / probe, support / f"{PROBE_MODULE}.py")
    return support


def _arm_environment(
    opts: RunOptions, base_env: dict[str, str], sources: Sources, result: ABResult, say: Callable[[str], None]
) -> dict[str, str]:
    """The variables every arm gets on top of the sanitised environment (the runner's
    own, then --env), recorded in `result` with what the runner unsets and sets."""
    runner_env = _arms.thread_vars(base_env, opts.env, opts.jobs)
    if runner_env:
        say(
            "torch threads: "
            + " ".join(f"{k}={v}" for k, v in runner_env.items())
            + f" in every arm (-j {opts.jobs} on {os.cpu_count()} cores)"
        )
    arm_env = {**runner_env, **opts.env}
    result.env_unset = [*_arms.UNSET_VARS, *_isolation.removed_present(base_env)]
    result.env_set = {
        **_arms.FIXED_VARS,
        _isolation.CEILING_VAR: "<the run's temporary root>",
        "PYTHONPYCACHEPREFIX": "<per-arm prefix, deleted with the run>",
        "TMPDIR": "<per-arm temp dir>",
        **arm_env,
    }
    result.warnings.extend(_arms.pythonpath_warnings(base_env, sources.user_roots))
    return arm_env


def _environment(envr: Environment, python: str, info: dict[str, str]) -> Environment:
    """The probe's facts, completed with what the interpreter check said."""
    envr.executable = envr.executable or python
    if not envr.python:
        envr.python = info.get("python", "")
    if not envr.pytest_version:
        envr.pytest_version = info.get("pytest")
    return envr


@dataclass(kw_only=True)
class _Files:
    by_arm: dict[str, dict[str, list[str]]]  # arm -> test file -> pytest arguments
    run: list[str]  # the files to run (this shard's), sorted
    pieces: list[_shard.Piece]  # how they run


def _select_files(
    specs: dict[str, ArmSpec],
    arm_errors: dict[str, str],
    sel: _trees.Selection,
    shard: tuple[int, int] | None,
    opts: RunOptions,
    say: Callable[[str], None],
) -> _Files:
    """The test files of each arm, the files to run and the pieces they run as."""
    by_arm = {n: ({} if n in arm_errors else _trees.discover_files(s.root, sel)) for n, s in specs.items()}
    run = sorted(set(by_arm["A"]) | set(by_arm["B"]))
    pieces = [_shard.Piece(f, 0.0) for f in run]
    if shard:
        i, n = shard
        sizes = _shard.size_in([specs[x].root for x in ("A", "B") if x not in arm_errors])
        pieces = _shard.select(run, i, n, opts.durations, sizes)
        run = [p.file for p in pieces]
    say(plural(len(run), "test file") + (f" in shard {opts.shard}" if shard else ""))
    return _Files(by_arm=by_arm, run=run, pieces=pieces)


def _interpreter_info(checked: Future[dict], python: str, say: Callable[[str], None]) -> dict:
    info = checked.result()
    say(f"interpreter {python}: python {info.get('python')}, pytest {info.get('pytest')}")
    return info


@contextlib.contextmanager
def _outranked_by(check: Future[Any]) -> Iterator[None]:
    """An error of the block is raised only once `check` has passed: a broken interpreter is
    what the user must hear of, not the errors it causes or that hide behind it."""
    try:
        yield
    except Exception:
        check.result()  # raises the interpreter's error, if it has one
        raise


def _pass_hw_classification(
    opts: RunOptions, specs: dict[str, ArmSpec], probed: Callable[[], Environment], warnings: list[Notice]
) -> None:
    """--hw-classification for B (and diagnostic arms based on B), when the tree's
    conftest.py defines the option and the target torch has the enum."""
    b_root = specs["B"].root
    if not _trees.has_conftest_option(b_root, "--hw-classification"):
        warnings.append(Notice("hw-classification.no-conftest-option"))
    else:
        envr = probed()
        if not envr.has_hw_classification:
            warnings.append(Notice("hw-classification.no-enum"))
        else:
            hw = ["--hw-classification", *[x.upper() for x in opts.hw_classification]]
            specs["B"].extra_args = list(hw)
            for d in opts.diags:
                if d.based_on == "B":
                    specs[d.name].extra_args = list(hw)


# ---------------------------------------------------------------------------
# every file in every arm on the slots, and the arm results


def _packs(files: _Files, opts: RunOptions) -> list[list[str]]:
    """The packs of files to run where no warm interpreter can be used, or with --pack: every
    file that runs whole (a shard's part of a file runs alone)."""
    whole = [p.file for p in files.pieces if p.only is None]
    return plan_packs(whole, packs_per_arm(max(1, opts.jobs or os.cpu_count() or 1)))


def _packed(opts: RunOptions, packs: list[list[str]], warm: bool, warnings: list[Notice]) -> bool:
    """Whether the arms run `packs` (packrun.packing); the notice that says so where the
    warm interpreter's own notice does not (it was used, or --no-fork)."""
    files = sum(len(p) for p in packs)
    packed = packing(opts.pack, opts.fork, warm, files)
    if packed and (warm or not opts.fork) and _most_packs(packs):
        params = {"processes": str(_most_packs(packs))}
        if not opts.pack:  # packed for their number
            params["files"] = str(files)
        warnings.append(Notice("run.packed" if opts.pack else "run.packed-many", params))
    return packed


def _most_packs(packs: list[list[str]]) -> int:
    """How many packs an arm runs when some hold several files (0: one file each)."""
    return len(packs) if any(len(p) > 1 for p in packs) else 0


@dataclass(kw_only=True)
class _Job:
    arm: str
    future: Future[list[FileRun]]  # one file, or a pack's


class _Jobs:
    """Each (file, arm) pair is one job on the run's slots (``filerun`` runs it); the
    arm results gather the file runs in job order, with each arm's error and its
    reproduction command."""

    def __init__(
        self,
        opts: RunOptions,
        sources: Sources,
        specs: dict[str, ArmSpec],
        arm_errors: dict[str, str],
        files: _Files,
        stop: threading.Event,
        result: ABResult,
    ):
        self.opts, self.sources, self.specs, self.arm_errors = opts, sources, specs, arm_errors
        self.files, self.stop, self.result = files, stop, result
        self.jobs: list[_Job] = []
        self.packs: list[list[str]] = []  # the packs the files ran in

    def start(
        self, pool: SlotPool, runners: dict[str, PackRunner], say: Callable[[str], None], packs: list[list[str]]
    ) -> None:
        """Queue every piece (or pack of pieces) in every arm that has its files, in job
        order: each file in A and B side by side (they run under the same conditions),
        then the diagnostic arms' files."""
        self.packs = packs
        packed = {f for pack in packs for f in pack}
        pieces = {p.file: p for p in self.files.pieces}
        for arms in ([n for n in runners if n in ("A", "B")], [n for n in runners if n not in ("A", "B")]):
            for pack in packs:
                for name in arms:
                    mine = {f: self.files.by_arm[name][f] for f in pack if f in self.files.by_arm[name]}
                    if mine:
                        deselect = {f: pieces[f].deselect for f in mine}
                        future = pool.submit(_run_pack, runners[name], mine, deselect, say)
                        self.jobs.append(_Job(arm=name, future=future))
            for piece in self.files.pieces:
                for name in arms:
                    args = self.files.by_arm[name].get(piece.file)
                    if args is not None and piece.file not in packed:
                        future = pool.submit(_run_piece, runners[name], piece, args, say)
                        self.jobs.append(_Job(arm=name, future=future))

    def replayers(self, runners: dict[str, PackRunner], trees: dict[str, Replays]) -> tuple[Replayer, Replayer]:
        """How A's and B's tests are rerun (`confirm`)."""
        deselect = {p.file: p.deselect for p in self.files.pieces}
        packed = {n: packs_upto(self.packs, self.files.by_arm[n], deselect) for n in "AB"}
        a, b = (Replayer(runner=runners[n], trees=trees[n], packed=packed[n]) for n in "AB")
        return a, b

    def results(self, names: Iterable[str], work: Path) -> dict[str, ArmResult]:
        """Wait for the jobs of the arms `names`: their results, in arm order, with
        signatures; the files' durations and the runs' notes go to the run's result."""
        wanted = set(names)
        mine = [job for job in self.jobs if job.arm in wanted]
        wait_all([job.future for job in mine], self.stop)
        out = {name: self._empty(name) for name in self.specs if name in wanted}
        for fr in (fr for job in mine for fr in job.future.result()):
            ar = out[fr.arm]
            ar.outcomes.update(fr.outcomes)
            ar.collection_errors.update(fr.collection_errors)
            ar.collection_skips.update(fr.collection_skips)
            ar.crashes.extend(fr.crashes)
            ar.accounting.extend(fr.accounting)
            ar.duration += fr.duration
            if fr.arm in ("A", "B"):
                durations = self.result.file_durations
                durations[fr.file] = max(durations.get(fr.file, 0.0), fr.duration)
            self.result.warnings.extend(fr.notes)
        roots = [str(s.root) for s in self.specs.values()] + [str(r) for r in self.sources.user_roots] + [str(work)]
        for name, ar in out.items():
            if name in self.arm_errors:
                ar.ran, ar.error = False, self.arm_errors[name]
            ar.command = self._command(name)
            _sig.assign_signatures(ar, roots)
        return out

    def _empty(self, name: str) -> ArmResult:
        spec = self.specs[name]
        return ArmResult(
            name=name,
            label=spec.label,
            root=str(spec.root),
            source=spec.source,
            env_added=dict(spec.env_added),
            extra_args=list(spec.extra_args),
            commit=spec.commit,
            tree=spec.tree,
        )

    def _command(self, name: str) -> str:
        """The arm's reproduction command: its files, from where its files come from."""
        spec = self.specs[name]
        run_files = [x for f in self.files.run for x in self.files.by_arm[name].get(f, [])]
        if not run_files:
            return ""  # nothing ran: pytest without paths would run every test of the checkout
        home = self.sources.arms["A" if name == "A" or spec.based_on == "A" else "B"].root
        return _arms.repro_command(
            spec,
            self.opts.python,
            run_files,
            prefix=spec.materialise_note,
            cd='"$D"' if spec.materialise_note else str(home),
            cd_raw=bool(spec.materialise_note),
        )


def _run_piece(runner: ArmRunner, piece: _shard.Piece, args: list[str], say: Callable[[str], None]) -> list[FileRun]:
    only = set(piece.only) if piece.only is not None else None
    fr = runner.run_file(piece.file, args, only=only, deselect=piece.deselect)
    _say_file(runner.spec.name, fr, say)
    return [fr]


def _run_pack(
    runner: PackRunner,
    files: dict[str, list[str]],
    deselect: dict[str, tuple[str, ...]],
    say: Callable[[str], None],
) -> list[FileRun]:
    runs = runner.run_pack(files, deselect)
    for fr in runs:
        _say_file(runner.spec.name, fr, say)
    return runs


def _say_file(arm: str, fr: FileRun, say: Callable[[str], None]) -> None:
    counts: dict[str, int] = {}
    for o in fr.outcomes.values():
        counts[o.outcome] = counts.get(o.outcome, 0) + 1
    bits = ", ".join(f"{n} {k}" for k, n in sorted(counts.items()))
    if fr.collection_errors:
        bits = (bits + ", " if bits else "") + plural(len(fr.collection_errors), "collection error")
    say(f"[{arm}] {fr.file}: {bits or 'no tests'} ({fr.duration:.1f}s)")


# ---------------------------------------------------------------------------
# one file, for tests and tooling


def run_single_file(
    root: str,
    file: str,
    python: str | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 600.0,
    file_timeout: float = 0.0,
    only: set[str] | None = None,
    args: list[str] | None = None,
) -> FileRun:
    """Run one test file of a directory (in place) through the capture plugin.

    For tests and tooling: no arm copy, no comparison.  `root` is the cwd and
    rootdir; nothing is written there (bytecode goes to a temp prefix).
    """
    with orphans_reaped():
        return _run_single_file(root, file, python, env, timeout, file_timeout, only, args)


def _run_single_file(
    root: str,
    file: str,
    python: str | None,
    env: dict[str, str] | None,
    timeout: float,
    file_timeout: float,
    only: set[str] | None,
    args: list[str] | None,
) -> FileRun:
    work = Path(tempfile.mkdtemp(prefix=TEMP_PREFIX + "single-"))
    lock = processes.claim_root(work)
    try:
        support = work / "support"
        support.mkdir()
        shutil.copy2(TARGET_FILES / "plugin.py", support / f"{PLUGIN_MODULE}.py")
        shutil.copy2(TARGET_FILES / "bytecode.py", support / f"{_interp.BYTECODE_MODULE}.py")
        for sub in ("events", "logs", "pycache", "tmp"):
            (work / sub).mkdir()
        spec = ArmSpec(
            name="X", label="single", source=f"dir:{root}", root=Path(root), workdir=work, env_added=dict(env or {})
        )
        spec.env = _arms.sanitised_env(
            dict(os.environ), dict(env or {}), work / "pycache", support, work / "tmp", cwd=Path(root)
        )
        runner = ArmRunner(spec, python or sys.executable, timeout, file_timeout, threading.Event())
        return runner.run_file(file, list(args or [file]), only=only)
    finally:
        kill_all_children()
        shutil.rmtree(work, ignore_errors=True)
        if lock is not None:
            os.close(lock)
