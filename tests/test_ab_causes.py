"""The cause table (codemod/ab/comparison/causes.py) and `decouple ab --diagnose`."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from codemod.ab.comparison import causes
from codemod.cli.ab import ab
from codemod.ab.result.model import ABResult, ArmResult, DiagnosticSummary, Environment, Outcome
from codemod.ab.result.model import TestComparison as Comparison
from codemod.report.ab import markdown as ab_markdown

HERE = Path(__file__).resolve().parent
FIX = HERE / "fixtures" / "ab_diagnose"
RESULTS = HERE / "fixtures" / "ab_results"


def _ctx(text: str, scope: str = "both", env: Environment | None = None) -> causes.Context:
    return causes.Context(causes.outcome_from_text(text), scope, env or Environment())


@pytest.mark.parametrize("cause", causes.CAUSES, ids=lambda c: c.id)
def test_every_cause_matches_its_own_examples(cause):
    assert cause.examples, f"{cause.id} has no examples"
    for text, scope, expected in cause.examples:
        assert cause.matches(_ctx(text, scope)) is expected, (cause.id, text, scope)
    assert set(cause.explanation) == set(cause.remedy) == {"en", "zh"}


def test_first_matching_cause_wins_and_unknown_is_none():
    assert causes.match(_ctx("ModuleNotFoundError: No module named 'expecttest'")).id == "missing-test-dependency"
    assert causes.match(_ctx("AssertionError: 1 != 2")) is None


def _group(nodeids, text, a_out="failed", b_out="failed", category="pre-existing"):
    tests = []
    for nid in nodeids:
        ref = causes.outcome_from_text(text)
        a = Outcome(nodeid=nid, outcome=a_out, exc_type=ref.exc_type, message=ref.message, signature=ref.signature) \
            if a_out != "passed" else Outcome(nodeid=nid, outcome="passed")
        b = Outcome(nodeid=nid, outcome=b_out, exc_type=ref.exc_type, message=ref.message, signature=ref.signature)
        tests.append(Comparison(nodeid=nid, category=category, a=a, b=b))
    return tests


def test_analyse_diag_confirmed_not_confirmed_and_pending():
    ids = [f"t.py::T::test_{i}" for i in range(3)]
    text = ("_pickle.UnpicklingError: Weights only load failed. WeightsUnpickler error: Unsupported global: "
            "GLOBAL t.Net was not an allowed global by default.")
    r = ABResult(verdict="SAFE", tests=_group(ids, text), environment=Environment(torch_version="2.14.1"))
    (f,) = causes.analyse(r)
    assert (f.cause, f.status, f.experiment, f.based_on) == ("weights-only-default", "suspected", "diag", "A")
    assert f.variables == {"TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD": "1"} and f.evidence["global"] == "t.Net"
    arm = ArmResult(name="w", label="w", root="/w", source="git:HEAD",
                    outcomes={n: Outcome(nodeid=n, outcome="passed") for n in ids})
    r.arms.append(arm)
    r.diagnostics.append(DiagnosticSummary(name="w", based_on="A", variables={"TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD": "1"}))
    (f,) = causes.analyse(r)
    assert f.status == "confirmed" and f.evidence["passed"] == f.evidence["total"] == "3"
    arm.outcomes[ids[0]] = Outcome(nodeid=ids[0], outcome="failed")
    (f,) = causes.analyse(r)
    assert f.status == "not-confirmed" and f.evidence["passed"] == "2"
    md = ab_markdown.render(r)
    assert "**Cause not confirmed**" in md and "2 of 3 tests pass" in md and "Remedy:" not in md


def test_missing_hardware_classification_in_b_only_is_a_regression_of_the_torch_version():
    ids = ["t.py::T::test_a"]
    r = ABResult(verdict="REGRESSION", environment=Environment(torch_version="2.13.0", has_hw_classification=False),
                 tests=_group(ids, "ImportError: cannot import name 'HardwareClassification' from "
                              "'torch.testing._internal.common_utils'", a_out="passed", b_out="error",
                              category="new-failure"))
    (f,) = causes.analyse(r)
    assert (f.scope, f.cause, f.status) == ("b-only", "hw-classification-missing", "confirmed")
    md = ab_markdown.render(r)
    assert "**Failures new or different in B**" in md
    assert "a real REGRESSION on this interpreter, caused by the torch version" in md
    zh = ab_markdown.render(r, "zh")
    assert "仅在 B 组中以" in zh and "原因是 torch 版本" in zh
    r.environment.has_hw_classification = True
    assert causes.analyse(r)[0].status == "not-confirmed"


def test_missing_optional_dependency_confirmed_by_an_import_check():
    ids = ["t.py::T::test_a", "t.py::T::test_b"]
    r = ABResult(verdict="SAFE", tests=_group(ids, "ModuleNotFoundError: No module named 'hypothesis'"))
    assert causes.analyse(r)[0].status == "suspected"
    (f,) = causes.analyse(r, {"hypothesis": False})
    assert (f.cause, f.status, f.evidence["package"]) == ("missing-test-dependency", "confirmed", "hypothesis")
    r.causes = [f]
    md = ab_markdown.render(r)
    assert "Evidence: the target interpreter cannot find `hypothesis`." in md
    assert "Remedy: install it into the target interpreter: `python -m pip install hypothesis`" in md
    assert causes.analyse(r, {"hypothesis": True})[0].status == "not-confirmed"


def test_quantized_engine_cites_the_probe():
    r = ABResult.from_json(json.loads((RESULTS / "quant_prepack_aarch64.json").read_text()))
    (f,) = causes.analyse(r)
    assert (f.cause, f.status, f.experiment) == ("quantized-engine", "confirmed", "probe")
    assert f.evidence["engine"] == "fbgemm" and f.evidence["error"] == "RuntimeError: unknown architecure"
    r.environment.prepack = {k: "ok" for k in r.environment.prepack}
    (f,) = causes.analyse(r)
    assert f.status == "not-confirmed"
    assert "the environment probe's prepack smoke test passes for every engine" in ab_markdown.render(r)


def test_backend_autoload_suspected_with_its_diagnostic_variables():
    r = ABResult(tests=_group(["t.py::test_a"], "RuntimeError: Failed to load the backend extension: torch_npu. "
                              "You can disable extension auto-loading with TORCH_DEVICE_BACKEND_AUTOLOAD=0."),
                 environment=Environment(backends={"torch_npu": "2.6.0"}))
    (f,) = causes.analyse(r)
    assert (f.cause, f.variables) == ("device-backend-autoload", {"TORCH_DEVICE_BACKEND_AUTOLOAD": "0"})
    assert "an out-of-tree device backend (torch\\_npu 2.6.0)" in ab_markdown.render(r)


def test_diagnose_cites_the_probe_on_a_synthetic_quantized_engine_failure(tmp_path):
    out = tmp_path / "r.json"
    md = tmp_path / "r.md"
    res = CliRunner().invoke(ab, ["test_qengine.py", "--a-root", str(FIX / "quant"), "--b-root", str(FIX / "quant"),
                                  "-q", "-j", "2", "--diagnose", "--json", str(out), "--markdown", str(md)],
                             catch_exceptions=False)
    assert res.exit_code == 0, res.output
    r = ABResult.from_json(json.loads(out.read_text()))
    (f,) = r.causes
    assert f.cause == "quantized-engine" and len(f.nodeids) == 2 and f.experiment == "probe"
    text = md.read_text()
    if r.environment.prepack:          # torch in this interpreter: the probe's per-engine check is the evidence
        assert f.status in ("confirmed", "not-confirmed")
        assert "the environment probe's prepack smoke test" in text
    else:
        assert f.status == "suspected" and "the environment probe has no prepack result" in text
    assert not [a for a in r.arms if a.name.startswith("diagnose-")]     # a probe fact needs no extra run


def _torch_python() -> str:
    py = os.environ.get("DECOUPLE_TORCH_PYTHON") or sys.executable
    proc = subprocess.run([py, "-c", "import torch, pytest; print(torch.__version__)"], capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip(f"{py} cannot import torch and pytest (set DECOUPLE_TORCH_PYTHON)")
    if tuple(int(x) for x in proc.stdout.strip().split("+")[0].split(".")[:2]) < (2, 6):
        pytest.skip(f"torch {proc.stdout.strip()} still defaults to weights_only=False")
    return py


def _git_repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    shutil.copytree(FIX / "weights" / "a", repo)
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "base"]):
        subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)
    shutil.copytree(FIX / "weights" / "b", repo, dirs_exist_ok=True)
    return repo


@pytest.mark.torch
def test_diagnose_confirms_the_weights_only_cause_by_itself(tmp_path, monkeypatch):
    py = _torch_python()
    repo = _git_repo(tmp_path)
    monkeypatch.chdir(repo)
    out, md, zh = tmp_path / "r.json", tmp_path / "r.md", tmp_path / "r.zh.md"
    res = CliRunner().invoke(ab, ["test_checkpoint.py", "--base", "HEAD", "--python", py, "-q", "-j", "2",
                                  "--diagnose", "--json", str(out), "--markdown", str(md)], catch_exceptions=False)
    assert res.exit_code == 0, res.output                          # SAFE: the failures are pre-existing
    r = ABResult.from_json(json.loads(out.read_text()))
    (f,) = r.causes
    assert (f.cause, f.status, f.based_on) == ("weights-only-default", "confirmed", "A")
    assert sorted(f.nodeids) == ["test_checkpoint.py::TestCheckpoint::test_whole_module_roundtrip",
                                 "test_checkpoint.py::TestCheckpoint::test_whole_module_twice"]
    assert f.evidence["passed"] == f.evidence["total"] == "2" and f.evidence["global"] == "test_checkpoint.TinyNet"
    diag = r.arm(f.evidence["diag"])
    assert diag is not None and diag.env_added["TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD"] == "1"
    assert set(diag.outcomes) == set(f.nodeids)                     # only the failing tests were rerun
    text = md.read_text()
    assert "**Cause confirmed**: the test's own `torch.load` reads a whole pickled object" in text
    assert "Remedy: make the call explicit in the test: `decouple apply --torch-load auto" in text
    assert "`decouple apply --torch-load weights-only-false test_checkpoint.py`" in text
    zh_text = ab_markdown.render(r, "zh")
    assert "**原因已确认**" in zh_text and "解决办法" in zh_text
    zh.write_text(zh_text)


def test_diagnose_runs_a_diagnostic_arm_on_the_failing_tests_only(tmp_path, monkeypatch):
    monkeypatch.chdir(FIX)
    out = tmp_path / "r.json"
    res = CliRunner().invoke(ab, ["test_backend.py", "--a-root", "autoload", "--b-root", "autoload", "-q", "-j", "2",
                                  "--diagnose", "--json", str(out), "--markdown", str(tmp_path / "r.md"),
                                  "--lang", "zh"], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    r = ABResult.from_json(json.loads(out.read_text()))
    (f,) = r.causes
    assert (f.cause, f.status, f.based_on) == ("device-backend-autoload", "confirmed", "A")
    assert f.evidence["passed"] == f.evidence["total"] == "2"
    diag = r.arm("diagnose-noautoload")
    assert diag.env_added["TORCH_DEVICE_BACKEND_AUTOLOAD"] == "0" and diag.source == f"dir:{FIX / 'autoload'}"
    md = (tmp_path / "r.md").read_text()
    assert "**原因已确认**：`import torch` 时自动加载的外部设备后端" in md
    assert "bash repro.sh diagnose-noautoload" in md
    script = (tmp_path / "repro.sh").read_text()
    assert "TORCH_DEVICE_BACKEND_AUTOLOAD=0" in script.split("arm_diagnose_noautoload() {")[1]
