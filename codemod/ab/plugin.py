"""decouple A/B capture plugin: one JSON line per pytest event.

PYTEST_DONT_REWRITE (the warm interpreter imports this module before pytest
starts; pytest must not warn that it cannot rewrite it)

This file is standalone (stdlib + pytest only).  The runner copies it into a
private directory as ``decouple_ab_plugin.py``, puts that directory on the
child's PYTHONPATH and loads it with ``-p decouple_ab_plugin``.

Environment variables read by the plugin:

``DECOUPLE_AB_EVENTS``    path of the JSON-lines event file (required; the
                          plugin is inert without it).
``DECOUPLE_AB_DESELECT``  path of a file with node ids (one a line) to
                          deselect *exactly* (pytest's --deselect matches
                          prefixes, which is wrong for ``test_x`` vs ``test_x2``).
``DECOUPLE_AB_ONLY``      path of a file with node ids to keep (all others
                          are deselected).
``DECOUPLE_AB_FSYNC``     ``none`` (default), ``start`` (fsync test starts,
                          collection and the sentinel) or ``all``.  Every line
                          is one os.write(2) on an O_APPEND descriptor, so it
                          is in the kernel's page cache (visible to the
                          runner, kept when this process dies) before the
                          next test starts; fsync only adds protection
                          against the whole machine going down, at ~1 ms a
                          call on an ordinary disk.
``DECOUPLE_AB_PARENT``    pid of the runner that started this process: on
                          Linux the process asks to be killed when its
                          parent dies (PR_SET_PDEATHSIG), and exits at once
                          when the parent is already gone.  (Processes forked
                          by the warm interpreter arrange this themselves.)

Events (key ``ev``; their shapes are the ``*Event`` TypedDicts below, which the
runner reads the lines as): ``session`` (first line), ``collected`` (node ids
after deselection), ``collecterror``, ``collectskip`` (a module-level
``pytest.skip(allow_module_level=True)``, with the reason), ``start``,
``report`` (one per phase and per subtest), ``finish``, ``end`` (sentinel,
with the exit status); ``plugin-error`` when an event could not be encoded.
Every event carries ``t``, the time it was written.

Node ids are rewritten relative to the invocation directory (the arm root):
pytest makes them relative to its rootdir, which is a subdirectory when a
pytest.ini lives below the root, and such ids are not valid arguments from
the arm root.  The ONLY / DESELECT lists use the rewritten form too.
"""

from __future__ import annotations

import json
import os
import posixpath
import sys
import time
from typing import Dict, List, Literal, Optional, TypedDict, Union

import pytest

_MSG_LINES = 20
_MSG_CHARS = 4000
_LONGREPR_CHARS = 30000
_CHAIN_DEPTH = 6


# ---------------------------------------------------------------------------
# the events (typing spelled for any Python the target may run: no `X | Y`, no NotRequired)


class ExcInfo(TypedDict):
    type: str  # qualified, e.g. "_pickle.UnpicklingError"
    chain: List[str]  # causes/contexts, outermost first
    message: str  # first lines of str(exc), capped


class SubtestInfo(TypedDict):
    msg: Optional[str]
    kwargs: Dict[str, str]


class _Stamped(TypedDict, total=False):
    t: float  # when the event was written (added by _Recorder.emit)


class SessionEvent(_Stamped):
    ev: Literal["session"]
    pid: int
    python: str
    pytest: str
    cwd: str
    rootdir: str
    nodeid_prefix: str


class CollectedEvent(_Stamped):
    ev: Literal["collected"]
    nodeids: List[str]


class CollectErrorEvent(_Stamped):
    ev: Literal["collecterror"]
    nodeid: str
    file: str
    exc: Optional[ExcInfo]
    longrepr: str


class CollectSkipEvent(_Stamped):
    ev: Literal["collectskip"]
    nodeid: str
    file: str
    reason: str


class StartEvent(_Stamped):
    ev: Literal["start"]
    nodeid: str


class _SkipReason(_Stamped, total=False):
    skip_reason: str  # a skipped phase's reason


class ReportEvent(_SkipReason):
    """One phase of a test (or one unittest subtest, with `subtest`)."""

    ev: Literal["report"]
    nodeid: str
    when: Literal["setup", "call", "teardown"]
    outcome: Literal["passed", "failed", "skipped"]
    duration: float
    wasxfail: Optional[str]
    xfail: bool
    exc: Optional[ExcInfo]
    longrepr: str
    subtest: Optional[SubtestInfo]


class FinishEvent(_Stamped):
    ev: Literal["finish"]
    nodeid: str


class EndEvent(_Stamped):
    ev: Literal["end"]
    exitstatus: int


class PluginErrorEvent(_Stamped):
    ev: Literal["plugin-error"]
    error: str


Event = Union[
    SessionEvent,
    CollectedEvent,
    CollectErrorEvent,
    CollectSkipEvent,
    StartEvent,
    ReportEvent,
    FinishEvent,
    EndEvent,
    PluginErrorEvent,
]


# ---------------------------------------------------------------------------
# capture


def _qualname(tp: type) -> str:
    module = getattr(tp, "__module__", None) or "?"
    name = getattr(tp, "__qualname__", None) or getattr(tp, "__name__", "?")
    if module == "builtins":
        return str(name)
    return f"{module}.{name}"


def _message(exc: BaseException) -> str:
    try:
        text = str(exc)
    except Exception as err:  # a broken __str__ must not kill the capture
        text = f"<unprintable {type(exc).__name__}: {type(err).__name__}>"
    lines = text.splitlines()
    text = "\n".join(lines[:_MSG_LINES])
    return text[:_MSG_CHARS]


def _chain(exc: BaseException) -> list:
    out: list = []
    seen = {id(exc)}
    cur = exc
    while len(out) < _CHAIN_DEPTH:
        nxt = cur.__cause__
        if nxt is None and not cur.__suppress_context__:
            nxt = cur.__context__
        if nxt is None or id(nxt) in seen:
            break
        seen.add(id(nxt))
        out.append(_qualname(type(nxt)))
        cur = nxt
    return out


def _describe(exc: BaseException) -> ExcInfo:
    return {"type": _qualname(type(exc)), "chain": _chain(exc), "message": _message(exc)}


def _exc_info(excinfo) -> Optional[ExcInfo]:
    if excinfo is None:
        return None
    return _describe(excinfo.value)


def _longrepr(report) -> str:
    if not report.longrepr:
        return ""
    try:
        text = str(report.longrepr)
    except Exception:
        text = repr(report.longrepr)
    if len(text) > _LONGREPR_CHARS:
        text = text[: _LONGREPR_CHARS // 3] + "\n...[truncated]...\n" + text[-(2 * _LONGREPR_CHARS) // 3 :]
    return text


def _read_ids(path: str | None):
    if not path:
        return None
    try:
        with open(path, encoding="utf-8") as fh:
            return {line.rstrip("\n") for line in fh if line.strip()}
    except OSError:
        return None


def _prefix(config) -> str:
    """The rootdir relative to the invocation directory ("" when equal)."""
    try:
        rel = os.path.relpath(str(config.rootpath), str(config.invocation_params.dir))
    except (ValueError, AttributeError):
        return ""
    rel = rel.replace(os.sep, "/")
    return "" if rel == "." else rel


class _Recorder:
    def __init__(self, path: str, fsync_mode: str, prefix: str = ""):
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self.fsync_mode = fsync_mode
        self.prefix = prefix
        self.last_exc: Optional[tuple] = None  # (nodeid, when, info) from the latest makereport

    def nid(self, nodeid: str) -> str:
        """pytest's rootdir-relative node id -> invocation-dir-relative."""
        if not self.prefix or not nodeid:
            return nodeid
        path, sep, rest = nodeid.partition("::")
        path = posixpath.normpath(f"{self.prefix}/{path}") if path not in ("", ".") else self.prefix
        return path + sep + rest

    def emit(self, record: Event, sync: bool = False) -> None:
        record.setdefault("t", time.time())
        try:
            line = json.dumps(record, default=repr) + "\n"
        except Exception as err:
            line = json.dumps(PluginErrorEvent(ev="plugin-error", error=repr(err))) + "\n"
        data = line.encode("utf-8", "replace")
        # one write(2) per line, so the runner never sees a torn line from us
        while data:
            n = os.write(self.fd, data)
            data = data[n:]
        if self.fsync_mode == "all" or (sync and self.fsync_mode != "none"):
            try:
                os.fsync(self.fd)
            except OSError:
                pass

    # -- hooks -------------------------------------------------------------

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, session, config, items):
        only = _read_ids(os.environ.get("DECOUPLE_AB_ONLY"))
        drop = _read_ids(os.environ.get("DECOUPLE_AB_DESELECT")) or set()
        if only is None and not drop:
            return
        keep, gone = [], []
        for item in items:
            nid = self.nid(item.nodeid)
            if nid in drop or (only is not None and nid not in only):
                gone.append(item)
            else:
                keep.append(item)
        if gone:
            config.hook.pytest_deselected(items=gone)
            items[:] = keep

    def pytest_collection_finish(self, session):
        self.emit(CollectedEvent(ev="collected", nodeids=[self.nid(it.nodeid) for it in session.items]), sync=True)

    def pytest_exception_interact(self, node, call, report):
        # Called for collection failures (and test failures) with the real
        # exception; remember it so pytest_collectreport can use it.
        if getattr(report, "when", None) == "collect" or not hasattr(report, "when"):
            info = _exc_info(call.excinfo)
            exc = call.excinfo.value if call.excinfo is not None else None
            # pytest wraps import/syntax errors in CollectError(...) from err:
            # the interesting type is the cause.
            if exc is not None and type(exc).__name__ == "CollectError" and exc.__cause__ is not None:
                info = _describe(exc.__cause__)
            self.last_exc = (report.nodeid, "collect", info)

    def pytest_collectreport(self, report):
        if report.skipped:
            # module-level pytest.skip(allow_module_level=True): the module's
            # tests are never collected; record why
            reason = ""
            if isinstance(report.longrepr, tuple) and len(report.longrepr) == 3:
                reason = str(report.longrepr[2])
            nodeid = self.nid(report.nodeid)
            self.emit(
                CollectSkipEvent(ev="collectskip", nodeid=nodeid, file=nodeid.split("::", 1)[0], reason=reason),
                sync=True,
            )
            return
        if not report.failed:
            return
        info = None
        if self.last_exc and self.last_exc[0] == report.nodeid and self.last_exc[1] == "collect":
            info = self.last_exc[2]
        nodeid = self.nid(report.nodeid)
        path = nodeid.split("::", 1)[0]
        self.emit(
            CollectErrorEvent(ev="collecterror", nodeid=nodeid, file=path, exc=info, longrepr=_longrepr(report)),
            sync=True,
        )

    def pytest_runtest_logstart(self, nodeid, location):
        self.emit(StartEvent(ev="start", nodeid=self.nid(nodeid)), sync=True)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        outcome = yield
        info = _exc_info(call.excinfo)
        try:
            rep = outcome.get_result()
        except BaseException:
            return
        try:
            rep._decouple_exc = info
        except Exception:
            pass
        self.last_exc = (item.nodeid, call.when, info)

    def pytest_runtest_logreport(self, report):
        info = getattr(report, "_decouple_exc", None)
        if info is None and self.last_exc and self.last_exc[:2] == (report.nodeid, report.when):
            info = self.last_exc[2] if report.outcome != "passed" else None
        context = getattr(report, "context", None)
        subtest = None
        if context is not None and hasattr(context, "kwargs"):
            kwargs = getattr(context, "kwargs", None) or {}
            subtest = SubtestInfo(
                msg=getattr(context, "msg", None), kwargs={str(k): str(v) for k, v in dict(kwargs).items()}
            )
        record = ReportEvent(
            ev="report",
            nodeid=self.nid(report.nodeid),
            when=report.when,
            outcome=report.outcome,
            duration=getattr(report, "duration", 0.0),
            wasxfail=getattr(report, "wasxfail", None) if hasattr(report, "wasxfail") else None,
            xfail=hasattr(report, "wasxfail"),
            exc=info if report.outcome != "passed" else None,
            longrepr=_longrepr(report) if report.outcome != "passed" else "",
            subtest=subtest,
        )
        if report.outcome == "skipped" and isinstance(report.longrepr, tuple) and len(report.longrepr) == 3:
            record["skip_reason"] = str(report.longrepr[2])
        self.emit(record)

    def pytest_runtest_logfinish(self, nodeid, location):
        self.emit(FinishEvent(ev="finish", nodeid=self.nid(nodeid)))

    def pytest_sessionfinish(self, session, exitstatus):
        self.emit(EndEvent(ev="end", exitstatus=int(exitstatus)), sync=True)


def _die_with_parent(parent: str) -> None:
    if sys.platform.startswith("linux"):
        try:
            import ctypes
            import signal

            ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG
        except Exception:
            return
    if str(os.getppid()) != parent:
        os._exit(70)


def pytest_configure(config):
    path = os.environ.get("DECOUPLE_AB_EVENTS")
    if not path:
        return
    parent = os.environ.get("DECOUPLE_AB_PARENT")
    if parent:
        _die_with_parent(parent)
    rec = _Recorder(path, os.environ.get("DECOUPLE_AB_FSYNC", "none"), _prefix(config))
    rec.emit(
        SessionEvent(
            ev="session",
            pid=os.getpid(),
            python=sys.version.split()[0],
            pytest=getattr(pytest, "__version__", "?"),
            cwd=os.getcwd(),
            rootdir=str(getattr(config, "rootpath", "")),
            nodeid_prefix=rec.prefix,
        ),
        sync=True,
    )
    config.pluginmanager.register(rec, "decouple_ab_recorder")
