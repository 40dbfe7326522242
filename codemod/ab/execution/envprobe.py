"""The environment probe, runner side: what the target interpreter and machine are.

``probe.py`` (standalone) finds the facts under the target interpreter.  It is forked by arm
A's warm interpreter when there is a usable one (torch is imported there already).  Without
one, a process of its own would import torch and an out-of-tree backend a third time beside
the two arms, on cores they fill (1.4 s of CPU with the simulated backend: 0.71x the plain
runs, against 0.57x when the arms answer): so the arms' test processes answer it after
their tests (``probe.py`` as their plugin, arm A's answer first; see there when a test
process does not answer), and a process of its own runs only when none of them did, or at
once when ``--hw-classification`` needs the answer before B starts.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

from codemod.ab.arms import sources as _arms
from codemod.ab.arms.options import RunOptions
from codemod.ab.arms.sources import ArmSpec
from codemod.ab.execution import processes
from codemod.ab.execution.interpreter import ForkServer
from codemod.ab.result.model import Environment

PROBE_MODULE = "decouple_ab_probe"  # a script, and the plugin of test processes that answer it
PROBE_VAR = "DECOUPLE_AB_PROBE"  # where such a process writes its answer (probe.py reads it by this name)
PROBE_TIMEOUT = 300.0  # seconds; the probe imports torch, on a machine that may be busy


def start_probe(
    opts: RunOptions,
    server: ForkServer | None,
    specs: dict[str, ArmSpec],
    support: Path,
    base_env: dict[str, str],
    arm_env: dict[str, str],
    work: Path,
) -> Callable[[], Environment]:
    """The environment probe, by whoever answers it (the module docstring says who); call
    the answer for its facts.  Without `server`, the arms' processes are asked through
    their specs' environments: call this before the arms' runners start."""
    # (no pycache prefix for the probe: it imports only installed code, and a
    # prefix would make it recompile torch from source)
    probe_dir = work / "probe"
    probe_dir.mkdir()
    probe_env = _arms.sanitised_env(base_env, dict(arm_env), work / "arms" / "A" / "pycache", support, cwd=probe_dir)
    probe_env.pop("PYTHONPYCACHEPREFIX", None)
    probe_env["PYTHONDONTWRITEBYTECODE"] = "1"
    script = support / f"{PROBE_MODULE}.py"
    if server is not None or opts.hw_classification:
        # niced, unless --hw-classification has to wait for its answer before B starts
        nice = not opts.hw_classification
        return processes.aside("probe", probe, opts.python, server, script, probe_env, probe_dir, nice).result
    answers = {name: probe_dir / f"answer-{name}.json" for name in ("A", "B")}  # A's read first
    for name, answer in answers.items():
        specs[name].env[PROBE_VAR] = str(answer)

    def answered() -> Environment:
        envr = _answered(opts.python, list(answers.values()))
        return envr if envr is not None else run_probe(opts.python, script, probe_env, probe_dir, nice=False)

    return answered


def probe(
    python: str, server: ForkServer | None, script: Path, env: dict[str, str], cwd: Path, nice: bool
) -> Environment:
    """The environment probe: forked by arm A's warm interpreter when there is one (ready
    and safe to fork: ``interpreter.settle`` gives no other), else a fresh process."""
    if server is not None:
        return _probe_forked(python, server, script, env, cwd, nice)
    return run_probe(python, script, env, cwd, nice)


def _probe_forked(
    python: str, server: ForkServer, script: Path, env: dict[str, str], cwd: Path, nice: bool
) -> Environment:
    def answer() -> dict | None:
        log = cwd / "probe.log"
        proc = server.start([], cwd, env, log, script=script, nice=nice)
        processes.register(proc)
        try:
            if not proc.exited(PROBE_TIMEOUT):
                return None
        finally:
            processes.kill_group(proc)
            proc.wait()
            processes.unregister(proc)
            server.forget(proc)
        return _last_json(log.read_text(encoding="utf-8", errors="replace"))

    return _environment(python, answer)


def _environment(python: str, answer: Callable[[], dict | None]) -> Environment:
    """The probe's facts from `answer` (None: it timed out); a failure is
    recorded in the result, never raised."""
    envr = Environment(executable=python)
    try:
        data = answer()
    except Exception as exc:  # recorded, never fatal
        envr.probe_error = f"probe failed: {type(exc).__name__}: {exc}"
        return envr
    if data is None:
        envr.probe_error = f"probe timed out after {PROBE_TIMEOUT:g} s"
        return envr
    for k, v in data.items():
        if hasattr(envr, k) and v is not None:
            setattr(envr, k, v)
    return envr


def _last_json(text: str) -> dict:
    """The probe's answer: the last line that is a JSON object (its stderr shares the log)."""
    for line in reversed(text.splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                return json.loads(line)
            except ValueError:
                continue
    raise ValueError("no JSON answer in the probe's output")


def _answered(python: str, answers: list[Path]) -> Environment | None:
    """The facts the first of `answers` holds that a test process wrote (probe.py as a
    plugin, after its tests); None when none did."""
    written = next((path for path in answers if path.is_file()), None)
    if written is None:
        return None
    return _environment(python, lambda: _last_json(written.read_text(encoding="utf-8", errors="replace")))


def run_probe(python: str, script: Path, env: dict[str, str], cwd: Path, nice: bool = True) -> Environment:
    """Run probe.py under `python`; with `nice`, at the lowest CPU priority so
    it fills idle gaps instead of competing with the test processes."""

    def answer() -> dict | None:
        proc = subprocess.Popen(
            [python, str(script)],
            cwd=str(cwd),
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            preexec_fn=processes.lower_priority if nice else None,
        )
        processes.register(proc)
        try:
            out, err = proc.communicate(timeout=PROBE_TIMEOUT)
        except subprocess.TimeoutExpired:
            processes.kill_group(proc)
            proc.communicate()
            return None
        finally:
            processes.unregister(proc)
        try:
            return _last_json(out.decode("utf-8", "replace"))
        except ValueError:
            said = err.decode("utf-8", "replace").strip().splitlines()
            raise ValueError(f"no answer ({processes.signame(proc.returncode)}): {said[-1] if said else ''}") from None

    return _environment(python, answer)
