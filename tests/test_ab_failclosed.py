"""The A/B runner fails closed (issue 37): an outcome needs a report that decides it, every
session is reconciled with pytest's own account of it, a narrowed device set is lost coverage,
and the reports say only what was run.  The shapes end to end, in three modes, are
tests/test_ab_soundness.py; here each piece on its own."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

from codemod.ab.arms.changes import read_patch
from codemod.ab.arms.options import RunOptions
from codemod.ab.arms.structure import narrowings
from codemod.ab.comparison import accounting
from codemod.ab.comparison.accounting import SessionView, reconcile
from codemod.ab.comparison.compare import compare_arms, verdict
from codemod.ab.comparison.coverage import explain_narrowed
from codemod.ab.comparison.testevents import TestEvents as Events
from codemod.ab.comparison.testevents import build_outcome
from codemod.ab.execution.run import run_ab, run_single_file
from codemod.ab.result.diff import Changes, DeviceNarrowing, FileChange, InstantiationChange, NarrowedBy
from codemod.ab.result.model import (
    ABResult,
    AccountFinding,
    AccountIssue,
    ArmResult,
    Category,
    Outcome,
    OutcomeValue,
    Phase,
)
from codemod.ab.result.model import TestComparison as Row
from codemod.report.ab import junit, terminal
from codemod.report.ab.background import arm_description
from codemod.report.ab.fmt import Fmt
from codemod.report.ab.markdown import render as markdown


def report(when, outcome="passed", **kw):
    return {"ev": "report", "nodeid": "t.py::x", "when": when, "outcome": outcome, "duration": 0.0,
            "wasxfail": None, "xfail": False, "exc": None, "longrepr": "", "subtest": None, **kw}


def events(*reports):
    acc = Events("t.py::x")
    acc.started = True
    for r in reports:
        if r.get("subtest"):
            acc.subtests.append(r)
        else:
            acc.reports[r["when"]] = r
    return acc


# ---------------------------------------------------------------------------
# the fold: only a report decides


def test_a_setup_report_alone_is_incomplete_never_passed():
    o = build_outcome(events(report("setup"), report("teardown")))
    assert (o.outcome, o.phase) == ("incomplete", "call")
    assert o.message == "stopped in its call phase: no report decides its outcome"
    nothing = build_outcome(events())
    assert (nothing.outcome, nothing.phase) == ("incomplete", "setup")


def test_what_a_report_says_still_decides():
    assert build_outcome(events(report("setup"), report("call"), report("teardown"))).outcome == "passed"
    assert build_outcome(events(report("setup", "skipped"))).outcome == "skipped"
    assert build_outcome(events(report("setup", "failed"))).outcome == "error"
    # a failing subtest or a teardown error decides a test whose call never reported
    sub = report("call", "failed", subtest={"msg": "m", "kwargs": {}}, exc={"type": "AssertionError", "chain": [],
                                                                             "message": "no"})
    assert build_outcome(events(report("setup"), sub)).outcome == "failed"
    assert build_outcome(events(report("setup"), report("teardown", "failed"))).outcome == "error"


# ---------------------------------------------------------------------------
# reconciliation with pytest's own account


def account(**kw):
    return {"testscollected": 1, "testsfailed": 0, "shouldstop": "", "shouldfail": "", "interrupted": None,
            "stats": {"passed": ["t.py::x"]}, **kw}


def view(outcome="passed", nodeid="t.py::x", **kw):
    return SessionView(collected=[nodeid], outcomes={nodeid: Outcome(nodeid=nodeid, outcome=outcome)},
                       files=["t.py"], **kw)


def test_agreeing_accounts_find_nothing():
    assert reconcile(account(), 0, view()).findings == []
    assert reconcile(account(), 0, view()).doubts == {}


def test_a_session_ended_by_pytest_exit():
    exc = {"type": "_pytest.outcomes.Exit", "chain": [], "message": "done"}
    r = reconcile(account(interrupted=exc, stats={}), 0, view("incomplete", stopped_in={"t.py::x": Phase.CALL}))
    (stopped,) = r.findings
    assert (stopped.issue, stopped.stopped_by, stopped.exit_status, stopped.tests) == (
        "stopped", "pytest.exit('done')", 0, ["t.py::x"])
    assert r.doubts == {"t.py::x": "stopped in its call phase: pytest.exit('done') ended the session"}
    assert accounting.describe("B", stopped) == (
        "arm B: pytest's session of t.py was ended early by pytest.exit('done') (exit status 0): 1 test incomplete")


@pytest.mark.parametrize("acc,status,said", [
    (account(interrupted={"type": "KeyboardInterrupt", "chain": [], "message": ""}), 2, "KeyboardInterrupt"),
    (account(interrupted={"type": "Interrupted", "chain": [], "message": "enough"}), 2,
     "pytest was told to stop: enough"),
    (account(shouldfail="stopping after 1 failures"), 1, "pytest was told to fail: stopping after 1 failures"),
    (account(), 4, "a usage error"),
    (account(), 3, "an internal error"),
])
def test_what_ended_a_session_early(acc, status, said):
    assert accounting.stopped_by(acc, status) == said


def test_a_session_that_ran_no_call_phase():
    # --setup-only, --collect-only, --fixtures: detected by the accounts, no option name read
    r = reconcile(account(stats={}), 0, view("incomplete", stopped_in={"t.py::x": Phase.CALL}))
    (none_ran,) = r.findings
    assert (none_ran.issue, none_ran.pytest) == ("no-test-ran", {"collected": 1, "run": 0})
    assert r.doubts["t.py::x"].startswith("pytest ran no call phase in its session")
    assert accounting.describe("B", none_ran) == "arm B: pytest reports 0 tests run of the 1 it collected in t.py"


def test_an_outcome_pytest_never_counted_is_incomplete():
    r = reconcile(account(stats={"skipped": ["t.py::x"]}), 0, view("passed"))
    (differ,) = r.findings
    assert (differ.issue, differ.pytest, differ.events) == (
        "outcomes-differ", {"passed": 0, "skipped": 1}, {"passed": 1, "skipped": 0})
    assert accounting.describe("B", differ) == (
        "arm B: pytest reports 0 passed, the events 1; pytest reports 1 skipped, the events 0 (t.py)")
    assert r.doubts == {"t.py::x": "the events say passed, pytest counted it as: skipped"}
    r = reconcile(account(stats={"failed": ["t.py::y"]}, testscollected=2), 0,
                  SessionView(collected=["t.py::x", "t.py::y"], outcomes={"t.py::x": Outcome(nodeid="t.py::x",
                                                                                           outcome="passed")},
                              files=["t.py"], failures=1))
    assert r.doubts["t.py::x"] == "the events say passed, pytest counted it as: nothing"
    # ... and a test pytest counted that the events hold nothing of
    r = reconcile(account(stats={"passed": ["t.py::x", "t.py::y"]}, testscollected=1), 0, view("passed"))
    assert r.doubts == {"t.py::y": "pytest counted it as passed, the events hold no report of it"}


def test_counts_that_differ_make_the_session_s_tests_incomplete():
    r = reconcile(account(testscollected=3), 0, view("passed"))
    assert [f.issue for f in r.findings] == ["collected-differs"]
    assert r.doubts == {"t.py::x": "pytest collected 3 tests in its session, the events 1"}
    r = reconcile(account(testsfailed=2), 1, view("passed"))
    assert [(f.issue, f.pytest, f.events) for f in r.findings] == [("failures-unseen", {"failures": 2},
                                                                     {"failures": 0})]
    assert "t.py::x" in r.doubts


def test_no_account_and_no_terminal_reporter_are_findings():
    r = reconcile(None, 0, view("passed"))
    assert [f.issue for f in r.findings] == ["no-account"] and "t.py::x" in r.doubts
    r = reconcile(account(stats=None), 0, view("passed"))
    assert [f.issue for f in r.findings] == ["no-reporter"] and r.doubts == {}


# ---------------------------------------------------------------------------
# one file through the real capture plugin and pytest


def _file(tmp_path: Path, text: str, ini: str = "") -> str:
    (tmp_path / "test_f.py").write_text(textwrap.dedent(text).lstrip())
    if ini:
        (tmp_path / "pytest.ini").write_text(f"[pytest]\naddopts = {ini}\n")
    return str(tmp_path)


PLAIN = """
    def test_one():
        assert True


    def test_two():
        assert True
"""


def test_pytest_exit_in_a_test_leaves_it_incomplete(tmp_path):
    root = _file(tmp_path, """
        import pytest


        def test_one():
            assert True


        def test_two():
            pytest.exit("done", returncode=0)
            assert False
    """)
    fr = run_single_file(root, "test_f.py")
    one, two = fr.outcomes["test_f.py::test_one"], fr.outcomes["test_f.py::test_two"]
    assert one.outcome == "passed"
    assert (two.outcome, two.phase, two.message) == (
        "incomplete", "call", "stopped in its call phase: pytest.exit('done') ended the session")
    (stopped,) = fr.accounting
    assert (stopped.issue, stopped.exit_status, stopped.files) == ("stopped", 0, ["test_f.py"])


def test_setup_only_in_the_ini_runs_no_test(tmp_path):
    fr = run_single_file(_file(tmp_path, PLAIN.replace("True", "False"), "--setup-only"), "test_f.py")
    assert {o.outcome for o in fr.outcomes.values()} == {"incomplete"}
    assert [(f.issue, f.pytest) for f in fr.accounting] == [("no-test-ran", {"collected": 2, "run": 0})]


def test_collect_only_in_the_ini_runs_no_test(tmp_path):
    fr = run_single_file(_file(tmp_path, PLAIN, "--collect-only"), "test_f.py")
    assert {o.outcome for o in fr.outcomes.values()} == {"not-run"}
    assert [f.issue for f in fr.accounting] == ["no-test-ran"]


def test_keyboard_interrupt_in_a_unittest_test(tmp_path):
    root = _file(tmp_path, """
        import unittest


        class TestU(unittest.TestCase):
            def test_one(self):
                pass

            def test_two(self):
                raise KeyboardInterrupt
    """)
    fr = run_single_file(root, "test_f.py")
    assert fr.outcomes["test_f.py::TestU::test_two"].outcome == "incomplete"
    assert [(f.issue, f.stopped_by, f.exit_status) for f in fr.accounting] == [("stopped", "KeyboardInterrupt", 2)]


def test_no_terminal_reporter_is_said(tmp_path):
    fr = run_single_file(_file(tmp_path, PLAIN, "-p no:terminal"), "test_f.py")
    assert {o.outcome for o in fr.outcomes.values()} == {"passed"}
    assert [f.issue for f in fr.accounting] == ["no-reporter"]


def test_a_process_that_ends_before_its_session_gives_no_account(tmp_path):
    root = _file(tmp_path, PLAIN)
    (tmp_path / "conftest.py").write_text(
        "import os\n\nimport pytest\n\n\n@pytest.hookimpl(tryfirst=True)\n"
        "def pytest_sessionfinish(session):\n    os._exit(0)\n")
    fr = run_single_file(root, "test_f.py")
    assert {o.outcome for o in fr.outcomes.values()} == {"passed"}       # what the reports say stays
    (none,) = fr.accounting
    assert (none.issue, none.stopped_by) == ("no-account", "the process ended (exit code 0) between tests, "
                                                            "before the session did")
    assert accounting.describe("B", none) == ("arm B: no account of pytest's session of test_f.py (the process "
                                              "ended (exit code 0) between tests, before the session did)")


@pytest.mark.parametrize(
    ("exit_code", "status"),
    [("os._exit(1)", "exit code 1"), ("os.kill(os.getpid(), signal.SIGSEGV)", "SIGSEGV")],
    ids=["exit-1", "sigsegv"],
)
def test_a_process_that_fails_after_its_session_ended_is_said(tmp_path, exit_code, status):
    # every test passed and pytest's session ended 0; then an atexit handler or a crash at
    # interpreter exit: plain pytest's caller sees the failing status, so the run is never SAFE
    root = _file(tmp_path, PLAIN)
    (tmp_path / "conftest.py").write_text(f"import atexit, os, signal\n\natexit.register(lambda: {exit_code})\n")
    fr = run_single_file(root, "test_f.py")
    assert {o.outcome for o in fr.outcomes.values()} == {"passed"}  # what the reports say stays
    (exited,) = fr.accounting
    assert (exited.issue, exited.stopped_by, exited.exit_status, exited.files) == (
        "exited-after-end", status, 0, ["test_f.py"])
    assert accounting.describe("B", exited) == (
        f"arm B: the process of test_f.py ended with {status} after pytest's session ended with exit status 0")
    same = [Row(nodeid="t::x", category=Category.SAME_PASS)]
    assert verdict(_result(same, b_findings=[exited]))[0] == "INCONCLUSIVE"


def test_a_process_that_exits_as_its_session_ended_is_not_a_finding(tmp_path):
    root = _file(tmp_path, PLAIN.replace("assert True\n\n\n", "assert False\n\n\n", 1))
    fr = run_single_file(root, "test_f.py")  # exit status 1 from the session and from the process
    assert fr.accounting == []


def test_every_ordinary_outcome_agrees_with_pytest_s_account(tmp_path):
    # the control: skips, xfails (strict and not), subtests, errors in setup and teardown,
    # a module-level collection error in another file: no finding, no incomplete test
    root = _file(tmp_path, """
        import unittest

        import pytest


        @pytest.fixture
        def broken():
            raise RuntimeError("setup")


        @pytest.fixture
        def bad_teardown():
            yield
            raise RuntimeError("teardown")


        def test_pass():
            pass


        def test_fail():
            assert False


        def test_setup_error(broken):
            pass


        def test_teardown_error(bad_teardown):
            pass


        def test_fail_and_teardown_error(bad_teardown):
            assert False


        @pytest.mark.skip(reason="no")
        def test_skip():
            pass


        @pytest.mark.xfail(reason="known")
        def test_xfail():
            assert False


        @pytest.mark.xfail(reason="known")
        def test_xpass():
            pass


        @pytest.mark.xfail(strict=True, reason="known")
        def test_xpass_strict():
            pass


        @pytest.mark.xfail(run=False, reason="not run")
        def test_xfail_not_run():
            pass


        class TestU(unittest.TestCase):
            def test_subtests(self):
                for i in range(2):
                    with self.subTest(i=i):
                        self.assertEqual(i, 0)

            def test_skiptest(self):
                self.skipTest("later")
    """)
    fr = run_single_file(root, "test_f.py")
    got = {n.split("::")[-1]: o.outcome for n, o in fr.outcomes.items()}
    assert got == {
        "test_pass": "passed", "test_fail": "failed", "test_setup_error": "error", "test_teardown_error": "error",
        "test_fail_and_teardown_error": "failed", "test_skip": "skipped", "test_xfail": "xfailed",
        "test_xpass": "xpassed", "test_xpass_strict": "failed", "test_xfail_not_run": "xfailed",
        "test_subtests": "failed", "test_skiptest": "skipped",
    }
    assert fr.accounting == []


# ---------------------------------------------------------------------------
# a pack's session: reconciled once, its findings on one file naming them all


def test_a_packed_session_stopped_early(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    for root in (a, b):
        root.mkdir()
        for name in ("test_p.py", "test_q.py", "test_r.py"):
            (root / name).write_text("def test_one():\n    pass\n\n\ndef test_two():\n    pass\n")
    (b / "test_q.py").write_text("def test_one():\n    pass\n\n\ndef test_two():\n    import pytest\n"
                                 "    pytest.exit('done', returncode=0)\n")
    result = run_ab(RunOptions(paths=["."], a_root=str(a), b_root=str(b), pack=True, jobs=2, confirm=0,
                               label_filter=False))
    assert result.verdict == "REGRESSION"
    rows = {t.nodeid: t for t in result.tests}
    assert rows["test_q.py::test_two"].category == "incomplete"
    assert rows["test_r.py::test_one"].category == "coverage-lost"     # its session ended before it
    assert rows["test_p.py::test_one"].category == "same-pass"
    (stopped,) = result.arm("B").accounting
    assert stopped.issue == "stopped" and stopped.files == ["test_p.py", "test_q.py", "test_r.py"]
    assert result.arm("A").accounting == []
    assert "pytest's session of test_p.py, test_q.py, test_r.py was ended early by pytest.exit('done')" in (
        result.verdict_reason)


# ---------------------------------------------------------------------------
# the verdict


def _result(rows, a_findings=(), b_findings=()):
    r = ABResult()
    r.arms = [ArmResult(name="A", label="A", root="/r", source="x", outcomes={"t::x": Outcome(nodeid="t::x",
                                                                                         outcome="passed")},
                        accounting=list(a_findings)),
              ArmResult(name="B", label="B", root="/r", source="x", outcomes={"t::x": Outcome(nodeid="t::x",
                                                                                         outcome="passed")},
                        accounting=list(b_findings))]
    r.tests = rows
    r.counts = {}
    for row in rows:
        r.counts[row.category] = r.counts.get(row.category, 0) + 1
    return r


def test_a_session_finding_is_never_safe():
    found = AccountFinding(issue=AccountIssue.NO_TEST_RAN, files=["t.py"], pytest={"collected": 2, "run": 0})
    same = [Row(nodeid="t::x", category=Category.SAME_PASS)]
    assert verdict(_result(same)) == ("SAFE", "no test regressed")
    assert verdict(_result(same, b_findings=[found])) == (
        "INCONCLUSIVE", "arm B: pytest reports 0 tests run of the 2 it collected in t.py")
    assert verdict(_result(same, a_findings=[found]))[0] == "INCONCLUSIVE"
    lost = [Row(nodeid="t::x", category=Category.INCOMPLETE)]
    assert verdict(_result(lost, b_findings=[found, found])) == (
        "REGRESSION", "1 incomplete; arm B: pytest reports 0 tests run of the 2 it collected in t.py "
        "(and 1 more session)")


def test_incomplete_against_what_a_did():
    a_ran, b_incomplete = Outcome(nodeid="t::x", outcome="passed"), Outcome(nodeid="t::x", outcome="incomplete",
                                                                            message="stopped in its call phase: x")
    a = ArmResult(name="A", label="A", root="/r", source="x", outcomes={"t::x": a_ran})
    b = ArmResult(name="B", label="B", root="/r", source="x", outcomes={"t::x": b_incomplete})
    (row,) = compare_arms(a, b)
    assert (row.category, row.note) == ("incomplete", "incomplete in B: stopped in its call phase: x")
    (both,) = compare_arms(b, b)
    assert (both.category, both.note) == ("inconclusive", "incomplete in both arms")


# ---------------------------------------------------------------------------
# narrowed device sets


DEVICE = """
from torch.testing._internal.common_device_type import instantiate_device_type_tests, onlyCPU
from torch.testing._internal.common_utils import HardwareClassification, TestCase


class TestDev(TestCase):
    hw_classification = HardwareClassification.ACCELERATOR

    def test_add(self, device):
        pass

    def test_mul(self, device):
        pass


instantiate_device_type_tests(TestDev, globals(){opts})
"""


def _narrowed(before: str, after: str) -> list[tuple[str, str, str, list[str]]]:
    return [(n.by, n.cls, n.test, n.devices) for n in narrowings(ast.parse(before), ast.parse(after))]


def test_a_narrowed_instantiation():
    a = DEVICE.format(opts="")
    assert _narrowed(a, DEVICE.format(opts=', except_for=("cuda", "xpu", "mps")')) == [
        ("instantiation", "TestDev", "", ["cuda"])]
    assert _narrowed(a, DEVICE.format(opts=', only_for=("cpu",)')) == [
        ("instantiation", "TestDev", "", ["cuda", "other-accelerators"])]
    assert _narrowed(DEVICE.format(opts=", allow_mps=True"), a) == [("instantiation", "TestDev", "", ["mps"])]
    assert _narrowed(a, DEVICE.format(opts=", allow_mps=True")) == []              # widened: not narrowed
    assert _narrowed(a, DEVICE.format(opts=", only_for=DEVICES")) == []            # unknown: said elsewhere


def test_a_device_guard_and_a_label_that_narrow():
    a = DEVICE.format(opts="")
    guarded = a.replace("    def test_add", "    @onlyCPU\n    def test_add")
    assert _narrowed(a, guarded) == [("decorator", "TestDev", "test_add", ["cuda", "other-accelerators"])]
    relabelled = a.replace("HardwareClassification.ACCELERATOR", "HardwareClassification.CUDA")
    assert _narrowed(a, relabelled) == [("label", "TestDev", "", ["mps", "xpu", "other-accelerators"])]
    assert _narrowed(relabelled, a) == []


def _changes(*narrowed, instantiations=()):
    return Changes(files=[FileChange(path="t.py", narrowed=list(narrowed), instantiations=list(instantiations))])


def test_a_map_that_says_where_they_went_explains_a_narrowing():
    n = DeviceNarrowing(cls="TestDev", by=NarrowedBy.INSTANTIATION, devices=["cuda"])
    changes = _changes(n)
    a = ArmResult(name="A", label="A", root="/r", source="x",
                  outcomes={"t.py::TestDevCPU::test_add_cpu": Outcome(nodeid="x", outcome="passed")})
    explain_narrowed(changes, {"TestDevCUDA": "TestAccelCUDA"}, a)
    assert n.mapped == "t.py::TestDevCUDA::test_add_cuda -> t.py::TestAccelCUDA::test_add_cuda"
    explain_narrowed(changes, {"t.py::TestDevCPU::test_add_cpu": "t.py::TestNewCPU::test_add_cpu"}, a)
    assert n.mapped == ""                                         # says nothing of the cuda tests
    explain_narrowed(changes, {"TestDevCUDA": "TestDevCUDA"}, a)
    assert n.mapped == ""                                         # back to the class that lost them


def test_a_class_the_map_renames_is_compared_with_the_class_it_becomes():
    renamed = [
        InstantiationChange(cls="TestDev", before="(no options)", devices_before=["cpu", "cuda", "other-accelerators"]),
        InstantiationChange(cls="TestDevice", after="except_for=('cuda',)",
                            devices_after=["cpu", "other-accelerators"]),
    ]
    changes = _changes(instantiations=renamed)
    explain_narrowed(changes, {"TestDev": "TestDevice"}, None)
    (n,) = changes.files[0].narrowed
    assert (n.cls, n.devices, n.after, n.mapped) == ("TestDev", ["cuda"], "TestDevice: except_for=('cuda',)", "")
    result = _result([Row(nodeid="t::x", category=Category.SAME_PASS)])
    result.changes = changes
    assert verdict(result) == (
        "REGRESSION", "coverage-lost on other machines: TestDev (t.py) no longer instantiated for: cuda")


# ---------------------------------------------------------------------------
# the reports say only what was run


class _Plain(Fmt):
    def text(self, s):
        return s

    def code(self, s):
        return s

    def strong(self, s):
        return s


def test_the_terminal_shows_control_characters_as_escapes():
    r = _result([Row(nodeid="t\x07.py::x\x00y", category=Category.NEW_FAILURE,
                                a=Outcome(nodeid="t", outcome="passed"),
                                b=Outcome(nodeid="t", outcome="failed", message="bad\x1b[2Jthing\nsecond line"))])
    r.verdict, r.verdict_reason = "REGRESSION", "1 new-failure: t\x07.py::x\x00y"
    text = terminal.render(r)
    assert "\x07" not in text and "\x00" not in text and "\x1b" not in text
    assert "decouple ab: REGRESSION - 1 new-failure: t\\x07.py::x\\x00y\n" in text
    assert "  new-failure  t\\x07.py::x\\x00y  passed  failed  bad\\x1b[2Jthing\n" in text
    r.tests[0].b.message = "second line\nthird line"
    r.tests[0].b.outcome = "crashed"
    r.arms[1].label = "work\ntree"
    assert "B: work\\ntree" in terminal.render(r)


def test_an_arm_that_ran_no_file_has_nothing_to_reproduce():
    r = _result([])
    r.arms[1].command = ""
    r.arms[0].command = "cd /r && python -m pytest t.py"
    text = terminal.render(r)
    assert "  B (x): no test file ran in this arm" in text


def test_a_node_id_whose_test_b_removed_is_not_said_to_be_its_file_s_last():
    a = ArmResult(name="A", label="A", root="/r", source="x", outcomes={"t.py::b": Outcome(nodeid="t.py::b",
                                                                                       outcome="passed")})
    b = ArmResult(name="B", label="B", root="/r", source="x")
    assert compare_arms(a, b)[0].note == "not collected in B: B collects no test of t.py"
    assert compare_arms(a, b, paths=["t.py::b"])[0].note == "not collected in B"


def test_an_explain_comment_is_no_torch_load_edit():
    patch = ("diff --git a/t.py b/t.py\n--- a/t.py\n+++ b/t.py\n@@ -2,0 +3,2 @@\n"
             "+        # trusted test checkpoint: weights_only=False\n"
             "+        torch.load(f, weights_only=False)\n")
    source = "class TestX:\n    def test_x(self):\n        # c\n        torch.load(f, weights_only=False)\n"
    (fc,) = read_patch(patch, {"t.py": source}, {"t.py": source})
    (cc,) = fc.classes
    assert cc.torch_load == ["weights_only=False"]


def test_a_work_tree_that_was_a_commit_is_described_so():
    arm = ArmResult(name="B", label="work tree", root="/r", source="worktree", commit="c" * 40)
    assert arm_description(arm, ABResult(), _Plain("en")) == (
        "the work tree at commit cccccccccccc (no uncommitted change among the files run)")
    arm.commit = ""
    assert arm_description(arm, ABResult(), _Plain("en")) == "the work tree, uncommitted changes included"
    assert "PYTHONDONTWRITEBYTECODE=1" in markdown(ABResult(), "en") and "rather than" not in markdown(ABResult(), "en")


def test_junit_reports_an_incomplete_test_as_an_error():
    b = Outcome(nodeid="t.py::x", outcome="incomplete", message="stopped in its call phase: pytest.exit('done')")
    r = _result([Row(nodeid="t.py::x", category=Category.INCOMPLETE, a=Outcome(nodeid="t.py::x", outcome="passed"),
                     b=b)])
    xml = junit.render(r)
    assert '<error message="stopped in its call phase: pytest.exit(\'done\')" type="ab.incomplete"' in xml
    assert 'errors="1"' in xml and 'skipped="0"' in xml


def test_a_map_that_folds_two_tests_of_a_onto_one_of_b_loses_one():
    a = ArmResult(name="A", label="A", root="/r", source="x",
                  outcomes={n: Outcome(nodeid=n, outcome="passed") for n in ("t.py::one", "t.py::two")})
    b = ArmResult(name="B", label="B", root="/r", source="x", outcomes={"t.py::one": Outcome(nodeid="t.py::one",
                                                                                         outcome="passed")})
    rows = {r.nodeid: r for r in compare_arms(a, b, {"t.py::two": "t.py::one"})}
    assert rows["t.py::one"].category == "same-pass"
    assert (rows["t.py::two"].category, rows["t.py::two"].note) == (
        "coverage-lost", "--map folds it onto t.py::one, which stands for t.py::one of A: not run in B")
    # a swap is no fold
    both = ArmResult(name="B", label="B", root="/r", source="x",
                     outcomes={n: Outcome(nodeid=n, outcome="passed") for n in ("t.py::one", "t.py::two")})
    swapped = compare_arms(a, both, {"t.py::one": "t.py::two", "t.py::two": "t.py::one"})
    assert {r.category for r in swapped} == {"same-pass"}
