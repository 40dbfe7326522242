"""``decouple discover-globals``: which globals do a test's torch.load calls need?

Runs the tests under the target interpreter with torch's default
(``weights_only=True`` on torch >= 2.6; emulated by the plugin on older torch),
reads each ``UnpicklingError`` (one missing global per failure), allowlists what it
found *for that call site only* and reruns the failing tests until they pass or hit
a failure no allowlist can fix.  On torch >= 2.6 the plugin also scans every
checkpoint read or written with ``get_unsafe_globals_in_checkpoint``: a failing
load's scan is allowlisted with the name its failure gave, already in the first
round, so most tests need 2 rounds (one per missing global without it); failures
that name a global the scan does not list are reported as discrepancies.

Attribution is per test and per call site: a name counts as "allowlisted but the
load still fails on it" only when it was in force for the run that failed (two
tests reaching one call site through a shared helper in the same round both get a
rerun).

Output (stdout or ``--out``), schema_version 1::

    {
      "schema_version": 1,
      "tool": "decouple discover-globals",
      "python": "/path/to/python", "torch_version": "2.14.1+cu130",
      "root": "/abs/dir the tests ran from (call files are relative to it)",
      "targets": [...], "iterations": 3, "complete": true,
      "allowlist": {"<file>:<line>": ["dotted", ...]},
      "resolved": {"dotted": {"module": "pkg.mod", "qualname": "Cls"}},
      "tests": {
        "<nodeid>": {
          "outcome": "passed|failed|error|skipped|not-run",   # last run
          "initial_outcome": "...",                           # first run (plain default)
          "rounds": 2,                                        # rounds this test ran in
          "globals": ["dotted", ...],        # all names this test needed, discovery order
          "unfixable": null | "reason",
          "calls": [{"file": "rel/path.py", "line": 12, "code": "m = torch.load(buf)",
                     "globals": [...], "scan": [...] | null, "status": "ok|failed",
                     "unfixable": null | "reason", "explicit_weights_only": null | bool}],
          "saves": [{"file": ..., "line": ..., "code": ..., "globals": [...] | null}],
          "discrepancies": ["..."]
        }
      },
      "dangerous": {"dotted": "reason"},
      "errors": ["..."]
    }

``allowlist`` lists, per call site, the names that made it load; a call that still
fails for a reason no allowlist fixes (``unfixable``) gets no entry there.

A short human summary goes to stderr.  Exit status (``complete`` is true exactly for
0): 0 discovery complete, 1 incomplete (iterations exhausted, timeout, collection
errors, or tests that still fail for a reason no allowlist fixes: those need
``weights_only=False``), 2 refused (no usable torch, torch < 1.13, pytest missing, bad
arguments).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codemod.discover.records import Findings, Outcome, allowlist_json, read_round, tests_json
from codemod.engine.torch_probe import TargetInfo, probe
from codemod.target import SOURCES as TARGET_FILES
from codemod.util.reaper import orphans_reaped
from transforms.core.words import noun, plural

if TYPE_CHECKING:
    from codemod.ab.execution.interpreter import ForkServer

SCHEMA_VERSION = 1
PLUGIN_MODULE = "_decouple_discover_plugin"


class Refusal(Exception):
    """Discovery cannot run at all (exit 2)."""


# --------------------------------------------------------------------------- running


def _plugin_source() -> str:
    return (TARGET_FILES / "discover_plugin.py").read_text(encoding="utf-8")


def _clean_env(extra: dict[str, str]) -> dict[str, str]:
    env = dict(os.environ)
    for k in ("TORCH_FORCE_WEIGHTS_ONLY_LOAD", "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "PYTEST_ADDOPTS", "PYTEST_PLUGINS"):
        env.pop(k, None)
    env.update(extra)
    return env


def _run_pytest(
    python: str, args: list[str], cwd: str, env: dict[str, str], timeout: float
) -> tuple[int | None, str, str, bool]:
    """(exit status, stdout, stderr, timed out) of pytest under `python`; a run past `timeout`
    is killed with its whole process group, and so is one interrupted (Ctrl-C); a process its
    tests started that left the group is killed when the run ends (`orphans_reaped`)."""
    with orphans_reaped():
        return _run_pytest_reaped(python, args, cwd, env, timeout)


def _run_pytest_reaped(
    python: str, args: list[str], cwd: str, env: dict[str, str], timeout: float
) -> tuple[int | None, str, str, bool]:
    proc = subprocess.Popen(
        [python, "-m", "pytest", *args],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
        return proc.returncode, out, err, False
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        out, err = proc.communicate()
        return None, out, err, True
    except BaseException:  # Ctrl-C: its own session does not get the terminal's SIGINT
        _kill_group(proc)
        proc.wait()
        raise


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        proc.kill()


def _target_arg(nodeid: str, rootdir: str) -> str:
    f, sep, rest = nodeid.partition("::")
    return os.path.join(rootdir, f) + sep + rest


@dataclass(frozen=True, kw_only=True)
class _Rounds:
    """How the rounds run: where, under which interpreter, how many at most."""

    info: TargetInfo
    targets: list[str]
    cwd: str
    max_iterations: int
    iterate: bool  # torch >= 2.4 (add_safe_globals): a failure reveals one more global per round
    timeout: float
    pytest_args: tuple[str, ...]
    log: Callable[[str], None]

    @property
    def python(self) -> str:
        return self.info.executable or self.info.python


def discover(
    targets: Iterable[str],
    python: str | None = None,
    max_iterations: int = 10,
    timeout: float = 900.0,
    cwd: str | None = None,
    pytest_args: Iterable[str] = (),
    log: Callable[[str], None] | None = None,
) -> tuple[dict[str, Any], int]:
    """Run discovery; return (result JSON, exit status).  Raises Refusal (exit 2)."""
    targets = list(targets)
    cwd = os.path.abspath(cwd or os.getcwd())
    say = log or (lambda msg: None)
    if not targets:
        raise Refusal("no TARGET given (a test file or node id)")
    info: TargetInfo = probe(python)
    ver = info.torch_version
    if not info.ok or ver is None:
        raise Refusal(f"cannot discover globals: {info.reason}")
    if ver < (1, 13):
        raise Refusal(
            f"cannot discover globals: torch {info.torch_version_str} in {info.python} has no "
            "weights_only (added in 1.13); there is nothing to discover"
        )
    iterate = ver >= (2, 4)
    if not iterate:
        max_iterations = 1
        say(
            f"note: torch {info.torch_version_str} has no add_safe_globals: only the first "
            "missing global of each call can be found (one round)"
        )
    rounds = _Rounds(
        info=info,
        targets=targets,
        cwd=cwd,
        max_iterations=max_iterations,
        iterate=iterate,
        timeout=timeout,
        pytest_args=tuple(pytest_args),
        log=say,
    )
    found = Findings()
    with orphans_reaped():  # the warm server's forks too: a test's process that left its group
        iterations, status = _run_rounds(rounds, found)
    return _result(rounds, found, iterations, status)


def _run_rounds(rounds: _Rounds, found: Findings) -> tuple[int, int]:
    """Run rounds until no test reveals a new global: (rounds run, 0 or 1 when cut short)."""
    run_targets = list(rounds.targets)
    it = 0
    tmp = tempfile.mkdtemp(prefix="decouple-discover-")
    server = None
    try:
        Path(tmp, PLUGIN_MODULE + ".py").write_text(_plugin_source(), encoding="utf-8")
        server = _warm_server(rounds, tmp)
        for it in range(1, rounds.max_iterations + 1):
            data = _one_round(rounds, found, run_targets, it, tmp, server)
            if data is None:
                return it, 1
            rerun = read_round(found, data, it)
            if not rerun:
                return it, 0
            rootdir = data.get("rootdir") or rounds.cwd
            run_targets = sorted(_target_arg(n, rootdir) for n in rerun)
    finally:
        if server is not None:
            server.close()
        shutil.rmtree(tmp, ignore_errors=True)
    if rounds.iterate:
        found.errors.append(
            f"stopped after --max-iterations {rounds.max_iterations} rounds with tests still revealing new globals"
        )
    else:
        found.errors.append(
            f"torch {rounds.info.torch_version_str} has no add_safe_globals: only the first "
            "missing global of each failing call is known (rerun discovery under "
            "torch >= 2.4 for complete lists)"
        )
    return it, 1


def _warm_server(rounds: _Rounds, tmp: str) -> ForkServer | None:
    """The A/B runner's warm interpreter for the rounds: torch, the targets' module-level torch
    imports and a first test of their test base classes imported once, each round a fork of
    it (a round in a fresh interpreter imports them all again).  None where it cannot be used
    (forking unsafe, the interpreter not starting): the rounds run in fresh processes."""
    # late: the engine and the A/B runner are floors side by side (docs/architecture.md); only the
    # rounds use the runner's server
    from codemod.ab.execution.interpreter import ForkServer, ServerError, install_server
    from codemod.ab.execution.preload import warm_plan

    files = sorted({Path(rounds.cwd, t.split("::")[0]).resolve() for t in rounds.targets})
    files = [f for f in files if f.is_file()]
    # the targets' directories are the tree: nothing found there is preloaded
    dirs = sorted({f.parent for f in files}) or [Path(rounds.cwd)]
    try:
        server = ForkServer(
            rounds.python,
            install_server(Path(tmp)),
            dirs[0],
            _clean_env({"PYTHONPATH": _pythonpath(tmp)}),
            Path(tmp, "server.log"),
            dirs[1:],
        )
    except OSError:
        return None
    server.send_plan(warm_plan(files))
    try:
        hello = server.ready(timeout=rounds.timeout)
    except ServerError:
        hello = {"unsafe": True}
    if hello.get("unsafe"):
        server.close()
        return None
    warmed = hello.get("warmed") or []
    rounds.log("warm interpreter: " + ", ".join(["pytest", *(hello.get("preloaded") or []), *warmed]) + " ready")
    return server


def _pythonpath(tmp: str) -> str:
    return os.pathsep.join([tmp] + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else []))


def _run_round(
    rounds: _Rounds, server: ForkServer | None, args: list[str], env: dict[str, str], log: Path
) -> tuple[int | None, str, str, bool]:
    """(exit status, output, errors, timed out) of a round's pytest: forked by the warm
    interpreter (its output and errors both in `log`), or a fresh process."""
    from codemod.ab.execution.interpreter import ServerError  # late, as in _warm_server

    if server is not None:
        try:
            proc = server.start(args, Path(rounds.cwd), env, log)
        except ServerError:
            server = None
        else:
            done = proc.exited(rounds.timeout)
            proc.kill_group()
            rc = proc.wait()
            server.forget(proc)
            return (rc if done else None), log.read_text(encoding="utf-8", errors="replace"), "", not done
    return _run_pytest(rounds.python, args, rounds.cwd, env, rounds.timeout)


def _one_round(
    rounds: _Rounds, found: Findings, run_targets: list[str], it: int, tmp: str, server: ForkServer | None = None
) -> dict[str, Any] | None:
    """Run round `it` with the allowlists found so far: the plugin's output, or None when the
    round did not finish (the error is recorded). Raises Refusal when the first round cannot run."""
    python = rounds.info.python
    out_path = os.path.join(tmp, f"round{it}.json")
    env = _clean_env(
        {
            "DECOUPLE_DISCOVER_OUT": out_path,
            "DECOUPLE_SAFE_GLOBALS": json.dumps(found.allowlists()),
            "PYTHONPATH": _pythonpath(tmp),
        }
    )
    args = ["-p", PLUGIN_MODULE, "-p", "no:cacheprovider", "-q", *rounds.pytest_args, *run_targets]
    rounds.log(f"round {it}: {plural(len(run_targets), 'target')}")
    rc, out, err, timed_out = _run_round(rounds, server, args, env, Path(tmp, f"round{it}.log"))
    if timed_out:
        found.errors.append(f"round {it}: pytest timed out after {rounds.timeout:.0f}s")
        return None
    if not os.path.exists(out_path):
        tail = "\n".join((err or out or "").strip().splitlines()[-5:])
        if "No module named pytest" in (err or ""):
            raise Refusal(f"pytest is not installed in {python}")
        if it == 1:
            raise Refusal(f"pytest did not run under {python} (exit {rc}): {tail}")
        found.errors.append(f"round {it}: pytest did not run (exit {rc}): {tail}")
        return None
    with open(out_path, encoding="utf-8") as fh:
        data: dict[str, Any] = json.load(fh)
    if rc in (4, 5) and it == 1 and not data.get("tests"):
        raise Refusal(
            f"pytest found no tests for {' '.join(rounds.targets)} (exit {rc}): "
            + "\n".join((out or "").strip().splitlines()[-3:])
        )
    return data


def _result(rounds: _Rounds, found: Findings, iterations: int, status: int) -> tuple[dict[str, Any], int]:
    """The result JSON (the schema above) and the exit status."""
    info = rounds.info
    tests, dangerous = tests_json(found, rounds.cwd)
    result: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "tool": "decouple discover-globals",
        "python": info.executable or info.python,
        "torch_version": info.torch_version_str,
        "root": rounds.cwd,
        "targets": rounds.targets,
        "iterations": iterations,
        "complete": status == 0,
        "allowlist": allowlist_json(found, rounds.cwd),
        "resolved": found.resolved,
        "tests": tests,
        "dangerous": dangerous,
        "errors": found.errors,
    }
    if any(e.startswith("collection error") for e in found.errors):
        status = max(status, 1)
        result["complete"] = False
    stuck = sorted(n for n, t in tests.items() if t["unfixable"] and t["outcome"] in (Outcome.FAILED, Outcome.ERROR))
    if stuck:
        # Discovery ran to the end, but no allowlist makes these tests pass: incomplete
        # (exit 1), so a script does not take the allowlist as the whole answer.
        found.errors.append(
            f"{plural(len(stuck), 'test still fails', 'tests still fail')} under weights_only=True for a reason no "
            f"allowlist fixes ({noun(len(stuck), 'it needs', 'they need')} weights_only=False): {', '.join(stuck[:5])}"
            + (", ..." if len(stuck) > 5 else "")
        )
        status = max(status, 1)
        result["complete"] = False
    return result, status


def summary(result: dict[str, Any]) -> str:
    iterations = result.get("iterations")
    rounds = plural(iterations, "round") if isinstance(iterations, int) else f"rounds: {iterations}"
    lines = [
        f"discover-globals: torch {result.get('torch_version')} ({result.get('python')}), {rounds}, "
        f"{'complete' if result.get('complete') else 'INCOMPLETE'}"
    ]
    for nodeid, t in sorted(result.get("tests", {}).items()):
        state = t["outcome"]
        if t["initial_outcome"] != t["outcome"]:
            state = f"{t['initial_outcome']} -> {t['outcome']}"
        what = ", ".join(t["globals"]) if t["globals"] else "no globals needed"
        line = f"  {nodeid}: {state}; {what}"
        if t["unfixable"]:
            line += f"; UNFIXABLE: {t['unfixable']}"
        lines.append(line)
        for d in t.get("discrepancies") or []:
            lines.append(f"    discrepancy: {d}")
    for _n, why in (result.get("dangerous") or {}).items():
        lines.append(f"  dangerous to allowlist: {why}")
    for e in result.get("errors") or []:
        lines.append(f"  error: {e.splitlines()[0] if e else e}")
    return "\n".join(lines)
