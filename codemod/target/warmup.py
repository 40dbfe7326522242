"""decouple A/B warm-up: one throwaway test of each test base class, before the server forks.

PYTEST_DONT_REWRITE

This file is standalone (stdlib + pytest only), like the fork server that imports it: it
runs in the user's interpreter.  The runner copies it beside the server as
``decouple_ab_warmup.py``.

A first test imports and caches much more than its module did at import: the first test
of a ``torch.testing._internal.common_utils.TestCase`` calls ``torch.compiler.set_stance``,
which imports ``torch._dynamo`` (about 850 modules); pytest imports its debugging and
unittest machinery and the plugins of its entry points.  `warm_up` runs one empty test of a
subclass of each base class, in one pytest session in a directory of its own (no ini file
nor conftest of the user's, nothing of a tree under test on ``sys.path``), reads what ran
from the capture plugin's events, and puts back what a session leaves changed (environment,
cwd, ``sys.argv``/``sys.path``, the hooks of ``sys`` and ``threading``, signal handlers,
warning filters, the root logger, the random generators of ``random``, torch and numpy; the
warm-up's own modules leave ``sys.modules``).  What stays is what it is for: the imported
modules and their caches.  Bounded by WARM_UP_TIMEOUT (an alarm ends the session).

The plugin modules pytest imported during the session (its entry points') keep the loader
pytest gave them, the assertion rewriter of that session (so a forked session finds them
rewritten, as it would itself, and does not warn), and with it the session's objects: the
throwaway subclasses stay alive, listed by their base class's ``__subclasses__()``.
"""

from __future__ import annotations

import importlib
import json
import os
import signal
import sys
import threading
from typing import cast

WARM_UP_TIMEOUT = 120  # seconds for the whole warm-up session
_WARM_UP_TEST = (
    "from {module} import {name} as _Base\n\n\n"
    "class TestDecoupleWarmUp(_Base):\n    def test_warm_up(self):\n        pass\n"
)


class _WarmUpTimeout(BaseException):
    """Raised by the alarm: pytest ends the session with an internal error."""


def _snapshot(roots: list):
    """What a pytest session may leave changed in this process; returns its restore()."""
    import logging
    import random
    import warnings

    env, argv, cwd, path = dict(os.environ), list(sys.argv), os.getcwd(), list(sys.path)
    hooks = (sys.excepthook, sys.unraisablehook, sys.breakpointhook, sys.displayhook, threading.excepthook)
    handlers = {}
    for sig in signal.valid_signals():
        try:
            handlers[sig] = signal.getsignal(sig)
        except (ValueError, OSError):
            pass
    filters, root = list(warnings.filters), logging.getLogger()
    log_state = (list(root.handlers), root.level)
    rng = [(random.getstate, random.setstate)]
    for module, get, put in (("torch", "get_rng_state", "set_rng_state"), ("numpy.random", "get_state", "set_state")):
        getter, putter = (getattr(sys.modules.get(module), name, None) for name in (get, put))
        if callable(getter) and callable(putter):
            rng.append((getter, putter))
    states = [(get(), put) for get, put in rng]
    modules = set(sys.modules)
    # the session imports nothing of a tree under test
    sys.path[:] = [p for p in path if not (p in ("", ".") or os.path.realpath(p) in map(os.path.realpath, roots))]

    def restore() -> None:
        os.environ.clear()
        os.environ.update(env)
        os.chdir(cwd)
        sys.argv[:], sys.path[:] = argv, path
        sys.excepthook, sys.unraisablehook, sys.breakpointhook, sys.displayhook, threading.excepthook = hooks
        for sig, handler in handlers.items():
            if handler is not None:
                try:
                    signal.signal(sig, handler)
                except (ValueError, OSError):
                    pass
        cast(list, warnings.filters)[:] = filters
        warnings._filters_mutated()  # type: ignore[attr-defined]  # (cached lookups see the filters again)
        root.handlers[:], root.level = log_state
        for value, put in states:
            put(value)
        for name in set(sys.modules) - modules:
            if name.startswith("test_warm_up_"):
                del sys.modules[name]

    return restore


def _warm_up_results(events: str, classes: list) -> tuple:
    """(warmed, {class: why not}) from the capture plugin's events of the warm-up session."""
    outcome: dict = {}
    try:
        with open(events, encoding="utf-8") as fh:
            records = [json.loads(line) for line in fh if line.strip()]
    except (OSError, ValueError):
        records = []
    for rec in records:
        file = (rec.get("nodeid") or "").split("::")[0]
        if rec.get("ev") == "collecterror" or (rec.get("ev") == "report" and rec.get("outcome") != "passed"):
            exc = rec.get("exc") or {}
            text = f"{exc.get('type')}: {exc.get('message')}" if exc else (rec.get("longrepr") or "?")
            outcome.setdefault(file, f"{rec.get('when', 'collect')}: {text.strip().splitlines()[0][:300]}")
        elif rec.get("ev") == "report" and rec.get("when") == "call":
            outcome.setdefault(file, None)
    warmed, not_warmed = [], {}
    for i, qual in enumerate(classes):
        why = outcome.get(f"test_warm_up_{i}.py", "its test did not run")
        if why is None:
            warmed.append(qual)
        else:
            not_warmed[qual] = why
    return warmed, not_warmed


def warm_up(classes: list, loaded: list, plugin: str, pytest_args: list, roots: list) -> tuple:
    """Run one throwaway test of each class (``module:Name``, its module preloaded) in one
    pytest session, in a directory of its own, and put back what the session changed (the
    imports and caches stay: they are the point); (warmed, {class: why not}, timed out)."""
    import shutil
    import tempfile
    import unittest

    import pytest

    todo, not_warmed = [], {}
    for qual in classes:
        module, _, name = qual.partition(":")
        cls = getattr(sys.modules.get(module), name, None) if module in loaded else None
        if module not in loaded:
            not_warmed[qual] = "its module is not preloaded"
        elif not (isinstance(cls, type) and issubclass(cls, unittest.TestCase)):
            not_warmed[qual] = "not a unittest.TestCase"
        else:
            todo.append(qual)
    if not todo:
        return [], not_warmed, False
    where = tempfile.mkdtemp(prefix="decouple-warm-up-")
    for i, qual in enumerate(todo):
        module, _, name = qual.partition(":")
        with open(os.path.join(where, f"test_warm_up_{i}.py"), "w", encoding="utf-8") as fh:
            fh.write(_WARM_UP_TEST.format(module=module, name=name))
    ini = os.path.join(where, "pytest.ini")
    with open(ini, "w", encoding="utf-8") as fh:
        fh.write("[pytest]\n")
    restore = _snapshot(roots)
    timed_out = []

    def alarm(*_):
        timed_out.append(True)
        raise _WarmUpTimeout()

    events = os.path.join(where, "events.jsonl")
    importlib.import_module(plugin).take_variables({"DECOUPLE_AB_EVENTS": events})  # (preloaded)
    signal.signal(signal.SIGALRM, alarm)
    signal.alarm(WARM_UP_TIMEOUT)
    try:
        os.chdir(where)  # (the node ids the events carry are relative to it)
        args = ["-q", "-p", plugin, *pytest_args, "--continue-on-collection-errors", "-c", ini, "--rootdir", where]
        pytest.main([*args, where])
    except BaseException:  # noqa: BLE001 - pytest reports its own errors; the events say what ran
        pass
    finally:
        signal.alarm(0)
        restore()
    warmed, failed = _warm_up_results(events, todo)
    shutil.rmtree(where, ignore_errors=True)
    return warmed, {**not_warmed, **failed}, bool(timed_out)
