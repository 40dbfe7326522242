"""A restructured file, A/B against a real torch: `only_for=("cpu", "cuda")` removed (the
device set widened to other accelerators), a mixed class split, the import extended.  The
reports say what the diff did, that the added devices were not exercised on this CPU-only
machine, and show a real torch traceback (through torch.autograd's Python code) with the
test's frame and the raising frame only."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from codemod.ab.arms.options import RunOptions
from codemod.ab.comparison.compare import read_map_file
from codemod.ab.execution.run import run_ab
from codemod.report.ab import html as ab_html
from codemod.report.ab import junit as ab_junit
from codemod.report.ab import markdown as ab_markdown

FIX = Path(__file__).resolve().parent / "fixtures" / "ab" / "restructured"


@pytest.fixture(scope="module")
def restructured(tmp_path_factory):
    py = os.environ.get("DECOUPLE_TORCH_PYTHON")
    if not py:
        pytest.skip("DECOUPLE_TORCH_PYTHON is not set")
    repo = tmp_path_factory.mktemp("restructured") / "repo"
    shutil.copytree(FIX / "a", repo)
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "base"]):
        subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)
    shutil.copytree(FIX / "b", repo, dirs_exist_ok=True)
    return run_ab(RunOptions(paths=["test_restructured.py"], base="HEAD", cwd=str(repo), python=py, jobs=2,
                             confirm=1, mapping=read_map_file(str(FIX / "map.json"))))


@pytest.mark.torch
def test_what_changed_reads_every_edit_of_the_diff(restructured):
    (fc,) = restructured.changes.files
    assert {c.name: c.labels for c in fc.classes} == {
        "TestScatter": ["ACCELERATOR"], "TestShapes": ["GENERIC"], "TestShapesAccelerator": ["ACCELERATOR"]}
    scatter = next(i for i in fc.instantiations if i.cls == "TestScatter")
    assert (scatter.before, scatter.after) == ("only_for=('cpu', 'cuda')", "(no options)")
    assert scatter.removed == ["only_for=('cpu', 'cuda')"] and scatter.widened == ["other-accelerators"]
    assert {i.cls for i in fc.instantiations} == {"TestScatter", "TestShapes", "TestShapesAccelerator"}
    assert [(m.test, m.old_class, m.new_class) for m in fc.moves] == [("test_add", "TestShapes", "TestShapesAccelerator")]
    assert fc.imports_extended == ["from torch.testing._internal.common_utils import HardwareClassification, run_tests, TestCase"]


@pytest.mark.torch
def test_the_verdict_names_the_devices_not_exercised_here(restructured):
    assert restructured.verdict == "SAFE"
    assert restructured.not_exercised == ["cuda", "other-accelerators"]
    assert "not exercised on this machine: cuda, other-accelerators (the device set widened in B)" in (
        restructured.verdict_reason)
    md = ab_markdown.render(restructured)
    assert "On this machine's devices the change is safe" in md and "The change is safe:" not in md
    assert ("Not exercised on this machine: `cuda`, `other-accelerators`. The device set of `TestScatter` widened "
            "in B") in md
    rows = {t.nodeid: t.category for t in restructured.tests}
    assert rows["test_restructured.py::TestShapes::test_view"] == "same-pass"       # mapped from TestShapesCPU
    assert rows["test_restructured.py::TestShapesAcceleratorCPU::test_add_cpu"] == "same-pass"
    assert restructured.arm("B").classification_counts == {"ACCELERATOR": 3, "GENERIC": 1}


@pytest.mark.torch
def test_no_library_source_in_any_traceback_view(restructured):
    md = ab_markdown.render(restructured)
    html = ab_html.render(restructured)
    junit = ab_junit.render(restructured)
    for text in (md, html, junit):
        assert "site-packages&gt;/torch/autograd/graph.py:" in text or "<site-packages>/torch/autograd/graph.py:" in text
        assert "attach_logging_hooks" not in text and "def _engine_run_backward" not in text   # torch's own source
    assert "test_restructured.py:22: in test_scatter_grad\n    torch.autograd.grad(x.sum(), [x])\n    (1 frames hidden)" in md
    assert len(md.splitlines()) < 200
