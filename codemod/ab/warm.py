"""The warm interpreters, runner side: start the fork servers, ask them for
pytest processes, and hand them to the per-file run as process handles.

A server (``forkserver.py``, standalone, run in the target interpreter)
imports pytest, the capture plugin and the heavy modules the files import
(torch, ``torch.testing._internal``...) once for every arm it serves (the
arms with the same import environment, see ``import_environment``); each file, each resumed
rest of a file and each confirmation round then costs a fork instead of a new
interpreter.  A ``ForkedProcess`` behaves like the ``subprocess.Popen`` of a
fresh process for everything ``filerun`` and ``procs`` do with it: its own
process group (killable as a group until it is reaped), an exit code (negative
= killed by that signal), ``wait``.
"""

from __future__ import annotations

import ast
import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterable
from pathlib import Path

from codemod.ab import procs
from codemod.ab.arms import PER_ARM_VARS
from codemod.ab.notices import Notice

SERVER_MODULE = "decouple_ab_server"
# How long a server may take to import everything (torch on a loaded machine).
READY_TIMEOUT = 600.0
# Top-level packages whose modules are worth importing once.  Only
# installed code: a module of the tree under test is imported by pytest itself.
PRELOAD_PACKAGES = ("torch",)
# Variables read only when a function runs, never while a module is imported:
# arms that differ in nothing else can share one warm interpreter (each forked
# child gets its own environment).  Anything not listed here could change what
# an import does, so an arm that sets it gets a warm interpreter of its own.
CALL_TIME_VARS = {
    "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD": "read by torch.load at each call",
    "TORCH_FORCE_WEIGHTS_ONLY_LOAD": "read by torch.load at each call",
}


class ServerError(Exception):
    """The warm interpreter could not be started or died; `notice` says why."""

    def __init__(self, notice: Notice):
        super().__init__(str(notice))
        self.notice = notice


def preload_modules(files: Iterable[Path]) -> list[str]:
    """Modules of PRELOAD_PACKAGES imported at module level by `files`, in
    first-seen order, `torch` first."""
    seen: dict[str, None] = {}
    for path in files:
        try:
            tree = ast.parse(path.read_bytes(), filename=str(path))
        except (SyntaxError, ValueError, OSError, RecursionError, MemoryError):
            continue
        for node in _module_level(tree.body):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                # `from pkg import mod`: mod may be a submodule (lower-case names
                # only; the server skips those that are not modules)
                names = [node.module] + [
                    f"{node.module}.{a.name}" for a in node.names if a.name != "*" and a.name[:1].islower()
                ]
            for name in names:
                if name.split(".")[0] in PRELOAD_PACKAGES:
                    seen.setdefault(name, None)
    mods = list(seen)
    if any(m.split(".")[0] == "torch" for m in mods):
        mods = ["torch"] + [m for m in mods if m != "torch"]
    return mods


def _module_level(body: list) -> Iterable[ast.stmt]:
    """Statements run at import: the body, and the bodies of module-level
    if/try blocks (``try: import torch ... except ImportError``)."""
    for node in body:
        yield node
        if isinstance(node, ast.If):
            yield from _module_level(node.body)
            yield from _module_level(node.orelse)
        elif isinstance(node, ast.Try):
            yield from _module_level(node.body)
            for h in node.handlers:
                yield from _module_level(h.body)
            yield from _module_level(node.orelse)
            yield from _module_level(node.finalbody)


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
        preload: list[str],
        other_roots: Iterable[Path] = (),
    ):
        """`cwd` and `env`: the first arm's root and environment (its
        PYTHONPYCACHEPREFIX is not used for the preload, see forkserver.py);
        `other_roots`: the roots of the other arms it serves."""
        self.log = log
        self.hello: dict | None = None
        self.dead = False
        self._lock = threading.Lock()
        self._cond = threading.Condition()
        self._seq = 0
        self._waiting: dict[int, dict] = {}  # id -> answer to "run"
        self._procs: dict[int, ForkedProcess] = {}
        cmd = [python, str(script), "--parent", str(os.getpid())]
        if preload:
            cmd += ["--preload", ",".join(preload)]
        env = dict(env)
        prefix = env.pop("PYTHONPYCACHEPREFIX", None)
        if prefix is not None:
            cmd += ["--pycache-prefix", prefix]
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
        procs.register(self.proc)
        self._reader = threading.Thread(target=self._read, name="decouple-ab-forkserver", daemon=True)
        self._reader.start()

    # -- answers ---------------------------------------------------------

    def _read(self) -> None:
        out = self.proc.stdout
        try:
            for line in out:
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
                    status = procs.signame(self.proc.wait())
                    raise ServerError(Notice("warm.exited-before-ready", {"status": status, "output": _tail(self.log)}))
                if stop is not None and stop.is_set():
                    raise procs.Interrupted("stopped")
                left = end - time.monotonic()
                if left <= 0:
                    raise ServerError(Notice("warm.not-ready", {"seconds": f"{timeout:g}"}))
                self._cond.wait(min(left, 0.2))
            return self.hello

    # -- requests --------------------------------------------------------

    def send(self, record: dict) -> None:
        data = (json.dumps(record) + "\n").encode("utf-8", "surrogateescape")
        with self._lock:
            if self.dead:
                return
            try:
                self.proc.stdin.write(data)
                self.proc.stdin.flush()
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
                self.proc.stdin.close()
            except OSError:
                pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            procs.kill_group(self.proc)
            self.proc.wait()
        procs.unregister(self.proc)


def _tail(path: Path, n: int = 2000) -> str:
    try:
        data = path.read_bytes()[-n:]
    except OSError:
        return ""
    return data.decode("utf-8", "replace").strip()


# ---------------------------------------------------------------------------
# warm interpreters for all arms, or none


def import_environment(env: dict[str, str]) -> tuple:
    """What of an arm's environment an import may read: arms with equal
    import environments share a warm interpreter."""
    return tuple(sorted((k, v) for k, v in env.items() if k not in PER_ARM_VARS and k not in CALL_TIME_VARS))


def launch(
    fork: bool, python: str, specs: dict, files_by_arm: dict[str, dict], support: Path, servers: list[ForkServer], say
) -> dict[str, ForkServer] | None:
    """Start the warm interpreters (they import in the background): one per
    group of arms with the same import environment.  Arm name -> its server;
    None when they are not to be used at all."""
    if not fork:
        say("warm interpreter off (--no-fork): a fresh pytest process per file")
        return None
    if not hasattr(os, "fork"):
        return None
    files = sorted({specs[n].root / f for n in ("A", "B") for f in files_by_arm.get(n, {})})
    preload = preload_modules(files)
    groups: dict[tuple, list] = {}
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
            preload,
            [s.root for s in others],
        )
        servers.append(server)
        for spec in (first, *others):
            started[spec.name] = server
    return started


def settle(
    fork: bool, started: dict[str, ForkServer] | None, t: float, stop: threading.Event, say, warnings: list[Notice]
) -> dict[str, ForkServer]:
    """The warm interpreters to use: all or none (the arms must run alike)."""
    if started is None:
        if fork:
            warnings.append(Notice("warm.no-fork"))
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
            first = hellos[0][1] if hellos else {}
            loaded = first.get("preloaded") or []
            skipped = first.get("skipped") or {}
            say(
                f"warm interpreters ({', '.join('+'.join(names) for names, _ in hellos)}): pytest"
                + "".join(f", {m}" for m in loaded)
                + f" imported once, in {time.monotonic() - t:.1f}s"
                + "".join(f"; not preloaded {m}: {why}" for m, why in skipped.items())
            )
            return started
    for server, _ in servers:
        server.close()
    warnings.append(Notice("warm.given-up", reasons=reasons))
    return {}


def _by_server(started: dict[str, ForkServer]) -> list[tuple[ForkServer, list[str]]]:
    """Each server once, with the names of the arms it serves, in arm order."""
    out: dict[int, tuple[ForkServer, list[str]]] = {}
    for name, server in started.items():
        out.setdefault(id(server), (server, []))[1].append(name)
    return list(out.values())
