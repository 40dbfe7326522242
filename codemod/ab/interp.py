"""The target interpreter: check it, and probe the environment it gives the tests.

The probe (``probe.py``, run under the target interpreter) is forked by arm
A's warm interpreter when there is a usable one (torch is imported there
already), else run as a fresh process at the lowest CPU priority.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path

from codemod.ab import procs
from codemod.ab.model import Environment
from codemod.ab.procs import UsageError
from codemod.ab.warm import ForkServer, ServerError

PROBE_TIMEOUT = 300.0  # seconds; the probe imports torch, on a machine that may be busy


def resolve_python(python: str, cwd: Path) -> str:
    """An absolute path for --python: every process runs with cwd = an arm
    root, so a relative path must be made absolute first.  abspath, not
    resolve(): a venv's bin/python is a symlink to the base interpreter and
    only the link makes it the venv.  A bare name is looked up on PATH."""
    if not python:
        raise UsageError("--python: empty interpreter path")
    if os.sep in python or (os.altsep and os.altsep in python):
        return os.path.abspath(os.path.join(str(cwd), os.path.expanduser(python)))
    found = shutil.which(python)
    if found is None:
        raise UsageError(f"--python {python}: no such interpreter (not found on PATH)")
    return os.path.abspath(found)


def check_python(python: str) -> dict:
    """Raise UsageError unless `python` runs and imports pytest."""
    code = (
        "import json, sys, pytest; print(json.dumps({'python': sys.version.split()[0], 'pytest': pytest.__version__}))"
    )
    try:
        proc = subprocess.run(
            [python, "-c", code], capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL
        )
    except FileNotFoundError:
        raise UsageError(f"--python {python}: no such interpreter") from None
    except PermissionError:
        raise UsageError(f"--python {python}: not executable") from None
    except subprocess.TimeoutExpired:
        raise UsageError(f"--python {python}: did not answer within 120 s") from None
    except OSError as err:
        raise UsageError(f"--python {python}: cannot run it ({err})") from None
    if proc.returncode != 0:
        output = (proc.stderr or proc.stdout).strip().splitlines()
        last = output[-1] if output else f"exit code {proc.returncode}"
        if "pytest" in last and ("No module named" in last or "ModuleNotFoundError" in last):
            raise UsageError(f"--python {python}: pytest is not installed for this interpreter ({last})")
        raise UsageError(f"--python {python}: cannot run it ({last})")
    try:
        return json.loads(proc.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        raise UsageError(f"--python {python}: unexpected answer {proc.stdout!r}") from None


def probe(
    python: str,
    server: ForkServer | None,
    script: Path,
    env: dict[str, str],
    cwd: Path,
    nice: bool,
    stop: threading.Event,
) -> Environment:
    """The environment probe: forked by arm A's warm interpreter when there is a
    usable one (torch is imported there already), else a fresh process."""
    if server is not None:
        try:
            hello = server.ready(stop=stop)
            if not hello.get("unsafe"):
                return _probe_forked(python, server, script, env, cwd, nice)
        except ServerError:
            pass
    return run_probe(python, script, env, cwd, nice)


def _probe_forked(
    python: str, server: ForkServer, script: Path, env: dict[str, str], cwd: Path, nice: bool
) -> Environment:
    def answer() -> dict | None:
        log = cwd / "probe.log"
        proc = server.start([], cwd, env, log, script=script, nice=nice)
        procs.register(proc)
        try:
            if not proc.exited(PROBE_TIMEOUT):
                return None
        finally:
            procs.kill_group(proc)
            proc.wait()
            procs.unregister(proc)
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
            preexec_fn=procs.lower_priority if nice else None,
        )
        procs.register(proc)
        try:
            out, err = proc.communicate(timeout=PROBE_TIMEOUT)
        except subprocess.TimeoutExpired:
            procs.kill_group(proc)
            proc.communicate()
            return None
        finally:
            procs.unregister(proc)
        try:
            return _last_json(out.decode("utf-8", "replace"))
        except ValueError:
            said = err.decode("utf-8", "replace").strip().splitlines()
            raise ValueError(f"no answer ({procs.signame(proc.returncode)}): {said[-1] if said else ''}") from None

    return _environment(python, answer)
