"""Process control for the A/B runner: child process groups, signals, waits.

Every test process runs in its own session (process group), registered here
so that a signal handler or the end of a run can kill every group at once.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time


class Interrupted(Exception):
    """SIGINT / SIGTERM arrived; everything has been cleaned up."""

    def __init__(self, signame: str):
        super().__init__(signame)
        self.signame = signame


# ---------------------------------------------------------------------------
# child process registry (so a signal handler can kill every group)

_LIVE: dict[int, subprocess.Popen] = {}
_LIVE_LOCK = threading.Lock()


def register(proc: subprocess.Popen) -> None:
    with _LIVE_LOCK:
        _LIVE[proc.pid] = proc


def unregister(proc: subprocess.Popen) -> None:
    with _LIVE_LOCK:
        _LIVE.pop(proc.pid, None)


def kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError, OSError):
        try:
            proc.kill()
        except OSError:
            pass


def kill_all_children() -> None:
    with _LIVE_LOCK:
        procs = list(_LIVE.values())
    for proc in procs:
        kill_group(proc)
    for proc in procs:
        try:
            proc.wait(timeout=5)
        except Exception:
            pass


def exited(proc: subprocess.Popen, timeout: float) -> bool:
    """Wait up to `timeout` for `proc` to exit WITHOUT reaping it."""
    if not hasattr(os, "waitid"):  # pragma: no cover - not Linux/macOS
        try:
            proc.wait(timeout=timeout)
            return True
        except subprocess.TimeoutExpired:
            return False
    end = time.monotonic() + timeout
    delay = 0.005
    while True:
        try:
            info = os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return True
        if info is not None and info.si_pid:
            return True
        now = time.monotonic()
        if now >= end:
            return False
        time.sleep(min(delay, end - now))
        delay = min(delay * 2, 0.05)


def signame(rc: int) -> str:
    if rc < 0:
        try:
            return signal.Signals(-rc).name
        except ValueError:
            return f"signal {-rc}"
    return f"exit code {rc}"


def lower_priority() -> None:  # pragma: no cover - runs in the child
    try:
        os.nice(19)
    except OSError:
        pass


# ---------------------------------------------------------------------------
# signals of the runner itself


def install_signal_handlers():
    if threading.current_thread() is not threading.main_thread():
        return None

    def handler(signum, _frame):
        raise Interrupted(signal.Signals(signum).name)

    old = {}
    for sig in (signal.SIGINT, signal.SIGTERM, getattr(signal, "SIGHUP", None)):
        if sig is None:
            continue
        try:
            old[sig] = signal.signal(sig, handler)
        except (ValueError, OSError):
            pass
    return old


def restore_signal_handlers(old) -> None:
    if not old:
        return
    for sig, h in old.items():
        try:
            signal.signal(sig, h)
        except (ValueError, OSError):
            pass


def block_signals():
    """Defer SIGINT/SIGTERM while cleaning up (re-delivered afterwards)."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "pthread_sigmask"):
        return None
    return signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
