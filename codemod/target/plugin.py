"""decouple A/B capture plugin: one JSON line per pytest event.

PYTEST_DONT_REWRITE (the warm interpreter imports this module before pytest
starts; pytest must not warn that it cannot rewrite it)

This file is standalone (stdlib + pytest only).  The runner copies it into a
private directory as ``decouple_ab_plugin.py``, puts that directory on the
child's PYTHONPATH and loads it with ``-p decouple_ab_plugin``.

Environment variables read by the plugin (``RUNNER_VARIABLES``; ``take_variables`` moves them out
of ``os.environ`` before any conftest.py or test module is imported: a test cannot tell by them that
it runs under the runner, and a pytest it starts does not write into this process's event file):

``DECOUPLE_AB_EVENTS``    path of the JSON-lines event file (required; the plugin is inert without
                          it).
``DECOUPLE_AB_DESELECT``  path of a file with node ids (one a line) to deselect *exactly* (pytest's
                          --deselect matches prefixes, which is wrong for ``test_x`` vs
                          ``test_x2``).
``DECOUPLE_AB_ONLY``      path of a file with node ids to keep (all others are deselected).
``DECOUPLE_AB_WALKED``    path of a file with the directories the user selected (one a line, "."
                          for the invocation directory): a file below one is left out when ``pytest
                          DIR`` would leave it out (collect_ignore...).
``DECOUPLE_AB_FSYNC``     ``none`` (default), ``start`` (fsync test starts, collection and the
                          sentinel) or ``all``. Every line is one os.write(2) on an O_APPEND
                          descriptor (kept when this process dies); fsync only adds protection
                          against the machine going down (~1 ms a call).
``DECOUPLE_AB_PARENT``    pid of the runner that started this process: on Linux it dies with its
                          parent (PR_SET_PDEATHSIG), or exits at once when the parent is gone
                          (forked processes of the warm interpreter do it themselves).

Events (key ``ev``; their shapes are the ``*Event`` TypedDicts of ``eventtypes.py``, which the
runner reads the lines as): ``session`` (first line), ``deselected`` (tests the collection dropped,
with the reason: an option such as ``-k``, a hook, the directory walk; the runner's own ONLY /
DESELECT lists are not recorded), ``collected`` (node ids after deselection, and the census: the
``hw_classification`` each test's class carries at run time), ``collecterror``, ``collectskip`` (a
module-level ``pytest.skip(allow_module_level=True)``, with the reason), ``start``, ``report`` (one
per phase and per subtest), ``finish``, ``end`` (sentinel, with the exit status and pytest's own
account of the session, which the runner reconciles the events with); ``plugin-error`` when an
event could not be encoded or the account read. Every event carries ``t``, the time it was written.

Node ids are rewritten relative to the invocation directory (the arm root): pytest makes them
relative to its rootdir, which is a subdirectory when a pytest.ini lives below the root, and such
ids are not valid arguments from the arm root. The ONLY / DESELECT lists use the rewritten form
too.
"""

from __future__ import annotations

import fnmatch
import json
import os
import pathlib
import posixpath
import sys
import time
import types
from typing import TYPE_CHECKING, Dict, List, MutableMapping, Optional

import pytest

if TYPE_CHECKING:  # the types of what this file writes; the target interpreter never loads them
    from codemod.target.eventtypes import (
        CollectedEvent,
        CollectErrorEvent,
        CollectSkipEvent,
        DeselectedEvent,
        EndEvent,
        Event,
        ExcInfo,
        FinishEvent,
        PluginErrorEvent,
        PytestAccount,
        ReportEvent,
        SessionEvent,
        StartEvent,
        SubtestInfo,
    )
else:  # ... where each event is a plain dict
    CollectedEvent = CollectErrorEvent = CollectSkipEvent = DeselectedEvent = EndEvent = dict
    FinishEvent = PluginErrorEvent = PytestAccount = ReportEvent = SessionEvent = StartEvent = SubtestInfo = dict

_MSG_LINES = 20
_MSG_CHARS = 4000
_LONGREPR_CHARS = 30000
_CHAIN_DEPTH = 6
# The terminal reporter's categories that count no test: passed setup/teardown (""), warnings, deselected.
_UNCOUNTED = ("", "warnings", "deselected")
_PHASES = ("setup", "call", "teardown")
RUNNER_VARIABLES = (
    "DECOUPLE_AB_EVENTS",
    "DECOUPLE_AB_DESELECT",
    "DECOUPLE_AB_ONLY",
    "DECOUPLE_AB_WALKED",
    "DECOUPLE_AB_FSYNC",
    "DECOUPLE_AB_PARENT",
)
_given: Dict[str, str] = {}  # their values for this process's session


def take_variables(environ: MutableMapping[str, str] = os.environ) -> None:
    """Keep the runner's variables of this process here, and take them out of `environ`.

    Runs when pytest imports this plugin (``-p`` plugins are imported before the plugins of
    entry points, conftest files and test modules), and again in each child of the warm
    interpreter, which imported the plugin once for all, before the child's session starts."""
    _given.clear()
    for name in RUNNER_VARIABLES:
        value = environ.pop(name, None)
        if value is not None:
            _given[name] = value


take_variables()


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


def _file(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


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


# ---------------------------------------------------------------------------
# the census and the tests a collection drops


def _label(item) -> Optional[str]:
    """The label the item's class carries at run time (getattr, as PyTorch's filter reads
    it): the member's name, None for none, "?<repr>" for anything else."""
    cls = getattr(item, "cls", None)
    if cls is None:
        return None
    try:
        value = getattr(cls, "hw_classification", None)
        if value is None:
            return None
        if type(value).__name__ == "HardwareClassification" and isinstance(getattr(value, "name", None), str):
            return value.name
        return "?" + repr(value)[:60]
    except Exception:
        return "?<unreadable>"


def _shown(path: str, config) -> str:
    """A path relative to the invocation directory when inside it."""
    try:
        rel = os.path.relpath(path, str(config.invocation_params.dir))
    except (ValueError, AttributeError):
        return path
    return path if rel.startswith("..") else rel.replace(os.sep, "/")


def _deselect_reason(config) -> str:
    """Who called pytest_deselected: the first frame outside pluggy and this file."""
    here = os.path.abspath(__file__)
    frame: Optional[types.FrameType] = sys._getframe(1)
    while frame is not None:
        path = frame.f_code.co_filename
        name = frame.f_code.co_name
        norm = path.replace(os.sep, "/")
        if "/pluggy/" not in norm and os.path.abspath(path) != here:
            if norm.endswith("/_pytest/mark/__init__.py") and name == "deselect_by_keyword":
                return f"-k {config.getoption('keyword')}"
            if norm.endswith("/_pytest/mark/__init__.py") and name == "deselect_by_mark":
                return f"-m {config.getoption('markexpr')}"
            if norm.endswith("/_pytest/main.py"):
                return "--deselect " + " ".join(config.getoption("deselect") or [])
            return f"deselected by {name} ({_shown(path, config)})"
        frame = frame.f_back
    return "deselected"


def _modifiers(config) -> str:
    """The pytest_collection_modifyitems implementations that are not pytest's own nor ours."""
    names = []
    for impl in config.hook.pytest_collection_modifyitems.get_hookimpls():
        plugin = impl.plugin
        module = plugin.__name__ if isinstance(plugin, type(sys)) else type(plugin).__module__
        if module.startswith(("_pytest", "pytest")) or isinstance(plugin, _Recorder):
            continue
        names.append(_shown(impl.plugin_name, config) if os.path.isabs(impl.plugin_name) else impl.plugin_name)
    return ", ".join(dict.fromkeys(names)) or "a pytest_collection_modifyitems hook"


def _item_path(item):
    return pathlib.Path(str(getattr(item, "path", None) or item.fspath)).resolve()


def _walk_roots(config) -> list:
    dirs = _read_ids(_given.get("DECOUPLE_AB_WALKED"))
    base = pathlib.Path(str(config.invocation_params.dir))
    return [(base / d).resolve() for d in sorted(dirs or ())]


def _walk_ignored(session, path, roots, asked: Dict) -> Optional[str]:
    """Why `pytest ROOT` would not collect `path` (a file below a selected ROOT), or None:
    pytest asks pytest_ignore_collect of every directory and file it walks (`asked`: the answers)."""
    below = [r for r in roots if r in path.parents]
    if not below:
        return None  # named on the command line: never ignored
    root = max(below, key=lambda r: len(r.parts))
    chain = [d for d in reversed(path.parents) if root in d.parents] + [path]
    for entry in chain:
        if entry not in asked:
            try:
                hooks = session.gethookproxy(entry.parent)
                left_out = hooks.pytest_ignore_collect(collection_path=entry, config=session.config)
                asked[entry] = _ignore_reason(session.config, entry) if left_out else ""
            except Exception:
                asked[entry] = None  # the walk ends here: not a reason to report
        if asked[entry] != "":
            return asked[entry]
    return None


def _ignore_reason(config, entry) -> str:
    try:
        if entry in (config._getconftest_pathlist("collect_ignore", path=entry.parent) or []):
            mod, _ = config.pluginmanager._rget_with_confmod("collect_ignore", entry.parent)
            return f"collect_ignore in {_shown(mod.__file__, config)}"
        globs = config._getconftest_pathlist("collect_ignore_glob", path=entry.parent) or []
        if any(fnmatch.fnmatch(str(entry), str(g)) for g in globs):
            mod, _ = config.pluginmanager._rget_with_confmod("collect_ignore_glob", entry.parent)
            return f"collect_ignore_glob in {_shown(mod.__file__, config)}"
    except Exception:
        pass
    if config.getoption("ignore", None) or config.getoption("ignore_glob", None):
        return "--ignore / --ignore-glob"
    return "pytest_ignore_collect (norecursedirs, a virtual environment or a hook)"


class _Recorder:
    def __init__(self, config, path: str, fsync_mode: str, prefix: str = ""):
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self.fsync_mode = fsync_mode
        self.prefix = prefix
        self.last_exc: Optional[tuple] = None  # (nodeid, when, info) from the latest makereport
        self.config = config
        self.told: List[tuple] = []  # (node id, reason) of the tests dropped at collection
        self.census: Dict[str, Optional[str]] = {}  # their labels
        self.own = False  # the runner's own deselection is under way
        self.collecting = ""  # the file being collected (none once a test runs)
        self.interrupted: Optional[ExcInfo] = None  # what ended the session early, if anything

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

    @pytest.hookimpl(hookwrapper=True)
    def pytest_collection_modifyitems(self, session, config, items):
        # Around every other implementation: what they drop without telling
        # (items[:] = kept, as PyTorch's --hw-classification filter does) is seen here.
        before = list(items)
        yield
        kept = {id(item) for item in items}
        told = {nid for nid, _ in self.told}
        silent = [it for it in before if id(it) not in kept and self.nid(it.nodeid) not in told]
        if silent:
            self._record(silent, "removed from the collection by " + _modifiers(config))
        walked = _walk_roots(config)
        if walked:
            ignored: Dict[str, list] = {}
            asked: Dict = {}  # per file, and per walked entry (the files of a directory share its chain)
            why_of = {p: _walk_ignored(session, p, walked, asked) for p in {_item_path(it) for it in items}}
            for item in items:
                why = why_of[_item_path(item)]
                if why:
                    ignored.setdefault(why, []).append(item)
            for why, dropped in ignored.items():
                self._record(dropped, "left out of pytest's directory walk: " + why)
            gone = {id(it) for dropped in ignored.values() for it in dropped}
            items[:] = [it for it in items if id(it) not in gone]
        self._own_selection(config, items)
        for reason in dict.fromkeys(r for _, r in self.told):
            ids = [nid for nid, r in self.told if r == reason]
            hw = {nid: self.census.get(nid) for nid in ids}
            self.emit(DeselectedEvent(ev="deselected", nodeids=ids, reason=reason, hw=hw), sync=True)
        self.told = []

    def _record(self, items, reason: str) -> None:
        for item in items:
            nid = self.nid(item.nodeid)
            self.census[nid] = _label(item)
            self.told.append((nid, reason))

    def pytest_deselected(self, items):
        if not self.own:
            self._record(items, _deselect_reason(self.config))

    def _own_selection(self, config, items) -> None:
        """The runner's ONLY / DESELECT lists (shards, resumes, reruns): not recorded."""
        only = _read_ids(_given.get("DECOUPLE_AB_ONLY"))
        drop = _read_ids(_given.get("DECOUPLE_AB_DESELECT")) or set()
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
            self.own = True
            try:
                config.hook.pytest_deselected(items=gone)
            finally:
                self.own = False
            items[:] = keep

    def pytest_collection_finish(self, session):
        hw = {self.nid(it.nodeid): _label(it) for it in session.items}
        self.emit(CollectedEvent(ev="collected", nodeids=list(hw), hw=hw), sync=True)

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
        nodeid = self.nid(report.nodeid)
        if report.skipped:
            # module-level pytest.skip(allow_module_level=True): the module's
            # tests are never collected; record why
            reason = ""
            if isinstance(report.longrepr, tuple) and len(report.longrepr) == 3:
                reason = str(report.longrepr[2])
            self.emit(CollectSkipEvent(ev="collectskip", nodeid=nodeid, file=_file(nodeid), reason=reason), sync=True)
        elif report.failed:
            last = self.last_exc
            info = last[2] if last and last[0] == report.nodeid and last[1] == "collect" else None
            self._collect_error(nodeid, info, _longrepr(report))

    def _collect_error(self, nodeid: str, info: Optional[ExcInfo], longrepr: str) -> None:
        event = CollectErrorEvent(ev="collecterror", nodeid=nodeid, file=_file(nodeid), exc=info, longrepr=longrepr)
        self.emit(event, sync=True)

    def pytest_collectstart(self, collector):
        self.collecting = _file(self.nid(collector.nodeid)) or self.collecting

    def pytest_internalerror(self, excrepr, excinfo):
        # a SystemExit while a module is imported ends pytest's collection as an internal
        # error: it is that file's collection error (its tests never run)
        if self.collecting.endswith(".py"):
            self._collect_error(self.collecting, _exc_info(excinfo), str(excrepr)[-_LONGREPR_CHARS:])

    def pytest_runtest_logstart(self, nodeid, location):
        self.collecting = ""
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

    def pytest_keyboard_interrupt(self, excinfo):
        # pytest.exit() and a KeyboardInterrupt (also one a unittest test raises) end the
        # session here, before pytest_sessionfinish: the test that was running has no call report
        self.interrupted = _exc_info(excinfo)

    def pytest_sessionfinish(self, session, exitstatus):
        account = None
        try:
            account = self._account(session)
        except Exception as err:  # a session object a plugin broke: the runner says so
            self.emit(PluginErrorEvent(ev="plugin-error", error=f"pytest's account: {_qualname(type(err))}"))
        self.emit(EndEvent(ev="end", exitstatus=int(exitstatus), account=account), sync=True)

    def _account(self, session) -> PytestAccount:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        stats: Optional[Dict[str, List[str]]] = None
        if reporter is not None:
            stats = {}
            for category, reports in dict(reporter.stats).items():
                if category in _UNCOUNTED:
                    continue
                ids = [self.nid(r.nodeid) for r in reports if getattr(r, "when", None) in _PHASES]
                if ids:
                    stats[str(category)] = ids
        return PytestAccount(
            testscollected=int(session.testscollected),
            testsfailed=int(session.testsfailed),
            shouldstop=str(session.shouldstop or ""),
            shouldfail=str(session.shouldfail or ""),
            interrupted=self.interrupted,
            stats=stats,
        )


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
    path = _given.get("DECOUPLE_AB_EVENTS")
    if not path:
        return
    parent = _given.get("DECOUPLE_AB_PARENT")
    if parent:
        _die_with_parent(parent)
    rec = _Recorder(config, path, _given.get("DECOUPLE_AB_FSYNC", "none"), _prefix(config))
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
