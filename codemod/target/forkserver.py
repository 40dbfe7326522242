"""decouple A/B fork server: the warm interpreter of one or more arms.

PYTEST_DONT_REWRITE (pytest must not try to rewrite this module's asserts)

This file is standalone (stdlib + pytest only at import), like the capture
plugin: it runs in the user's interpreter.  The runner copies it into its
private support directory as ``decouple_ab_server.py`` and starts one per
group of arms whose environments differ only in per-arm values::

    python decouple_ab_server.py --parent PID [--root OTHER_ARM_ROOT ...]

with the first arm's root as cwd and its environment (its bytecode prefix, private to the run: the
preloaded installed modules are read from their own ``__pycache__`` where the prefix has none, as
every arm process reads them, see ``bytecode.py``; nothing is written there). The server imports pytest, its
built-in plugins, the capture plugin and the plan's modules once (never a module found in any arm's
tree), runs one throwaway test of each warm-up class in a pytest session of its own (what a first
test imports and caches: the first test of a ``common_utils.TestCase`` imports ``torch._dynamo``),
then forks one child per request; each child is a fresh pytest session (``python -m pytest ARGS``
as far as the test can tell: cwd, environment, bytecode prefix, ``sys.argv``, ``sys.path[0]``,
``__main__``, signal dispositions, temp dir), in its own session (process group), writing to its
own log.

It never initialises a device runtime: it only imports. Where forking is not safe (no ``os.fork``;
a device runtime initialised on import; an out-of-tree device backend such as torch_npu loaded on
import; a thread started by an import; serving several arms, a preloaded module that imported a
module of a tree) it says so in its first answer and the runner uses fresh processes. The preloaded
objects are frozen out of the garbage collector (``gc.freeze``): they live as long as every child,
and a child's full collections stay cheap. On a machine with GPU device nodes and a torch built for
them, only ``torch`` itself is preloaded (``torch.testing._internal`` asks the runtime for its
devices on import).

Protocol: JSON lines, requests on stdin, answers on stdout.

  -> {"op": "plan", "preload": [module, ...], "warm_up": ["module:Class", ...], "pytest_args": [...]}
     (the first line: the runner reads the files for it while this process imports pytest)
  <- {"ev": "hello", "pid": P, "preloaded": [...], "skipped": {name: why}, "unsafe": null | why,
      "warmed": [class, ...], "not_warmed": {class: text}, "warm_up_dropped": null | why}
     (why = {"code": C, "params": {...}}: C is a code of the runner's notice catalogue,
     codemod/ab/result/notices.py, which says it in the report's language; warm_up_dropped:
     the warm-up made forking unsafe or ran out of time, so the server started
     again without it)
  -> {"op": "run", "id": N, "argv": [...], "cwd": DIR, "env": {...}, "log": PATH}
     (optional: "script": PATH runs that script instead of pytest; "nice": true
     lowers the child's priority)
  <- {"ev": "started", "id": N, "pid": P}   or   {"ev": "failed", "id": N, "error": why}
  <- {"ev": "exited", "id": N, "rc": R}     (R < 0: killed by signal -R)
  -> {"op": "reap", "id": N}
  <- {"ev": "reaped", "id": N}
     (a child is reaped only when the runner says so: until then its process
     group id stays reserved, so the runner can kill the group safely)

End of stdin (the runner finished or died): every child's group is killed and
the server exits.  The server and every child also die with their parent
(PR_SET_PDEATHSIG on Linux).
"""

from __future__ import annotations

import gc
import importlib
import importlib.util
import json
import os
import select
import signal
import sys
import threading
import traceback

PLUGIN_MODULE = "decouple_ab_plugin"
# Out-of-tree device backends known to initialise their runtime on import.
_BACKENDS = ("torch_npu", "intel_extension_for_pytorch", "habana_frameworks", "torch_mlu", "torch_musa")
_DEVICE_NODES = ("/dev/nvidia0", "/dev/nvidiactl", "/dev/kfd", "/dev/davinci0", "/dev/accel")


def _load_prctl():
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).prctl
    except Exception:
        return None


_PRCTL = _load_prctl()


def die_with_parent(parent: int) -> None:
    """SIGKILL this process when its parent dies (Linux); exit now if it already has."""
    if _PRCTL is not None:
        try:
            _PRCTL(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG
        except Exception:
            pass
    if os.getppid() != parent:
        os._exit(70)


def _write_line(fd: int, record: dict) -> None:
    data = (json.dumps(record) + "\n").encode("utf-8", "replace")
    while data:
        data = data[os.write(fd, data) :]


# ---------------------------------------------------------------------------
# preloading


def _outside(name: str, roots: list) -> bool:
    """True when the top-level package of `name` is found outside every root,
    and no root has a module of that name (a module of a tree under test is
    never preloaded: pytest imports it, and the trees of the arms sharing this
    server may differ there)."""
    top = name.split(".")[0]
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return False
    if spec is None:
        return False
    locations = list(spec.submodule_search_locations or []) + ([spec.origin] if spec.origin else [])
    return not any(_under(loc, roots) for loc in locations if loc) and not any(_has_module(r, top) for r in roots)


def _under(path: str, roots: list) -> bool:
    path = os.path.realpath(path)
    return any(path.startswith(os.path.realpath(r) + os.sep) for r in roots)


def _has_module(root: str, top: str) -> bool:
    """Whether `import top` from `root` (first on sys.path) finds a module there."""
    try:
        entries = os.listdir(root)
    except OSError:
        return False
    return any(e == top or e.startswith(top + ".") for e in entries)


def _from_trees(roots: list) -> list:
    """Modules imported so far from a tree under test (by a preloaded module)."""
    found = []
    for name, module in list(sys.modules.items()):
        path = getattr(module, "__file__", None)
        # (torch.ops and torch.classes carry a bare file name, not a path)
        if isinstance(path, str) and os.path.isabs(path) and _under(path, roots):
            found.append(name)
    return sorted(found)


def _device_build(torch) -> bool:
    version = getattr(torch, "version", None)
    if getattr(version, "cuda", None) or getattr(version, "hip", None):
        return True
    xpu = getattr(torch, "xpu", None)
    try:
        return bool(xpu is not None and xpu._is_compiled())
    except Exception:
        return False


def _device_nodes() -> list:
    found = [p for p in _DEVICE_NODES if os.path.exists(p)]
    try:
        found += ["/dev/dri/" + n for n in os.listdir("/dev/dri") if n.startswith("renderD")]
    except OSError:
        pass
    return found


def preload_pytest() -> None:
    """Import pytest's machinery and the capture plugin."""
    importlib.import_module("pytest")
    from _pytest import config as _config

    for plugin in getattr(_config, "default_plugins", ()):
        try:
            importlib.import_module("_pytest." + plugin)
        except Exception:
            pass
    importlib.import_module(PLUGIN_MODULE)


def preload(names: list, roots: list) -> tuple:
    """Import pytest's machinery, the capture plugin and `names`; (loaded, skipped)."""
    preload_pytest()
    loaded, skipped = [], {}
    torch_only = False
    for name in names:
        if torch_only and name != "torch":
            skipped[name] = "a device build of torch on a machine with device nodes: only torch is preloaded"
            continue
        if not _outside(name, roots):
            skipped[name] = "not an installed module"
            continue
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as err:
            if err.name != name:  # `from pkg import function` guessed as a module: not an error
                skipped[name] = f"{type(err).__name__}: {err}"[:300]
            continue
        except BaseException as err:  # noqa: BLE001 - the child will meet it again, with its own report
            skipped[name] = f"{type(err).__name__}: {err}"[:300]
            continue
        loaded.append(name)
        if name == "torch" and _device_build(sys.modules["torch"]) and _device_nodes():
            torch_only = True
    return loaded, skipped


def _unsafe(code: str, **params: str) -> dict:
    return {"code": "fork-unsafe." + code, "params": params}


def autoloaded_backend() -> dict | None:
    """Why forking will not be safe once torch is imported, known before importing it: a
    ``torch.backends`` entry point (torch_npu's autoload) that ``import torch`` calls."""
    if os.environ.get("TORCH_DEVICE_BACKEND_AUTOLOAD", "1") != "1":
        return None
    try:
        from importlib import metadata

        eps = metadata.entry_points()
        # (before Python 3.10 entry_points() is a dict of groups)
        group = eps.select(group="torch.backends") if hasattr(eps, "select") else eps.get("torch.backends", [])  # type: ignore[arg-type]
        names = sorted({ep.name for ep in group})
    except Exception:
        return None
    return _unsafe("backend-autoload", backends=", ".join(names)) if names else None


def fork_unsafe() -> dict | None:
    """Why forking this process could break a child's device runtime (None = safe), as a
    notice code and its parameters (see the protocol above)."""
    if not hasattr(os, "fork"):
        return _unsafe("no-fork")
    if not hasattr(os, "waitid"):  # e.g. macOS: a child's exit cannot be seen without reaping it
        return _unsafe("no-waitid")
    for name in _BACKENDS:
        if name in sys.modules:
            return _unsafe("backend-imported", module=name)
    torch = sys.modules.get("torch")
    if torch is not None:
        for dev in ("cuda", "xpu", "mps", "npu"):
            mod = getattr(torch, dev, None)
            check = getattr(mod, "is_initialized", None)
            try:
                if check is not None and check():
                    return _unsafe("device-initialised", device=dev)
            except Exception:
                pass
        try:
            backend = torch._C._get_privateuse1_backend_name()
        except Exception:
            backend = "privateuseone"
        if backend != "privateuseone":
            return _unsafe("backend-registered", backend=backend)
    if threading.active_count() > 1:
        return _unsafe("thread-started")
    return None


# ---------------------------------------------------------------------------
# the child: a fresh pytest session


def _exit_status(code) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return int(code) & 0xFF
    try:
        sys.stderr.write(f"{code}\n")
    except Exception:
        pass
    return 1


def _fresh_main_module():
    """A ``__main__`` like the one ``python -m pytest`` has (multiprocessing's
    spawn re-imports it by its spec name)."""
    import types

    main = types.ModuleType("__main__")
    spec = importlib.util.find_spec("pytest.__main__")
    main.__spec__ = spec
    main.__file__ = spec.origin if spec is not None else ""
    main.__package__ = "pytest"
    main.__builtins__ = __builtins__  # type: ignore[attr-defined]  # set by the interpreter, not in the stub
    return main


def _leave_inherited_finalizers() -> None:
    """The finalizers of the objects this process inherited are the server's: they run
    when the server exits, not when each child does (torch registers about 190, one per
    operator library, whose unregistering cost 0.1 s at every child's exit).  A
    finalizer a test creates still runs at exit."""
    import weakref

    for finalizer in list(getattr(weakref.finalize, "_registry", {})):
        finalizer.atexit = False


def _enter(cwd: str, env: dict) -> None:  # pragma: no cover - runs after fork
    """The child's cwd and environment, and what the interpreter reads from them at start-up (the
    server may serve several arms, each with its own bytecode prefix)."""
    os.chdir(cwd)
    os.environ.clear()
    os.environ.update(env)
    # the capture plugin, imported here once for all, keeps this session's variables and takes
    # them out of the environment before the session starts, as its import does in a fresh process
    plugin = sys.modules.get(PLUGIN_MODULE)
    if plugin is not None:
        plugin.take_variables()
    sys.pycache_prefix = os.environ.get("PYTHONPYCACHEPREFIX") or None
    sys.dont_write_bytecode = bool(os.environ.get("PYTHONDONTWRITEBYTECODE"))
    import tempfile

    tempfile.tempdir = None  # read TMPDIR again
    sys.path[0] = os.getcwd()  # `python -m` puts the cwd first


def child(req: dict, server_pid: int, close_fds: list) -> None:  # pragma: no cover - runs after fork
    code = 70
    try:
        os.setsid()
        die_with_parent(server_pid)
        _leave_inherited_finalizers()
        try:
            signal.set_wakeup_fd(-1)
        except (ValueError, OSError):
            pass
        for sig in (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2):
            signal.signal(sig, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        log = os.open(req["log"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(log, 1)
        os.dup2(log, 2)
        for fd in [log, null, *close_fds]:
            try:
                os.close(fd)
            except OSError:
                pass
        _enter(req["cwd"], req["env"])
        if req.get("nice"):
            try:
                os.nice(19)
            except OSError:
                pass
        try:
            if req.get("script"):
                import runpy

                sys.argv = [req["script"], *req["argv"]]
                runpy.run_path(req["script"], run_name="__main__")
                code = 0
            else:
                import pytest

                main = _fresh_main_module()
                sys.argv = [main.__file__, *req["argv"]]
                sys.modules["__main__"] = main
                code = pytest.console_main()
        except SystemExit as exc:
            code = exc.code  # type: ignore[assignment]  # _exit_status maps str/None like the interpreter does
        code = _exit_status(code)
    except BaseException:  # noqa: BLE001 - report and exit like a dying interpreter
        try:
            traceback.print_exc()
        except Exception:
            pass
        code = 1
    try:
        shutdown = getattr(threading, "_shutdown", None)
        if shutdown is not None:
            shutdown()
        import atexit

        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
    except BaseException:  # noqa: BLE001
        pass
    os._exit(code)


# ---------------------------------------------------------------------------
# the server loop


class Server:
    def __init__(self, out_fd: int, parent: int):
        self.out = out_fd
        self.parent = parent
        self.pids: dict[int, int] = {}  # id -> pid (not reaped)
        self.running: dict[int, int] = {}  # id -> pid (exit not yet reported)
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_w, False)
        os.set_blocking(self.wake_r, False)

    def send(self, record: dict) -> None:
        _write_line(self.out, record)

    def spawn(self, req: dict) -> None:
        rid = int(req["id"])
        try:
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
        except OSError as err:
            self.send({"ev": "failed", "id": rid, "error": f"fork: {err}"})
            return
        if pid == 0:
            child(req, os.getppid(), [0, self.out, self.wake_r, self.wake_w])
        self.pids[rid] = pid
        self.running[rid] = pid
        self.send({"ev": "started", "id": rid, "pid": pid})

    def poll_children(self) -> None:
        for rid, pid in list(self.running.items()):
            try:
                info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            except ChildProcessError:
                info = None
                rc = -int(signal.SIGKILL)
            else:
                if info is None or not info.si_pid:
                    continue
                killed = info.si_code in (os.CLD_KILLED, os.CLD_DUMPED)
                rc = -info.si_status if killed else info.si_status
            del self.running[rid]
            self.send({"ev": "exited", "id": rid, "rc": rc})

    def reap(self, rid: int) -> None:
        pid = self.pids.pop(rid, None)
        if pid is not None:
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass
        self.send({"ev": "reaped", "id": rid})

    def shutdown(self) -> None:
        for pid in self.pids.values():
            try:
                os.killpg(pid, signal.SIGKILL)
            except OSError:
                pass
        for pid in self.pids.values():
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass

    def loop(self) -> None:
        signal.signal(signal.SIGCHLD, lambda *_: None)
        signal.set_wakeup_fd(self.wake_w)
        buf = b""
        while True:
            try:
                ready, _, _ = select.select([0, self.wake_r], [], [], 1.0)
            except InterruptedError:
                ready = []
            if self.wake_r in ready:
                try:
                    while os.read(self.wake_r, 4096):
                        pass
                except BlockingIOError:
                    pass
            if 0 in ready:
                data = os.read(0, 65536)
                if not data:
                    break
                buf += data
                *lines, buf = buf.split(b"\n")
                for line in lines:
                    if not line.strip():
                        continue
                    req = json.loads(line)
                    if req.get("op") == "run":
                        self.spawn(req)
                    elif req.get("op") == "reap":
                        self.reap(int(req["id"]))
            self.poll_children()
            if os.getppid() != self.parent:
                break
        self.shutdown()


def _option(argv: list, name: str):
    return argv[argv.index(name) + 1] if name in argv[:-1] else None


def _read_plan(argv: list) -> dict | None:
    """The plan: from ``--plan`` (a start without the warm-up), else the first line of stdin,
    read a byte at a time (what follows it is the loop's); None at the end of stdin."""
    given = _option(argv, "--plan")
    if given is not None:
        return json.loads(given)
    line = b""
    while not line.endswith(b"\n"):
        byte = os.read(0, 1)
        if not byte:
            return None
        line += byte
    return json.loads(line)


def _start_again_without_warm_up(argv: list, out: int, plan: dict, why: dict) -> None:
    """The warm-up left this process unsafe to fork: start afresh (same pid, pipes and
    log) without it, saying why in the hello."""
    os.dup2(out, 1)
    sys.stdout.flush()
    sys.stderr.flush()
    args = [*argv, "--plan", json.dumps({**plan, "warm_up": []}), "--warm-up-dropped", json.dumps(why)]
    os.execv(sys.executable, [sys.executable, os.path.abspath(__file__), *args])


def _warm_up(argv: list, out: int, plan: dict, loaded: list, roots: list) -> tuple:
    """Run the warm-up (decouple_ab_warmup); when it left this process unsafe to fork, ran
    out of time or failed, start again without it (this call does not return then)."""
    warmup = importlib.import_module("decouple_ab_warmup")  # beside this file
    classes = plan["warm_up"]
    why: dict | None = None
    try:
        warmed, not_warmed, timed_out = warmup.warm_up(classes, loaded, PLUGIN_MODULE, plan["pytest_args"], roots)
    except Exception as err:  # noqa: BLE001 - whatever it left half done, the server starts again without it
        why = {"code": "warm.warm-up-failed", "params": {"error": repr(err)[:300]}}
    else:
        why = fork_unsafe()
        if why is None and timed_out:
            why = {"code": "warm.warm-up-timeout", "params": {"seconds": str(warmup.WARM_UP_TIMEOUT)}}
    if why is not None:
        _start_again_without_warm_up(argv, out, plan, {**why, "classes": classes})
    return warmed, not_warmed


def main(argv: list) -> int:
    parent = int(argv[argv.index("--parent") + 1]) if "--parent" in argv else os.getppid()
    # the cwd is the first arm's root; other arms served by this process
    roots = [os.getcwd()] + [argv[i + 1] for i, a in enumerate(argv[:-1]) if a == "--root"]
    die_with_parent(parent)
    # answers go to the original stdout; stray output of imports goes to the log (stderr)
    out = os.dup(1)
    os.dup2(2, 1)
    sys.path[0] = os.getcwd()  # as `python -m pytest` from the arm root
    # a backend that `import torch` will load: no use importing anything
    backend = autoloaded_backend()
    if backend is None:
        preload_pytest()  # while the runner reads the files for the plan
    plan = _read_plan(argv)
    if plan is None:
        return 0
    names = plan["preload"]
    unsafe = backend if "torch" in names else None
    loaded, skipped = preload(names, roots) if unsafe is None else ([], {})
    # Frozen now, not only before forking: the warm-up's own collections (the automatic ones
    # while torch._dynamo imports, and two that pytest runs at the end of every session) would
    # each walk all of torch's objects again: the warm-up took 1.6 s, 1.1 s with this.
    gc.freeze()
    unsafe = unsafe or fork_unsafe()
    warmed, not_warmed, dropped = [], {}, _option(argv, "--warm-up-dropped")
    if unsafe is None and plan["warm_up"] and dropped is None:
        warmed, not_warmed = _warm_up(argv, out, plan, loaded, roots)
    tree_modules = _from_trees(roots) if len(roots) > 1 else []
    if unsafe is None and tree_modules:
        unsafe = _unsafe("tree-module-preloaded", modules=", ".join(tree_modules[:3]))
    # Everything imported so far (the warm-up's too) lives as long as the children: keep it out
    # of their garbage collections.  Without this, every full collection of a
    # child (pytest runs one at the end of each session) walks all of torch's
    # objects, about 0.15 s each, and touching them copies their pages.
    gc.collect()
    gc.freeze()
    server = Server(out, parent)
    hello = {"ev": "hello", "pid": os.getpid(), "preloaded": loaded, "skipped": skipped, "unsafe": unsafe}
    hello.update(warmed=warmed, not_warmed=not_warmed, warm_up_dropped=json.loads(dropped) if dropped else None)
    _write_line(out, hello)
    server.loop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
