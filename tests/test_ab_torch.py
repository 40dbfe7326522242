"""A/B run against a real torch: the weights_only UnpicklingError case."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from codemod.report.ab import terminal
from codemod.ab.arms.options import RunOptions, parse_diag
from codemod.ab.execution.run import run_ab

FIX = Path(__file__).resolve().parent / "fixtures" / "ab" / "torchload"


def _torch_python() -> tuple[str | None, str]:
    py = os.environ.get("DECOUPLE_TORCH_PYTHON") or sys.executable
    try:
        proc = subprocess.run([py, "-c", "import torch, pytest; print(torch.__version__)"],
                              capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired) as err:
        return None, f"{py} cannot run: {err}"
    if proc.returncode != 0:
        return None, f"{py} cannot import torch and pytest (set DECOUPLE_TORCH_PYTHON): {proc.stderr.strip().splitlines()[-1:]}"
    version = proc.stdout.strip()
    major_minor = tuple(int(x) for x in version.split("+")[0].split(".")[:2])
    if major_minor < (2, 6):
        return None, f"torch {version} at {py} still defaults to weights_only=False"
    return py, version


@pytest.mark.torch
def test_whole_module_load_fails_identically_and_diag_arm_explains_it(tmp_path):
    py, why = _torch_python()
    if py is None:
        pytest.skip(why)
    repo = tmp_path / "repo"
    shutil.copytree(FIX / "a", repo)
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "base"]):
        subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)
    shutil.copytree(FIX / "b", repo, dirs_exist_ok=True)

    result = run_ab(RunOptions(paths=["test_load.py"], base="HEAD", cwd=str(repo), python=py, jobs=2, hw_classification=["generic"],
                               diags=[parse_diag(
                                   "weights:TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1")]))
    rows = {t.nodeid: t for t in result.tests}
    whole = rows["test_load.py::TestLoad::test_whole_module_roundtrip"]
    assert whole.category == "pre-existing", terminal.render(result)
    assert whole.a.exc_type == whole.b.exc_type == "_pickle.UnpicklingError"
    assert "GLOBAL test_load.Net" in whole.a.signature
    assert whole.a.signature == whole.b.signature
    assert rows["test_load.py::TestLoad::test_state_dict_roundtrip"].category == "same-pass"
    (diag,) = result.diagnostics
    assert diag.changed == {"test_load.py::TestLoad::test_whole_module_roundtrip": ["failed", "passed"]}
    assert diag.statement == "1 test failing in A passes with TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1."
    assert result.verdict == "SAFE"
    assert result.environment.torch_version == why
    assert result.environment.supported_engines
    if result.environment.has_hw_classification:
        assert result.arm("B").extra_args == ["--hw-classification", "GENERIC"]
        assert not result.warnings
    else:
        assert result.arm("B").extra_args == []
        assert any(w.code == "hw-classification.no-enum" for w in result.warnings)
    assert result.arm("A").extra_args == []


BENCH = Path(__file__).resolve().parent / "fixtures" / "ab" / "torchbench"


@pytest.mark.torch
def test_real_torch_files_under_the_warm_interpreter(tmp_path):
    """Quantized engines, whole-module torch.load, device-instantiated classes and a
    segfault, with a diagnostic arm: torch is imported once per arm, and crashes,
    resumes and confirmations are attributed as with fresh processes."""
    py, why = _torch_python()
    if py is None:
        pytest.skip(why)
    said: list[str] = []
    result = run_ab(RunOptions(paths=["."], a_root=str(BENCH / "a"), b_root=str(BENCH / "b"), cwd=str(tmp_path),
                               python=py, jobs=2, confirm=1, progress=said.append,
                               diags=[parse_diag("weights:TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1")]))
    rows = {t.nodeid: t for t in result.tests}
    assert not any("warm interpreter" in str(w) for w in result.warnings), result.warnings
    warm = next(m for m in said if m.startswith("warm interpreter"))
    for module in ("torch", "torch.testing._internal.common_utils", "torch.testing._internal.common_device_type",
                   "torch.testing._internal.common_quantized"):
        assert f", {module}," in warm or f", {module} imported" in warm, warm
    fixed = rows["test_module_save.py::TestModuleSave::test_whole_module_roundtrip"]
    assert fixed.category == "fixed" and fixed.a.exc_type == "_pickle.UnpicklingError", terminal.render(result)
    assert (fixed.a.reruns, fixed.b.reruns) == (["failed"], ["passed"])
    crash = rows["test_zz_crash.py::TestCrash::test_segfault"]
    assert (crash.a.outcome, crash.a.signal, crash.b.outcome, crash.b.signal) == ("crashed", "SIGSEGV", "crashed", "SIGSEGV")
    assert rows["test_zz_crash.py::TestCrash::test_after"].category == "same-pass"      # resumed after the crash
    for nodeid in ("test_device_ops.py::TestDeviceOpsCPU::test_add_cpu_float64",
                   "test_device_ops.py::TestDeviceOpsCPU::test_matmul_cpu",
                   "test_quant_engine.py::TestQuantEngine::test_linear_prepack_every_engine",
                   "test_module_save.py::TestModuleSave::test_state_dict_roundtrip"):
        assert rows[nodeid].category == "same-pass", (nodeid, rows[nodeid])
    (diag,) = result.diagnostics
    assert diag.changed == {"test_module_save.py::TestModuleSave::test_whole_module_roundtrip": ["failed", "passed"]}
    assert result.verdict == "SAFE", result.verdict_reason
