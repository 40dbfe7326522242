"""Unit tests of the A/B comparison: signatures, categories, --map, merge, verdict."""

from __future__ import annotations

import copy
import itertools
import json
import os
import threading
from pathlib import Path

import pytest

from codemod.ab.comparison import compare as C
from codemod.ab.comparison.compare import diagnostic_summary, exit_code, map_nodeid, parse_mapping, verdict
from codemod.ab.arms.replay import Replays
from codemod.ab.arms.sources import ArmSpec
from codemod.ab.execution.confirm import PackPrefix, Replayer, confirm_discordant, packs_upto, rerun_state, settle_flaky
from codemod.ab.execution.events import FileRun
from codemod.ab.execution.processes import SlotPool
from codemod.ab.result.model import ABResult, ArmResult, Outcome, OutcomeValue, RunIdentity
from codemod.ab.result.model import TestComparison as Comparison
from codemod.ab.result.notices import Notice
from codemod.ab.arms.options import UsageError, parse_diag, parse_shard
from codemod.ab.comparison.merge import MergeError, identify, merge, tree_digest
from codemod.ab.comparison.signature import NORMALISER_VERSION, SIGNATURE_CAP, signatures

ROOT_A = "/tmp/decouple-ab-x1/arms/A/root"
ROOT_B = "/tmp/decouple-ab-x1/arms/B/root"


def fail(nodeid="t.py::test_x", exc="AssertionError", msg="boom", phase="call", outcome="failed", chain=()):
    return Outcome(nodeid=nodeid, outcome=outcome, phase=phase, exc_type=exc, exc_chain=list(chain), message=msg)


def sig(o, roots=(ROOT_A, ROOT_B)):
    return signatures(o, roots)


# -- normaliser ---------------------------------------------------------------


def test_roots_become_placeholder_and_line_numbers_vanish():
    a = fail(msg=f'File "{ROOT_A}/tests/test_x.py", line 12, in test_x\n{ROOT_A}/tests/test_x.py:12: boom')
    b = fail(msg=f'File "{ROOT_B}/tests/test_x.py", line 19, in test_x\n{ROOT_B}/tests/test_x.py:19: boom')
    assert sig(a) == sig(b)
    assert "<root>/tests/test_x.py" in sig(a)[0]
    assert "line N" in sig(a)[0] and ":12" not in sig(a)[0]


def test_site_packages_temp_hex_pid_ansi_and_durations_masked():
    m1 = ("\x1b[1mError\x1b[0m in /work/venv/lib/python3.11/site-packages/torch/nn/x.py at 0x7f3a2b1c "
          "pid 4242 after 1.25s, /tmp/pytest-of-root/pytest-3/test_a0/f.pt, localhost:39211")
    m2 = ("Error in /opt/other/lib/python3.11/site-packages/torch/nn/x.py at 0x55aa00ff "
          "pid 77 after 0.5s, /tmp/pytest-of-root/pytest-9/test_a0/f.pt, localhost:1234")
    assert sig(fail(msg=m1)) == sig(fail(msg=m2))
    s = sig(fail(msg=m1))[0]
    assert "<site>/torch/nn/x.py" in s and "0x?" in s and "<pid>" in s and "<tmp>" in s and "\x1b" not in s


def test_oom_figures_and_repro_hint_removed():
    m1 = ("CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has 7.79 GiB\n\n"
          "To execute this test, run the following from the base repo dir:\n    python test/test_x.py TestX.test_a\n\n"
          "This message can be suppressed by setting PYTORCH_PRINT_REPRO_ON_FAILURE=0")
    m2 = "CUDA out of memory. Tried to allocate 512.00 MiB. GPU 0 has 7.79 GiB"
    assert sig(fail(msg=m1, exc="torch.OutOfMemoryError")) == sig(fail(msg=m2, exc="torch.OutOfMemoryError"))
    assert "To execute" not in sig(fail(msg=m1))[0]


def test_global_names_dtypes_and_shapes_kept():
    tmpl = ("Weights only load failed. This file can still be loaded.\n\t(1) In PyTorch 2.6, ...\n\t(2) Alternatively...\n"
            "\tWeightsUnpickler error: Unsupported global: GLOBAL {} was not an allowed global by default.")
    a = sig(fail(exc="_pickle.UnpicklingError", msg=tmpl.format("test_load.Net")))
    b = sig(fail(exc="_pickle.UnpicklingError", msg=tmpl.format("test_load.OtherNet")))
    assert "GLOBAL test_load.Net" in a[0]
    assert a[0] != b[0]
    d1 = sig(fail(msg="expected torch.float32 but got torch.int64 for shape [2, 3]"))[0]
    d2 = sig(fail(msg="expected torch.float32 but got torch.int64 for shape [2, 4]"))[0]
    assert "torch.float32" in d1 and "[2, 3]" in d1 and d1 != d2


def test_exception_type_and_chain_and_phase_in_signature():
    base = sig(fail(exc="RuntimeError", msg="x"))[0]
    assert base.startswith("call failed RuntimeError")
    assert sig(fail(exc="ValueError", msg="x"))[0] != base
    assert sig(fail(exc="RuntimeError", msg="x", chain=["KeyError"]))[0] != base
    assert sig(fail(exc="RuntimeError", msg="x", phase="setup", outcome="error"))[0] != base


def test_loose_signature_masks_numbers_and_quotes_only():
    a, b = fail(msg="expected 3 got 4 for 'alpha'"), fail(msg="expected 5 got 6 for 'beta'")
    assert sig(a)[0] != sig(b)[0]
    assert sig(a)[1] == sig(b)[1]
    assert C.categorize(a_with(a), a_with(b))[0] == "similar-failure"


def a_with(o):
    o.signature, o.loose_signature = sig(o)
    return o


def test_signature_capped_and_versioned():
    s = sig(fail(msg="x" * 5000))[0]
    assert len(s) <= SIGNATURE_CAP
    assert NORMALISER_VERSION


def test_passed_has_no_signature_and_crash_uses_signal():
    assert sig(Outcome(nodeid="t", outcome="passed")) == (None, None)
    crash = Outcome(nodeid="t", outcome="crashed", signal="SIGSEGV")
    assert sig(crash)[0] == "call crashed SIGSEGV"


# -- categories ---------------------------------------------------------------


def O(outcome, **kw):  # noqa: N802
    o = Outcome(nodeid="t.py::x", outcome=outcome, **kw)
    if outcome in ("failed", "error", "xfailed"):
        o.exc_type = o.exc_type or "AssertionError"
        o.message = o.message or "m"
    return a_with(o)


@pytest.mark.parametrize("a,b,expected", [
    ("passed", "passed", "same-pass"),
    ("passed", "failed", "new-failure"),
    ("passed", "error", "new-failure"),
    ("skipped", "failed", "new-failure"),
    ("failed", "passed", "fixed"),
    ("passed", "skipped", "coverage-lost"),
    ("failed", "skipped", "coverage-lost"),
    ("failed", "not-run", "coverage-lost"),
    ("passed", "deselected", "coverage-lost"),
    ("skipped", "deselected", "missing-in-b"),
    ("skipped", "passed", "newly-run"),
    ("skipped", "skipped", "same-skip"),
    ("xfailed", "xpassed", "xfail-to-xpass"),
    ("xpassed", "xfailed", "xpass-to-xfail"),
    ("passed", "crashed", "crash"),
    ("failed", "timeout", "timeout"),
    ("timeout", "timeout", "pre-existing"),
    ("crashed", "passed", "fixed"),
])
def test_categories(a, b, expected):
    assert C.categorize(O(a), O(b))[0] == expected


# The whole outcome matrix, written out again: kind in A (rows) x kind in B (columns) ->
# category. "=" is a failure in both arms (decided by the signatures), "~" a crash in both
# (decided by the signals); "absent" is a test the arm does not have.
_KINDS = ("pass", "fail", "skip", "xfail", "xpass", "crash", "timeout", "notrun", "deselected", "incomplete", "absent")
LOST = "coverage-lost"
INC = "incomplete"
INCON = "inconclusive"
_EXPECTED = {
    "pass":    ("same-pass", "new-failure", LOST, "new-failure", "same-pass", "crash", "timeout", LOST, LOST, INC, LOST),
    "fail":    ("fixed", "=", LOST, "different-failure", "fixed", "crash", "timeout", LOST, LOST, INC, LOST),
    "skip":    ("newly-run", "new-failure", "same-skip", "newly-run", "newly-run", "crash", "timeout",
                INCON, "missing-in-b", INCON, "missing-in-b"),
    "xfail":   ("fixed", "new-failure", LOST, "same-pass", "xfail-to-xpass", "crash", "timeout", LOST, LOST, INC,
                LOST),
    "xpass":   ("same-pass", "new-failure", LOST, "xpass-to-xfail", "same-pass", "crash", "timeout", LOST, LOST, INC,
                LOST),
    "crash":   ("fixed", "different-failure", LOST, "fixed", "fixed", "~", "timeout", LOST, LOST, INC, LOST),
    "timeout": ("fixed", "different-failure", LOST, "fixed", "fixed", "crash", "pre-existing", LOST, LOST, INC, LOST),
    "notrun":  ("newly-run", "new-failure", "same-skip", "newly-run", "newly-run", "crash", "timeout",
                INCON, "missing-in-b", INCON, "missing-in-b"),
    "deselected": ("newly-run", "new-failure", "same-skip", "newly-run", "newly-run", "crash", "timeout",
                   INCON, "same-skip", INCON, "same-skip"),
    # incomplete in A (started, never concluded): no outcome in A, as a test its file never ran
    "incomplete": ("newly-run", "new-failure", INCON, "newly-run", "newly-run", "crash", "timeout",
                   INCON, "missing-in-b", INCON, "missing-in-b"),
    "absent":  ("added-in-b",) * 10 + ("same-skip",),
}
_OUTCOMES_OF = {"pass": ["passed"], "fail": ["failed", "error"], "skip": ["skipped"], "xfail": ["xfailed"],
                "xpass": ["xpassed"], "crash": ["crashed"], "timeout": ["timeout"], "notrun": ["not-run"],
                "deselected": ["deselected"], "incomplete": ["incomplete"], "absent": [None]}


def test_the_outcome_matrix_has_every_cell():
    assert set(_OUTCOMES_OF) == set(_KINDS) == {str(k) for k in C.OutcomeKind}
    assert sorted(x for xs in _OUTCOMES_OF.values() for x in xs if x) == sorted(OutcomeValue)
    assert set(C.MATRIX) == set(itertools.product(C.OutcomeKind, C.OutcomeKind))
    assert len(C.MATRIX) == 121


@pytest.mark.parametrize("ka,kb", list(itertools.product(_KINDS, _KINDS)))
def test_every_cell_of_the_outcome_matrix(ka, kb):
    expected = _EXPECTED[ka][_KINDS.index(kb)]
    for a, b in itertools.product(_OUTCOMES_OF[ka], _OUTCOMES_OF[kb]):
        def make(outcome, signature, loose, signal):
            return None if outcome is None else Outcome(nodeid="t.py::x", outcome=outcome, signature=signature,
                                                        loose_signature=loose, signal=signal)
        if expected == "=":
            same = C.categorize(make(a, "s", "l", None), make(b, "s", "l", None))[0]
            similar = C.categorize(make(a, "s1", "l", None), make(b, "s2", "l", None))[0]
            different = C.categorize(make(a, "s1", "l1", None), make(b, "s2", "l2", None))[0]
            assert (same, similar, different) == ("pre-existing", "similar-failure", "different-failure")
        elif expected == "~":
            assert C.categorize(make(a, None, None, "SIGSEGV"), make(b, None, None, "SIGSEGV")) == (
                "pre-existing", "crashes in both")
            assert C.categorize(make(a, None, None, "SIGSEGV"), make(b, None, None, "SIGABRT")) == (
                "different-failure", "crashes in both (SIGSEGV vs SIGABRT)")
        else:
            assert C.categorize(make(a, "s", "l", "SIGSEGV"), make(b, "s", "l", "SIGSEGV"))[0] == expected


def test_same_and_different_failures():
    assert C.categorize(O("failed", message="a"), O("failed", message="a"))[0] == "pre-existing"
    assert C.categorize(O("failed", message="a"), O("failed", exc_type="KeyError", message="a"))[0] == "different-failure"
    assert C.categorize(O("passed"), None) == ("coverage-lost", "not collected in B")
    assert C.categorize(O("skipped"), None)[0] == "missing-in-b"
    assert C.categorize(None, O("passed"))[0] == "added-in-b"


def test_never_fixed_by_skipping():
    for b in ("skipped", "not-run", "deselected"):
        assert C.categorize(O("failed"), O(b))[0] != "fixed"


def test_coverage_lost_says_how_b_leaves_the_test_out():
    assert C.categorize(O("passed"), O("skipped", message="no GPU")) == ("coverage-lost", "skipped in B: no GPU")
    assert C.categorize(O("passed"), O("skipped", phase="collect", message="SkipTest: x")) == (
        "coverage-lost", "module skipped in B: SkipTest: x")
    assert C.categorize(O("crashed"), O("deselected", message="-k not x")) == (
        "coverage-lost", "crashed in A; not run in B: -k not x")
    assert C.categorize(O("skipped"), O("deselected", message="-k not x")) == ("missing-in-b", "not run in B: -k not x")


def test_a_map_to_a_device_this_machine_lacks_is_not_run_here():
    from codemod.ab.comparison.coverage import mark_not_run_here
    from codemod.ab.result.model import Environment
    a = _arm("A", {"t.py::TestFoo::test_x": O("passed"), "t.py::TestFoo::test_y": O("passed")})
    b = _arm("B", {})
    mapping = {"t.py::TestFoo::test_x": "t.py::TestFooCUDA::test_x_cuda", "t.py::TestFoo::test_y": "t.py::TestFooCPU::test_y_cpu"}
    rows = C.compare_arms(a, b, mapping)
    mark_not_run_here(rows, Environment())
    got = {r.nodeid: (r.category, r.note) for r in rows}
    assert got["t.py::TestFooCUDA::test_x_cuda"][0] == "not-run-here"
    assert "to cuda, which this machine lacks" in got["t.py::TestFooCUDA::test_x_cuda"][1]
    assert got["t.py::TestFooCPU::test_y_cpu"][0] == "coverage-lost"   # this machine has a CPU: a loss
    rows = C.compare_arms(a, b, mapping)
    mark_not_run_here(rows, Environment(cuda="12.4"))
    assert {r.category for r in rows} == {"coverage-lost"}   # a CUDA machine would have run it
    del a.outcomes["t.py::TestFoo::test_y"]
    result = ABResult(arms=[a, b])
    result.tests = C.compare_arms(a, b, mapping)
    mark_not_run_here(result.tests, Environment())
    result.counts = C.count(result.tests)
    v, reason = verdict(result)
    assert v == "INCONCLUSIVE" and "moved to a device this machine lacks (not-run-here: cuda)" in reason, reason
    assert C.device_of("t.py::TestFooCUDA::test_x_float32_cuda") == "cuda"
    assert C.device_of("t.py::TestFoo::test_x") is None and C.device_of("t.py::TestCUDA::test_x") is None


def _arm(name, outcomes, errors=None):
    arm = ArmResult(name=name, label=name, root="/r", source="x")
    for nodeid, o in outcomes.items():
        o.nodeid = nodeid
        arm.outcomes[nodeid] = a_with(o)
    for key, o in (errors or {}).items():
        o.nodeid = key
        arm.collection_errors[key] = a_with(o)
    return arm


def test_collection_error_in_b_fails_each_test_of_that_file():
    a = _arm("A", {"t.py::a": O("passed"), "t.py::b": O("passed"), "u.py::c": O("passed")})
    b = _arm("B", {"u.py::c": O("passed")},
             {"t.py": Outcome(nodeid="t.py", outcome="error", phase="collect", exc_type="ModuleNotFoundError", message="No module named 'x'")})
    rows = {r.nodeid: r for r in C.compare_arms(a, b)}
    assert rows["t.py::a"].category == rows["t.py::b"].category == "new-failure"
    assert rows["t.py::a"].b.phase == "collect"
    assert rows["u.py::c"].category == "same-pass"


def test_collection_error_in_both_is_one_preexisting_row():
    err = lambda: Outcome(nodeid="t.py", outcome="error", phase="collect", exc_type="ImportError", message="m")  # noqa: E731
    rows = C.compare_arms(_arm("A", {}, {"t.py": err()}), _arm("B", {}, {"t.py": err()}))
    assert [(r.nodeid, r.category) for r in rows] == [("t.py", "pre-existing")]


# -- --map ----------------------------------------------------------------------


def test_map_nodeid_forms():
    assert map_nodeid("t.py::TestOld::test_a", {"TestOld": "TestNew"}) == "t.py::TestNew::test_a"
    assert map_nodeid("t.py::TestOldCPU::test_a_cpu", {"TestOld": "TestNew"}) == "t.py::TestNewCPU::test_a_cpu"
    assert map_nodeid("t.py::TestOlder::test_a", {"TestOld": "TestNew"}) is None
    assert map_nodeid("t.py::TestOld::test_a[1]", {"t.py::TestOld": "u.py::TestNew"}) == "u.py::TestNew::test_a[1]"
    assert map_nodeid("t.py::test_f[x]", {"test_f": "test_g"}) == "t.py::test_g[x]"
    with pytest.raises(ValueError):
        parse_mapping(["nonsense"])


def test_compare_with_mapping():
    a = _arm("A", {"t.py::TestOld::test_a": O("failed", message="m")})
    b = _arm("B", {"t.py::TestNew::test_a": O("failed", message="m")})
    rows = C.compare_arms(a, b, {"TestOld": "TestNew"})
    assert len(rows) == 1
    assert rows[0].category == "pre-existing" and rows[0].mapped_from == "t.py::TestOld::test_a"
    unmapped = sorted(r.category for r in C.compare_arms(a, b))
    assert unmapped == ["added-in-b", "pre-existing"] or unmapped == ["added-in-b", "coverage-lost"]


# -- flaky, verdict, diagnostics, merge ------------------------------------------


def test_settle_flaky():
    row = Comparison(nodeid="x", category="new-failure", a=O("passed"), b=O("failed"))
    row.a.reruns, row.b.reruns = ["passed", "passed"], ["failed", "failed"]
    settle_flaky(row)
    assert row.category == "new-failure"
    row.b.reruns = ["passed", "failed"]
    settle_flaky(row)
    assert row.category == "flaky" and "was new-failure" in row.note


def _result(rows, a=None, b=None):
    r = ABResult()
    r.arms = [a or _arm("A", {"t::x": O("passed")}), b or _arm("B", {"t::x": O("passed")})]
    r.tests = rows
    r.counts = C.count(rows)
    return r


def test_verdicts():
    ok = _result([Comparison(nodeid="t::x", category="pre-existing")])
    assert verdict(ok)[0] == "SAFE"
    bad = _result([Comparison(nodeid="t::x", category="missing-in-b")])
    assert verdict(bad) == ("REGRESSION", "1 missing-in-b")
    flaky = _result([Comparison(nodeid="t::x", category="flaky")])
    assert verdict(flaky)[0] == "SAFE"
    empty = _result([], _arm("A", {}), _arm("B", {}))
    assert verdict(empty)[0] == "INCONCLUSIVE"
    dead = _result([])
    dead.arms[0].ran, dead.arms[0].error = False, "bad ref"
    assert verdict(dead) == ("INCONCLUSIVE", "arm A could not run: bad ref")
    assert [exit_code(v) for v in ("SAFE", "REGRESSION", "INCONCLUSIVE")] == [0, 1, 3]


def test_diagnose_statement():
    base = _arm("A", {"t::a": O("failed"), "t::b": O("failed"), "t::c": O("passed")})
    diag = _arm("w", {"t::a": O("passed"), "t::b": O("passed"), "t::c": O("passed")})
    d = diagnostic_summary("w", "A", {"TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD": "1"}, base, diag)
    assert d.changed == {"t::a": ["failed", "passed"], "t::b": ["failed", "passed"]}
    assert d.statement == "2 tests failing in A pass with TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1."


def _shards(n=2, **identity):
    """`n` shard results of one run: shard i holds test t{i}::x, passing in both arms."""
    out = []
    for i in range(1, n + 1):
        nid = f"t{i}::x"
        r = _result([Comparison(nodeid=nid, category="same-pass")], _arm("A", {nid: O("passed")}),
                    _arm("B", {nid: O("passed")}))
        r.shard = f"{i}/{n}"
        r.identity = RunIdentity(run_id="run1", base_commit="a" * 40, a_tree="a" * 40, b_tree="files:b",
                                 tool_version="1.0", shards=n, request="r")
        for key, value in identity.items():
            setattr(r.identity, key, value)
        r.verdict, r.verdict_reason = verdict(r)
        out.append(ABResult.from_json(json.loads(json.dumps(r.to_json()))))
    return out


def test_merge_recomputes_counts_and_verdict_and_roundtrips_json():
    r1, r2 = _shards()
    r2.tests[0].category = "new-failure"
    r2.arm("B").outcomes["t2::x"] = O("failed")
    m = merge([r1, r2], ["s1.json", "s2.json"])
    assert m.counts == {"new-failure": 1, "same-pass": 1}
    assert m.verdict == "REGRESSION" and m.shard is None
    assert set(m.arm("A").outcomes) == {"t1::x", "t2::x"}
    assert m.warnings == [Notice("merge.merged-shards", {"shards": "1/2, 2/2"})]
    assert ABResult.from_json(json.loads(json.dumps(m.to_json()))).identity == r1.identity


def test_merge_takes_exactly_one_run():
    r1, r2 = _shards()
    with pytest.raises(MergeError, match=r"^shard 1/2 given twice: s1.json and again.json$"):
        merge([r1, copy.deepcopy(r1), r2], ["s1.json", "again.json", "s2.json"])
    # an earlier run's shard: B's files differ
    (stale,) = _shards(1 + 1, run_id="run0", b_tree="files:old")[1:]
    with pytest.raises(MergeError) as err:
        merge([r1, stale], ["now-1.json", "then-2.json"])
    assert str(err.value) == ("these results are not the shards of one run but of 2 runs (now-1.json; then-2.json): "
                              "they differ in arm B's files (files:b vs files:old)")
    # an earlier run's shards given with this run's: every file is named, by run
    (s1, s2), (old1, old2) = _shards(), _shards(run_id="run0", b_tree="files:old")
    with pytest.raises(MergeError, match=r"of 2 runs \(then-1.json, then-2.json; now-1.json, now-2.json\)"):
        merge([old1, old2, s1, s2], ["then-1.json", "then-2.json", "now-1.json", "now-2.json"])
    # another repository: another base
    (other,) = _shards(2, run_id="run9", base_commit="c" * 40, a_tree="c" * 40)[1:]
    with pytest.raises(MergeError, match="differ in base commit .*; arm A's files"):
        merge([r1, other], ["mine.json", "theirs.json"])
    old = ABResult.from_json(dict(r2.to_json(), schema_version=4, identity=None))
    with pytest.raises(MergeError, match=r"^old.json: no run identity"):
        merge([r1, old], ["s1.json", "old.json"])
    whole = _result([Comparison(nodeid="t::x", category="same-pass")])
    whole.identity = r1.identity
    with pytest.raises(MergeError, match="a whole run"):
        merge([r1, whole], ["s1.json", "whole.json"])


def test_merge_of_an_incomplete_set_needs_allow_missing_and_is_never_safe():
    r1, _r2, r3 = _shards(3)
    with pytest.raises(MergeError, match=r"^shards missing: 2/3 \(--allow-missing merges the others, never SAFE\)$"):
        merge([r1, r3], ["s1.json", "s3.json"])
    partial = merge([r1, r3], ["s1.json", "s3.json"], allow_missing=True)
    assert partial.warnings == [Notice("merge.merged-shards", {"shards": "1/3, 3/3"}),
                                Notice("merge.missing-shards", {"shards": "2/3"})]
    assert (partial.verdict, partial.verdict_reason) == ("INCONCLUSIVE", "shards missing: 2/3")
    r1.tests[0].category = "new-failure"
    r1.arm("B").outcomes["t1::x"] = O("failed")
    found = merge([r1, r3], ["s1.json", "s3.json"], allow_missing=True)
    assert (found.verdict, found.verdict_reason) == ("REGRESSION", "shards missing: 2/3; 1 new-failure")


def test_a_single_result_merges_as_itself_whatever_its_schema():
    whole = _result([Comparison(nodeid="t::x", category="same-pass")])
    old = ABResult.from_json(dict(whole.to_json(), schema_version=2))
    assert merge([old]).counts == {"same-pass": 1}


def test_merge_of_shards_that_ran_differently_says_so():
    r1, r2 = _shards()
    r1.normaliser_version, r1.environment.python, r1.environment.torch_version = "ab-sig-2", "3.11.7", "2.14.1"
    r1.warnings = [Notice("warm.no-fork")]
    r2.normaliser_version, r2.environment.python = "ab-sig-1", "3.12.1"
    r2.warnings = [Notice.verbatim("no warm interpreter: this platform has no fork(); every file ran in a fresh process")]
    m = merge([r1, r2])
    assert m.warnings == [
        Notice("warm.no-fork"),
        Notice("merge.normaliser-versions-differ", {"version": "ab-sig-2", "other_version": "ab-sig-1"}),
        Notice("merge.environments-differ",
               {"python": "3.11.7", "other_python": "3.12.1", "torch": "2.14.1", "other_torch": "None"}),
        Notice.verbatim("no warm interpreter: this platform has no fork(); every file ran in a fresh process"),
        Notice("merge.merged-shards", {"shards": "1/2, 2/2"}),
    ]
    assert [w.text() for w in m.warnings[1:3]] == [
        "normaliser versions differ: ab-sig-2 vs ab-sig-1",
        "shards ran in different environments (python 3.11.7 / 3.12.1, torch 2.14.1 / None)",
    ]
    assert m.counts == {"same-pass": 2} and m.verdict == "SAFE"
    assert ABResult.from_json(json.loads(json.dumps(m.to_json()))).warnings == m.warnings


def test_identity_digests_the_code_and_the_request(tmp_path):
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_a.py").write_text("def test_a():\n    pass\n")
    before = tree_digest(tmp_path, ["tests/test_a.py"])
    (tmp_path / "tests" / "pytest.ini").write_text("[pytest]\naddopts = --setup-only\n")
    after = tree_digest(tmp_path, ["tests/test_a.py"])
    assert before != after and before.startswith("files:")
    code = {"A": ("a" * 40, "t" * 40), "B": ("", after)}
    one = identify(code, 2, "1.0", {"paths": ["tests"]})
    assert one == identify(code, 2, "1.0", {"paths": ["tests"]})
    assert one.run_id != identify(code, 3, "1.0", {"paths": ["tests"]}).run_id
    assert one.run_id != identify(code, 2, "1.0", {"paths": ["tests/test_a.py"]}).run_id


# -- option parsing -------------------------------------------------------------


def test_parse_diag_and_shard():
    d = parse_diag("weights:TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1,X=a=b")
    assert (d.name, d.based_on, d.variables) == ("weights", "A", {"TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD": "1", "X": "a=b"})
    assert parse_diag("nobackend@B:TORCH_DEVICE_BACKEND_AUTOLOAD=0").based_on == "B"
    for bad in ("weights", "A:X=1", "w@C:X=1", "w:novalue"):
        with pytest.raises(UsageError):
            parse_diag(bad)
    assert parse_shard("2/3") == (2, 3)
    for bad in ("0/2", "3/2", "x"):
        with pytest.raises(UsageError):
            parse_shard(bad)


# -- regressions from review ----------------------------------------------------


def test_removed_xfail_marker_is_a_new_failure():
    a = O("xfailed", exc_type="ValueError", message="boom")
    b = O("failed", exc_type="ValueError", message="boom")
    assert C.categorize(a, b)[0] == "new-failure"


def test_not_run_in_either_arm_is_inconclusive():
    assert C.categorize(O("not-run"), O("not-run"))[0] == "inconclusive"
    assert C.categorize(O("skipped"), O("not-run"))[0] == "inconclusive"
    rows = [Comparison(nodeid="t::x", category="same-pass"),
            Comparison(nodeid="t::y", category="inconclusive")]
    v, reason = verdict(_result(rows))
    assert v == "INCONCLUSIVE" and "neither arm" in reason and "t::y" in reason
    # a confirmed regression still wins
    rows.append(Comparison(nodeid="t::z", category="new-failure"))
    assert verdict(_result(rows))[0] == "REGRESSION"


def test_not_run_reruns_are_no_flakiness_evidence():
    row = Comparison(nodeid="x", category="new-failure", a=O("passed"), b=O("failed"))
    row.a.reruns, row.b.reruns = ["passed", "passed"], ["not-run", "not-run"]
    settle_flaky(row)
    assert row.category == "new-failure" and "unconfirmed" in row.note
    row = Comparison(nodeid="x", category="new-failure", a=O("passed"), b=O("failed"))
    row.a.reruns, row.b.reruns = ["passed", "passed"], ["failed", "not-run"]
    settle_flaky(row)
    assert row.category == "new-failure" and "did not run" in row.note


def test_order_dependent_is_not_flaky_unless_the_file_rerun_disagrees():
    row = Comparison(nodeid="x", category="new-failure", a=O("passed"), b=O("failed"))
    row.a.reruns, row.b.reruns = ["failed", "failed"], ["failed", "failed"]
    assert rerun_state(row) == "order-suspect"
    settle_flaky(row)
    assert row.category == "new-failure"
    assert "order-dependent: fails only when run with the rest of the file in B" in row.note
    row = Comparison(nodeid="x", category="new-failure", a=O("passed"), b=O("failed"))
    row.a.reruns, row.b.reruns = ["passed"], ["passed"]
    row.a.suite_reruns, row.b.suite_reruns = ["passed"], ["passed"]       # not reproduced in the file
    settle_flaky(row)
    assert row.category == "flaky"
    row = Comparison(nodeid="x", category="new-failure", a=O("passed"), b=O("failed"))
    row.a.reruns, row.b.reruns = ["failed"], ["passed"]                   # alternates: swapped alone
    settle_flaky(row)
    assert row.category == "flaky"


def test_flaky_verdict_reason_names_the_tests():
    v, reason = verdict(_result([Comparison(nodeid="t::x", category="flaky")]))
    assert v == "SAFE" and "1 flaky" in reason and "t::x" in reason


def test_module_level_skip_in_b_is_coverage_lost():
    a = _arm("A", {"m.py::t1": O("passed"), "m.py::t2": O("passed")})
    b = _arm("B", {})
    b.collection_skips["m.py"] = Outcome(nodeid="m.py", outcome="skipped", phase="collect", message="Skipped: no gpu")
    rows = {r.nodeid: r for r in C.compare_arms(a, b)}
    assert set(rows) == {"m.py::t1", "m.py::t2"}
    assert rows["m.py::t1"].category == "coverage-lost" and "no gpu" in rows["m.py::t1"].note


def test_per_arm_tmpdir_paths_compare_equal():
    base = "/tmp/decouple-ab-k2/arms/{}/tmp/pytest-of-u/pytest-{}/test_x0/f.pt"
    a = fail(msg=f"cannot open {base.format('A', 3)}")
    b = fail(msg=f"cannot open {base.format('B', 5)}")
    roots = (ROOT_A, ROOT_B, "/tmp/decouple-ab-k2")
    assert signatures(a, roots) == signatures(b, roots)
    assert "<tmp>" in signatures(a, roots)[0]


# -- the confirmation reruns are replays ------------------------------------------


def _spec(tmp_path, name="B"):
    workdir = tmp_path / name
    root = workdir / "root"
    (root / "sub").mkdir(parents=True)
    (root / "a.txt").write_text("a")
    (root / "sub" / "b.txt").write_text("b")
    (root / "link").symlink_to("a.txt")
    env = {"PWD": str(root), "TMPDIR": str(workdir / "tmp"), "KEEP": "1"}
    return ArmSpec(name=name, label=name, source="dir", root=root, workdir=workdir, env=env)


def _tree_of(root):
    def content(p):
        return os.readlink(p) if p.is_symlink() else p.read_text() if p.is_file() else "/"
    return {p.relative_to(root).as_posix(): content(p) for p in sorted(root.rglob("*"))}


def test_a_replay_tree_is_the_arm_before_its_first_run_every_time(tmp_path):
    spec = _spec(tmp_path)
    before = _tree_of(spec.root)
    trees = Replays.snapshot(spec)
    (spec.root / "a.txt").write_text("the first run wrote here")  # what a replay must not see
    (spec.root / "seen.txt").write_text("")
    with trees.tree() as moved:
        first = moved.root
        assert first != spec.root and first.is_relative_to(spec.workdir)
        assert _tree_of(first) == before
        assert moved.env["PWD"] == str(first) and moved.env["KEEP"] == "1"
        tmp = Path(moved.env["TMPDIR"])
        assert tmp.is_dir() and not any(tmp.iterdir()) and tmp.is_relative_to(spec.workdir)
        # the rerun changes, adds, removes and replaces what it likes
        (first / "a.txt").write_text("changed, same size!"[:1])
        (first / "seen.txt").write_text("")
        (first / "new" / "deep").mkdir(parents=True)
        (first / "sub" / "b.txt").unlink()
        (first / "link").unlink()
        (first / "link").write_text("no longer a link")
        (first / "sub").chmod(0o700)
        (tmp / "left.txt").write_text("")
    with trees.tree() as moved:
        assert moved.root == first  # the same tree, put back
        assert _tree_of(first) == before
        assert not any(Path(moved.env["TMPDIR"]).iterdir())
        with trees.tree() as other:  # a rerun at the same time gets a tree of its own
            assert other.root != first and _tree_of(other.root) == before
    assert _tree_of(trees.pristine) == before


class _SelfCuring:
    """A runner whose test fails the first time it runs in a tree and leaves a file that makes it pass."""

    def __init__(self, spec, roots):
        self.spec, self.roots = spec, roots

    def elsewhere(self, spec):
        return type(self)(spec, self.roots)

    def run_file(self, file, args, only=None, deselect=()):
        self.roots.append(self.spec.root)
        seen = self.spec.root / "seen.txt"
        outcome = "passed" if seen.exists() else "failed"
        seen.touch()
        run = FileRun(arm=self.spec.name, file=file)
        run.outcomes = {n: O(outcome) for n in args}
        return run


class _Passing(_SelfCuring):
    def run_file(self, file, args, only=None, deselect=()):
        self.roots.append(self.spec.root)
        run = FileRun(arm=self.spec.name, file=file)
        run.outcomes = {n: O("passed") for n in args}
        return run


def test_confirmation_reruns_replay_a_fresh_tree_so_leftovers_cure_nothing(tmp_path):
    spec_a, spec_b = _spec(tmp_path, "A"), _spec(tmp_path, "B")
    trees_a, trees_b = Replays.snapshot(spec_a), Replays.snapshot(spec_b)
    roots_a, roots_b = [], []
    runner_b = _SelfCuring(spec_b, roots_b)
    nodeid = "t.py::x"
    a = _arm("A", {nodeid: O("passed")})
    b = _arm("B", {nodeid: runner_b.run_file("t.py", [nodeid]).outcomes[nodeid]})  # the first run: fails
    assert (spec_b.root / "seen.txt").exists()  # and leaves its cure in the arm's root
    rows = C.compare_arms(a, b, {}, ["t.py"])
    assert [r.category for r in rows] == ["new-failure"]
    pool = SlotPool(2, "test-confirm")
    try:
        confirm_discordant(rows, Replayer(runner=_Passing(spec_a, roots_a), trees=trees_a),
                           Replayer(runner=runner_b, trees=trees_b), a, b, 2, pool, threading.Event(), lambda _: None)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    row = rows[0]
    assert row.b.reruns == ["failed", "failed"] and row.a.reruns == ["passed", "passed"]
    assert row.category == "new-failure"  # not flaky: every rerun fails as on a clean tree
    assert spec_b.root not in roots_b[1:] and spec_a.root not in roots_a
    assert all(r.is_relative_to(spec_b.workdir / "replays") for r in roots_b[1:])


def test_packs_upto_names_each_file_after_the_first_of_its_pack_with_what_ran_before_it():
    files = {"t/a.py": ["t/a.py"], "t/c.py": ["t/c.py::x"], "t/d.py": ["t/d.py"]}  # the arm has no t/b.py
    deselect = {"t/a.py": (), "t/b.py": (), "t/c.py": ("t/c.py::y",), "t/d.py": ()}
    packed = packs_upto([["t/a.py", "t/b.py", "t/c.py"], ["t/d.py"]], files, deselect)
    assert list(packed) == ["t/c.py"]
    assert packed["t/c.py"].files == {"t/a.py": ["t/a.py"], "t/c.py": ["t/c.py::x"]}
    assert packed["t/c.py"].deselect == {"t/a.py": (), "t/c.py": ("t/c.py::y",)}


class _Leaky(_Passing):
    """B's t/b.py::x fails only in a session where t/a.py ran before it (a variable set at import)."""

    def run_file(self, file, args, only=None, deselect=()):
        return self.run_pack({file: args}, {})[0]

    def run_pack(self, files, deselect):
        self.roots.append(self.spec.root)
        leaked = self.spec.name == "B" and "t/a.py" in files
        out = []
        for f in files:
            run = FileRun(arm=self.spec.name, file=f)
            run.outcomes = {f"{f}::x": O("failed" if leaked and f == "t/b.py" else "passed")}
            out.append(run)
        return out


@pytest.mark.parametrize("packed", [True, False])
def test_an_order_suspect_test_of_a_pack_is_rerun_after_the_files_before_it(tmp_path, packed):
    nodeid = "t/b.py::x"
    a, b = _arm("A", {nodeid: O("passed")}), _arm("B", {nodeid: O("failed")})
    rows = C.compare_arms(a, b, {}, ["t"])
    replayers = []
    for name in "AB":
        spec = _spec(tmp_path, name)
        prefix = {"t/b.py": PackPrefix(files={"t/a.py": ["t/a.py"], "t/b.py": ["t/b.py"]}, deselect={})}
        replayers.append(Replayer(runner=_Leaky(spec, []), trees=Replays.snapshot(spec), packed=prefix if packed else {}))
    pool = SlotPool(2, "test-confirm")
    try:
        confirm_discordant(rows, *replayers, a, b, 2, pool, threading.Event(), lambda _: None)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    row = rows[0]
    assert row.a.reruns == row.b.reruns == ["passed", "passed"]  # alone: the same in both arms
    if packed:  # its pack replayed: the failure reproduces, order-dependent, not flaky
        assert row.b.suite_reruns == ["failed"] and row.category == "new-failure"
        assert "ran in a pack after t/a.py" in row.note and "order-dependent" in row.note
    else:  # its file alone does not reproduce it
        assert row.b.suite_reruns == ["passed"] and row.category == "flaky"
