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
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import click

from codemod.target import TargetInfo, probe
from transforms.torch_load.unsafe_globals import dangerous as dangerous_names
from transforms.torch_load.unsafe_globals import normalise

SCHEMA_VERSION = 1
PLUGIN_MODULE = "_decouple_discover_plugin"

_IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
_DOTTED = rf"{_IDENT}(?:\.{_IDENT})*"
GLOBAL_RE = re.compile(rf"GLOBAL ({_DOTTED}) was not an allowed global")
OLD_CLASS_RE = re.compile(rf"Unsupported class ({_IDENT}(?:\.{_IDENT})+)")
BLOCKED_RE = re.compile(rf"GLOBAL ({_DOTTED}) whose module ({_DOTTED}) is blocked")
OPERAND_RE = re.compile(r"Unsupported operand (\d+)")
WEIGHTS_ONLY_MARKERS = ("Weights only load failed", "WeightsUnpickler error", "weights_only")


class Refusal(Exception):
    """Discovery cannot run at all (exit 2)."""


# --------------------------------------------------------------------------- parsing


def parse_globals(message: str) -> list[str]:
    """Dotted globals named by a weights-only failure message (normally exactly one).

    Matches a dotted identifier after ``GLOBAL `` (never torch's own source line
    ``GLOBAL (\\S+) was not ...`` that a traceback may print), the pre-2.4
    ``Unsupported class x.y`` form, and bare builtins (``GLOBAL slice``)."""
    out: list[str] = []
    for rx in (GLOBAL_RE, OLD_CLASS_RE):
        for m in rx.finditer(message or ""):
            name = normalise(m.group(1))
            if name not in out:
                out.append(name)
    return out


def unfixable_reason(message: str) -> str | None:
    """Why no allowlist can make this failure pass, or None."""
    msg = message or ""
    if "TorchScript archive" in msg:
        return "TorchScript archive (torch.jit.save output) cannot be loaded with weights_only=True"
    m = BLOCKED_RE.search(msg)
    if m:
        return f"{normalise(m.group(1))} comes from module {m.group(2)}, which weights_only blocks"
    if "Can only SETITEM for dict" in msg:
        return "a dict subclass (e.g. collections.defaultdict) the weights-only unpickler cannot rebuild"
    m = OPERAND_RE.search(msg)
    if m:
        op = m.group(1)
        if op == "149":
            return (
                "pickled with protocol >= 4 (Unsupported operand 149, FRAME): the weights-only unpickler cannot read it"
            )
        return f"unsupported pickle opcode {op} for the weights-only unpickler"
    return None


def is_weights_only_failure(message: str) -> bool:
    return any(k in (message or "") for k in WEIGHTS_ONLY_MARKERS)


# --------------------------------------------------------------------------- running


def _plugin_source() -> str:
    return (Path(__file__).with_name("discover_plugin.py")).read_text(encoding="utf-8")


def _clean_env(extra: dict[str, str]) -> dict[str, str]:
    env = dict(os.environ)
    for k in ("TORCH_FORCE_WEIGHTS_ONLY_LOAD", "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "PYTEST_ADDOPTS", "PYTEST_PLUGINS"):
        env.pop(k, None)
    env.update(extra)
    return env


def _run_pytest(python: str, args: list[str], cwd: str, env: dict, timeout: float):
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
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            proc.kill()
        out, err = proc.communicate()
        return None, out, err, True


def _rel(path: str, root: str) -> str:
    try:
        rel = os.path.relpath(path, root)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel.replace(os.sep, "/")


def _target_arg(nodeid: str, rootdir: str) -> str:
    f, sep, rest = nodeid.partition("::")
    return os.path.join(rootdir, f) + sep + rest


def discover(
    targets: Iterable[str],
    python: str | None = None,
    max_iterations: int = 10,
    timeout: float = 900.0,
    cwd: str | None = None,
    pytest_args: Iterable[str] = (),
    log=None,
) -> tuple[dict[str, Any], int]:
    """Run discovery; return (result JSON, exit status).  Raises Refusal (exit 2)."""
    targets = list(targets)
    cwd = os.path.abspath(cwd or os.getcwd())
    log = log or (lambda msg: None)
    if not targets:
        raise Refusal("no TARGET given (a test file or node id)")
    info: TargetInfo = probe(python)
    if not info.ok:
        raise Refusal(f"cannot discover globals: {info.reason}")
    ver = info.torch_version
    if ver < (1, 13):
        raise Refusal(
            f"cannot discover globals: torch {info.torch_version_str} in {info.python} has no "
            "weights_only (added in 1.13); there is nothing to discover"
        )
    iterate = ver >= (2, 4)
    if not iterate:
        max_iterations = 1
        log(
            f"note: torch {info.torch_version_str} has no add_safe_globals: only the first "
            "missing global of each call can be found (one round)"
        )

    result: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "tool": "decouple discover-globals",
        "python": info.executable or info.python,
        "torch_version": info.torch_version_str,
        "root": cwd,
        "targets": targets,
        "iterations": 0,
        "complete": False,
        "allowlist": {},
        "resolved": {},
        "tests": {},
        "dangerous": {},
        "errors": [],
    }
    sites: dict[str, list[str]] = {}  # "abs:line" -> names
    glob: list[str] = []  # unattributed names (process-wide)
    calls: dict[str, dict[tuple[str, int], dict]] = {}
    tests: dict[str, dict] = {}
    run_targets = list(targets)
    status = 0
    tmp = tempfile.mkdtemp(prefix="decouple-discover-")
    try:
        Path(tmp, PLUGIN_MODULE + ".py").write_text(_plugin_source(), encoding="utf-8")
        for it in range(1, max_iterations + 1):
            out_path = os.path.join(tmp, f"round{it}.json")
            env = _clean_env(
                {
                    "DECOUPLE_DISCOVER_OUT": out_path,
                    "DECOUPLE_SAFE_GLOBALS": json.dumps({"sites": sites, "global": glob}),
                    "PYTHONPATH": os.pathsep.join(
                        [tmp] + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else [])
                    ),
                }
            )
            args = ["-p", PLUGIN_MODULE, "-p", "no:cacheprovider", "-q", *pytest_args, *run_targets]
            log(f"round {it}: {len(run_targets)} target(s)")
            rc, out, err, timed_out = _run_pytest(info.executable or info.python, args, cwd, env, timeout)
            result["iterations"] = it
            if timed_out:
                result["errors"].append(f"round {it}: pytest timed out after {timeout:.0f}s")
                status = 1
                break
            if not os.path.exists(out_path):
                tail = "\n".join((err or out or "").strip().splitlines()[-5:])
                if "No module named pytest" in (err or ""):
                    raise Refusal(f"pytest is not installed in {info.python}")
                if it == 1:
                    raise Refusal(f"pytest did not run under {info.python} (exit {rc}): {tail}")
                result["errors"].append(f"round {it}: pytest did not run (exit {rc}): {tail}")
                status = 1
                break
            with open(out_path, encoding="utf-8") as fh:
                data = json.load(fh)
            if rc in (4, 5) and it == 1 and not data.get("tests"):
                raise Refusal(
                    f"pytest found no tests for {' '.join(targets)} (exit {rc}): "
                    + "\n".join((out or "").strip().splitlines()[-3:])
                )
            for e in data.get("errors") or []:
                if e not in result["errors"]:
                    result["errors"].append(e)
            for name, r in (data.get("resolved") or {}).items():
                if "module" in r or name not in result["resolved"]:
                    result["resolved"][normalise(name)] = r
            rootdir = data.get("rootdir") or cwd
            rerun: set[str] = set()
            # What this round ran with: a name another test allowlisted for the same call
            # site during this round was not in force when this test failed on it.
            allowed_before = {site: set(names) for site, names in sites.items()}
            glob_before = set(glob)
            for nodeid, rec in (data.get("tests") or {}).items():
                t = tests.setdefault(
                    nodeid,
                    {
                        "outcome": "not-run",
                        "initial_outcome": rec.get("outcome", "not-run"),
                        "globals": [],
                        "unfixable": None,
                        "unattributed": [],
                        "saves": {},
                    },
                )
                t["outcome"] = rec.get("outcome", "not-run")
                t["rounds"] = it
                tcalls = calls.setdefault(nodeid, {})
                for ld in rec.get("loads") or []:
                    key = (ld.get("file") or "", int(ld.get("line") or 0))
                    c = tcalls.setdefault(
                        key,
                        {
                            "code": ld.get("code") or "",
                            "globals": [],
                            "scan": None,
                            "status": "ok",
                            "unfixable": None,
                            "explicit_weights_only": ld.get("explicit_weights_only"),
                            "message": None,
                        },
                    )
                    c["status"] = ld.get("status") or "ok"
                    scan = ld.get("scan")
                    if isinstance(scan, list):
                        c["scan"] = sorted(set(c["scan"] or []) | {normalise(s) for s in scan})
                    elif isinstance(scan, dict) and "error" in scan and c["scan"] is None:
                        c["scan_error"] = scan["error"]
                    msg = ld.get("message") or ""
                    if c["status"] != "failed":
                        c["message"] = None
                        continue
                    c["message"] = msg[:1000]
                    if not is_weights_only_failure(msg):
                        continue
                    why = unfixable_reason(msg)
                    if why:
                        c["unfixable"] = why
                        continue
                    names = parse_globals(msg)
                    site = f"{key[0]}:{key[1]}"
                    allowed = sites.setdefault(site, [])
                    in_force = allowed_before.get(site, set()) | glob_before
                    for n in names:
                        if n not in c["globals"]:
                            c["globals"].append(n)
                        if n in in_force:
                            r = result["resolved"].get(n) or {}
                            c["unfixable"] = r.get("error") or (f"{n} is allowlisted but the load still fails on it")
                            continue
                        if n not in allowed:
                            allowed.append(n)
                        rerun.add(nodeid)
                    if names and not c["unfixable"] and isinstance(scan, list):
                        # The failure names only the first missing global; the checkpoint
                        # scan lists them all: allow those too, so the rerun is the last.
                        for n in sorted({normalise(x) for x in scan}):
                            if n not in c["globals"]:
                                c["globals"].append(n)
                            if n not in allowed and n not in in_force:
                                allowed.append(n)
                    if not names:
                        c["unfixable"] = (
                            "fails under weights_only=True without naming a global: "
                            + msg.strip().splitlines()[-1][:200]
                            if msg.strip()
                            else ""
                        )
                for sv in rec.get("saves") or []:
                    key = (sv.get("file") or "", int(sv.get("line") or 0))
                    t["saves"][key] = sv
                if t["outcome"] in ("failed", "error") and not any(
                    ld.get("status") == "failed" for ld in rec.get("loads") or []
                ):
                    # a failure the wrapper did not see (load bound before the plugin, subprocess)
                    text = rec.get("longrepr") or ""
                    why = unfixable_reason(text) if is_weights_only_failure(text) else None
                    if why:
                        t["unfixable"] = why
                    for n in parse_globals(text):
                        if n not in t["unattributed"]:
                            t["unattributed"].append(n)
                        if n not in glob:
                            glob.append(n)
                            rerun.add(nodeid)
            if not rerun:
                result["complete"] = status == 0
                break
            run_targets = sorted(_target_arg(n, rootdir) for n in rerun)
        else:
            if iterate:
                result["errors"].append(
                    f"stopped after --max-iterations {max_iterations} rounds with tests still revealing new globals"
                )
            else:
                result["errors"].append(
                    f"torch {info.torch_version_str} has no add_safe_globals: only the first "
                    "missing global of each failing call is known (rerun discovery under "
                    "torch >= 2.4 for complete lists)"
                )
            status = 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    # ---- assemble
    for nodeid, t in tests.items():
        out_calls = []
        union: list[str] = []
        unfix = t["unfixable"]
        for (f, line), c in calls.get(nodeid, {}).items():
            names = list(c["globals"])
            disc = []
            if c["scan"] is not None:
                extra = [s for s in c["scan"] if s not in names]
                missing = [n for n in names if n not in c["scan"]]
                if extra:
                    disc.append(
                        f"{_rel(f, cwd)}:{line}: checkpoint scan lists {', '.join(extra)} that no failure named"
                    )
                if missing:
                    disc.append(
                        f"{_rel(f, cwd)}:{line}: failures named {', '.join(missing)} "
                        "that the checkpoint scan does not list"
                    )
                t.setdefault("discrepancies", []).extend(disc)
            for n in names + [s for s in (c["scan"] or []) if s not in names]:
                if n not in union:
                    union.append(n)
            unfix = unfix or c["unfixable"]
            entry = {
                "file": _rel(f, cwd),
                "line": line,
                "code": c["code"],
                "globals": names,
                "scan": c["scan"],
                "status": c["status"],
                "unfixable": c["unfixable"],
                "explicit_weights_only": c["explicit_weights_only"],
            }
            if c.get("scan_error"):
                entry["scan_error"] = c["scan_error"]
            if c["status"] == "failed" and c.get("message") and not c["unfixable"]:
                entry["message"] = c["message"]
            out_calls.append(entry)
        for n in t["unattributed"]:
            if n not in union:
                union.append(n)
        saves = []
        saved: set[str] = set()
        for (f, line), sv in t["saves"].items():
            g = sv.get("globals")
            saves.append(
                {
                    "file": _rel(f, cwd),
                    "line": line,
                    "code": sv.get("code") or "",
                    "globals": [normalise(x) for x in g] if isinstance(g, list) else None,
                }
            )
            if isinstance(g, list):
                saved |= {normalise(x) for x in g}
        loaded_scan = set()
        for c in out_calls:
            loaded_scan |= set(c["scan"] or [])
        not_loaded = sorted(saved - set(union) - loaded_scan)
        if not_loaded and out_calls:
            t.setdefault("discrepancies", []).append(
                f"checkpoints written by the test need {', '.join(not_loaded)}, which no load "
                "reported (saved but not loaded back, or loaded through another path)"
            )
        result["tests"][nodeid] = {
            "outcome": t["outcome"],
            "initial_outcome": t["initial_outcome"],
            "rounds": t.get("rounds", 1),
            "globals": union,
            "unfixable": unfix,
            "calls": out_calls,
            "saves": saves,
            "discrepancies": t.get("discrepancies", []),
        }
        for n, why in dangerous_names(union).items():
            result["dangerous"][n] = why
    # A call that still fails for a reason no allowlist fixes: the names found on the
    # way are not enough, so they are not offered as its allowlist (the call entry keeps
    # them, with `unfixable`).
    unfixable_sites = {f"{f}:{line}" for tc in calls.values() for (f, line), c in tc.items() if c["unfixable"]}
    result["allowlist"] = {
        f"{_rel(k.rsplit(':', 1)[0], cwd)}:{k.rsplit(':', 1)[1]}": v
        for k, v in sites.items()
        if v and k not in unfixable_sites
    }
    if glob:
        result["allowlist"]["*"] = list(glob)
    if any(e.startswith("collection error") for e in result["errors"]):
        status = max(status, 1)
        result["complete"] = False
    stuck = sorted(n for n, t in result["tests"].items() if t["unfixable"] and t["outcome"] in ("failed", "error"))
    if stuck:
        # Discovery ran to the end, but no allowlist makes these tests pass: incomplete
        # (exit 1), so a script does not take the allowlist as the whole answer.
        result["errors"].append(
            f"{len(stuck)} test(s) still fail under weights_only=True for a reason no allowlist "
            f"fixes (they need weights_only=False): {', '.join(stuck[:5])}" + (", ..." if len(stuck) > 5 else "")
        )
        status = max(status, 1)
        result["complete"] = False
    return result, status


def summary(result: dict[str, Any]) -> str:
    lines = [
        f"discover-globals: torch {result.get('torch_version')} ({result.get('python')}), "
        f"{result.get('iterations')} round(s), "
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


# --------------------------------------------------------------------------- CLI


@click.command("discover-globals")
@click.argument("targets", nargs=-1, required=True)
@click.option(
    "--python",
    "python",
    metavar="PATH",
    default=None,
    help="Interpreter that runs the tests (default: the one running decouple).",
)
@click.option(
    "--out",
    "out",
    type=click.Path(dir_okay=False, writable=True),
    default=None,
    help="Write the JSON here instead of stdout.",
)
@click.option(
    "--max-iterations",
    type=click.IntRange(1, 1000),
    default=10,
    show_default=True,
    help="Rounds of allow-and-rerun before giving up.",
)
@click.option(
    "--timeout", type=click.FloatRange(min=1), default=900.0, show_default=True, help="Seconds per pytest round."
)
@click.option("-q", "--quiet", is_flag=True, help="No progress lines and no summary on stderr (errors only).")
def discover_globals(targets, python, out, max_iterations, timeout, quiet):
    """Find the globals the torch.load calls of TARGET tests need under weights_only=True.

    TARGET is a test file or pytest node id.  Prints JSON (for `decouple apply
    --torch-load safe-globals|auto --globals FILE`) and a summary on stderr.
    """

    def log(msg):
        if not quiet:
            click.echo(msg, err=True)

    try:
        result, status = discover(targets, python=python, max_iterations=max_iterations, timeout=timeout, log=log)
    except Refusal as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    text = json.dumps(result, indent=2, sort_keys=False)
    if out:
        Path(out).write_text(text + "\n", encoding="utf-8")
    else:
        click.echo(text)
    if not quiet:
        click.echo(summary(result), err=True)
    sys.exit(status)


if __name__ == "__main__":  # python -m codemod.discover_globals
    discover_globals()
