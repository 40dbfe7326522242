"""The PR's Test Plan works as written: each file's command fits how it runs (the four
shapes: run_tests(), unittest.main(), raise_on_run_directly(RUNNER), no __main__ block;
the pytest form where the tree's conftest offers --hw-classification), and the A/B run
runs each command in B and records what it printed."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from codemod.ab.execution import testplan
from codemod.ab.result.model import PlanShape
from codemod.ab.arms.options import RunOptions
from codemod.ab.execution.run import run_ab

FIX = Path(__file__).resolve().parent / "fixtures" / "ab"
PLAN = FIX / "testplan"


@pytest.mark.parametrize("path,shape,argv", [
    ("test_runs_tests.py", PlanShape.RUN_TESTS, "python test_runs_tests.py --hw-classification GENERIC -v"),
    ("test_unittest_main.py", PlanShape.UNITTEST_MAIN, "python test_unittest_main.py -v"),
    ("sub/test_refuses.py", PlanShape.RUNNER, "python runner_jit.py TestRefuses --hw-classification GENERIC -v"),
    ("test_no_main.py", PlanShape.PYTEST, "python -m pytest test_no_main.py -v"),
])
def test_each_file_shape_gets_the_command_that_works(path, shape, argv):
    got_shape, got = testplan.command(path, (PLAN / path).read_text(), conftest_offers=False)
    assert (got_shape, " ".join(got)) == (shape, argv)
    # where the tree's conftest offers the option, the pytest form with the filter
    assert testplan.command(path, (PLAN / path).read_text(), conftest_offers=True)[1] == [
        "python", "-m", "pytest", path, "--hw-classification", "GENERIC", "-v"]


@pytest.mark.parametrize("path,fails_with", [
    ("test_unittest_main.py", "unrecognized arguments: --hw-classification"),
    ("sub/test_refuses.py", "not meant to be run directly"),
])
def test_the_one_size_command_fails_for_these_shapes(path, fails_with, tmp_path):
    # what a Test Plan of `python FILE --hw-classification GENERIC -v` for every file did
    shutil.copytree(PLAN, tmp_path / "t")
    done = subprocess.run([sys.executable, path, "--hw-classification", "GENERIC", "-v"], cwd=tmp_path / "t",
                          capture_output=True, text=True, timeout=120)
    assert done.returncode != 0 and fails_with in done.stderr, done.stderr
    nothing = subprocess.run([sys.executable, "test_no_main.py", "-v"], cwd=tmp_path / "t", capture_output=True,
                             text=True, timeout=120)
    assert nothing.returncode == 0 and nothing.stdout == nothing.stderr == ""   # ran nothing, said nothing


def test_summary_lines_of_unittest_pytest_and_the_filter():
    out = "test_a (m.T) ... ok\n\n----\nRan 3 tests in 0.01s\n\nOK (skipped=1)\n"
    assert testplan.summary_of(out) == "Ran 3 tests in 0.01s\nOK (skipped=1)"
    out = "collecting ... HW classification mode active (['GENERIC']): total=5, passed=3, unclassified=2, mismatched=0\n" \
          "collected 5 items / 2 deselected / 3 selected\n========= 3 passed, 2 deselected in 0.52s =========\n"
    assert testplan.summary_of(out).splitlines() == [
        "HW classification mode active (['GENERIC']): total=5, passed=3, unclassified=2, mismatched=0",
        "3 passed, 2 deselected in 0.52s"]
    assert "unrecognized arguments" in testplan.summary_of("usage: x\nx.py: error: unrecognized arguments: -q\n")


def test_the_ab_run_runs_every_command_in_b_and_records_what_it_printed(tmp_path):
    result = run_ab(RunOptions(paths=["."], a_root=str(PLAN), b_root=str(PLAN), cwd=str(tmp_path), jobs=2,
                               test_plan=True))
    runs = {r.file: r for r in result.test_plan}
    assert set(runs) == {"sub/test_refuses.py", "test_no_main.py", "test_runs_tests.py", "test_unittest_main.py"}
    assert all(r.returncode == 0 for r in runs.values()), runs
    # unittest's own two lines, whatever the run took
    assert re.fullmatch(r"Ran 2 tests in \d+\.\d+s\nOK", runs["test_unittest_main.py"].summary)
    assert runs["sub/test_refuses.py"].summary.startswith("Ran 1 test in ")
    assert runs["test_no_main.py"].summary.startswith("1 passed in ")
    assert result.verdict == "SAFE"
    # a runner outside the compared tree is said, not run
    (tmp_path / "b").mkdir()
    shutil.copytree(PLAN / "sub", tmp_path / "b" / "sub")
    for name in ("hwc.py", "runtests.py"):
        shutil.copy(PLAN / name, tmp_path / "b" / name)
    result = run_ab(RunOptions(paths=["sub"], a_root=str(tmp_path / "b"), b_root=str(tmp_path / "b"),
                               cwd=str(tmp_path), jobs=2, test_plan=True))
    (run,) = result.test_plan
    assert run.returncode is None and run.note == "not run: runner_jit.py, the runner it names, is not in the compared tree"


def test_the_pytest_form_where_the_conftest_offers_the_filter(tmp_path):
    census = FIX / "census"
    result = run_ab(RunOptions(paths=["."], a_root=str(census / "a"), b_root=str(census / "b"), cwd=str(tmp_path),
                               jobs=2, test_plan=True))
    runs = {r.file: r for r in result.test_plan}
    assert runs["test_plain.py"].command == "python -m pytest test_plain.py --hw-classification GENERIC -v"
    assert runs["test_plain.py"].returncode == 0
    assert runs["test_plain.py"].summary.splitlines() == ["label filter: total=2, passed=2", runs["test_plain.py"].summary.splitlines()[1]]
    # the deleted template's tests: the filter drops them all, pytest says so (exit 5)
    assert runs["test_template.py"].returncode == 5 and "no tests ran" in runs["test_template.py"].summary
