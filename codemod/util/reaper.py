"""Every process a run starts is gone when the run ends, also one that left its process group.

The runners kill each test process's group when its file is done, but a test can start a
process that calls ``setsid()`` (a daemon, a server it forgets to stop): it leaves the group
and, once its parent exits, is re-parented to init and outlives the run. Inside
`orphans_reaped()` this process is a *child subreaper* (Linux ``prctl(PR_SET_CHILD_SUBREAPER)``,
since 3.4): an orphaned descendant is re-parented to it instead of to init, so at the end every
child that was not there before the run (found in ``/proc``) is killed and reaped, round after
round, until none is left (a killed process's own children come to us in turn). Why not a cgroup:
it needs a writable cgroup tree (root or systemd delegation), which a developer's shell or a CI
container seldom has; the subreaper needs no privilege. Elsewhere (macOS) this is a no-op and such
a process may outlive the run.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

PR_SET_CHILD_SUBREAPER = 36
PR_GET_CHILD_SUBREAPER = 37
# Rounds of kill-and-reap at the end: each round takes the children re-parented by the last.
_ROUNDS = 100


def _load_prctl():
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl, ctypes
    except (OSError, AttributeError):
        return None


_PRCTL = _load_prctl()


def _subreaper() -> bool | None:
    """Whether this process is a child subreaper now (None: cannot tell, not Linux)."""
    if _PRCTL is None:
        return None
    prctl, ctypes = _PRCTL
    flag = ctypes.c_int(0)
    if prctl(PR_GET_CHILD_SUBREAPER, ctypes.byref(flag), 0, 0, 0) != 0:
        return None
    return bool(flag.value)


def _set_subreaper(on: bool) -> bool:
    if _PRCTL is None:
        return False
    prctl, _ = _PRCTL
    return prctl(PR_SET_CHILD_SUBREAPER, int(on), 0, 0, 0) == 0


PR_SET_PDEATHSIG = 1


def end_with_parent(parent: int) -> None:
    """This process gets SIGTERM when its parent `parent` exits (Linux ``PR_SET_PDEATHSIG``),
    and ends now if it already has: a worker that ignores Ctrl-C (its parent ends the pool) must
    not outlive a parent that was interrupted before it could. Elsewhere a no-op."""
    if _PRCTL is not None:
        prctl, _ = _PRCTL
        prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    if os.getppid() != parent:
        os._exit(1)


def children() -> set[int]:
    """The pids whose parent is this process (from /proc; empty where there is none)."""
    me = os.getpid()
    found: set[int] = set()
    try:
        entries = os.listdir("/proc")
    except OSError:
        return found
    for name in entries:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        # pid (comm) state ppid ...: comm may hold spaces and parentheses
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) > 1 and int(fields[1]) == me:
            found.add(int(name))
    return found


def _kill_and_reap(pids: set[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    for pid in pids:
        try:
            os.waitpid(pid, 0)
        except OSError:  # reaped already (by its Popen), or not ours
            pass


@contextmanager
def orphans_reaped() -> Iterator[None]:
    """Run the body with this process as the subreaper of everything it starts; afterwards
    kill and reap every child it did not have before (signals are held meanwhile, so a
    Ctrl-C cannot leave some behind)."""
    before = children() if _PRCTL is not None else set()
    was = _subreaper()
    adopted = was is False and _set_subreaper(True)
    try:
        yield
    finally:
        if _PRCTL is not None:  # Linux: pthread_sigmask exists
            held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
            try:
                end = time.monotonic() + 10
                for _ in range(_ROUNDS):
                    new = children() - before
                    if not new or time.monotonic() > end:
                        break
                    _kill_and_reap(new)
                if adopted:
                    _set_subreaper(False)
            finally:
                signal.pthread_sigmask(signal.SIG_SETMASK, held)
