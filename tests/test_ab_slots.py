"""The A/B run's process slots: bounded, urgent jobs first, cancellable."""

from __future__ import annotations

import threading

import pytest

from codemod.ab.execution.processes import SlotPool


def test_urgent_jobs_run_before_queued_ordinary_ones_each_in_order():
    pool = SlotPool(1, "t")
    gate = threading.Event()
    order: list[str] = []
    blocker = pool.submit(gate.wait, 60)
    futs = [pool.submit(order.append, f"file{i}") for i in range(3)]
    futs += [pool.submit(order.append, f"rerun{i}", urgent=True) for i in range(2)]
    gate.set()
    for f in [blocker, *futs]:
        f.result(timeout=60)
    pool.shutdown()
    assert order == ["rerun0", "rerun1", "file0", "file1", "file2"]


def test_no_more_jobs_run_at_once_than_slots():
    pool = SlotPool(2, "t")
    lock = threading.Lock()
    running, peak = [0], [0]
    release = threading.Event()

    def job():
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
        release.wait(60)
        with lock:
            running[0] -= 1

    futs = [pool.submit(job, urgent=i % 2 == 0) for i in range(6)]
    for _ in range(600):  # both slots busy, the other jobs queued
        with lock:
            if running[0] == 2:
                break
        release.wait(0.1)
    release.wait(0.3)  # a third job, if it could start, would be running by now
    with lock:
        assert running[0] == 2
    release.set()
    for f in futs:
        f.result(timeout=60)
    pool.shutdown()
    assert peak[0] == 2


def test_shutdown_cancels_what_is_queued_and_waits_for_what_runs():
    pool = SlotPool(1, "t")
    gate = threading.Event()
    started = threading.Event()

    def running():
        started.set()
        gate.wait(60)
        return "done"

    first = pool.submit(running)
    queued = pool.submit(lambda: "never")
    started.wait(60)
    threading.Timer(0.2, gate.set).start()
    pool.shutdown(wait=True, cancel_futures=True)
    assert first.result(timeout=0) == "done" and queued.cancelled()
    with pytest.raises(RuntimeError):
        pool.submit(lambda: None)


def test_an_exception_reaches_the_waiter_and_the_slot_goes_on():
    pool = SlotPool(1, "t")
    bad = pool.submit(lambda: 1 / 0)
    good = pool.submit(lambda: 2)
    with pytest.raises(ZeroDivisionError):
        bad.result(timeout=60)
    assert good.result(timeout=60) == 2
    pool.shutdown()
