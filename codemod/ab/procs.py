"""Process control for the A/B runner: child process groups, signals, waits,
the temporary roots of runs that were killed, and the runner's two exceptions.

Every test process runs in its own session (process group), registered here
so that a signal handler or the end of a run can kill every group at once.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX
    fcntl = None


class UsageError(Exception):
    """Bad input: exit code 2."""


class Interrupted(Exception):
    """SIGINT / SIGTERM arrived; everything has been cleaned up."""

    def __init__(self, signame: str):
        super().__init__(signame)
        self.signame = signame


# ---------------------------------------------------------------------------
# child process registry (so a signal handler can kill every group)

_LIVE: dict[int, subprocess.Popen] = {}  # or warm.ForkedProcess
_LIVE_LOCK = threading.Lock()


def register(proc) -> None:
    with _LIVE_LOCK:
        _LIVE[proc.pid] = proc


def unregister(proc) -> None:
    with _LIVE_LOCK:
        _LIVE.pop(proc.pid, None)


def kill_group(proc) -> None:
    """Kill the process group of `proc` (a Popen or a warm.ForkedProcess)."""
    own = getattr(proc, "kill_group", None)
    if own is not None:
        own()
        return
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
    # forked test processes first, reaped by their warm interpreters, then the
    # interpreters (killed first, they would leave their children as zombies)
    forked = [p for p in procs if hasattr(p, "server")]
    for batch in (forked, [p for p in procs if not hasattr(p, "server")]):
        for proc in batch:
            kill_group(proc)
        for proc in batch:
            try:
                proc.wait(timeout=5)
            except Exception:
                pass


def exited(proc, timeout: float) -> bool:
    """Wait up to `timeout` for `proc` to exit WITHOUT reaping it."""
    own = getattr(proc, "exited", None)
    if own is not None:
        return own(timeout)
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


# ---------------------------------------------------------------------------
# temporary roots of runs that were killed (SIGKILL leaves no time to clean up)

LOCK_NAME = "run.lock"


def claim_root(work) -> int | None:
    """Mark `work` (a run's temporary root) as in use for the life of this
    process: an exclusive flock on ``work/run.lock``, released by the kernel
    when the process dies however it dies.  The lock is taken before the name
    appears (taken on a temporary name, then renamed), so another run never
    sees an unlocked lock file of a live run.  Returns the descriptor to close
    at the end of the run (None where flock does not exist)."""
    if fcntl is None:
        return None
    tmp = os.path.join(str(work), "." + LOCK_NAME)
    fd = os.open(tmp, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.write(fd, f"{os.getpid()}\n".encode())
        os.rename(tmp, os.path.join(str(work), LOCK_NAME))
    except OSError:
        os.close(fd)
        return None
    return fd


def reap_stale_roots(tmpdir, prefix: str) -> list:
    """Remove the temporary roots under `tmpdir` whose run is dead (its lock
    file can be locked); returns their paths.  Roots without a lock file are
    left alone (an older version's, or not ours)."""
    if fcntl is None:
        return []
    out = []
    try:
        entries = list(os.scandir(str(tmpdir)))
    except OSError:
        return []
    for entry in entries:
        if not entry.name.startswith(prefix) or not entry.is_dir(follow_symlinks=False):
            continue
        try:
            fd = os.open(os.path.join(entry.path, LOCK_NAME), os.O_RDWR | os.O_NOFOLLOW)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)  # a live run holds it
            continue
        try:
            shutil.rmtree(entry.path, ignore_errors=True)
        finally:
            os.close(fd)
        out.append(Path(entry.path))
    return out
