"""Process control for the A/B runner: child process groups, signals, waits, the
temporary roots of runs that were killed, and the run's process slots.

Every test process runs in its own session (process group), registered here
so that a signal handler or the end of a run can kill every group at once.
The slots (`SlotPool`) bound how many run at a time (`-j`): each job starts one
test process at a time, so N threads bound the processes of all arms together.
Confirmation reruns are urgent: they run A, B, A, B one after the other, and
while they do, the files still queued (a diagnostic arm's, say) fill the other
slots instead of waiting in front of them.
"""

from __future__ import annotations

import heapq
import itertools
import os
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: no run locks, stale roots are left alone
    fcntl = None  # type: ignore[assignment]


def aside(name: str, fn: Callable[..., Any], *args: Any) -> Future[Any]:
    """`fn(*args)` on a thread of its own (the slots' threads are for test processes)."""
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"decouple-ab-{name}")
    future = pool.submit(fn, *args)
    pool.shutdown(wait=False)
    return future


class Interrupted(Exception):
    """SIGINT / SIGTERM arrived; everything has been cleaned up."""

    def __init__(self, signame: str):
        super().__init__(signame)
        self.signame = signame


# ---------------------------------------------------------------------------
# child process registry (so a signal handler can kill every group)

_LIVE: dict[int, subprocess.Popen] = {}  # or interpreter.ForkedProcess
_LIVE_LOCK = threading.Lock()


def register(proc) -> None:
    with _LIVE_LOCK:
        _LIVE[proc.pid] = proc


def unregister(proc) -> None:
    with _LIVE_LOCK:
        _LIVE.pop(proc.pid, None)


def kill_group(proc) -> None:
    """Kill the process group of `proc` (a Popen or an interpreter.ForkedProcess)."""
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


# ---------------------------------------------------------------------------
# the run's process slots (-j)


class SlotPool:
    """At most N jobs at a time, urgent ones first."""

    def __init__(self, workers: int, name: str):
        self._queue: list[tuple[int, int, Future, Callable[..., Any], tuple, dict]] = []
        self._seq = itertools.count()
        self._cond = threading.Condition()
        self._closed = False
        self._threads = [
            threading.Thread(target=self._work, name=f"{name}-{i}", daemon=True) for i in range(max(1, workers))
        ]
        for t in self._threads:
            t.start()

    def submit(self, fn: Callable[..., Any], *args: Any, urgent: bool = False, **kwargs: Any) -> Future:
        """Queue `fn(*args, **kwargs)`; urgent jobs before every queued ordinary
        one, each kind in submission order."""
        fut: Future = Future()
        with self._cond:
            if self._closed:
                raise RuntimeError("the pool is shut down")
            heapq.heappush(self._queue, (0 if urgent else 1, next(self._seq), fut, fn, args, kwargs))
            self._cond.notify()
        return fut

    def _work(self) -> None:
        while True:
            with self._cond:
                while not self._queue and not self._closed:
                    self._cond.wait()
                if not self._queue:
                    return
                _, _, fut, fn, args, kwargs = heapq.heappop(self._queue)
            if not fut.set_running_or_notify_cancel():
                continue
            try:
                fut.set_result(fn(*args, **kwargs))
            except BaseException as exc:  # noqa: BLE001 - handed to whoever waits on the future
                fut.set_exception(exc)

    def shutdown(self, wait: bool = True, cancel_futures: bool = False) -> None:
        """No new jobs; with `cancel_futures`, the queued ones are cancelled, else
        they still run; with `wait`, return when the running ones are done."""
        with self._cond:
            self._closed = True
            if cancel_futures:
                for item in self._queue:
                    item[2].cancel()
                self._queue.clear()
            self._cond.notify_all()
        if wait:
            for t in self._threads:
                t.join()


def wait_all(futures: list[Future], stop: threading.Event) -> None:
    """Wait for every future; the first exception sets `stop` and is raised."""
    pending = set(futures)
    while pending:
        done, pending = wait(pending, timeout=0.2, return_when=FIRST_COMPLETED)
        for f in done:
            exc = f.exception()
            if exc is not None:
                stop.set()
                raise exc
