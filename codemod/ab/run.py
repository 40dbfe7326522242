"""The A/B orchestration: prepare the arms, run their files in parallel, compare, confirm.

The steps have modules of their own: ``options`` (what the run is asked),
``sources`` (where the arms come from), ``prepare`` (each arm's spec and root),
``runfiles`` (every file in every arm, and the arm results), ``confirm`` (the
reruns of discordant tests); process control lives in ``procs``, the per-file
run (events, crash resume) in ``filerun``.

Entry point: ``run_ab(RunOptions) -> ABResult``.  Raises ``UsageError`` for
bad input (exit 2) and ``Interrupted`` after SIGINT/SIGTERM (temp roots and
child process groups are gone by then).
"""

from __future__ import annotations

import datetime as _dt
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

from codemod.ab import arms as _arms
from codemod.ab import compare as _cmp
from codemod.ab import diag_summary as _diag
from codemod.ab import procs
from codemod.ab import shard as _shard
from codemod.ab import signature as _sig
from codemod.ab import testfiles as _testfiles
from codemod.ab import verdict as _verdict
from codemod.ab import warm as _warm
from codemod.ab.arms import ArmSpec
from codemod.ab.confirm import confirm_discordant
from codemod.ab.filerun import PLUGIN_MODULE, ArmRunner, FileRun
from codemod.ab.interp import check_python, probe, resolve_python
from codemod.ab.model import ABResult, ArmResult, Environment
from codemod.ab.notices import Notice
from codemod.ab.options import RunOptions, check_options, parse_shard
from codemod.ab.prepare import prepare_arms, thread_vars
from codemod.ab.procs import Interrupted, kill_all_children
from codemod.ab.runfiles import arm_results, finished, start_files
from codemod.ab.selection import Selection
from codemod.ab.slots import SlotPool
from codemod.ab.sources import resolve_sources
from codemod.ab.warm import SERVER_MODULE, ForkServer

_HERE = Path(__file__).resolve().parent
TEMP_PREFIX = "decouple-ab-"


# ---------------------------------------------------------------------------
# the whole run


def _tool_version() -> str:
    try:
        from importlib import metadata

        return metadata.version("test-decouple")
    except Exception:
        return ""


def _forget_pycache(work: Path) -> None:
    cache = _arms.pycache_root()
    for prefix in cache.iterdir() if cache is not None else ():
        _arms.forget_run_pycache(prefix, work)


def run_ab(opts: RunOptions) -> ABResult:
    old = procs.install_signal_handlers()
    stop = threading.Event()
    work: Path | None = None
    pool: SlotPool | None = None
    lock: int | None = None
    servers: list[ForkServer] = []
    try:
        for stale in procs.reap_stale_roots(Path(tempfile.gettempdir()), TEMP_PREFIX):
            _forget_pycache(stale)
            (opts.progress or (lambda _m: None))(f"removed {stale}, left by an A/B run that was killed")
        work = Path(tempfile.mkdtemp(prefix=TEMP_PREFIX))
        lock = procs.claim_root(work)
        pool = SlotPool(max(1, opts.jobs or os.cpu_count() or 1), "decouple-ab")
        return _run(opts, work, pool, stop, servers)
    except Interrupted:
        stop.set()
        raise
    finally:
        prev = procs.block_signals()
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
                _forget_pycache(work)
            if lock is not None:
                os.close(lock)
        finally:
            if prev is not None:
                signal.pthread_sigmask(signal.SIG_SETMASK, prev)
            procs.restore_signal_handlers(old)


def _run(opts: RunOptions, work: Path, pool: SlotPool, stop: threading.Event, servers: list[ForkServer]) -> ABResult:
    t0 = time.monotonic()
    say = opts.progress or (lambda _m: None)
    cwd = Path(opts.cwd or os.getcwd()).resolve()
    result = ABResult(
        tool_version=_tool_version(),
        normaliser_version=_sig.NORMALISER_VERSION,
        started=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        python=opts.python,
        shard=opts.shard,
        mapping=dict(opts.mapping),
    )
    shard = parse_shard(opts.shard)
    check_options(opts)

    opts.python = resolve_python(opts.python, cwd)
    result.python = opts.python
    info = check_python(opts.python)
    say(f"interpreter {opts.python}: python {info.get('python')}, pytest {info.get('pytest')}")

    # support files: plugin + probe under private names
    support = work / "support"
    support.mkdir()
    shutil.copy2(_HERE / "plugin.py", support / f"{PLUGIN_MODULE}.py")
    shutil.copy2(_HERE / "probe.py", support / "decouple_ab_probe.py")
    shutil.copy2(_HERE / "forkserver.py", support / f"{SERVER_MODULE}.py")

    sources = resolve_sources(opts, cwd)
    if opts.base:
        result.base_ref = opts.base
    sel = sources.sel
    result.paths = list(sel.paths)

    base_env = dict(os.environ)
    # the runner's own variables, applied to every arm like --env (which overrides them)
    runner_env = thread_vars(base_env, opts.env, opts.jobs)
    if runner_env:
        say(
            "torch threads: "
            + " ".join(f"{k}={v}" for k, v in runner_env.items())
            + f" in every arm (-j {opts.jobs} on {os.cpu_count()} cores)"
        )
    arm_env = {**runner_env, **opts.env}
    result.env_unset = list(_arms.UNSET_VARS)
    result.env_set = {
        **_arms.FIXED_VARS,
        "PYTHONPYCACHEPREFIX": "<per-arm prefix in the decouple cache>",
        "TMPDIR": "<per-arm temp dir>",
        **arm_env,
    }
    result.warnings.extend(_arms.pythonpath_warnings(base_env, sources.user_roots))

    specs, arm_errors = prepare_arms(opts, sources, work, support, base_env, arm_env, result.warnings, say)
    files_by_arm, all_files, pieces = _select_files(specs, arm_errors, sel, shard, opts, say)

    # warm interpreters: they import in the background while the probe and the
    # --hw-classification check run
    t_warm = time.monotonic()
    launched = _warm.launch(opts.fork, opts.python, specs, files_by_arm, support, servers, say)
    probe_future = _start_probe(opts, (launched or {}).get("A"), support, base_env, arm_env, work, stop)
    if opts.hw_classification:
        _pass_hw_classification(opts, specs, probe_future, result.warnings)

    warm = _warm.settle(opts.fork, launched, t_warm, stop, say, result.warnings)
    runners = {
        n: ArmRunner(s, opts.python, opts.timeout, opts.file_timeout, stop, warm.get(n)) for n, s in specs.items()
    }
    jobs = start_files(pool, runners, pieces, files_by_arm, say)
    roots = [str(s.root) for s in specs.values()] + [str(r) for r in sources.user_roots] + [str(work)]

    def results_of(names: list[str]) -> dict[str, ArmResult]:
        runs = finished(jobs, names, stop)
        out = arm_results(
            {n: specs[n] for n in names}, runs, arm_errors, files_by_arm, all_files, sources, opts, result.warnings
        )
        for ar in out.values():
            _sig.assign_signatures(ar, roots)
        return out

    # A and B first: their discordant tests are confirmed while the diagnostic
    # arms' files still run
    results = results_of(["A", "B"])
    a, b = results["A"], results["B"]
    rows = _cmp.compare_arms(a, b, opts.mapping)
    if opts.confirm > 0 and a.ran and b.ran:
        confirm_discordant(rows, runners["A"], runners["B"], a, b, opts.confirm, pool, stop, say)
    result.tests = rows
    result.counts = _cmp.count(rows)
    results.update(results_of([n for n in specs if n not in results]))
    result.arms = [results[n] for n in specs]

    for d in opts.diags:
        result.diagnostics.append(_diag.diagnose(d.name, d.based_on, d.variables, results[d.based_on], results[d.name]))

    envr = probe_future.result()
    envr.executable = envr.executable or opts.python
    if not envr.python:
        envr.python = info.get("python", "")
    if not envr.pytest_version:
        envr.pytest_version = info.get("pytest")
    result.environment = envr
    reason_given = any(w.code.startswith("hw-classification.") for w in result.warnings)
    if opts.hw_classification and not b.extra_args and not reason_given:
        result.warnings.append(Notice("hw-classification.not-passed"))

    result.verdict, result.verdict_reason = _verdict.verdict(result)
    result.duration = round(time.monotonic() - t0, 3)
    return result


def _select_files(
    specs: dict[str, ArmSpec],
    arm_errors: dict[str, str],
    sel: Selection,
    shard: tuple[int, int] | None,
    opts: RunOptions,
    say,
) -> tuple[dict[str, dict[str, list[str]]], list[str], list[_shard.Piece]]:
    """The test files of each arm (file -> pytest arguments), the files to run (this
    shard's, sorted) and the pieces they run as."""
    files_by_arm = {n: ({} if n in arm_errors else _testfiles.discover_files(s.root, sel)) for n, s in specs.items()}
    all_files = sorted(set(files_by_arm["A"]) | set(files_by_arm["B"]))
    pieces = [_shard.Piece(f, 0.0) for f in all_files]
    if shard:
        i, n = shard
        sizes = _shard.size_in([specs[x].root for x in ("A", "B") if x not in arm_errors])
        pieces = _shard.select(all_files, i, n, opts.durations, sizes)
        all_files = [p.file for p in pieces]
    say(f"{len(all_files)} test file(s)" + (f" in shard {opts.shard}" if shard else ""))
    return files_by_arm, all_files, pieces


def _start_probe(
    opts: RunOptions,
    server: ForkServer | None,
    support: Path,
    base_env: dict[str, str],
    arm_env: dict[str, str],
    work: Path,
    stop: threading.Event,
) -> Future[Environment]:
    """The environment probe, concurrently with everything else (arm A's warm
    interpreter answers it when there is one)."""
    # (no pycache prefix for the probe: it imports only installed code, and a
    # prefix would make it recompile torch from source)
    probe_env = _arms.sanitised_env(base_env, dict(arm_env), work / "arms" / "A" / "pycache", support)
    probe_env.pop("PYTHONPYCACHEPREFIX", None)
    probe_env["PYTHONDONTWRITEBYTECODE"] = "1"
    probe_dir = work / "probe"
    probe_dir.mkdir()
    # A dedicated thread: the pool's workers are for test processes.  Niced,
    # unless --hw-classification has to wait for its answer before B starts.
    probe_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="decouple-ab-probe")
    probe_future = probe_pool.submit(
        probe,
        opts.python,
        server,
        support / "decouple_ab_probe.py",
        probe_env,
        probe_dir,
        not opts.hw_classification,
        stop,
    )
    probe_pool.shutdown(wait=False)
    return probe_future


def _pass_hw_classification(
    opts: RunOptions, specs: dict[str, ArmSpec], probe_future: Future[Environment], warnings: list[Notice]
) -> None:
    """--hw-classification for B (and diagnostic arms based on B), when the tree's
    conftest.py defines the option and the target torch has the enum."""
    b_root = specs["B"].root
    if not _testfiles.has_conftest_option(b_root, "--hw-classification"):
        warnings.append(Notice("hw-classification.no-conftest-option"))
    else:
        envr = probe_future.result()
        if not envr.has_hw_classification:
            warnings.append(Notice("hw-classification.no-enum"))
        else:
            hw = ["--hw-classification", *[x.upper() for x in opts.hw_classification]]
            specs["B"].extra_args = list(hw)
            for d in opts.diags:
                if d.based_on == "B":
                    specs[d.name].extra_args = list(hw)


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
    work = Path(tempfile.mkdtemp(prefix=TEMP_PREFIX + "single-"))
    lock = procs.claim_root(work)
    try:
        support = work / "support"
        support.mkdir()
        shutil.copy2(_HERE / "plugin.py", support / f"{PLUGIN_MODULE}.py")
        for sub in ("events", "logs", "pycache", "tmp"):
            (work / sub).mkdir()
        spec = _arms.ArmSpec(
            name="X", label="single", source=f"dir:{root}", root=Path(root), workdir=work, env_added=dict(env or {})
        )
        spec.env = _arms.sanitised_env(dict(os.environ), dict(env or {}), work / "pycache", support, work / "tmp")
        runner = ArmRunner(spec, python or sys.executable, timeout, file_timeout, threading.Event())
        return runner.run_file(file, list(args or [file]), only=only)
    finally:
        kill_all_children()
        shutil.rmtree(work, ignore_errors=True)
        if lock is not None:
            os.close(lock)
