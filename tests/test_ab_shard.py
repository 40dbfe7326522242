"""Shard planning (codemod/ab/arms/shard.py) and the proof that N merged shards equal one run."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from codemod.ab.arms import shard
from codemod.cli.ab import ab

FIX = Path(__file__).resolve().parent / "fixtures" / "shard"


# ---------------------------------------------------------------------------
# planning: pure functions


def _files(plan):
    return [[p.file for p in s] for s in plan]


def test_lpt_balances_by_recorded_durations_and_is_deterministic():
    files = [f"t/test_{c}.py" for c in "abcdefg"]
    d = shard.Durations(files=dict(zip(files, [7.0, 5.0, 4.0, 3.0, 3.0, 2.0, 2.0])))
    plan = shard.plan(files, 3, d)
    loads = [sum(p.weight for p in s) for s in plan]
    assert sorted(loads) == [8.0, 9.0, 9.0]  # LPT: 7+2 / 5+3 ... total 26
    assert sorted(f for s in _files(plan) for f in s) == files  # every file exactly once
    assert shard.plan(list(reversed(files)), 3, d) == plan        # input order does not matter
    # round robin by name would have put the two heaviest files (a, d) together in shard 1
    assert not any({"t/test_a.py", "t/test_d.py"} <= set(s) for s in _files(plan))


def test_without_durations_size_decides_and_recorded_rate_scales_unknown_files():
    files = ["a.py", "b.py", "c.py"]
    sizes = {"a.py": 100, "b.py": 300, "c.py": 200}
    plan = shard.plan(files, 2, None, sizes.get)
    assert _files(plan) == [["b.py"], ["a.py", "c.py"]]
    # a.py recorded at 10 s for 100 bytes: 0.1 s/byte, so b.py (300 bytes) weighs 30 s
    w = shard.weigh(files, shard.Durations(files={"a.py": 10.0}), sizes.get)
    assert w == {"a.py": 10.0, "b.py": 30.0, "c.py": 20.0}


def test_a_dominating_file_is_split_by_node_id_and_every_test_runs_once():
    tests = {f"big.py::test_{i}": 10.0 for i in range(6)}
    d = shard.Durations(files={"big.py": 60.0, "a.py": 5.0, "b.py": 5.0}, tests=tests)
    plan = shard.plan(["a.py", "b.py", "big.py"], 3, d)
    big = [p for s in plan for p in s if p.file == "big.py"]
    assert len(big) == 3
    home = [p for p in big if p.only is None]
    assert len(home) == 1  # the home part runs the file minus the tests placed elsewhere
    elsewhere = sorted(n for p in big if p.only for n in p.only)
    assert sorted(home[0].deselect) == elsewhere
    # every recorded test: in exactly one part; an unrecorded test: only in the home part
    for nid in [*tests, "big.py::test_new"]:
        runs = [p for p in big if (nid in p.only if p.only is not None else nid not in p.deselect)]
        assert len(runs) == 1, nid
    # a file that does not dominate stays whole
    assert all(p.only is None and not p.deselect for s in plan for p in s if p.file != "big.py")


def test_durations_files_results_and_folders(tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "one.json").write_text(shard.durations_json({"a.py": 1.5}, {"a.py::t": 1.25}))
    from codemod.ab.result.model import ABResult, ArmResult, Outcome

    def arm(name, **durations):  # a result JSON is validated: a whole one, with its outcomes' durations
        outcomes = {f"b.py::{t}": Outcome(nodeid=f"b.py::{t}", outcome="passed", duration=s)
                    for t, s in durations.items()}
        return ArmResult(name=name, label=name, root="", source="worktree", outcomes=outcomes)

    result = ABResult(arms=[arm("A", t=2.0, u=1.0), arm("B", t=3.0),
                            arm("weights", t=99.0)]).to_json()  # diagnostic arm: ignored
    (tmp_path / "d" / "result.json").write_text(json.dumps(result))
    d = shard.load_durations([str(tmp_path / "d")])
    assert d.files == {"a.py": 1.5, "b.py": 4.0} and d.tests == {"a.py::t": 1.25, "b.py::t": 3.0, "b.py::u": 1.0}
    (tmp_path / "bad.json").write_text('{"some": "thing"}')
    with pytest.raises(shard.DurationsError, match="neither a durations file"):
        shard.load_durations([str(tmp_path / "bad.json")])
    (tmp_path / "broken.json").write_text("{")
    with pytest.raises(shard.DurationsError, match="not JSON"):
        shard.load_durations([str(tmp_path / "broken.json")])


# ---------------------------------------------------------------------------
# end to end: N merged shards == one run of the whole suite


def invoke(args):
    return CliRunner().invoke(ab, args, catch_exceptions=False)


@pytest.fixture(scope="module")
def roots(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("shard")
    shutil.copytree(FIX / "a", tmp / "a")
    shutil.copytree(FIX / "b", tmp / "b")
    return tmp


def common(roots):
    return ["tests", "--a-root", str(roots / "a"), "--b-root", str(roots / "b"), "-q", "--confirm", "1", "-j", "2"]


@pytest.fixture(scope="module")
def whole(roots):
    out, durations = roots / "whole.json", roots / "durations.json"
    r = invoke(common(roots) + ["--json", str(out), "--durations-out", str(durations)])
    assert r.exit_code == 1, r.output  # a new failure in B
    return json.loads(out.read_text()), json.loads(durations.read_text())


def _summary(result):
    return {t["nodeid"]: t["category"] for t in result["tests"]}, result["verdict"], result["counts"]


def test_whole_run_sees_every_category(whole):
    result, _ = whole
    categories, verdict, counts = _summary(result)
    assert verdict == "REGRESSION"
    assert categories["tests/test_big.py::TestBig::test_becomes_failure"] == "new-failure"
    assert categories["tests/test_big.py::TestBig::test_same_failure"] == "pre-existing"
    assert categories["tests/test_fixed.py::test_was_broken"] == "fixed"
    assert categories["tests/test_moves.py::test_removed_in_b"] == "coverage-lost"
    assert categories["tests/test_moves.py::test_added_in_b"] == "added-in-b"
    assert sum(counts.values()) == len(categories) == 16


def test_durations_out_records_every_file_and_test(whole):
    result, durations = whole
    assert durations["schema"] == shard.DURATIONS_SCHEMA
    assert set(durations["files"]) == {f"tests/test_{n}.py" for n in ("big", "fixed", "moves", "plain")}
    assert set(durations["tests"]) == {t["nodeid"] for t in result["tests"]}
    assert all(v >= 0 for v in [*durations["files"].values(), *durations["tests"].values()])


def _run_shards(roots, n, durations_args, tag):
    paths = []
    for i in range(1, n + 1):
        p = roots / f"{tag}-{i}.json"
        r = invoke(common(roots) + ["--shard", f"{i}/{n}", "--json", str(p), *durations_args])
        assert r.exit_code in (0, 1), r.output
        paths.append(p)
    merged = roots / f"{tag}-merged.json"
    r = invoke(["merge", *map(str, paths), "--json", str(merged), "-q"])
    assert r.exit_code == 1, r.output
    return [json.loads(p.read_text()) for p in paths], json.loads(merged.read_text())


@pytest.mark.parametrize("n, source", [(2, "size"), (3, "recorded")])
def test_merged_shards_equal_the_whole_run(roots, whole, n, source):
    result, _ = whole
    args = []
    if source == "recorded":
        # test_big.py dominates; one of its tests (test_unrecorded) is not in the recording
        tests = {t["nodeid"]: 10.0 for t in result["tests"]
                 if t["nodeid"].startswith("tests/test_big.py") and "unrecorded" not in t["nodeid"]}
        record = roots / "recorded.json"
        record.write_text(shard.durations_json(
            {"tests/test_big.py": 90.0, "tests/test_fixed.py": 1.0, "tests/test_moves.py": 1.0,
             "tests/test_plain.py": 1.0}, tests))
        args = ["--durations", str(record)]
    shards, merged = _run_shards(roots, n, args, f"{source}{n}")
    assert _summary(merged) == _summary(result)
    # no test ran in two shards, none in none
    per_shard = [t["nodeid"] for s in shards for t in s["tests"]]
    assert sorted(per_shard) == sorted(t["nodeid"] for t in result["tests"])
    if source == "recorded":
        big = [s for s in shards if any(t["nodeid"].startswith("tests/test_big.py") for t in s["tests"])]
        assert len(big) >= 2  # the dominating file was split by node id
