"""The mutation probe: arm A a small passing suite, arm B one change each.

Every way B can stop running a test that ran in A is `coverage-lost` (REGRESSION, exit 1)
with the reason; every way it can fail is caught as before; the controls (a label only, a
comment, a new test, a fixed test, the same skip or the same failure in both arms) stay
SAFE.  One test per shape, each on a real A/B run (no torch).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from codemod.ab.comparison.compare import exit_code
from codemod.ab.arms.options import RunOptions
from codemod.ab.execution.run import run_ab

SUITE = {
    "test_a.py": """import unittest


class TestA(unittest.TestCase):
    def test_one(self):
        self.assertEqual(1, 1)

    def test_two(self):
        self.assertTrue(True)

    @unittest.skip("never here")
    def test_skipped(self):
        pass
""",
    "test_b.py": """import pytest


@pytest.mark.parametrize("x", [1, 2, 3])
def test_param(x):
    assert x


def test_plain():
    assert True
""",
}

Files = dict[str, str]


def edit(name: str, old: str, new: str) -> Callable[[Files], None]:
    def change(files: Files) -> None:
        assert old in files[name], (name, old)
        files[name] = files[name].replace(old, new, 1)

    return change


def put(name: str, text: str) -> Callable[[Files], None]:
    def change(files: Files) -> None:
        files[name] = text

    return change


def drop(name: str) -> Callable[[Files], None]:
    def change(files: Files) -> None:
        del files[name]

    return change


@dataclass
class Shape:
    b: list[Callable[[Files], None]]
    verdict: str
    expect: dict[str, tuple[str, str]]  # node id -> (category, a piece of its note)
    a: list[Callable[[Files], None]] = field(default_factory=list)


ONE, TWO, SKIPPED = "test_a.py::TestA::test_one", "test_a.py::TestA::test_two", "test_a.py::TestA::test_skipped"
PLAIN = "test_b.py::test_plain"
LOST = "coverage-lost"

SHAPES = {
    # -- ran in A, not run in B: coverage lost --------------------------------------------
    "module-skiptest": Shape(
        [edit("test_a.py", "import unittest\n", "import unittest\n\nraise unittest.SkipTest('not here')\n")],
        "REGRESSION",
        {ONE: (LOST, "module skipped in B: unittest.case.SkipTest: not here"), SKIPPED: ("same-skip", "")},
    ),
    "pytestmark-skip": Shape(
        [edit("test_b.py", "import pytest\n", "import pytest\n\npytestmark = pytest.mark.skip('later')\n")],
        "REGRESSION",
        {PLAIN: (LOST, "skipped in B: later"), "test_b.py::test_param[2]": (LOST, "later")},
    ),
    "class-skip": Shape(
        [edit("test_a.py", "class TestA", "@unittest.skip('whole class')\nclass TestA")],
        "REGRESSION",
        {ONE: (LOST, "skipped in B: whole class"), TWO: (LOST, "whole class")},
    ),
    "self-skiptest": Shape(
        [edit("test_a.py", "self.assertEqual(1, 1)", "self.skipTest('not today')")],
        "REGRESSION",
        {ONE: (LOST, "skipped in B: not today"), TWO: ("same-pass", "")},
    ),
    "skipif-true": Shape(
        [edit("test_a.py", "    def test_two", "    @unittest.skipIf(True, 'always')\n    def test_two")],
        "REGRESSION",
        {TWO: (LOST, "skipped in B: always"), ONE: ("same-pass", "")},
    ),
    "collect-ignore": Shape(
        [put("conftest.py", 'collect_ignore = ["test_a.py"]\n')],
        "REGRESSION",
        {
            ONE: (LOST, "left out of pytest's directory walk: collect_ignore in conftest.py"),
            SKIPPED: ("missing-in-b", "collect_ignore"),
            PLAIN: ("same-pass", ""),
        },
    ),
    "addopts-collect-only": Shape(
        [put("pytest.ini", "[pytest]\naddopts = --collect-only\n")],
        "REGRESSION",
        {
            # found by pytest's own account ("0 tests run"), not by the option's name
            ONE: (LOST, "not run in B: not run: its pytest session ran no test"),
            PLAIN: (LOST, "its pytest session ran no test"),
            # skipped in A, never run by B: no evidence either way (the verdict is REGRESSION anyway)
            SKIPPED: ("inconclusive", "skipped in A, never run in B: not run: its pytest session ran no test"),
        },
    ),
    "addopts-k": Shape(
        [put("pytest.ini", "[pytest]\naddopts = -k 'not test_plain'\n")],
        "REGRESSION",
        {PLAIN: (LOST, "not run in B: -k not test_plain"), ONE: ("same-pass", "")},
    ),
    "conftest-hook-drops-silently": Shape(
        [put("conftest.py", "def pytest_collection_modifyitems(items):\n"
                            "    items[:] = [i for i in items if 'plain' not in i.nodeid]\n")],
        "REGRESSION",
        {PLAIN: (LOST, "removed from the collection by conftest.py")},
    ),
    "no-unittest-plugin": Shape(
        [put("pytest.ini", "[pytest]\naddopts = -p no:unittest\n")],
        "REGRESSION",
        {ONE: (LOST, "not collected in B"), PLAIN: ("same-pass", "")},
    ),
    "python-files": Shape(
        [put("pytest.ini", "[pytest]\npython_files = test_b.py\n")],
        "REGRESSION",
        {ONE: (LOST, "B collects no test of test_a.py"), PLAIN: ("same-pass", "")},
    ),
    "dunder-test-false": Shape(
        [edit("test_a.py", "class TestA(unittest.TestCase):\n", "class TestA(unittest.TestCase):\n    __test__ = False\n\n")],
        "REGRESSION",
        {TWO: (LOST, "not collected in B")},
    ),
    "removed-test": Shape(
        [edit("test_a.py", "    def test_two(self):\n        self.assertTrue(True)\n\n", "")],
        "REGRESSION",
        {TWO: (LOST, "not collected in B")},
    ),
    "renamed-test": Shape(
        [edit("test_a.py", "def test_two", "def test_second")],
        "REGRESSION",
        {TWO: (LOST, "not collected in B"), "test_a.py::TestA::test_second": ("added-in-b", "")},
    ),
    "deleted-file": Shape(
        [drop("test_b.py")],
        "REGRESSION",
        {PLAIN: (LOST, "B collects no test of test_b.py"), ONE: ("same-pass", "")},
    ),
    "fewer-parametrize-cases": Shape(
        [edit("test_b.py", "[1, 2, 3]", "[1, 2]")],
        "REGRESSION",
        {"test_b.py::test_param[3]": (LOST, "not collected in B"), "test_b.py::test_param[1]": ("same-pass", "")},
    ),
    # -- B fails: caught as before ---------------------------------------------------------------
    "failing-assert": Shape(
        [edit("test_b.py", "    assert True\n", "    assert False\n")], "REGRESSION", {PLAIN: ("new-failure", "")}
    ),
    "error-in-test": Shape(
        [edit("test_b.py", "    assert True\n", "    raise KeyError('k')\n")], "REGRESSION", {PLAIN: ("new-failure", "")}
    ),
    "os-exit": Shape(
        [edit("test_b.py", "    assert True\n", "    import os\n    os._exit(3)\n")], "REGRESSION", {PLAIN: ("crash", "")}
    ),
    "sys-exit-at-import": Shape(
        [edit("test_b.py", "import pytest\n", "import sys\n\nimport pytest\n\nsys.exit(1)\n")],
        "REGRESSION",
        {PLAIN: ("new-failure", "")},
    ),
    "broken-conftest": Shape(
        [put("conftest.py", "import no_such_module_here\n")], "REGRESSION", {ONE: ("new-failure", "")}
    ),
    # -- the skipped test of A ------------------------------------------------------------------
    "skipped-test-removed": Shape(
        [edit("test_a.py", '    @unittest.skip("never here")\n    def test_skipped(self):\n        pass\n', "")],
        "REGRESSION",
        {SKIPPED: ("missing-in-b", "")},
    ),
    # -- controls: SAFE -----------------------------------------------------------------------------
    "control-label-only": Shape(
        [edit("test_a.py", "class TestA(unittest.TestCase):\n", "class TestA(unittest.TestCase):\n    hw_classification = None\n\n")],
        "SAFE",
        {ONE: ("same-pass", ""), SKIPPED: ("same-skip", "")},
    ),
    "control-comment": Shape(
        [edit("test_a.py", "    def test_one", "    # why this test exists\n    def test_one")], "SAFE", {ONE: ("same-pass", "")}
    ),
    "control-new-test": Shape(
        [edit("test_b.py", "def test_plain", "def test_new():\n    pass\n\n\ndef test_plain")],
        "SAFE",
        {"test_b.py::test_new": ("added-in-b", "")},
    ),
    "control-fixed-test": Shape(
        [],
        "SAFE",
        {PLAIN: ("fixed", "")},
        a=[edit("test_b.py", "    assert True\n", "    assert False\n")],
    ),
    "control-same-skip": Shape(
        [edit("test_a.py", "    def test_two", "    @unittest.skip('both')\n    def test_two")],
        "SAFE",
        {TWO: ("same-skip", "")},
        a=[edit("test_a.py", "    def test_two", "    @unittest.skip('both')\n    def test_two")],
    ),
    "control-same-failure": Shape(
        [edit("test_b.py", "    assert True\n", "    assert 1 == 2\n")],
        "SAFE",
        {PLAIN: ("pre-existing", "")},
        a=[edit("test_b.py", "    assert True\n", "    assert 1 == 2\n")],
    ),
}


def _tree(root: Path, changes: list[Callable[[Files], None]]) -> None:
    files = dict(SUITE)
    for change in changes:
        change(files)
    root.mkdir()
    for name, text in files.items():
        (root / name).write_text(text, encoding="utf-8")


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_mutation_probe(name, tmp_path):
    shape = SHAPES[name]
    _tree(tmp_path / "a", shape.a)
    _tree(tmp_path / "b", shape.b)
    result = run_ab(RunOptions(paths=["."], a_root=str(tmp_path / "a"), b_root=str(tmp_path / "b"),
                               cwd=str(tmp_path), jobs=2, confirm=1, timeout=60))
    rows = {t.nodeid: t for t in result.tests}
    for nodeid, (category, note) in shape.expect.items():
        assert nodeid in rows, (nodeid, sorted(rows))
        assert rows[nodeid].category == category, (nodeid, rows[nodeid])
        assert note in rows[nodeid].note, (nodeid, rows[nodeid].note)
    assert result.verdict == shape.verdict, (result.verdict, result.verdict_reason, result.counts)
    assert exit_code(result.verdict) == {"SAFE": 0, "REGRESSION": 1}[shape.verdict]
    if shape.verdict == "SAFE":
        assert "coverage-lost" not in result.counts and "missing-in-b" not in result.counts
    # the totals add up, side by side
    for arm in (result.arm("A"), result.arm("B")):
        t = arm.totals
        assert t.collected + len(arm.collection_skips) == (
            t.run + t.skipped + t.deselected + t.not_run + t.incomplete), (arm.name, t)


def test_markdown_escapes_without_html_entities():
    from codemod.report.ab.markdown import MarkdownFmt
    f = MarkdownFmt("en")
    assert f.text("torch >= 2.6 -> a < b & c") == "torch >= 2.6 -> a < b & c"
    assert f.text("<div> &amp; x_y *z*") == "\\<div> \\&amp; x\\_y \\*z\\*"
    assert f.text("> not a quote") == "\\> not a quote"


def test_junit_reports_lost_coverage_as_a_failure_whatever_b_did():
    import xml.etree.ElementTree as ET

    from codemod.ab.result.model import ABResult, ArmResult, Outcome, TestComparison
    from codemod.report.ab import junit as ab_junit
    skipped = Outcome(nodeid="t.py::test_x", outcome="skipped", message="not today")
    rows = [TestComparison(nodeid="t.py::test_x", category="coverage-lost", a=Outcome(nodeid="t.py::test_x", outcome="passed"),
                           b=skipped, note="skipped in B: not today")]
    arms = [ArmResult(name=n, label=n, root="/r", source="x") for n in ("A", "B")]
    xml = ET.fromstring(ab_junit.render(ABResult(verdict="REGRESSION", arms=arms, tests=rows)).split("\n", 1)[1])
    failure = xml.find(".//testcase/failure")
    assert failure is not None and failure.get("type") == "ab.coverage-lost"
    assert failure.get("message") == "coverage-lost: passed in A, skipped: skipped in B: not today"
    props = {p.get("name"): p.get("value") for p in xml.find("testsuite/properties")}
    assert props["ab.totals.A.collected"] == "0" and "ab.totals.B.deselected" in props
