"""The target interpreter, runner side: checked and warmed (``envprobe`` probes it).

`check_python` refuses an interpreter that does not run or lacks pytest (exit 2).

The warm interpreters: a server (``forkserver.py``, standalone, run in the target
interpreter) imports pytest, the capture plugin and the heavy modules the files
import (torch, ``torch.testing._internal``...) once for every arm it serves (the
arms with the same import environment, see ``import_environment``); each file, each
resumed rest of a file and each confirmation round then costs a fork instead of a
new interpreter.  A ``ForkedProcess`` behaves like the ``subprocess.Popen`` of a
fresh process for everything ``filerun`` and ``processes`` do with it: its own
process group (killable as a group until it is reaped), an exit code (negative =
killed by that signal), ``wait``.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import IO

from codemod.ab.arms.options import UsageError
from codemod.ab.arms.sources import PER_ARM_VARS, ArmSpec
from codemod.ab.execution import processes
from codemod.ab.execution.preload import WarmPlan, warm_plan
from codemod.ab.result.model import PYTEST_ARGS
from codemod.ab.result.notices import Notice
from codemod.target import SOURCES as TARGET_FILES
from codemod.util import target_python
from codemod.util.jsonfile import JSONInputError, loads

SERVER_MODULE = "decouple_ab_server"
# (the server imports these by their names)
PLUGIN_MODULE = "decouple_ab_plugin"
WARM_UP_MODULE = "decouple_ab_warmup"
PACK_PLUGIN_MODULE = "decouple_ab_pack"  # loaded by a pack's process (packrun.py)
# Imported by every process that has the support folder on its PYTHONPATH, when it starts: the
# environment's own bytecode, read where the run's private prefix has none (target/bytecode.py).
BYTECODE_MODULE = "sitecustomize"
# How long a server may take to import everything (torch on a loaded machine).
READY_TIMEOUT = 600.0
# Variables read only when a function runs, never while a module is imported:
# arms that differ in nothing else can share one warm interpreter (each forked
# child gets its own environment).  Anything not listed here could change what
# an import does, so an arm that sets it gets a warm interpreter of its own.
CALL_TIME_VARS = {
    "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD": "read by torch.load at each call",
    "TORCH_FORCE_WEIGHTS_ONLY_LOAD": "read by torch.load at each call",
}


def install_server(support: Path) -> Path:
    """Copy the server and the files it imports (the capture plugin, the warm-up; the pack
    plugin that a pack's process loads; what every process imports at start-up) into
    `support` under the names they import each other by; the server script."""
    for source, name in (
        ("forkserver.py", SERVER_MODULE),
        ("plugin.py", PLUGIN_MODULE),
        ("warmup.py", WARM_UP_MODULE),
        ("packplugin.py", PACK_PLUGIN_MODULE),
        ("bytecode.py", BYTECODE_MODULE),
    ):
        shutil.copy2(TARGET_FILES / source, support / f"{name}.py")
    return support / f"{SERVER_MODULE}.py"


class ServerError(Exception):
    """The warm interpreter could not be started or died; `notice` says why."""

    def __init__(self, notice: Notice):
        super().__init__(str(notice))
        self.notice = notice


class ForkedProcess:
    """A pytest process forked by a server (see the module docstring)."""

    def __init__(self, server: ForkServer, rid: int, pid: int):
        self.server = server
        self.rid = rid
        self.pid = pid
        self.returncode: int | None = None
        self._exit: int | None = None
        self._event = threading.Event()
        self._reaped = False
        self._gone = threading.Event()  # the server has reaped it (or is dead)

    def _exited_with(self, rc: int) -> None:
        self._exit = rc
        self._event.set()

    def exited(self, timeout: float) -> bool:
        """Wait up to `timeout` for the exit; the process stays unreaped."""
        return self._event.wait(timeout)

    def kill_group(self) -> None:
        if self._reaped:
            return
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except OSError:
            pass

    def wait(self, timeout: float | None = None) -> int:
        if not self._event.wait(timeout):
            raise subprocess.TimeoutExpired(f"fork {self.pid}", timeout or 0)
        if not self._reaped:
            self._reaped = True
            self.server.send({"op": "reap", "id": self.rid})
        # every caller waits for the reap: no zombie may outlive the run (the
        # server can be killed right after)
        self._gone.wait(timeout if timeout is not None else 30)
        self.returncode = self._exit if self._exit is not None else -int(signal.SIGKILL)
        return self.returncode


class ForkServer:
    """One warm interpreter (serving one or more arms)."""

    def __init__(
        self,
        python: str,
        script: Path,
        cwd: Path,
        env: dict[str, str],
        log: Path,
        other_roots: Iterable[Path] = (),
    ):
        """`cwd` and `env`: the first arm's root and environment; `other_roots`: the
        roots of the other arms it serves.  It imports pytest until `send_plan` says
        what else."""
        self.log = log
        self.hello: dict | None = None
        self.dead = False
        self._lock = threading.Lock()
        self._cond = threading.Condition()
        self._seq = 0
        self._waiting: dict[int, dict] = {}  # id -> answer to "run"
        self._procs: dict[int, ForkedProcess] = {}
        cmd = [python, str(script), "--parent", str(os.getpid())]
        for root in other_roots:
            cmd += ["--root", str(root)]
        with open(log, "wb") as logfh:
            self.proc = subprocess.Popen(
                cmd,
                cwd=str(cwd),
                env=env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=logfh,
                start_new_session=True,
            )
        assert self.proc.stdin is not None and self.proc.stdout is not None  # both are pipes
        self._requests: IO[bytes] = self.proc.stdin
        self._answers: IO[bytes] = self.proc.stdout
        processes.register(self.proc)
        self._reader = threading.Thread(target=self._read, name="decouple-ab-forkserver", daemon=True)
        self._reader.start()

    # -- answers ---------------------------------------------------------

    def _read(self) -> None:
        try:
            for line in self._answers:
                try:
                    msg = json.loads(line)
                except ValueError:
                    continue
                self._dispatch(msg)
        except (OSError, ValueError):
            pass
        with self._cond:
            self.dead = True
            for p in self._procs.values():
                if not p._event.is_set():
                    p._exited_with(-int(signal.SIGKILL))
                p._gone.set()
            self._cond.notify_all()

    def _dispatch(self, msg: dict) -> None:
        ev = msg.get("ev")
        with self._cond:
            if ev == "hello":
                self.hello = msg
            elif ev in ("started", "failed"):
                self._waiting[int(msg["id"])] = msg
            elif ev == "exited":
                p = self._procs.get(int(msg["id"]))
                if p is not None:
                    p._exited_with(int(msg["rc"]))
            elif ev == "reaped":
                p = self._procs.get(int(msg["id"]))
                if p is not None:
                    p._gone.set()
            self._cond.notify_all()

    def ready(self, timeout: float = READY_TIMEOUT, stop: threading.Event | None = None) -> dict:
        """The server's hello (preloaded modules, whether forking is safe)."""
        end = time.monotonic() + timeout
        with self._cond:
            while self.hello is None:
                if self.dead:
                    status = processes.signame(self.proc.wait())
                    raise ServerError(Notice("warm.exited-before-ready", {"status": status, "output": _tail(self.log)}))
                if stop is not None and stop.is_set():
                    raise processes.Interrupted("stopped")
                left = end - time.monotonic()
                if left <= 0:
                    raise ServerError(Notice("warm.not-ready", {"seconds": f"{timeout:g}"}))
                self._cond.wait(min(left, 0.2))
            return self.hello

    # -- requests --------------------------------------------------------

    def send_plan(self, plan: WarmPlan) -> None:
        """What to import and the test base classes (``module:Name``) whose first test it
        runs once: the first request."""
        self.send({"op": "plan", "preload": plan.preload, "warm_up": plan.warm_up, "pytest_args": list(PYTEST_ARGS)})

    def send(self, record: dict) -> None:
        data = (json.dumps(record) + "\n").encode("utf-8", "surrogateescape")
        with self._lock:
            if self.dead:
                return
            try:
                self._requests.write(data)
                self._requests.flush()
            except (OSError, ValueError):
                pass

    def start(
        self, argv: list[str], cwd: Path, env: dict[str, str], log: Path, script: Path | None = None, nice: bool = False
    ) -> ForkedProcess:
        """A forked `python -m pytest ARGV` (or `python SCRIPT ARGV`) with this
        cwd and exactly this environment, output to `log`."""
        with self._cond:
            self._seq += 1
            rid = self._seq
        req = {"op": "run", "id": rid, "argv": argv, "cwd": str(cwd), "env": env, "log": str(log)}
        if script is not None:
            req["script"] = str(script)
        if nice:
            req["nice"] = True
        self.send(req)
        with self._cond:
            while rid not in self._waiting:
                if self.dead:
                    raise ServerError(Notice("warm.died"))
                self._cond.wait(0.2)
            msg = self._waiting.pop(rid)
            if msg["ev"] == "failed":
                raise ServerError(Notice("warm.fork-failed", {"error": msg.get("error") or "?"}))
            proc = ForkedProcess(self, rid, int(msg["pid"]))
            self._procs[rid] = proc
        return proc

    def forget(self, proc: ForkedProcess) -> None:
        with self._cond:
            self._procs.pop(proc.rid, None)

    def close(self) -> None:
        """Ask the server to exit (it kills what is left); kill it if it does not."""
        with self._lock:
            try:
                self._requests.close()
            except OSError:
                pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            processes.kill_group(self.proc)
            self.proc.wait()
        processes.unregister(self.proc)


def _tail(path: Path, n: int = 2000) -> str:
    try:
        data = path.read_bytes()[-n:]
    except OSError:
        return ""
    return data.decode("utf-8", "replace").strip()


# ---------------------------------------------------------------------------
# warm interpreters for all arms, or none


def import_environment(env: dict[str, str]) -> tuple[tuple[str, str], ...]:
    """What of an arm's environment an import may read: arms with equal
    import environments share a warm interpreter."""
    return tuple(sorted((k, v) for k, v in env.items() if k not in PER_ARM_VARS and k not in CALL_TIME_VARS))


def launch(
    fork: bool,
    python: str,
    specs: dict[str, ArmSpec],
    files_by_arm: dict[str, dict[str, list[str]]],
    support: Path,
    servers: list[ForkServer],
    say: Callable[[str], None],
) -> dict[str, ForkServer] | None:
    """Start the warm interpreters (they import in the background): one per
    group of arms with the same import environment.  Arm name -> its server;
    None when they are not to be used at all."""
    if not fork:
        say("warm interpreter off (--no-fork): a fresh pytest process per file")
        return None
    if not hasattr(os, "fork"):
        return None
    groups: dict[tuple[tuple[str, str], ...], list[ArmSpec]] = {}
    for name, spec in specs.items():
        if files_by_arm.get(name):
            groups.setdefault(import_environment(spec.env), []).append(spec)
    started: dict[str, ForkServer] = {}
    for first, *others in groups.values():
        server = ForkServer(
            python,
            support / f"{SERVER_MODULE}.py",
            first.root,
            first.env,
            first.workdir / "logs" / "server.log",
            [s.root for s in others],
        )
        servers.append(server)
        for spec in (first, *others):
            started[spec.name] = server
    # read while they import pytest
    plan = warm_plan(sorted({specs[n].root / f for n in ("A", "B") for f in files_by_arm.get(n, {})}))
    for server in servers:
        server.send_plan(plan)
    return started


def settle(
    fork: bool,
    started: dict[str, ForkServer] | None,
    t: float,
    stop: threading.Event,
    say: Callable[[str], None],
    warnings: list[Notice],
    packs: int = 0,
) -> dict[str, ForkServer]:
    """The warm interpreters to use: all or none (the arms must run alike).  `packs`: how
    many packs of several files each arm runs without them (0: a process per file)."""
    packed = {"processes": str(packs)} if packs else None
    if started is None:
        if fork:
            warnings.append(Notice("warm.no-fork-packed", packed) if packed else Notice("warm.no-fork"))
        return {}
    servers = _by_server(started)
    try:
        hellos = [(names, server.ready(stop=stop)) for server, names in servers]
    except ServerError as err:
        reasons = [err.notice]
    else:
        # the server names its reason by a catalogue code (it cannot import the
        # catalogue); the arms sharing a server share its reason
        reasons = [
            Notice(h["unsafe"]["code"], h["unsafe"].get("params") or {}, arm="+".join(names))
            for names, h in hellos
            if h.get("unsafe")
        ]
        if not reasons:
            _say_ready(hellos, time.monotonic() - t, say)
            warnings.extend(_warm_up_dropped(hellos))
            return started
    for server, _ in servers:
        server.close()
    if packed:
        warnings.append(Notice("warm.given-up-packed", packed, reasons=reasons))
    else:
        warnings.append(Notice("warm.given-up", reasons=reasons))
    return {}


def _say_ready(hellos: list[tuple[list[str], dict]], seconds: float, say: Callable[[str], None]) -> None:
    first = hellos[0][1] if hellos else {}
    loaded = first.get("preloaded") or []
    skipped = first.get("skipped") or {}
    warmed = first.get("warmed") or []
    not_warmed = first.get("not_warmed") or {}
    say(
        f"warm interpreters ({', '.join('+'.join(names) for names, _ in hellos)}): pytest"
        + "".join(f", {m}" for m in loaded)
        + " imported once"
        + (f", a first test of {', '.join(warmed)} run once" if warmed else "")
        + f", in {seconds:.1f}s"
        + "".join(f"; not preloaded {m}: {why}" for m, why in skipped.items())
        + "".join(f"; not warmed up {c}: {why}" for c, why in not_warmed.items())
    )


def _warm_up_dropped(hellos: list[tuple[list[str], dict]]) -> list[Notice]:
    """A server that started again without its warm-up says why (a catalogue code)."""
    out = []
    for names, hello in hellos:
        why = hello.get("warm_up_dropped")
        if why:
            reason = Notice(why["code"], why.get("params") or {})
            classes = ", ".join(why.get("classes") or [])
            out.append(Notice("warm.warm-up-dropped", {"classes": classes}, arm="+".join(names), reasons=[reason]))
    return out


def _by_server(started: dict[str, ForkServer]) -> list[tuple[ForkServer, list[str]]]:
    """Each server once, with the names of the arms it serves, in arm order."""
    out: dict[int, tuple[ForkServer, list[str]]] = {}
    for name, server in started.items():
        out.setdefault(id(server), (server, []))[1].append(name)
    return list(out.values())


# ---------------------------------------------------------------------------
# the interpreter's check


def resolve_python(python: str, cwd: Path) -> str:
    """An absolute path for --python: every process runs with cwd = an arm
    root, so a relative path must be made absolute first.  abspath, not
    resolve(): a venv's bin/python is a symlink to the base interpreter and
    only the link makes it the venv.  A bare name is looked up on PATH."""
    if not python:
        raise UsageError("--python: empty interpreter path")
    path = target_python.absolute(python, str(cwd))
    if path is not None:
        return path
    found = shutil.which(python)
    if found is None:
        raise UsageError(f"--python {python}: no such interpreter (not found on PATH)")
    return os.path.abspath(found)


def check_python(python: str) -> dict:
    """Raise UsageError unless `python` runs, is an interpreter the target code supports
    (codemod/util/target_python.py: the version it reports is in the message) and imports pytest."""
    # Its facts first, on a line of their own: a Python too old to import pytest is named as that.
    code = target_python.FACTS + (
        "import json\nfacts = python_facts()\nprint(json.dumps(facts))\nsys.stdout.flush()\n"
        "import pytest\nfacts['pytest'] = pytest.__version__\nprint(json.dumps(facts))\n"
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
    answers = []
    for line in proc.stdout.splitlines():
        try:
            answers.append(loads(line, "its answer"))
        except JSONInputError:
            continue  # not the probe's (a site hook's output, or no Python at all)
    facts = next((a for a in answers if isinstance(a, dict) and "version_info" in a), None)
    checked = next((a for a in reversed(answers) if isinstance(a, dict) and "pytest" in a), None)
    refused = target_python.refusal(facts) if facts is not None else None
    if refused:
        raise UsageError(f"--python {python} is {refused}")
    if proc.returncode != 0:
        output = (proc.stderr or proc.stdout).strip().splitlines()
        last = output[-1] if output else f"exit code {proc.returncode}"
        if "pytest" in last and ("No module named" in last or "ModuleNotFoundError" in last):
            raise UsageError(f"--python {python}: pytest is not installed for this interpreter ({last})")
        raise UsageError(f"--python {python}: cannot run it ({last})")
    if facts is None or checked is None:
        raise UsageError(f"--python {python}: unexpected answer {proc.stdout[:300]!r}")
    return checked
