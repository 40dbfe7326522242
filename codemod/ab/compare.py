"""The A/B comparison: the category of every test from its outcomes in arm A and arm B.

Pure functions over the result model: no subprocesses, no files.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable

from codemod.ab.model import CATEGORIES, INCONCLUSIVE_CATEGORY, ArmResult, Outcome, TestComparison
from codemod.ab.nodemap import map_nodeid
from codemod.ab.shard import file_of

# ---------------------------------------------------------------------------
# categories

PASS, FAIL, SKIP, XFAIL, XPASS, CRASH, TIMEOUT, NOTRUN = (
    "pass",
    "fail",
    "skip",
    "xfail",
    "xpass",
    "crash",
    "timeout",
    "notrun",
)
OUTCOME_KIND = {
    "passed": PASS,
    "failed": FAIL,
    "error": FAIL,
    "skipped": SKIP,
    "xfailed": XFAIL,
    "xpassed": XPASS,
    "crashed": CRASH,
    "timeout": TIMEOUT,
    "not-run": NOTRUN,
}


def kind(o: Outcome | None) -> str | None:
    return None if o is None else OUTCOME_KIND.get(o.outcome, FAIL)


def _failure_match(a: Outcome, b: Outcome) -> str:
    if a.signature is not None and a.signature == b.signature:
        return "pre-existing"
    if a.loose_signature is not None and a.loose_signature == b.loose_signature:
        return "similar-failure"
    return "different-failure"


def categorize(a: Outcome | None, b: Outcome | None) -> tuple[str, str]:
    """Category of one test and an optional note."""
    cat, note = _categorize(a, b)
    for side, o in (("A", a), ("B", b)):
        if o is not None and o.phase == "collect" and o.outcome == "skipped" and not note:
            note = f"module skipped in {side}: {o.message}" if o.message else f"module skipped in {side}"
    return cat, note


def _categorize(a: Outcome | None, b: Outcome | None) -> tuple[str, str]:
    ka, kb = kind(a), kind(b)
    if a is None and b is None:
        return "same-skip", "absent from both arms"
    if a is None:
        note = "fails in B" if kb in (FAIL, CRASH, TIMEOUT) else ""
        return "added-in-b", note
    if b is None:
        return "missing-in-b", ""
    if kb == CRASH:
        return (
            ("pre-existing", "crashes in both")
            if ka == CRASH and a.signal == b.signal
            else (
                ("different-failure", f"crashes in both ({a.signal} vs {b.signal})") if ka == CRASH else ("crash", "")
            )
        )
    if kb == TIMEOUT:
        return ("pre-existing", "times out in both") if ka == TIMEOUT else ("timeout", "")
    if ka == PASS:
        if kb == PASS:
            return "same-pass", ""
        if kb == FAIL:
            return "new-failure", ""
        if kb == XFAIL:
            return "new-failure", "marked as an expected failure in B"
        if kb == XPASS:
            return "same-pass", "passes in both (marked xfail in B)"
        return "no-longer-run", ""
    if ka == FAIL:
        if kb == PASS:
            return "fixed", ""
        if kb == FAIL:
            return _failure_match(a, b), ""
        if kb == XFAIL:
            return "different-failure", "still fails, now marked as an expected failure in B"
        if kb == XPASS:
            return "fixed", "passes in B (marked xfail)"
        return "no-longer-run", ""
    if ka == SKIP:
        if kb == SKIP:
            return "same-skip", ""
        if kb == NOTRUN:
            return INCONCLUSIVE_CATEGORY, "skipped in A, never run in B (the file was stopped before it)"
        if kb == FAIL:
            return "new-failure", "skipped in A"
        return "newly-run", ""
    if ka == XFAIL:
        if kb == XFAIL:
            return "same-pass", "expected failure in both"
        if kb == XPASS:
            return "xfail-to-xpass", ""
        if kb == PASS:
            return "fixed", "expected failure in A, passes in B"
        if kb == FAIL:
            # the expected-failure marking is gone: the suite now fails
            # (consistent with passed -> xfailed and xpassed -> failed)
            return "new-failure", "expected failure in A (xfail), fails in B"
        return "no-longer-run", ""
    if ka == XPASS:
        if kb == XFAIL:
            return "xpass-to-xfail", ""
        if kb in (XPASS, PASS):
            return "same-pass", ""
        if kb == FAIL:
            return "new-failure", ""
        return "no-longer-run", ""
    if ka in (CRASH, TIMEOUT):
        if kb in (PASS, XPASS, XFAIL):
            return "fixed", f"{a.outcome} in A"
        if kb == FAIL:
            return "different-failure", f"{a.outcome} in A"
        return "no-longer-run", f"{a.outcome} in A"
    # ka == NOTRUN
    if kb == NOTRUN:
        return INCONCLUSIVE_CATEGORY, "run in neither arm (the file was stopped before it)"
    if kb == FAIL:
        return "new-failure", "not run in A"
    if kb == SKIP:
        return "same-skip", "not run in A"
    return "newly-run", "not run in A"


# ---------------------------------------------------------------------------
# collection errors -> per-test outcomes


def effective_outcomes(arm: ArmResult, other: ArmResult) -> dict[str, Outcome]:
    """Outcomes of `arm`, where a file that failed to collect gives each test
    the other arm knows in that file the collection error as its outcome; a
    file-level entry (node id = the collector) is kept when no test of the
    other arm stands for it."""
    out = dict(arm.outcomes)
    for key, err in list(arm.collection_errors.items()) + list(getattr(arm, "collection_skips", {}).items()):
        f = file_of(key)
        covered = False
        for nodeid in other.outcomes:
            if (
                nodeid == key or nodeid.startswith(key + "::") or (key == f and file_of(nodeid) == f)
            ) and nodeid not in out:
                o = copy.deepcopy(err)
                o.nodeid = nodeid
                out[nodeid] = o
                covered = True
        if not covered or key in other.collection_errors or key in getattr(other, "collection_skips", {}):
            out.setdefault(key, err)
    return out


def compare_arms(a: ArmResult, b: ArmResult, mapping: dict[str, str] | None = None) -> list[TestComparison]:
    mapping = mapping or {}
    oa = effective_outcomes(a, b)
    ob = effective_outcomes(b, a)
    # A node id -> B node id
    pairs: dict[str, str] = {}
    mapped_b: dict[str, str] = {}
    if mapping:
        for nodeid in oa:
            new = map_nodeid(nodeid, mapping)
            if new is not None and new != nodeid:
                pairs[nodeid] = new
                mapped_b[new] = nodeid
    rows: list[TestComparison] = []
    seen_b = set()
    for nodeid in sorted(oa):
        if pairs.get(nodeid) == "" and kind(oa[nodeid]) == SKIP:
            # A restructuring map retired it: its guard skipped it in A, B no longer generates it.
            rows.append(
                TestComparison(
                    nodeid=nodeid,
                    category="same-skip",
                    a=oa[nodeid],
                    b=None,
                    note="skipped in A; not generated in B (its class moved, see --map)",
                )
            )
            continue
        bid = pairs.get(nodeid, nodeid) or nodeid
        bo = ob.get(bid)
        seen_b.add(bid)
        cat, note = categorize(oa[nodeid], bo)
        row = TestComparison(nodeid=bid, category=cat, a=oa[nodeid], b=bo, note=note)
        if bid != nodeid:
            row.mapped_from = nodeid
            row.note = f"renamed from {nodeid} via --map" + (f"; {note}" if note else "")
        rows.append(row)
    for nodeid in sorted(ob):
        if nodeid in seen_b:
            continue
        cat, note = categorize(None, ob[nodeid])
        rows.append(TestComparison(nodeid=nodeid, category=cat, a=None, b=ob[nodeid], note=note))
    order = {c: i for i, c in enumerate(CATEGORIES)}
    rows.sort(key=lambda r: (order.get(r.category, 99), r.nodeid))
    return rows


def count(rows: Iterable[TestComparison]) -> dict[str, int]:
    counts = {c: 0 for c in CATEGORIES}
    for r in rows:
        counts[r.category] = counts.get(r.category, 0) + 1
    return {c: n for c, n in counts.items() if n}
