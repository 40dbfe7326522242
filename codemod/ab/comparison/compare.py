"""The A/B comparison: the category of every test, `--map`, the counts and the verdict.

A test's category is read from a table, `MATRIX`: its outcome kind in arm A (a row) by
its outcome kind in arm B (a column), ABSENT standing for a test that arm does not have.
Two cells look further than the kinds: two failures compare their signatures, two
crashes their signals.  The same comparison says what a diagnostic arm changed relative
to its base arm (`diagnostic_summary`).

Pure functions over the result model: no subprocesses, no files (but the `--map-file`
read).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Iterable

from codemod.ab.comparison import accounting
from codemod.ab.result.diff import DeviceNarrowing, NarrowedBy, lost_devices
from codemod.ab.result.model import (
    CATEGORIES,
    CATEGORY_RANK,
    DEVICE_SUFFIXES,
    EXIT_CODES,
    REGRESSING,
    ABResult,
    ArmResult,
    BaseArm,
    Category,
    DiagnosticSummary,
    Outcome,
    OutcomeValue,
    Phase,
    TestComparison,
    Verdict,
    device_of,
    file_of,
)
from codemod.util.jsonfile import read_option_json
from transforms.core.strenum import StrEnum
from transforms.core.words import noun, plural


class OutcomeKind(StrEnum):
    """What the comparison sees of an outcome (failed and error are both FAIL)."""

    PASS = "pass"
    FAIL = "fail"
    SKIP = "skip"
    XFAIL = "xfail"
    XPASS = "xpass"
    CRASH = "crash"
    TIMEOUT = "timeout"
    NOTRUN = "notrun"
    DESELECTED = "deselected"  # collected, not run by a session that went to its end
    INCOMPLETE = "incomplete"  # started, never concluded
    ABSENT = "absent"  # the arm has no such test


KIND_OF = {
    OutcomeValue.PASSED: OutcomeKind.PASS,
    OutcomeValue.FAILED: OutcomeKind.FAIL,
    OutcomeValue.ERROR: OutcomeKind.FAIL,
    OutcomeValue.SKIPPED: OutcomeKind.SKIP,
    OutcomeValue.XFAILED: OutcomeKind.XFAIL,
    OutcomeValue.XPASSED: OutcomeKind.XPASS,
    OutcomeValue.CRASHED: OutcomeKind.CRASH,
    OutcomeValue.TIMEOUT: OutcomeKind.TIMEOUT,
    OutcomeValue.NOT_RUN: OutcomeKind.NOTRUN,
    OutcomeValue.DESELECTED: OutcomeKind.DESELECTED,
    OutcomeValue.INCOMPLETE: OutcomeKind.INCOMPLETE,
}
# Kinds that are a failure of the test (a crash and a timeout included).
FAILING_KINDS = frozenset({OutcomeKind.FAIL, OutcomeKind.CRASH, OutcomeKind.TIMEOUT})


def kind(o: Outcome | None) -> OutcomeKind:
    return OutcomeKind.ABSENT if o is None else KIND_OF[o.outcome]


# ---------------------------------------------------------------------------
# the outcome matrix

Cell = tuple[Category, str]  # the category and its note


def _failures(a: Outcome, b: Outcome) -> Cell:
    """Both fail: as identical as their signatures."""
    if a.signature is not None and a.signature == b.signature:
        return Category.PRE_EXISTING, ""
    if a.loose_signature is not None and a.loose_signature == b.loose_signature:
        return Category.SIMILAR_FAILURE, ""
    return Category.DIFFERENT_FAILURE, ""


def _crashes(a: Outcome, b: Outcome) -> Cell:
    """Both crash: by the same signal or not."""
    if a.signal == b.signal:
        return Category.PRE_EXISTING, "crashes in both"
    return Category.DIFFERENT_FAILURE, f"crashes in both ({a.signal} vs {b.signal})"


def _not_run_in_b(b: Outcome | None) -> str:
    """How B does not run a test: skipped (and why), deselected (by what), absent."""
    if b is None:
        return "not collected in B"
    if b.outcome == OutcomeValue.SKIPPED:
        where = "module skipped in B" if b.phase == Phase.COLLECT else "skipped in B"
        return f"{where}: {b.message}" if b.message else where
    return f"not run in B: {b.message}" if b.message else "not run in B"


_A_NOTES = {OutcomeValue.CRASHED: "crashed in A; ", OutcomeValue.TIMEOUT: "timeout in A; "}


def _left_out_note(category: Category, a: Outcome | None, b: Outcome | None) -> str:
    """The note of a test B no longer runs: how B leaves it out (and a crash or timeout in A)."""
    if category == Category.MISSING_IN_B:
        return "" if b is None else _not_run_in_b(b)
    if category == Category.INCOMPLETE and b is not None:
        return (_A_NOTES.get(a.outcome, "") if a else "") + f"incomplete in B: {b.message}"
    return (_A_NOTES.get(a.outcome, "") if a else "") + _not_run_in_b(b)


C = Category
K = OutcomeKind
_NEW_IN_B_NOTES = {
    K.FAIL: "fails in B",
    K.CRASH: "fails in B",
    K.TIMEOUT: "fails in B",
    K.INCOMPLETE: "incomplete in B",
}
# Kinds of a test that ran (to any end), and of one a B does not run.
RAN = (K.PASS, K.FAIL, K.XFAIL, K.XPASS, K.CRASH, K.TIMEOUT)
NOT_RUN = (K.SKIP, K.DESELECTED, K.NOTRUN, K.ABSENT)

# (kind in A, kind in B) -> (category, note), or the function that decides the cells
# that depend on more than the kinds.  tests/test_ab_compare.py checks every cell.
MATRIX: dict[tuple[OutcomeKind, OutcomeKind], Cell | Callable[[Outcome, Outcome], Cell]] = {
    # a crash or a timeout in B that A did not have is its own category, whatever A did
    **{(a, K.CRASH): (C.CRASH, "") for a in K if a not in (K.CRASH, K.ABSENT)},
    **{(a, K.TIMEOUT): (C.TIMEOUT, "") for a in K if a not in (K.TIMEOUT, K.ABSENT)},
    (K.CRASH, K.CRASH): _crashes,
    (K.TIMEOUT, K.TIMEOUT): (C.PRE_EXISTING, "times out in both"),
    # coverage: a test that ran in A and does not run in B, however B leaves it out (the note,
    # added by `categorize`, says how)
    **{(a, b): (C.COVERAGE_LOST, "") for a in RAN for b in NOT_RUN},
    # a test that ran in A and never concluded in B (the note says where it stopped and why)
    **{(a, K.INCOMPLETE): (C.INCOMPLETE, "") for a in RAN},
    # absent from A
    **{(K.ABSENT, b): (C.ADDED_IN_B, _NEW_IN_B_NOTES.get(b, "")) for b in K if b is not K.ABSENT},
    (K.ABSENT, K.ABSENT): (C.SAME_SKIP, "absent from both arms"),
    # passed in A
    (K.PASS, K.PASS): (C.SAME_PASS, ""),
    (K.PASS, K.FAIL): (C.NEW_FAILURE, ""),
    (K.PASS, K.XFAIL): (C.NEW_FAILURE, "marked as an expected failure in B"),
    (K.PASS, K.XPASS): (C.SAME_PASS, "passes in both (marked xfail in B)"),
    # failed in A
    (K.FAIL, K.PASS): (C.FIXED, ""),
    (K.FAIL, K.FAIL): _failures,
    (K.FAIL, K.XFAIL): (C.DIFFERENT_FAILURE, "still fails, now marked as an expected failure in B"),
    (K.FAIL, K.XPASS): (C.FIXED, "passes in B (marked xfail)"),
    # skipped in A
    (K.SKIP, K.SKIP): (C.SAME_SKIP, ""),
    (K.SKIP, K.NOTRUN): (C.INCONCLUSIVE, "skipped in A, never run in B"),
    (K.SKIP, K.INCOMPLETE): (C.INCONCLUSIVE, "skipped in A, incomplete in B"),
    (K.SKIP, K.DESELECTED): (C.MISSING_IN_B, ""),
    (K.SKIP, K.ABSENT): (C.MISSING_IN_B, ""),
    (K.SKIP, K.FAIL): (C.NEW_FAILURE, "skipped in A"),
    (K.SKIP, K.PASS): (C.NEWLY_RUN, ""),
    (K.SKIP, K.XFAIL): (C.NEWLY_RUN, ""),
    (K.SKIP, K.XPASS): (C.NEWLY_RUN, ""),
    # an expected failure in A
    (K.XFAIL, K.XFAIL): (C.SAME_PASS, "expected failure in both"),
    (K.XFAIL, K.XPASS): (C.XFAIL_TO_XPASS, ""),
    (K.XFAIL, K.PASS): (C.FIXED, "expected failure in A, passes in B"),
    # the expected-failure marking is gone: the suite now fails (consistent with
    # passed -> xfailed and xpassed -> failed)
    (K.XFAIL, K.FAIL): (C.NEW_FAILURE, "expected failure in A (xfail), fails in B"),
    # an unexpected pass in A
    (K.XPASS, K.XFAIL): (C.XPASS_TO_XFAIL, ""),
    (K.XPASS, K.XPASS): (C.SAME_PASS, ""),
    (K.XPASS, K.PASS): (C.SAME_PASS, ""),
    (K.XPASS, K.FAIL): (C.NEW_FAILURE, ""),
    # crashed or timed out in A, not in B
    **{(K.CRASH, b): (C.FIXED, "crashed in A") for b in (K.PASS, K.XPASS, K.XFAIL)},
    (K.CRASH, K.FAIL): (C.DIFFERENT_FAILURE, "crashed in A"),
    **{(K.TIMEOUT, b): (C.FIXED, "timeout in A") for b in (K.PASS, K.XPASS, K.XFAIL)},
    (K.TIMEOUT, K.FAIL): (C.DIFFERENT_FAILURE, "timeout in A"),
    # not run in A (its file was stopped before it)
    (K.NOTRUN, K.NOTRUN): (C.INCONCLUSIVE, "run in neither arm"),
    (K.NOTRUN, K.INCOMPLETE): (C.INCONCLUSIVE, "not run in A, incomplete in B"),
    (K.NOTRUN, K.FAIL): (C.NEW_FAILURE, "not run in A"),
    (K.NOTRUN, K.SKIP): (C.SAME_SKIP, "not run in A"),
    (K.NOTRUN, K.DESELECTED): (C.MISSING_IN_B, ""),
    (K.NOTRUN, K.ABSENT): (C.MISSING_IN_B, ""),
    **{(K.NOTRUN, b): (C.NEWLY_RUN, "not run in A") for b in (K.PASS, K.XFAIL, K.XPASS)},
    # deselected in A: not part of A's run
    (K.DESELECTED, K.DESELECTED): (C.SAME_SKIP, "deselected in both arms"),
    (K.DESELECTED, K.SKIP): (C.SAME_SKIP, "deselected in A"),
    (K.DESELECTED, K.ABSENT): (C.SAME_SKIP, "deselected in A, absent from B"),
    (K.DESELECTED, K.NOTRUN): (C.INCONCLUSIVE, "deselected in A, never run in B"),
    (K.DESELECTED, K.INCOMPLETE): (C.INCONCLUSIVE, "deselected in A, incomplete in B"),
    (K.DESELECTED, K.FAIL): (C.NEW_FAILURE, "deselected in A"),
    **{(K.DESELECTED, b): (C.NEWLY_RUN, "deselected in A") for b in (K.PASS, K.XFAIL, K.XPASS)},
    # incomplete in A: A has no outcome of it (as a test its file was stopped before)
    (K.INCOMPLETE, K.INCOMPLETE): (C.INCONCLUSIVE, "incomplete in both arms"),
    (K.INCOMPLETE, K.NOTRUN): (C.INCONCLUSIVE, "incomplete in A, never run in B"),
    (K.INCOMPLETE, K.SKIP): (C.INCONCLUSIVE, "incomplete in A, skipped in B"),
    (K.INCOMPLETE, K.FAIL): (C.NEW_FAILURE, "incomplete in A"),
    (K.INCOMPLETE, K.DESELECTED): (C.MISSING_IN_B, ""),
    (K.INCOMPLETE, K.ABSENT): (C.MISSING_IN_B, ""),
    **{(K.INCOMPLETE, b): (C.NEWLY_RUN, "incomplete in A") for b in (K.PASS, K.XFAIL, K.XPASS)},
}
del C, K


def categorize(a: Outcome | None, b: Outcome | None) -> Cell:
    """Category of one test and an optional note."""
    cell = MATRIX[kind(a), kind(b)]
    if callable(cell):
        assert a is not None and b is not None  # the decided cells are failures in both arms
        cell = cell(a, b)
    cat, note = cell
    if cat in (Category.COVERAGE_LOST, Category.MISSING_IN_B, Category.INCOMPLETE):
        note = _left_out_note(cat, a, b)
    if cat == Category.INCONCLUSIVE and b is not None and b.outcome == OutcomeValue.NOT_RUN and b.message:
        note = f"{note}: {b.message}"  # why B never ran it: its file was stopped, its session ended...
    for side, o in (("A", a), ("B", b)):
        if o is not None and o.phase == Phase.COLLECT and o.outcome == OutcomeValue.SKIPPED and not note:
            note = f"module skipped in {side}: {o.message}" if o.message else f"module skipped in {side}"
    return cat, note


# ---------------------------------------------------------------------------
# collection errors -> per-test outcomes


def effective_outcomes(arm: ArmResult, other: ArmResult) -> dict[str, Outcome]:
    """Outcomes of `arm`, where a file that failed to collect gives each test
    the other arm knows in that file the collection error as its outcome; a
    file-level entry (node id = the collector) is kept when no test of the
    other arm stands for it."""
    out = dict(arm.outcomes)
    for key, err in list(arm.collection_errors.items()) + list(arm.collection_skips.items()):
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
        if not covered or key in other.collection_errors or key in other.collection_skips:
            out.setdefault(key, err)
    return out


def sort_rows(rows: list[TestComparison]) -> None:
    """Report order: by category, then node id."""
    rows.sort(key=lambda r: (CATEGORY_RANK[r.category], r.nodeid))


def compare_arms(
    a: ArmResult, b: ArmResult, mapping: dict[str, str] | None = None, paths: Iterable[str] = ()
) -> list[TestComparison]:
    """Every test's row; `paths`: the run's selection (a test of a file it names only by node
    ids is never said to be the file's last: B did not run the rest of it).  A test of B stands
    for one test of A: one that --map folds onto a test another test of A already has (the
    same node id first) is lost coverage."""
    partial = {file_of(p) for p in paths if "::" in p} - {p for p in paths if "::" not in p}
    oa = effective_outcomes(a, b)
    ob = effective_outcomes(b, a)
    pairs = _mapped_pairs(oa, mapping or {})  # A node id -> B node id
    owner = _owners(oa, pairs)  # B node id -> the one A node id it stands for
    rows: list[TestComparison] = []
    seen_b = set()
    for nodeid in sorted(oa):
        if pairs.get(nodeid) == "" and kind(oa[nodeid]) in (OutcomeKind.SKIP, OutcomeKind.DESELECTED):
            # A restructuring map retired it: its guard skipped it in A, B no longer generates it.
            note = "skipped in A; not generated in B (its class moved, see --map)"
            rows.append(TestComparison(nodeid=nodeid, category=Category.SAME_SKIP, a=oa[nodeid], b=None, note=note))
            continue
        bid = pairs.get(nodeid, nodeid) or nodeid
        if owner[bid] != nodeid:  # folded onto a B test that stands for another test of A
            cat, _ = categorize(oa[nodeid], None)
            note = f"--map folds it onto {bid}, which stands for {owner[bid]} of A: not run in B"
            rows.append(TestComparison(nodeid=nodeid, category=cat, a=oa[nodeid], b=None, note=note))
            continue
        bo = ob.get(bid)
        seen_b.add(bid)
        cat, note = categorize(oa[nodeid], bo)
        if bo is None and pairs.get(nodeid) == "" and cat == Category.COVERAGE_LOST:
            note = "not generated in B (--map retires it), although it ran in A"
        elif bo is None and file_of(bid) not in partial and not any(file_of(n) == file_of(bid) for n in ob):
            note = f"{note}: B collects no test of {file_of(bid)}"
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
    sort_rows(rows)
    return rows


def _owners(oa: dict[str, Outcome], pairs: dict[str, str]) -> dict[str, str]:
    """B node id -> the A node id whose row it is: the same node id, else the first A node id
    --map sends there."""
    owner: dict[str, str] = {}
    for nodeid in sorted(oa, key=lambda n: n in pairs):  # the unmapped first
        owner.setdefault(pairs.get(nodeid, nodeid) or nodeid, nodeid)
    return owner


def count(rows: Iterable[TestComparison]) -> dict[Category, int]:
    counts = {c: 0 for c in CATEGORIES}
    for r in rows:
        counts[r.category] += 1
    return {c: n for c, n in counts.items() if n}


# ---------------------------------------------------------------------------
# --map OLD=NEW and --map-file: the B-side node id of a renamed or moved A-side test


def _mapped_pairs(outcomes: Iterable[str], mapping: dict[str, str]) -> dict[str, str]:
    """A node id -> its B node id, for the A node ids `mapping` renames."""
    pairs: dict[str, str] = {}
    for nodeid in outcomes if mapping else ():
        new = map_nodeid(nodeid, mapping)
        if new is not None and new != nodeid:
            pairs[nodeid] = new
    return pairs


def parse_mapping(items: Iterable[str]) -> dict[str, str]:
    out = {}
    for item in items:
        if "=" not in item:
            raise ValueError(f"--map expects OLD=NEW, got {item!r}")
        old, new = item.split("=", 1)
        old, new = old.strip(), new.strip()
        if not old or not new:
            raise ValueError(f"--map expects OLD=NEW, got {item!r}")
        out[old] = new
    return out


def read_map_file(path: str) -> dict[str, str]:
    """The `map` entries of a test-map JSON (`decouple apply --restructure ... --map-out`)."""
    data = read_option_json(path, "--map-file")
    if not isinstance(data, dict) or data.get("schema_version") != 1 or not isinstance(data.get("map"), list):
        raise ValueError(f"--map-file {path} is not a test map (schema_version 1 with a `map` list)")
    out = {}
    for entry in data["map"]:
        if not (isinstance(entry, dict) and isinstance(entry.get("old"), str) and isinstance(entry.get("new"), str)):
            raise ValueError(f"--map-file {path}: every `map` entry needs string `old` and `new`")
        if entry["old"].startswith("re:"):
            try:
                re.compile(entry["old"][3:])
            except re.error as e:
                raise ValueError(f"--map-file {path}: bad regex {entry['old']!r}: {e}") from None
        out[entry["old"]] = entry["new"]
    return out


def map_nodeid(nodeid: str, mapping: dict[str, str]) -> str | None:
    """The B-side node id of an A-side node id under --map, or None. An OLD of the form
    `re:REGEX` must match the whole node id and NEW is its expansion template (generated
    names such as TestFooCPU::test_x_float32_cpu); an empty expansion means "not generated
    in B" (see compare_arms)."""
    for old, new in mapping.items():
        if old.startswith("re:"):
            match = re.fullmatch(old[3:], nodeid)
            if match:
                return match.expand(new)
            continue
        if "::" in old or old.endswith(".py"):
            if nodeid == old:
                return new
            for sep in ("::", "["):
                if nodeid.startswith(old + sep):
                    return new + nodeid[len(old) :]
            continue
        parts = nodeid.split("::")
        changed = False
        for i, part in enumerate(parts[1:], start=1):
            name, bracket, rest = part.partition("[")
            if name == old:
                parts[i] = new + bracket + rest
                changed = True
            elif name.startswith(old) and name[len(old) :].upper() in DEVICE_SUFFIXES:
                parts[i] = new + name[len(old) :] + bracket + rest
                changed = True
        if changed:
            return "::".join(parts)
    return None


# ---------------------------------------------------------------------------
# the verdict


def verdict(result: ABResult) -> tuple[Verdict, str]:
    """SAFE, REGRESSION or INCONCLUSIVE, and the reason; the reason also names what the run
    could not show (the devices a widened device set adds that this machine lacks), what the
    census found (tests whose labels do not reach them at run time) and where pytest's own
    account of an arm's session disagrees with the events (never SAFE then).  A device set B
    narrows, which no --map entry explains, is lost coverage where those devices are."""
    a, b = result.arm("A"), result.arm("B")
    if a is None or not a.ran:
        return Verdict.INCONCLUSIVE, "arm A could not run" + (f": {a.error}" if a is not None and a.error else "")
    if b is None or not b.ran:
        return Verdict.INCONCLUSIVE, "arm B could not run" + (f": {b.error}" if b is not None and b.error else "")
    if not a.outcomes and not b.outcomes and not a.collection_errors and not b.collection_errors:
        return Verdict.INCONCLUSIVE, "no test was collected in either arm"
    if not a.outcomes and not b.outcomes:
        return Verdict.INCONCLUSIVE, "no test was collected in either arm (collection errors only)"
    extra = _not_shown(result)
    disagree = accounting.summary([(arm.name, arm.accounting) for arm in (a, b) if arm.accounting])
    bad = {c: n for c, n in result.counts.items() if c in REGRESSING and n}
    lost = lost_devices(result.changes)
    if bad or lost:
        ranked = sorted(bad.items(), key=lambda kv: CATEGORY_RANK[kv[0]])
        said = [f"{n} {c}" for c, n in ranked] + ([narrowed_text(lost)] if lost else [])
        return Verdict.REGRESSION, ", ".join(said) + "".join("; " + d for d in disagree) + extra
    extra += _flaky_text(result)
    unproven = "; ".join(disagree)
    for category, text in ((Category.NOT_RUN_HERE, _elsewhere_text), (Category.INCONCLUSIVE, _unknown_text)):
        rows = [t for t in result.tests if t.category == category]
        if rows or result.counts.get(category):
            why = text(rows, len(rows) or result.counts.get(category, 0))
            return Verdict.INCONCLUSIVE, "; ".join(x for x in (unproven, why) if x) + extra
    if unproven:
        return Verdict.INCONCLUSIVE, unproven + extra
    failing = (Category.PRE_EXISTING, Category.SIMILAR_FAILURE, Category.DIFFERENT_FAILURE)
    fails = sum(result.counts.get(c, 0) for c in failing)
    return Verdict.SAFE, "no test regressed" + (f" ({fails} failing in both arms)" if fails else "") + extra


def _listed(rows: list[TestComparison]) -> str:
    return ", ".join(t.nodeid for t in rows[:3]) + (", ..." if len(rows) > 3 else "")


def _not_shown(result: ABResult) -> str:
    out = ""
    if result.not_exercised:
        out += f"; not exercised on this machine: {', '.join(result.not_exercised)} (the device set widened in B)"
    for f in result.runtime:
        out += (
            f"; unclassified at run time: {plural(f.tests, 'test')} of {f.file} "
            f"({', '.join(f.classes)}) {noun(f.tests, 'carries', 'carry')} no hw_classification when they run"
        )
    return out


def _flaky_text(result: ABResult) -> str:
    flaky = [t for t in result.tests if t.category == Category.FLAKY]
    n = len(flaky) or result.counts.get(Category.FLAKY, 0)
    if not n:
        return ""
    return f"; {n} flaky (inconsistent on reruns, not counted as a regression): " + _listed(flaky)


def _elsewhere_text(rows: list[TestComparison], n: int) -> str:
    devices = sorted({d for t in rows if (d := device_of(t.nodeid))})
    return (
        f"{plural(n, 'test')} that ran in A moved to a device this machine lacks "
        f"(not-run-here{': ' + ', '.join(devices) if devices else ''}): " + _listed(rows)
    )


def _unknown_text(rows: list[TestComparison], n: int) -> str:
    return (
        f"{plural(n, 'test')} ran to an outcome in neither arm (the file was stopped before "
        f"{noun(n, 'it', 'them')}: -x/--maxfail, a crash or --file-timeout; or a session ended during "
        f"{noun(n, 'it', 'them')}): " + _listed(rows)
    )


def narrowed_text(lost: list[tuple[str, DeviceNarrowing]]) -> str:
    """The device sets B narrows: coverage lost where those devices are."""
    parts = []
    for file, n in lost[:3]:
        what = f"{n.cls}.{n.test}" if n.test else n.cls
        verb = {NarrowedBy.INSTANTIATION: "instantiated", NarrowedBy.DECORATOR: "run"}.get(n.by, "labelled")
        parts.append(f"{what} ({file}) no longer {verb} for: {', '.join(n.devices)}")
    more = f", and {len(lost) - 3} more" if len(lost) > 3 else ""
    return "coverage-lost on other machines: " + "; ".join(parts) + more


def exit_code(v: Verdict) -> int:
    """The command's exit code for a verdict."""
    return EXIT_CODES[v]


# ---------------------------------------------------------------------------
# a diagnostic arm against its base arm


def diagnostic_summary(
    name: str, based_on: BaseArm, variables: dict[str, str], base: ArmResult, diag: ArmResult
) -> DiagnosticSummary:
    """What a diagnostic arm (`--diag`, `--diagnose`) changed relative to its base arm, in one statement."""
    ob = effective_outcomes(base, diag)
    od = effective_outcomes(diag, base)
    changed: dict[str, list[OutcomeValue]] = {}
    for nodeid in sorted(set(ob) | set(od)):
        x = ob.get(nodeid)
        y = od.get(nodeid)
        xo = x.outcome if x else OutcomeValue.NOT_RUN
        yo = y.outcome if y else OutcomeValue.NOT_RUN
        differs = (kind(x) != kind(y)) if (x is not None and y is not None) else (xo != yo)
        if differs:
            changed[nodeid] = [xo, yo]
    fail_to_pass = sum(
        1 for v in changed.values() if KIND_OF[v[0]] in FAILING_KINDS and KIND_OF[v[1]] == OutcomeKind.PASS
    )
    pass_to_fail = sum(
        1 for v in changed.values() if KIND_OF[v[0]] == OutcomeKind.PASS and KIND_OF[v[1]] in FAILING_KINDS
    )
    other = len(changed) - fail_to_pass - pass_to_fail
    vtext = " ".join(f"{k}={v}" for k, v in variables.items()) or "no extra variables"
    parts = []
    if fail_to_pass:
        parts.append(
            f"{fail_to_pass} test{'s' if fail_to_pass != 1 else ''} failing in {based_on} "
            f"pass{'es' if fail_to_pass == 1 else ''} with {vtext}"
        )
    if pass_to_fail:
        parts.append(
            f"{pass_to_fail} test{'s' if pass_to_fail != 1 else ''} passing in {based_on} "
            f"fail{'s' if pass_to_fail == 1 else ''} with {vtext}"
        )
    if other:
        parts.append(f"{other} other test{'s' if other != 1 else ''} change outcome")
    if not diag.ran:
        statement = f"diagnostic arm {name} could not run: {diag.error}"
    elif parts:
        statement = "; ".join(parts) + "."
    else:
        statement = f"No test changes outcome with {vtext} (relative to {based_on})."
    return DiagnosticSummary(
        name=name,
        based_on=based_on,
        variables=dict(variables),
        changed=changed,
        statement=statement,
    )
