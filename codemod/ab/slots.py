"""The run's process slots: at most N jobs at a time (`-j`), urgent ones first.

Each job starts one test process at a time, so N threads bound the processes of
all arms together.  Confirmation reruns are urgent: they run A, B, A, B one after
the other, and while they do, the files still queued (a diagnostic arm's, say)
fill the other slots instead of waiting in front of them.
"""

from __future__ import annotations

import heapq
import itertools
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any


class SlotPool:
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
