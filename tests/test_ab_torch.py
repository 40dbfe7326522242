"""A/B run against a real torch: the weights_only UnpicklingError case."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from codemod.ab import terminal
from codemod.ab.run import RunOptions, parse_diag, run_ab

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
        assert any("HardwareClassification" in w for w in result.warnings)
    assert result.arm("A").extra_args == []
