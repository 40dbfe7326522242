"""Confirming discordant tests: each alone, alternating A and B, then in its file.

Every test whose outcome differs between the arms is rerun without the rest of its
file, `k` rounds; each round reruns all of a file's discordant tests in one process
per arm, arm A then arm B.  When alone both arms agree although they differed in
the file, the file is rerun up to the test once per arm, to tell an order-dependent
difference (reproduces) from a flaky test (does not).  The outcomes go to the rows'
``reruns`` / ``suite_reruns``; ``compare`` judges them.
"""

from __future__ import annotations

import threading

from codemod.ab import flaky as _flaky
from codemod.ab import shard as _shard
from codemod.ab.filerun import ArmRunner
from codemod.ab.model import CATEGORIES, ArmResult, TestComparison
from codemod.ab.runfiles import wait_all
from codemod.ab.slots import SlotPool


def confirm_discordant(
    rows: list[TestComparison],
    ra: ArmRunner,
    rb: ArmRunner,
    a: ArmResult,
    b: ArmResult,
    k: int,
    pool: SlotPool,
    stop: threading.Event,
    say,
) -> None:
    """Rerun the discordant tests among `rows`; `rows` is sorted again when any was."""
    todo = [
        r
        for r in rows
        if r.category in _flaky.DISCORDANT
        and r.a is not None
        and r.b is not None
        and r.a.phase != "collect"
        and r.b.phase != "collect"
        and r.a.outcome != "not-run"
        and r.b.outcome != "not-run"
        and r.a.nodeid in a.outcomes
        and r.b.nodeid in b.outcomes
    ]
    if todo:
        groups = _by_file(todo)
        say(f"confirming {len(todo)} discordant test(s) in {len(groups)} file(s), {k} alternating rerun(s) each")
        # urgent: ahead of the diagnostic arms' files still queued
        futs = [pool.submit(_confirm, ra, rb, a, b, rs, k, urgent=True) for rs in groups.values()]
        wait_all(futs, stop)
        # alone, both arms agree although they differed in the file: rerun
        # the file (up to the test) once per arm to tell an order-dependent
        # difference (reproduces) from a flaky test (does not)
        suspects = [r for r in todo if _flaky.rerun_state(r) == "order-suspect"]
        if suspects:
            say(f"rerunning the file around {len(suspects)} test(s) that differ only in the file")
            futs = [
                pool.submit(_confirm_in_file, ra, rb, a, b, fa, fb, rs, urgent=True)
                for (fa, fb), rs in _by_file(suspects).items()
            ]
            wait_all(futs, stop)
        for r in todo:
            _flaky.settle_flaky(r)
        order = {c: i for i, c in enumerate(CATEGORIES)}
        rows.sort(key=lambda r: (order.get(r.category, 99), r.nodeid))


def _by_file(rows: list[TestComparison]) -> dict[tuple[str, str], list[TestComparison]]:
    """Rows grouped by (file in A, file in B); a --map may move a test to another file."""
    out: dict[tuple[str, str], list[TestComparison]] = {}
    for r in rows:
        out.setdefault((_shard.file_of(r.a.nodeid), _shard.file_of(r.b.nodeid)), []).append(r)
    return out


def _rerun_together(runner: ArmRunner, arm: ArmResult, nodeids: list[str]) -> dict[str, str]:
    """Rerun the given tests of one file in one process; node id -> outcome."""
    # node ids are relative to the arm root (the plugin rewrites pytest's
    # rootdir-relative ids), i.e. valid arguments from the cwd of run_file;
    # given in the file's collection order
    order = {n: i for i, n in enumerate(arm.outcomes)}
    ids = sorted(set(nodeids), key=lambda n: order.get(n, len(order)))
    fr = runner.run_file(_shard.file_of(ids[0]), ids, only=set(ids))
    out = {}
    for nodeid in ids:
        o = fr.outcomes.get(nodeid)
        if o is not None:
            out[nodeid] = o.outcome
        elif fr.collection_errors:
            out[nodeid] = "error"
        elif fr.collection_skips:
            out[nodeid] = "skipped"
        else:
            out[nodeid] = "not-run"
    return out


def _file_prefix(arm: ArmResult, file: str, upto: set[str]) -> set[str]:
    """Node ids of `file` in collection order, up to the last of `upto`."""
    ids = [n for n in arm.outcomes if _shard.file_of(n) == file]
    last = max((i for i, n in enumerate(ids) if n in upto), default=-1)
    return set(ids[: last + 1])


def _confirm_in_file(
    ra: ArmRunner, rb: ArmRunner, a: ArmResult, b: ArmResult, fa: str, fb: str, rows: list[TestComparison]
) -> None:
    for runner, arm, f, side in ((ra, a, fa, "a"), (rb, b, fb, "b")):
        targets = {getattr(r, side).nodeid for r in rows}
        only = _file_prefix(arm, f, targets)
        fr = runner.run_file(f, [f], only=only)
        for r in rows:
            o = getattr(r, side)
            got = fr.outcomes.get(o.nodeid)
            o.suite_reruns.append(got.outcome if got is not None else "not-run")


def _confirm(ra: ArmRunner, rb: ArmRunner, a: ArmResult, b: ArmResult, rows: list[TestComparison], k: int) -> None:
    """`k` rounds, alternating A and B; each round reruns all of the file's
    discordant tests in one process per arm."""
    for _ in range(k):
        got_a = _rerun_together(ra, a, [r.a.nodeid for r in rows])
        got_b = _rerun_together(rb, b, [r.b.nodeid for r in rows])
        for r in rows:
            r.a.reruns.append(got_a[r.a.nodeid])
            r.b.reruns.append(got_b[r.b.nodeid])
