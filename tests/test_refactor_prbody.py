"""The PR body's pure parts (issue 39): a branch's verdict from its files' own, the local paths a
body never carries, a cause's remedy said once for all its tests, only moves that change
something listed."""

from __future__ import annotations

import os

from codemod.ab.result.model import (
    ABResult,
    ArmResult,
    Category,
    CauseFinding,
    CauseId,
    CauseStatus,
    Environment,
    Outcome,
    OutcomeValue,
    Phase,
    Scope,
    TestComparison as Comparison,
    Verdict,
)
from codemod.refactor import plan
from codemod.refactor.prverified import merged_findings
from codemod.refactor.redact import interpreter, redact
from codemod.refactor.verdicts import judge


def _arm(name: str, outcomes: dict[str, OutcomeValue], errors: dict[str, str] | None = None) -> ArmResult:
    return ArmResult(
        name=name,
        label=name,
        root=f"/tmp/decouple-ab-x/arms/{name}/root",
        source="worktree",
        outcomes={n: Outcome(nodeid=n, outcome=o, message="needs CUDA" if o == "skipped" else "") for n, o in outcomes.items()},
        collection_errors={
            f: Outcome(nodeid=f, outcome=OutcomeValue.ERROR, phase=Phase.COLLECT, exc_type="ModuleNotFoundError",
                       message=m)
            for f, m in (errors or {}).items()
        },
    )


def _result(outcomes: dict[str, OutcomeValue], errors: dict[str, str] | None = None,
            paths: list[str] | None = None) -> ABResult:
    tests = [Comparison(nodeid=n, category=Category.SAME_PASS if o == "passed" else Category.SAME_SKIP)
             for n, o in outcomes.items()]
    counts: dict[Category, int] = {}
    for t in tests:
        counts[t.category] = counts.get(t.category, 0) + 1
    return ABResult(verdict=Verdict.SAFE, verdict_reason="no test regressed", paths=paths or [],
                    arms=[_arm("A", outcomes, errors), _arm("B", outcomes, errors)], tests=tests, counts=counts,
                    python="/home/dev/venvs/npu/bin/python3",
                    environment=Environment(executable="/home/dev/venvs/npu/bin/python3"))


def _labelled(path: str, *classes: str) -> plan.FilePlan:
    return plan.FilePlan(path, labels=[plan.ClassLabel(c, "GENERIC", 3, "e") for c in classes])


def test_a_file_that_never_ran_makes_the_branch_inconclusive_and_names_it():
    result = _result({"test/a.py::TestA::test_x": OutcomeValue.PASSED},
                     errors={"test/b.py": "No module named 'common'"}, paths=["test/a.py", "test/b.py"])
    judged = judge(result, [_labelled("test/a.py", "TestA"), _labelled("test/b.py", "TestB")])
    assert judged.verdict == Verdict.INCONCLUSIVE and result.verdict == Verdict.SAFE
    assert [w.path for w in judged.weaker] == ["test/b.py"]
    assert judged.weaker[0].reason.startswith("never ran: import failed in both arms: ModuleNotFoundError")
    assert [n.line() for n in judged.not_exercised] == [
        "TestB in test/b.py, import failed in both arms: ModuleNotFoundError: No module named 'common'"]
    assert judged.summary().startswith("INCONCLUSIVE: test/b.py: never ran: import failed in both arms")


def test_a_class_whose_tests_all_skip_is_listed_and_a_file_that_only_skips_is_inconclusive():
    outcomes = {"test/a.py::TestA::test_x": OutcomeValue.PASSED,
                "test/a.py::TestCudaCUDA::test_y_cuda": OutcomeValue.SKIPPED,
                "test/c.py::TestC::test_z": OutcomeValue.SKIPPED}
    result = _result(outcomes, paths=["test/a.py", "test/c.py"])
    judged = judge(result, [_labelled("test/a.py", "TestA", "TestCuda"), _labelled("test/c.py", "TestC")])
    assert [(n.path, n.classes, n.why) for n in judged.not_exercised] == [
        ("test/a.py", ("TestCuda",), "its test skipped in both arms (needs CUDA)"),
        ("test/c.py", ("TestC",), "its test skipped in both arms (needs CUDA)")]
    assert judged.verdict == Verdict.INCONCLUSIVE and [w.path for w in judged.weaker] == ["test/c.py"]
    # one class of a file that ran is listed, never a reason to doubt the branch
    alone = judge(_result(dict(list(outcomes.items())[:2]), paths=["test/a.py"]), [_labelled("test/a.py", "TestA")])
    assert alone.verdict == Verdict.SAFE and not alone.weaker


def test_failures_in_both_arms_are_counted_and_said_unchanged_only_when_identical():
    result = _result({"test/a.py::TestA::test_x": OutcomeValue.PASSED}, paths=["test/a.py"])
    result.counts = {Category.SAME_PASS: 1, Category.PRE_EXISTING: 2}
    assert judge(result, [_labelled("test/a.py", "TestA")]).summary() == "SAFE; 2 failing in both arms, unchanged"
    result.counts[Category.DIFFERENT_FAILURE] = 1
    assert judge(result, [_labelled("test/a.py", "TestA")]).summary() == "SAFE; 3 failing in both arms"


def test_no_local_path_survives_redaction():
    result = _result({}, paths=[])
    home = os.path.expanduser("~")
    text = (f"`3.11.7` (`/home/dev/venvs/npu/bin/python3`) /tmp/decouple-ab-x/arms/B/root/test/a.py:3 "
            f"/usr/lib/python3/dist-packages/torch/serialization.py {home}/notes.txt /work/scratch/t.py "
            "https://github.com/home/x and /usr/bin/python3")
    out = redact(text, result)
    assert "`<venv>/bin/python3`" in out and " test/a.py:3 " in out
    assert "<site-packages>/torch/serialization.py" in out and "~/notes.txt" in out and "…/t.py" in out
    assert "https://github.com/home/x" in out and "/usr/bin/python3" in out
    assert interpreter("/usr/bin/python3") == "python3" and interpreter("/opt/venv/bin/python") == "<venv>/bin/python"


def test_a_cause_shared_by_several_failure_groups_is_one_item_with_its_evidence_once():
    def finding(test: str, glob: str, path: str) -> CauseFinding:
        return CauseFinding(nodeids=[f"{path}::T::{test}"], scope=Scope.BOTH, category=Category.PRE_EXISTING,
                            cause=CauseId.WEIGHTS_ONLY_DEFAULT, status=CauseStatus.SUSPECTED,
                            evidence={"global": glob, "file": path, "torch": "2.14"})
    groups = [finding("test_a", "m.A", "test/x.py"), finding("test_b", "m.B", "test/x.py"),
              finding("test_c", "m.A", "test/y.py"), CauseFinding(nodeids=["test/z.py::T::test_d"],
                                                                  category=Category.PRE_EXISTING)]
    merged = merged_findings(groups)
    assert len(merged) == 2 and merged[1].cause is None
    assert merged[0].nodeids == ["test/x.py::T::test_a", "test/x.py::T::test_b", "test/y.py::T::test_c"]
    assert merged[0].evidence == {"global": "m.A, m.B", "file": "test/x.py test/y.py", "torch": "2.14"}
    assert groups[0].nodeids == ["test/x.py::T::test_a"]  # the result's own findings are left as they were


def test_moves_that_change_nothing_are_not_in_the_commit():
    def move(new_class: str, after: tuple[str, ...]) -> plan.Moved:
        return plan.Moved(transform="split-class", test="test_x", old_class="TestA", new_class=new_class,
                          old_instantiated=False, new_instantiated=False, before=("generic",), after=after)
    p = plan.FilePlan("test/a.py", moves=[move("TestA", ("generic",)), move("TestAGeneric", ("generic",))],
                      graduated_from="allow.json")
    message = plan.commit_message([p], "c" * 40)
    assert message.count("- moved test_x") == 1 and "-> TestAGeneric by split-class" in message
    identity = plan.FilePlan("test/b.py", moves=[move("TestA", ("generic",))], graduated_from="allow.json")
    assert identity.allowlist_only


def test_a_branch_result_need_not_run_its_files_with_no_test_class():
    from codemod.refactor.provenance import foreign

    facts = plan.CommitFacts("t", "d" * 40, [_labelled("test/a.py", "TestA"),
                                             plan.FilePlan("test/helpers.py", no_test_class=True)])
    result = _result({"test/a.py::TestA::test_x": OutcomeValue.PASSED}, paths=["test/a.py"])
    result.arms[0].commit, result.arms[1].tree = "d" * 40, "e" * 40
    assert foreign(result, facts, "e" * 40) == []
    result.paths = ["test/a.py", "test/other.py"]
    assert foreign(result, facts, "e" * 40) == ["it ran test/a.py, test/other.py, the branch changes test/a.py"]
