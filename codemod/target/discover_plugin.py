"""pytest plugin loaded into the *target* interpreter by ``decouple discover-globals``.

Standalone on purpose: it imports only the standard library and pytest at module
level, and torch lazily inside hooks; never anything from codemod/ or transforms/
(the target interpreter need not have this project installed).  The runner copies
this file into a temporary directory, puts it on PYTHONPATH and passes
``-p _decouple_discover_plugin``.

It is inert unless ``DECOUPLE_DISCOVER_OUT`` is set.  Then it

* wraps ``torch.load`` / ``torch.serialization.load`` to record, per running
  test, every call: caller file:line and source line, success or the raw error
  message, and (torch >= 2.6) the names ``get_unsafe_globals_in_checkpoint``
  reports for the input; the wrapper also emulates the torch >= 2.6 default
  (``weights_only=True`` unless passed / ``pickle_module``) on older torch;
* allowlists what earlier rounds found: ``DECOUPLE_SAFE_GLOBALS`` is a JSON object
  ``{"sites": {"<abs file>:<line>": [dotted, ...]}, "global": [dotted, ...]}``.
  Per-site names are applied with a ``safe_globals`` block around that call only
  (torch >= 2.5), so attribution stays per call site; ``global`` names (and
  everything on torch 2.4) go through ``add_safe_globals`` at session start.
  Dotted names are resolved by import; names whose module is not importable yet
  (a test module) are retried at each load;
* wraps ``torch.save`` (torch >= 2.6) to scan what each test writes;
* writes everything as one JSON document to ``DECOUPLE_DISCOVER_OUT`` at the end.
"""

from __future__ import annotations

import importlib
import io
import json
import linecache
import os
import sys
import threading
from types import FrameType

ENV_OUT = "DECOUPLE_DISCOVER_OUT"
ENV_ALLOW = "DECOUPLE_SAFE_GLOBALS"
MAX_MESSAGE = 4000
MAX_LONGREPR = 20000

_state: dict = {
    "torch_version": None,
    "tests": {},  # nodeid -> record
    "resolved": {},  # dotted -> {"module", "qualname"} | {"error"}
    "errors": [],
}
_local = threading.local()
_objects: dict = {}  # dotted -> object (resolved)
_global_pending: list = []
_sites: dict = {}


def _version(torch) -> tuple:
    try:
        parts = torch.__version__.split("+")[0].split(".")
        return int(parts[0]), int(parts[1])
    except Exception:
        return (0, 0)


def _current():
    nodeid = getattr(_local, "nodeid", None) or "<no test>"
    rec = _state["tests"].get(nodeid)
    if rec is None:
        rec = _state["tests"][nodeid] = {
            "outcome": "not-run",
            "phases": {},
            "loads": [],
            "saves": [],
            "longrepr": "",
        }
    return rec


def _resolve(name: str):
    """Dotted name -> object, by sys.modules first, then import; None if impossible (yet)."""
    if name in _objects:
        return _objects[name]
    full = name if "." in name else "builtins." + name
    parts = full.split(".")
    for i in range(len(parts) - 1, 0, -1):
        modname = ".".join(parts[:i])
        mod = sys.modules.get(modname)
        if mod is None:
            try:
                mod = importlib.import_module(modname)
            except BaseException:
                continue
        obj = mod
        try:
            for p in parts[i:]:
                obj = getattr(obj, p)
        except AttributeError:
            continue
        _objects[name] = obj
        qualname = ".".join(parts[i:])
        _state["resolved"][name] = {
            "module": modname,
            "qualname": qualname,
            "aliases": _aliases(obj, modname, qualname),
        }
        return obj
    _state["resolved"][name] = {"error": f"cannot import {name}"}
    return None


def _aliases(obj, modname: str, qualname: str) -> list:
    """Shorter public spellings of the same object: parent packages re-exporting it
    (torch.nn.modules.linear.Linear -> torch.nn.modules.Linear, torch.nn.Linear)."""
    out = []
    parts = modname.split(".")
    for i in range(len(parts) - 1, 0, -1):
        parent = ".".join(parts[:i])
        mod = sys.modules.get(parent)
        if mod is None:
            continue
        cur = mod
        try:
            for p in qualname.split("."):
                cur = getattr(cur, p)
        except AttributeError:
            continue
        if cur is obj:
            out.append(f"{parent}.{qualname}")
    return out


def _caller(depth: int = 2):
    f: FrameType | None = sys._getframe(depth)
    # skip our own frames and torch's internal forwarding (torch.serialization.load -> load)
    while f is not None and f.f_code.co_filename == __file__:
        f = f.f_back
    if f is None:
        return "", 0, ""
    fn = os.path.abspath(f.f_code.co_filename)
    line = f.f_lineno
    code = linecache.getline(f.f_code.co_filename, line).strip()
    return fn, line, code


def _scan_input(torch, f):
    """get_unsafe_globals_in_checkpoint on what torch.load is about to read (>= 2.6)."""
    fn = getattr(torch.serialization, "get_unsafe_globals_in_checkpoint", None)
    if fn is None:
        return None
    try:
        if isinstance(f, (str, bytes, os.PathLike)):
            return sorted(fn(f))
        if hasattr(f, "seek") and hasattr(f, "tell") and hasattr(f, "read"):
            pos = f.tell()
            try:
                data = f.read()
            finally:
                f.seek(pos)
            return sorted(fn(io.BytesIO(data)))
    except Exception as exc:  # TorchScript archive, legacy format, ...
        return {"error": f"{type(exc).__name__}: {exc}"[:500]}
    return None


def _install(torch):
    ver = _version(torch)
    _state["torch_version"] = torch.__version__
    try:
        allow = json.loads(os.environ.get(ENV_ALLOW) or "{}")
    except ValueError:
        allow = {}
    for key, names in (allow.get("sites") or {}).items():
        _sites[key] = list(names)
    glob = list(allow.get("global") or [])
    has_cm = hasattr(torch.serialization, "safe_globals")
    if not has_cm:  # torch 2.4: no per-call context manager; allow everything process-wide
        for names in _sites.values():
            glob += [n for n in names if n not in glob]
    _global_pending.extend(glob)
    _flush_global(torch)

    real_load = torch.serialization.load

    def load(f, *args, **kwargs):
        fn, line, code = _caller()
        rec = {
            "file": fn,
            "line": line,
            "code": code,
            "status": "ok",
            "message": None,
            "scan": None,
            "explicit_weights_only": kwargs.get("weights_only"),
        }
        explicit = kwargs.get("weights_only") is not None
        pickle_module = "pickle_module" in kwargs or len(args) >= 2
        if not explicit and not pickle_module and ver < (2, 6):
            kwargs["weights_only"] = True  # emulate the >= 2.6 default
        if not explicit and not pickle_module:
            rec["scan"] = _scan_input(torch, f)
        _flush_global(torch)
        names = _sites.get(f"{fn}:{line}") or []
        objs = []
        if names and has_cm:
            current = set(map(id, _safe_globals_now(torch)))
            for n in names:
                o = _resolve(n)
                if o is not None and id(o) not in current:
                    objs.append(o)
        _current()["loads"].append(rec)
        try:
            if objs:
                with torch.serialization.safe_globals(objs):
                    return real_load(f, *args, **kwargs)
            return real_load(f, *args, **kwargs)
        except BaseException as exc:
            rec["status"] = "failed"
            rec["message"] = f"{type(exc).__module__}.{type(exc).__name__}: {exc}"[:MAX_MESSAGE]
            raise

    load.__wrapped__ = real_load  # type: ignore[attr-defined]  # a function attribute, as functools.wraps sets
    torch.load = load
    torch.serialization.load = load

    if ver >= (2, 6):
        real_save = torch.serialization.save

        def save(obj, f, *args, **kwargs):
            fn, line, code = _caller()
            pos = f.tell() if hasattr(f, "tell") and hasattr(f, "getbuffer") else None
            out = real_save(obj, f, *args, **kwargs)
            rec = {"file": fn, "line": line, "code": code, "globals": None}
            try:
                if isinstance(f, (str, bytes, os.PathLike)):
                    rec["globals"] = sorted(torch.serialization.get_unsafe_globals_in_checkpoint(f))
                elif pos is not None:
                    data = bytes(f.getbuffer()[pos:])
                    rec["globals"] = sorted(torch.serialization.get_unsafe_globals_in_checkpoint(io.BytesIO(data)))
            except Exception as exc:
                rec["globals"] = {"error": f"{type(exc).__name__}: {exc}"[:500]}
            _current()["saves"].append(rec)
            return out

        save.__wrapped__ = real_save  # type: ignore[attr-defined]  # a function attribute, as functools.wraps sets
        torch.save = save
        torch.serialization.save = save


def _safe_globals_now(torch):
    try:
        return [g[0] if isinstance(g, tuple) else g for g in torch.serialization.get_safe_globals()]
    except Exception:
        return []


def _flush_global(torch):
    if not _global_pending or not hasattr(torch.serialization, "add_safe_globals"):
        return
    still = []
    objs = []
    for n in _global_pending:
        o = _resolve(n)
        if o is None:
            still.append(n)
        else:
            objs.append(o)
    if objs:
        torch.serialization.add_safe_globals(objs)
    _global_pending[:] = still


# ------------------------------------------------------------------ pytest hooks


def pytest_configure(config):
    if not os.environ.get(ENV_OUT):
        return
    _state["rootdir"] = str(getattr(config, "rootpath", None) or config.rootdir)
    try:
        import torch
    except BaseException as exc:
        _state["errors"].append(f"cannot import torch: {type(exc).__name__}: {exc}")
        return
    try:
        _install(torch)
    except BaseException as exc:
        _state["errors"].append(f"cannot install the torch.load wrapper: {type(exc).__name__}: {exc}")


def pytest_runtest_logstart(nodeid, location):
    _local.nodeid = nodeid
    _current()


def pytest_runtest_logreport(report):
    if not os.environ.get(ENV_OUT):
        return
    rec = _state["tests"].setdefault(
        report.nodeid, {"outcome": "not-run", "phases": {}, "loads": [], "saves": [], "longrepr": ""}
    )
    rec["phases"][report.when] = report.outcome
    if report.failed:
        text = getattr(report, "longreprtext", "") or ""
        if "GLOBAL" in text or "Unsupported" in text or "weights_only" in text.lower():
            rec["longrepr"] = (rec["longrepr"] + "\n" + text)[-MAX_LONGREPR:]
    phases = rec["phases"]
    if any(v == "failed" for k, v in phases.items() if k != "call"):
        rec["outcome"] = "error"
    elif phases.get("call") == "failed":
        rec["outcome"] = "failed"
    elif phases.get("call") == "passed":
        rec["outcome"] = "passed"
    elif "skipped" in phases.values():
        rec["outcome"] = "skipped"


def pytest_runtest_logfinish(nodeid, location):
    _local.nodeid = None


def pytest_collectreport(report):
    if os.environ.get(ENV_OUT) and report.failed:
        _state["errors"].append(
            f"collection error in {report.nodeid}: {(getattr(report, 'longreprtext', '') or '')[-2000:]}"
        )


def pytest_sessionfinish(session, exitstatus):
    out = os.environ.get(ENV_OUT)
    if not out:
        return
    _state["tests"].pop("<no test>", None)
    _state["exitstatus"] = int(exitstatus)
    with open(out, "w", encoding="utf-8") as fh:
        json.dump(_state, fh, default=str)
