"""The A/B orchestration: materialise arms, run files in parallel, compare, confirm.

Process control lives in ``procs``, the per-file run (events, crash resume)
in ``filerun``.

Entry point: ``run_ab(RunOptions) -> ABResult``.  Raises ``UsageError`` for
bad input (exit 2) and ``Interrupted`` after SIGINT/SIGTERM (temp roots and
child process groups are gone by then).
"""

from __future__ import annotations

import datetime as _dt
import os
import shlex
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path

from codemod.ab import arms as _arms
from codemod.ab import compare as _cmp
from codemod.ab import diag_summary as _diag
from codemod.ab import flaky as _flaky
from codemod.ab import materialise as _mat
from codemod.ab import procs
from codemod.ab import repro as _repro
from codemod.ab import selection as _sel
from codemod.ab import shard as _shard
from codemod.ab import signature as _sig
from codemod.ab import testfiles as _testfiles
from codemod.ab import verdict as _verdict
from codemod.ab import warm as _warm
from codemod.ab.filerun import PLUGIN_MODULE, ArmRunner, FileRun
from codemod.ab.interp import check_python, probe, resolve_python  # noqa: F401 (resolve_python: API)
from codemod.ab.model import CATEGORIES, ABResult, ArmResult, TestComparison
from codemod.ab.notices import Notice
from codemod.ab.procs import Interrupted, UsageError, kill_all_children  # noqa: F401 (API)
from codemod.ab.warm import SERVER_MODULE, ForkServer

_HERE = Path(__file__).resolve().parent
TEMP_PREFIX = "decouple-ab-"


@dataclass
class DiagSpec:
    name: str
    based_on: str  # "A" or "B"
    variables: dict[str, str]


def parse_diag(text: str) -> DiagSpec:
    """``NAME:K=V[,K=V...]`` (based on A) or ``NAME@B:K=V[,...]``."""
    head, sep, body = text.partition(":")
    if not sep or not head or not body:
        raise UsageError(f"--diag expects NAME[@A|@B]:K=V[,K=V...], got {text!r}")
    name, at, base = head.partition("@")
    base = (base or "A").upper() if at else "A"
    if base not in ("A", "B"):
        raise UsageError(f"--diag {text!r}: the base arm must be A or B")
    if not name.replace("-", "").replace("_", "").isalnum() or name.upper() in ("A", "B"):
        raise UsageError(f"--diag {text!r}: the name must be alphanumeric (and not A or B)")
    variables = {}
    for item in body.split(","):
        k, eq, v = item.partition("=")
        if not eq or not k.strip():
            raise UsageError(f"--diag {text!r}: expected K=V, got {item!r}")
        variables[k.strip()] = v
    return DiagSpec(name=name, based_on=base, variables=variables)


def parse_env(items) -> dict[str, str]:
    out = {}
    for item in items:
        k, eq, v = item.partition("=")
        if not eq or not k:
            raise UsageError(f"--env expects K=V, got {item!r}")
        out[k] = v
    return out


def parse_shard(text: str | None) -> tuple[int, int] | None:
    if not text:
        return None
    try:
        i, n = (int(x) for x in text.split("/"))
    except ValueError:
        raise UsageError(f"--shard expects I/N, got {text!r}") from None
    if n < 1 or not 1 <= i <= n:
        raise UsageError(f"--shard {text!r}: need 1 <= I <= N")
    return i, n


@dataclass
class RunOptions:
    paths: list[str]
    base: str | None = None
    a_root: str | None = None
    b_root: str | None = None
    python: str = sys.executable
    env: dict[str, str] = field(default_factory=dict)
    diags: list[DiagSpec] = field(default_factory=list)
    hw_classification: list[str] = field(default_factory=list)
    timeout: float = 600.0  # per test (0 = none)
    file_timeout: float = 0.0  # per file (0 = none)
    jobs: int = 0  # 0 = cpu count
    confirm: int = 2
    mapping: dict[str, str] = field(default_factory=dict)
    shard: str | None = None
    durations: _shard.Durations | None = None  # recorded times that balance the shards
    cwd: str | None = None
    progress: Callable[[str], None] | None = None
    keep_temp: bool = False  # debugging only
    fsync: str = "none"  # plugin fsync policy: none | start | all
    fork: bool = True  # warm interpreters (False: a fresh process per run)
    # filled in by the run: wall seconds per file (the slower of arms A and B), for --durations-out
    file_durations: dict[str, float] = field(default_factory=dict)


# ---------------------------------------------------------------------------
# the whole run


def _tool_version() -> str:
    try:
        from importlib import metadata

        return metadata.version("test-decouple")
    except Exception:
        return ""


def thread_vars(base_env: dict[str, str], user_env: dict[str, str], jobs: int) -> dict[str, str]:
    """Intra-op thread count for every arm, so that `jobs` parallel test
    processes do not each start one thread per core (torch reads
    OMP_NUM_THREADS).  Nothing when one process runs at a time or the user
    chose a count (in the environment or with --env)."""
    cores = os.cpu_count() or 1
    jobs = jobs or cores
    if jobs <= 1 or "OMP_NUM_THREADS" in base_env or "OMP_NUM_THREADS" in user_env:
        return {}
    return {"OMP_NUM_THREADS": str(max(1, cores // jobs))}


def _forget_pycache(work: Path) -> None:
    cache = _arms.pycache_root()
    for prefix in cache.iterdir() if cache is not None else ():
        _arms.forget_run_pycache(prefix, work)


def _safe_name(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in name)


def run_ab(opts: RunOptions) -> ABResult:
    old = procs.install_signal_handlers()
    stop = threading.Event()
    work: Path | None = None
    pool: ThreadPoolExecutor | None = None
    lock: int | None = None
    servers: list[ForkServer] = []
    try:
        for stale in procs.reap_stale_roots(Path(tempfile.gettempdir()), TEMP_PREFIX):
            _forget_pycache(stale)
            (opts.progress or (lambda _m: None))(f"removed {stale}, left by an A/B run that was killed")
        work = Path(tempfile.mkdtemp(prefix=TEMP_PREFIX))
        lock = procs.claim_root(work)
        pool = ThreadPoolExecutor(
            max_workers=max(1, opts.jobs or os.cpu_count() or 1), thread_name_prefix="decouple-ab"
        )
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


def _wait_all(futures: list[Future], stop: threading.Event) -> None:
    pending = set(futures)
    while pending:
        done, pending = wait(pending, timeout=0.2, return_when=FIRST_COMPLETED)
        for f in done:
            exc = f.exception()
            if exc is not None:
                stop.set()
                raise exc


def _run(
    opts: RunOptions, work: Path, pool: ThreadPoolExecutor, stop: threading.Event, servers: list[ForkServer]
) -> ABResult:
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
    if not opts.paths:
        raise UsageError("give at least one test path")
    if opts.base and (opts.a_root or opts.b_root):
        raise UsageError("use either --base REF or --a-root/--b-root, not both")
    if not opts.base and not (opts.a_root and opts.b_root):
        raise UsageError("give --base REF (git) or both --a-root DIR and --b-root DIR")
    names = [d.name for d in opts.diags]
    if len(set(names)) != len(names):
        raise UsageError("--diag names must be unique")

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

    # sources
    user_roots: list[Path] = []
    try:
        if opts.base:
            repo = _mat.git_toplevel(cwd)
            commit = _mat.resolve_commit(repo, opts.base)
            sel = _sel.make_selection(opts.paths, cwd, repo)
            result.base_ref = opts.base
            user_roots = [repo]
            sources = {
                "A": ("git", repo, f"base {opts.base} ({commit[:12]})", f"git:{opts.base}"),
                "B": ("dir", repo, "work tree", "worktree"),
            }
        else:
            a_root, b_root = Path(opts.a_root).resolve(), Path(opts.b_root).resolve()
            for root, flag in ((a_root, "--a-root"), (b_root, "--b-root")):
                if not root.is_dir():
                    raise UsageError(f"{flag} {root} is not a directory")
            sel = _sel.Selection(paths=[p.strip("/") for p in opts.paths], common=_sel.common_dir(opts.paths))
            for p in sel.paths:
                if os.path.isabs(p.split("::")[0]) or ".." in Path(p.split("::")[0]).parts:
                    raise UsageError(f"with --a-root/--b-root, PATHS must be relative to the roots: {p}")
            user_roots = [a_root, b_root]
            commit = ""
            sources = {
                "A": ("dir", a_root, f"directory {a_root}", f"dir:{a_root}"),
                "B": ("dir", b_root, f"directory {b_root}", f"dir:{b_root}"),
            }
    except _arms.ArmError as err:
        raise UsageError(str(err)) from None
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
    result.warnings.extend(_arms.pythonpath_warnings(base_env, user_roots))

    # arm specs
    specs: dict[str, _arms.ArmSpec] = {}

    cache = _arms.pycache_root()

    def make_spec(name: str, label: str, source: str, added: dict[str, str], based_on=None) -> _arms.ArmSpec:
        wd = work / "arms" / _safe_name(name)
        (wd / "events").mkdir(parents=True)
        (wd / "logs").mkdir()
        (wd / "tmp").mkdir()
        pycache = cache / _safe_name(name) if cache is not None else wd / "pycache"
        pycache.mkdir(parents=True, exist_ok=True)
        spec = _arms.ArmSpec(
            name=name,
            label=label,
            source=source,
            root=wd / "root",
            workdir=wd,
            env_added=dict(added),
            based_on=based_on,
        )
        spec.env = _arms.sanitised_env(base_env, added, pycache, support, wd / "tmp")
        spec.env["DECOUPLE_AB_FSYNC"] = opts.fsync
        return spec

    arm_errors: dict[str, str] = {}
    for name in ("A", "B"):
        kind, src, label, source = sources[name]
        spec = make_spec(name, label, source, dict(arm_env))
        specs[name] = spec
        t = time.monotonic()
        try:
            if kind == "git":
                used = _mat.materialise_git(src, commit, sel, spec.root)
                # the resolved SHA (a branch may move), a fresh directory; the
                # whole commit when the import root is the top
                paths = "" if "" in used else " --" + "".join(f" {shlex.quote(p)}" for p in used)
                spec.materialise_note = (
                    f'D=$(mktemp -d) && git -C {shlex.quote(str(src))} archive {commit}{paths} | tar -x -C "$D"'
                )
                if _has_export_attributes(spec.root):
                    result.warnings.append(Notice("export-attributes", arm=name))
            else:
                _mat.materialise_dir(src, sel, spec.root)
        except (_arms.ArmError, OSError) as err:
            arm_errors[name] = str(err)
            spec.root.mkdir(parents=True, exist_ok=True)
        say(f"arm {name}: {label} materialised in {time.monotonic() - t:.2f}s")
    for d in opts.diags:
        base = specs[d.based_on]
        spec = make_spec(
            d.name, f"diagnostic {d.name} on {d.based_on}", base.source, {**arm_env, **d.variables}, based_on=d.based_on
        )
        if d.based_on in arm_errors:
            arm_errors[d.name] = arm_errors[d.based_on]
            spec.root.mkdir(parents=True, exist_ok=True)
        else:
            _mat.clone_root(base.root, spec.root)
        spec.materialise_note = base.materialise_note
        specs[d.name] = spec

    # a selected path must exist in at least one arm (a path deleted in B or
    # new in B gives missing-in-b / added-in-b rows)
    for p in sel.plain_paths:
        if p and not any((specs[n].root / p).exists() for n in ("A", "B") if n not in arm_errors):
            raise UsageError(f"{p} exists in neither arm")

    # files
    files_by_arm = {n: ({} if n in arm_errors else _testfiles.discover_files(s.root, sel)) for n, s in specs.items()}
    all_files = sorted(set(files_by_arm["A"]) | set(files_by_arm["B"]))
    pieces = [_shard.Piece(f, 0.0) for f in all_files]
    if shard:
        i, n = shard
        sizes = _shard.size_in([specs[x].root for x in ("A", "B") if x not in arm_errors])
        pieces = _shard.select(all_files, i, n, opts.durations, sizes)
        all_files = [p.file for p in pieces]
    say(f"{len(all_files)} test file(s)" + (f" in shard {opts.shard}" if shard else ""))

    # warm interpreters: they import in the background while the probe and the
    # --hw-classification check run
    t_warm = time.monotonic()
    launched = _warm.launch(opts.fork, opts.python, specs, files_by_arm, support, servers, say)

    # environment probe, concurrently with everything else
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
        (launched or {}).get("A"),
        support / "decouple_ab_probe.py",
        probe_env,
        probe_dir,
        not opts.hw_classification,
        stop,
    )
    probe_pool.shutdown(wait=False)

    # --hw-classification for B (and diagnostic arms based on B)
    if opts.hw_classification:
        b_root = specs["B"].root
        if not _testfiles.has_conftest_option(b_root, "--hw-classification"):
            result.warnings.append(Notice("hw-classification.no-conftest-option"))
        else:
            envr = probe_future.result()
            if not envr.has_hw_classification:
                result.warnings.append(Notice("hw-classification.no-enum"))
            else:
                hw = ["--hw-classification", *[x.upper() for x in opts.hw_classification]]
                specs["B"].extra_args = list(hw)
                for d in opts.diags:
                    if d.based_on == "B":
                        specs[d.name].extra_args = list(hw)

    warm = _warm.settle(opts.fork, launched, t_warm, stop, say, result.warnings)
    runners = {
        n: ArmRunner(s, opts.python, opts.timeout, opts.file_timeout, stop, warm.get(n)) for n, s in specs.items()
    }
    jobs: list[Future] = []
    job_meta: list[tuple[str, str]] = []
    for piece in pieces:
        f = piece.file
        for name in specs:
            args = files_by_arm[name].get(f)
            if args is None:
                continue
            jobs.append(pool.submit(_progress_wrap, runners[name], f, args, say, piece))
            job_meta.append((name, f))
    _wait_all(jobs, stop)

    arm_results: dict[str, ArmResult] = {}
    for name, spec in specs.items():
        arm_results[name] = ArmResult(
            name=name,
            label=spec.label,
            root=str(spec.root),
            source=spec.source,
            env_added=dict(spec.env_added),
            extra_args=list(spec.extra_args),
        )
    for fut, (name, f) in zip(jobs, job_meta, strict=False):
        fr: FileRun = fut.result()
        ar = arm_results[name]
        ar.outcomes.update(fr.outcomes)
        ar.collection_errors.update(fr.collection_errors)
        ar.collection_skips.update(fr.collection_skips)
        ar.crashes.extend(fr.crashes)
        ar.duration += fr.duration
        if name in ("A", "B"):
            opts.file_durations[f] = max(opts.file_durations.get(f, 0.0), fr.duration)
        result.warnings.extend(fr.notes)
    for name, spec in specs.items():
        ar = arm_results[name]
        if name in arm_errors:
            ar.ran, ar.error = False, arm_errors[name]
        run_files = [x for f in all_files for x in files_by_arm[name].get(f, [])]
        ar.command = _repro.repro_command(
            spec,
            opts.python,
            run_files,
            prefix=spec.materialise_note,
            cd=(
                '"$D"'
                if spec.materialise_note
                else str(sources["A" if name == "A" or spec.based_on == "A" else "B"][1])
            ),
            cd_raw=bool(spec.materialise_note),
        )

    roots = [str(s.root) for s in specs.values()] + [str(r) for r in user_roots] + [str(work)]
    for ar in arm_results.values():
        _sig.assign_signatures(ar, roots)
    result.arms = [arm_results[n] for n in specs]

    a, b = arm_results["A"], arm_results["B"]
    rows = _cmp.compare_arms(a, b, opts.mapping)

    # confirm discordant tests: each alone, alternating A and B
    if opts.confirm > 0 and a.ran and b.ran:
        todo = [
            r
            for r in rows
            if r.category in _flaky.DISCORDANT
            and r.a is not None
            and r.b is not None
            and r.a.phase != "collect"
            and r.b.phase != "collect"
            and r.a.outcome != "not-run"
            and r.b.outcome != "not-run"
            and r.a.nodeid in a.outcomes
            and r.b.nodeid in b.outcomes
        ]
        if todo:
            groups = _by_file(todo)
            say(
                f"confirming {len(todo)} discordant test(s) in {len(groups)} file(s), {opts.confirm} "
                "alternating rerun(s) each"
            )
            futs = [pool.submit(_confirm, runners["A"], runners["B"], a, b, rs, opts.confirm) for rs in groups.values()]
            _wait_all(futs, stop)
            # alone, both arms agree although they differed in the file: rerun
            # the file (up to the test) once per arm to tell an order-dependent
            # difference (reproduces) from a flaky test (does not)
            suspects = [r for r in todo if _flaky.rerun_state(r) == "order-suspect"]
            if suspects:
                say(f"rerunning the file around {len(suspects)} test(s) that differ only in the file")
                futs = [
                    pool.submit(_confirm_in_file, runners["A"], runners["B"], a, b, fa, fb, rs)
                    for (fa, fb), rs in _by_file(suspects).items()
                ]
                _wait_all(futs, stop)
            for r in todo:
                _flaky.settle_flaky(r)
            order = {c: i for i, c in enumerate(CATEGORIES)}
            rows.sort(key=lambda r: (order.get(r.category, 99), r.nodeid))
    result.tests = rows
    result.counts = _cmp.count(rows)

    for d in opts.diags:
        result.diagnostics.append(
            _diag.diagnose(d.name, d.based_on, d.variables, arm_results[d.based_on], arm_results[d.name])
        )

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


def _progress_wrap(runner: ArmRunner, f: str, args: list[str], say, piece: _shard.Piece) -> FileRun:
    fr = runner.run_file(f, args, only=set(piece.only) if piece.only is not None else None, deselect=piece.deselect)
    counts: dict[str, int] = {}
    for o in fr.outcomes.values():
        counts[o.outcome] = counts.get(o.outcome, 0) + 1
    bits = ", ".join(f"{n} {k}" for k, n in sorted(counts.items()))
    if fr.collection_errors:
        bits = (bits + ", " if bits else "") + f"{len(fr.collection_errors)} collection error(s)"
    say(f"[{runner.spec.name}] {f}: {bits or 'no tests'} ({fr.duration:.1f}s)")
    return fr


def _by_file(rows: list[TestComparison]) -> dict[tuple[str, str], list[TestComparison]]:
    """Rows grouped by (file in A, file in B); a --map may move a test to another file."""
    out: dict[tuple[str, str], list[TestComparison]] = {}
    for r in rows:
        out.setdefault((_shard.file_of(r.a.nodeid), _shard.file_of(r.b.nodeid)), []).append(r)
    return out


def _rerun_together(runner: ArmRunner, arm: ArmResult, nodeids: list[str]) -> dict[str, str]:
    """Rerun the given tests of one file in one process; node id -> outcome."""
    # node ids are relative to the arm root (the plugin rewrites pytest's
    # rootdir-relative ids), i.e. valid arguments from the cwd of run_file;
    # given in the file's collection order
    order = {n: i for i, n in enumerate(arm.outcomes)}
    ids = sorted(set(nodeids), key=lambda n: order.get(n, len(order)))
    fr = runner.run_file(_shard.file_of(ids[0]), ids, only=set(ids))
    out = {}
    for nodeid in ids:
        o = fr.outcomes.get(nodeid)
        if o is not None:
            out[nodeid] = o.outcome
        elif fr.collection_errors:
            out[nodeid] = "error"
        elif fr.collection_skips:
            out[nodeid] = "skipped"
        else:
            out[nodeid] = "not-run"
    return out


def _file_prefix(arm: ArmResult, file: str, upto: set[str]) -> set[str]:
    """Node ids of `file` in collection order, up to the last of `upto`."""
    ids = [n for n in arm.outcomes if _shard.file_of(n) == file]
    last = max((i for i, n in enumerate(ids) if n in upto), default=-1)
    return set(ids[: last + 1])


def _confirm_in_file(
    ra: ArmRunner, rb: ArmRunner, a: ArmResult, b: ArmResult, fa: str, fb: str, rows: list[TestComparison]
) -> None:
    for runner, arm, f, side in ((ra, a, fa, "a"), (rb, b, fb, "b")):
        targets = {getattr(r, side).nodeid for r in rows}
        only = _file_prefix(arm, f, targets)
        fr = runner.run_file(f, [f], only=only)
        for r in rows:
            o = getattr(r, side)
            got = fr.outcomes.get(o.nodeid)
            o.suite_reruns.append(got.outcome if got is not None else "not-run")


def _has_export_attributes(root: Path) -> bool:
    for dirpath, _dirnames, filenames in os.walk(root):
        if ".gitattributes" in filenames:
            try:
                text = Path(dirpath, ".gitattributes").read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            if "export-ignore" in text or "export-subst" in text:
                return True
    return False


def _confirm(ra: ArmRunner, rb: ArmRunner, a: ArmResult, b: ArmResult, rows: list[TestComparison], k: int) -> None:
    """`k` rounds, alternating A and B; each round reruns all of the file's
    discordant tests in one process per arm."""
    for _ in range(k):
        got_a = _rerun_together(ra, a, [r.a.nodeid for r in rows])
        got_b = _rerun_together(rb, b, [r.b.nodeid for r in rows])
        for r in rows:
            r.a.reruns.append(got_a[r.a.nodeid])
            r.b.reruns.append(got_b[r.b.nodeid])


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
