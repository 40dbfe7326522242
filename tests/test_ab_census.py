"""The runtime classification census: the label every test's class carries when it runs,
counted per arm; a labelled file whose tests run unclassified (a label on a template the
module deletes, classes made by a factory) is an `unclassified-at-runtime` finding naming
them; where the tree's conftest offers --hw-classification, B's labelled files run once
more under that filter and the report says how many tests it keeps of how many."""

from __future__ import annotations

from pathlib import Path

import pytest

from codemod.ab.execution import labelfilter
from codemod.ab.comparison.coverage import labelled_classes
from codemod.ab.arms.options import RunOptions
from codemod.ab.execution.run import run_ab

CENSUS = Path(__file__).resolve().parent / "fixtures" / "ab" / "census"


@pytest.fixture(scope="module")
def census(tmp_path_factory):
    cwd = tmp_path_factory.mktemp("census")
    return run_ab(RunOptions(paths=["."], a_root=str(CENSUS / "a"), b_root=str(CENSUS / "b"), cwd=str(cwd), jobs=2))


def test_every_outcome_carries_its_runtime_label(census):
    b = census.arm("B")
    assert b.outcomes["test_plain.py::TestPlain::test_one"].hw_classification == "GENERIC"
    assert b.outcomes["test_factory.py::Written::test_written"].hw_classification == "GENERIC"
    # the template is labelled, the class its tests run in is not; the factory's class neither
    assert b.outcomes["test_template.py::CpuTests::test_add"].hw_classification is None
    assert b.outcomes["test_factory.py::MadeTests::test_made"].hw_classification is None
    assert all(o.hw_classification is None for o in census.arm("A").outcomes.values())


def test_classification_counts_per_arm(census):
    assert census.arm("A").classification_counts == {"unclassified": 6}
    assert census.arm("B").classification_counts == {"GENERIC": 3, "unclassified": 3}


def test_unclassified_at_runtime_names_the_classes(census):
    found = {f.file: f for f in census.runtime}
    assert set(found) == {"test_template.py", "test_factory.py"}
    assert (found["test_template.py"].classes, found["test_template.py"].tests) == (["CpuTests"], 2)
    assert found["test_template.py"].labelled == ["Template"]
    assert (found["test_factory.py"].classes, found["test_factory.py"].labelled) == (["MadeTests"], ["Written"])
    # the run itself lost nothing, and its verdict sentence says what the census found
    assert census.verdict == "SAFE"
    assert "unclassified at run time: 2 tests of test_template.py (CpuTests) carry no hw_classification" in (
        census.verdict_reason)


def test_b_under_the_label_filter_of_the_values_written(census):
    runs = {r.file: r for r in census.label_filter}
    assert set(runs) == {"test_factory.py", "test_plain.py", "test_template.py"}
    plain, template, factory = runs["test_plain.py"], runs["test_template.py"], runs["test_factory.py"]
    assert (plain.values, plain.total, plain.selected, plain.passed, plain.unclassified) == (["GENERIC"], 2, 2, 2, 0)
    assert (template.total, template.selected, template.unclassified, template.mismatched) == (2, 0, 2, 0)
    assert (factory.total, factory.selected, factory.passed, factory.unclassified) == (2, 1, 1, 1)
    filtered = census.arm(labelfilter.ARM)
    assert filtered.extra_args == ["--hw-classification", "GENERIC"]
    dropped = filtered.outcomes["test_template.py::CpuTests::test_add"]
    assert dropped.outcome == "deselected" and dropped.message == "removed from the collection by label_filter"


def test_no_filter_run_without_the_option_in_the_tree(tmp_path):
    for side in ("a", "b"):
        (tmp_path / side).mkdir()
        for name in ("hwc.py", "test_plain.py"):
            (tmp_path / side / name).write_text((CENSUS / side / name).read_text())
    result = run_ab(RunOptions(paths=["."], a_root=str(tmp_path / "a"), b_root=str(tmp_path / "b"), jobs=2))
    assert result.label_filter == [] and result.arm(labelfilter.ARM) is None
    assert result.runtime == [] and result.arm("B").classification_counts == {"GENERIC": 2}


def test_labelled_classes_reads_every_form():
    source = ("class A:\n    hw_classification = HardwareClassification.GENERIC\n"
              "class B:\n    hw_classification: HardwareClassification = common_utils.HardwareClassification.CPU\n"
              "class C:\n    other = 1\n")
    assert labelled_classes(source) == ["A", "B"]


def test_the_finding_names_the_labels_that_reach_no_test():
    # test_inductor_freezing.py's shape: a labelled template deleted at import (its tests run
    # in an unlabelled class), next to a labelled class whose tests do carry the label
    from codemod.ab.comparison.coverage import runtime_findings
    from codemod.ab.result.model import ArmResult, Outcome

    source = ("class Template:\n    hw_classification = HardwareClassification.GENERIC\n"
              "class Kept:\n    hw_classification = HardwareClassification.GENERIC\n")
    outcomes = {n: Outcome(nodeid=n, outcome="passed", hw_classification=v) for n, v in (
        ("t.py::CpuTests::test_a", None), ("t.py::CpuTests::test_b", None), ("t.py::Kept::test_c", "GENERIC"))}
    b = ArmResult(name="B", label="B", root="/r", source="x", outcomes=outcomes)
    (found,) = runtime_findings(b, {"t.py": source})
    assert (found.classes, found.tests, found.labelled) == (["CpuTests"], 2, ["Template"])
