"""The PR's Test Plan, run as printed: for each test file of B the command that runs it the
way the tree runs it, then that command, in B, and what it printed.

Which command a file takes (`shape_of`, from the file's `__main__` block and the tree):

- the tree's conftest.py offers `--hw-classification`: `python -m pytest FILE
  --hw-classification V... -v` (the filter, as PyTorch's test/conftest.py provides it);
- the file calls `raise_on_run_directly("test/runner.py")`: it refuses direct runs, so the
  runner it names, with the file's test classes: `python test/runner.py TestX ...`;
- the file calls `run_tests()`: `python FILE --hw-classification V... -v`;
- the file calls `unittest.main()` (which rejects unknown options): `python FILE -v`;
- no `__main__` block (`python FILE` would run nothing): `python -m pytest FILE -v`.

Each command runs in B's root (the repository top) with B's environment and the target
interpreter; the summary lines it printed (unittest's `Ran N tests` and `OK`/`FAILED`,
pytest's last line, the label filter's count, the error that stopped it) are recorded.
"""

from __future__ import annotations

import ast
import os
import re
import shlex
import subprocess
import threading
import time
from pathlib import Path

from codemod.ab.arms import trees
from codemod.ab.comparison.coverage import label_values
from codemod.ab.execution import processes
from codemod.ab.execution.processes import Interrupted, SlotPool, wait_all
from codemod.ab.result.model import PlanRun, PlanShape

OPTION = "--hw-classification"
# A file's command runs at most this long unless --file-timeout says otherwise.
DEFAULT_LIMIT = 1800.0
_OUTPUT_TAIL = 20_000


def _is_main_guard(test: ast.expr) -> bool:
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
        return False
    sides = [test.left, test.comparators[0]]
    named = any(isinstance(x, ast.Name) and x.id == "__name__" for x in sides)
    return named and any(isinstance(x, ast.Constant) and x.value == "__main__" for x in sides)


def _callee(call: ast.Call) -> str:
    func = call.func
    if isinstance(func, ast.Attribute):
        owner = func.value.id if isinstance(func.value, ast.Name) else ""
        return f"{owner}.{func.attr}" if owner else func.attr
    return func.id if isinstance(func, ast.Name) else ""


def shape_of(source: str, conftest_offers: bool) -> tuple[PlanShape, str]:
    """How the file is meant to be run, and the runner it names (for RUNNER)."""
    if conftest_offers:
        return PlanShape.PYTEST, ""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return PlanShape.PYTEST, ""
    calls = [
        node
        for stmt in tree.body
        if isinstance(stmt, ast.If) and _is_main_guard(stmt.test)
        for node in ast.walk(stmt)
        if isinstance(node, ast.Call)
    ]
    for call in calls:
        if _callee(call).endswith("raise_on_run_directly") and call.args:
            first = call.args[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                return PlanShape.RUNNER, first.value
    names = {_callee(c) for c in calls}
    if any(n.endswith("run_tests") for n in names):
        return PlanShape.RUN_TESTS, ""
    if names & {"unittest.main", "main"}:
        return PlanShape.UNITTEST_MAIN, ""
    return PlanShape.PYTEST, ""


def test_classes(source: str) -> list[str]:
    """The module-level classes that define test methods (what a runner is told to run)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    return [
        node.name
        for node in tree.body
        if isinstance(node, ast.ClassDef)
        and any(isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef)) and m.name.startswith("test") for m in node.body)
    ]


def command(path: str, source: str, conftest_offers: bool) -> tuple[PlanShape, list[str]]:
    """The file's shape and its command (argv, with `python` for the interpreter)."""
    shape, runner = shape_of(source, conftest_offers)
    values = label_values(source)
    label = [OPTION, *values] if values else []
    if shape == PlanShape.PYTEST:
        return shape, ["python", "-m", "pytest", path, *(label if conftest_offers else []), "-v"]
    if shape == PlanShape.RUN_TESTS:
        return shape, ["python", path, *label, "-v"]
    if shape == PlanShape.RUNNER:
        return shape, ["python", runner, *test_classes(source), *label, "-v"]
    return shape, ["python", path, "-v"]


_SUMMARY = (
    re.compile(r"^Ran \d+ tests? in "),  # unittest
    re.compile(r"^(OK|FAILED)( \(.*\))?$"),
    re.compile(
        r"^(\d+ (passed|failed|errors?|skipped|deselected|xfailed|xpassed)\b.*|no tests ran) in [\d.]+s"
    ),  # pytest
    re.compile(r"HW classification mode active|label filter: total="),  # the label filter's own count
)
# What stopped a command that printed no summary (an import error, a refused option, a runner).
_STOPPED = re.compile(r"error: unrecognized arguments|^[\w.]*(Error|Exception): ")


def summary_of(output: str) -> str:
    """The lines that say what a test command did, in order (at most six); for a command
    that printed no summary, the error that stopped it."""
    lines = [ln.strip().removeprefix("collecting ... ").strip("= ") for ln in output.splitlines()]
    found = [ln for ln in lines if ln and any(p.search(ln) for p in _SUMMARY)]
    if not found:
        found = [ln for ln in lines if _STOPPED.search(ln)][-2:]
    return "\n".join(found[-6:])


def _run_one(
    argv: list[str], python: str, root: Path, env: dict[str, str], log: Path, limit: float, stop: threading.Event
) -> tuple[int | None, str]:
    """Run one command as printed (with the target interpreter); (exit status, output)."""
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [python, *argv[1:]],
            cwd=str(root),
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    processes.register(proc)
    t0 = time.monotonic()
    try:
        while not processes.exited(proc, 0.2):
            if stop.is_set():
                raise Interrupted("stopped")
            if time.monotonic() - t0 > limit:
                processes.kill_group(proc)
                proc.wait()
                return None, f"killed after {limit:g}s"
    finally:
        processes.kill_group(proc)
        rc = proc.wait()
        processes.unregister(proc)
    data = log.read_bytes()[-_OUTPUT_TAIL:]
    return rc, data.decode("utf-8", "replace")


def _plan_env(env: dict[str, str], support: Path) -> dict[str, str]:
    """B's environment without the runner's own variables and plugin directory."""
    out = {k: v for k, v in env.items() if not k.startswith("DECOUPLE_AB_")}
    entries = [e for e in out.get("PYTHONPATH", "").split(os.pathsep) if e and e != str(support)]
    if entries:
        out["PYTHONPATH"] = os.pathsep.join(entries)
    else:
        out.pop("PYTHONPATH", None)
    return out


def run_plan(
    files: list[str],
    root: Path,
    env: dict[str, str],
    python: str,
    support: Path,
    logs: Path,
    limit: float,
    pool: SlotPool,
    stop: threading.Event,
) -> list[PlanRun]:
    """Each file's Test Plan command, run in B's `root` on the run's slots."""
    offers = trees.has_conftest_option(root, OPTION)
    plan_env = _plan_env(env, support)
    runs: list[PlanRun] = []
    for path in files:
        try:
            source = (root / path).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        shape, argv = command(path, source, offers)
        runs.append(PlanRun(file=path, shape=shape, command=" ".join(shlex.quote(a) for a in argv)))
    futures = []
    for i, run in enumerate(runs):
        argv = shlex.split(run.command)
        if run.shape == PlanShape.RUNNER and not (root / argv[1]).is_file():
            run.note = f"not run: {argv[1]}, the runner it names, is not in the compared tree"
            continue
        futures.append((run, pool.submit(_run_one, argv, python, root, plan_env, logs / f"plan-{i}.log", limit, stop)))
    wait_all([f for _, f in futures], stop)
    for run, future in futures:
        rc, output = future.result()
        run.returncode = rc
        if rc is None:
            run.note = output
        else:
            run.summary = summary_of(output) or (output.strip().splitlines() or [""])[-1][:300]
    return runs
