"""torch.load transform and discover-globals against real torch.

Uses the interpreter from DECOUPLE_TORCH_PYTHON (default: this one); skipped with a
reason when it cannot import torch >= 2.6.  Fixture tests live in
tests/fixtures/torch_load/real/ (not collected: their names do not start with test_)
and are copied to a temporary directory before anything runs or rewrites them.
Runs torch in few, batched subprocesses (2 shared cores).
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from codemod.cli.discover_globals import discover_globals
from codemod.discover.rounds import discover
from codemod.engine.torch_probe import probe
from transforms.torch_load import TorchLoad, check_mode_supported

REAL = Path(__file__).parent / "fixtures" / "torch_load" / "real"
FILES = ["real_whole_module.py", "real_quantized.py", "real_state_dict.py"]
PY = os.environ.get("DECOUPLE_TORCH_PYTHON") or sys.executable
OLD_PY = os.environ.get("DECOUPLE_OLD_TORCH_PYTHON") or "/work/venv213/bin/python"

QUANT_GLOBALS = {
    "torch.ao.nn.quantized.dynamic.modules.linear.Linear",
    "torch.ao.nn.quantized.modules.linear.LinearPackedParams",
    "torch.ScriptObject",
}


def _target():
    info = probe(PY)
    if not info.ok or info.torch_version < (2, 6):
        pytest.skip(f"needs torch >= 2.6 in {PY}: {info.reason or info.torch_version_str}")
    return info


def _pytest(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [PY, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args], cwd=cwd,
        capture_output=True, text=True, timeout=900,
        env={k: v for k, v in os.environ.items()
             if k not in ("TORCH_FORCE_WEIGHTS_ONLY_LOAD", "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD")},
    )


@pytest.fixture(scope="module")
def discovery_run(tmp_path_factory):
    _target()
    root = tmp_path_factory.mktemp("discover")
    for f in FILES:
        shutil.copy(REAL / f, root / f)
    said: list[str] = []
    result, status = discover(FILES, python=PY, cwd=str(root), max_iterations=10, timeout=900, log=said.append)
    return root, result, status, said


@pytest.fixture(scope="module")
def discovered(discovery_run):
    return discovery_run[:3]


@pytest.mark.torch
def test_discovery_rounds_are_forks_of_one_warm_interpreter(discovery_run):
    """torch and the targets' module-level torch imports are imported once, by the A/B runner's
    warm interpreter; the rounds (whose findings the tests below check) are forks of it."""
    said = discovery_run[3]
    (ready,) = [m for m in said if m.startswith("warm interpreter: ")]
    assert ready.endswith(" ready")
    warmed = ready[len("warm interpreter: "):-len(" ready")].split(", ")
    assert warmed[0] == "pytest" and "torch" in warmed and "torch.ao.nn.quantized.dynamic" in warmed, ready
    assert said.index(ready) < min(i for i, m in enumerate(said) if m.startswith("round 1:"))


@pytest.mark.torch
def test_default_fails_with_unpickling_error(tmp_path):
    _target()
    for f in FILES:
        shutil.copy(REAL / f, tmp_path / f)
    proc = _pytest(tmp_path, *FILES)
    out = proc.stdout
    assert "2 failed, 1 passed" in out, out[-3000:]
    assert out.count("UnpicklingError") >= 2
    assert "FAILED real_whole_module.py::test_whole_module_roundtrip" in out
    assert "FAILED real_quantized.py::test_quantized_linear_roundtrip" in out


@pytest.mark.torch
def test_discovery_finds_complete_lists(discovered):
    root, result, status = discovered
    assert status == 0 and result["complete"], result["errors"]
    assert result["schema_version"] == 1
    tests = result["tests"]
    whole = tests["real_whole_module.py::test_whole_module_roundtrip"]
    quant = tests["real_quantized.py::test_quantized_linear_roundtrip"]
    sd = tests["real_state_dict.py::test_state_dict_roundtrip"]
    assert (whole["initial_outcome"], whole["outcome"]) == ("failed", "passed")
    assert (quant["initial_outcome"], quant["outcome"]) == ("failed", "passed")
    assert (sd["initial_outcome"], sd["outcome"]) == ("passed", "passed")
    # the checkpoint scan is allowlisted in the first round: three globals, two rounds
    assert (quant["rounds"], whole["rounds"], sd["rounds"]) == (2, 2, 1)
    assert result["iterations"] == 2
    assert set(quant["globals"]) == QUANT_GLOBALS
    assert set(whole["globals"]) == {"real_whole_module.TinyNet", "torch.nn.modules.linear.Linear"}
    assert sd["globals"] == [] and sd["calls"][0]["status"] == "ok"
    for t in (whole, quant):
        (call,) = t["calls"]
        # iterating on failures and get_unsafe_globals_in_checkpoint agree
        assert set(call["globals"]) == set(call["scan"])
        assert t["discrepancies"] == []
        assert set(t["saves"][0]["globals"]) == set(call["globals"])
    assert quant["calls"][0]["code"] == "loaded = torch.load(buf)"
    assert quant["calls"][0]["file"] == "real_quantized.py"
    assert "torch.ScriptObject" in result["dangerous"]
    assert result["resolved"]["torch.nn.modules.linear.Linear"]["module"] == "torch.nn.modules.linear"


def _rewrite(dst: Path, mode: str, result) -> dict[str, str]:
    dst.mkdir()
    t = TorchLoad(mode, discovered=result, torch_version=(2, 14))
    outs = {}
    for f in FILES:
        src = (REAL / f).read_text()
        res = t.run(src, ast.parse(src), path=f)
        assert ast.dump(t.strip(ast.parse(res.text))) == ast.dump(t.strip(ast.parse(src)))
        assert t.run(res.text, ast.parse(res.text), path=f).text == res.text
        (dst / f).write_text(res.text)
        outs[f] = res.text
    return outs


@pytest.mark.torch
def test_rewritten_tests_pass(discovered, tmp_path):
    _, result, _ = discovered
    sg = _rewrite(tmp_path / "sg", "safe-globals", result)
    wof = _rewrite(tmp_path / "wof", "weights-only-false", result)
    auto = _rewrite(tmp_path / "auto", "auto", result)

    assert "safe_globals([TinyNet, torch.nn.Linear])" in sg["real_whole_module.py"]
    assert "torch.ScriptObject" in sg["real_quantized.py"]
    assert sg["real_state_dict.py"] == (REAL / "real_state_dict.py").read_text()
    assert wof["real_state_dict.py"].count("weights_only=False") == 1
    # auto: safe globals -> block; ScriptObject -> explicit False; state_dict untouched
    assert "safe_globals([TinyNet, torch.nn.Linear])" in auto["real_whole_module.py"]
    assert "torch.load(buf, weights_only=False)" in auto["real_quantized.py"]
    assert auto["real_state_dict.py"] == (REAL / "real_state_dict.py").read_text()

    # one interpreter run for all nine files (importlib mode: same basenames in 3 dirs)
    proc = _pytest(tmp_path, "--import-mode=importlib",
                   *(f"{d}/{f}" for d in ("sg", "wof", "auto") for f in FILES))
    assert "9 passed" in proc.stdout, proc.stdout[-4000:] + proc.stderr[-2000:]


@pytest.mark.torch
def test_old_torch_213_is_supported_and_probed():
    info = probe(OLD_PY)
    if not info.ok:
        pytest.skip(f"{OLD_PY}: {info.reason}")
    assert info.torch_version == (2, 13)
    assert check_mode_supported("safe-globals", info.torch_version) is None


def _bare_venv(tmp_path: Path) -> str:
    venv = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True,
                   capture_output=True, timeout=120)
    return str(venv / "bin" / "python")


def test_no_torch_is_a_clear_refusal(tmp_path):
    py = _bare_venv(tmp_path)
    info = probe(py)
    assert not info.ok and info.torch_version is None
    assert "torch cannot be imported" in info.reason and "No module named 'torch'" in info.reason
    assert "no importable torch" in check_mode_supported("auto", info.torch_version)
    res = CliRunner().invoke(discover_globals, ["test_x.py", "--python", py])
    assert res.exit_code == 2
    assert res.exception is None or isinstance(res.exception, SystemExit)
    assert "cannot discover globals: torch cannot be imported" in res.output
    assert "Traceback" not in res.output


def test_torch_too_old_is_a_clear_refusal(tmp_path):
    py = _bare_venv(tmp_path)
    fake = tmp_path / "fake"
    (fake / "torch").mkdir(parents=True)
    (fake / "torch" / "__init__.py").write_text('__version__ = "1.12.1"\n')
    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = str(fake)
    try:
        info = probe(py)
        res = CliRunner().invoke(discover_globals, ["test_x.py", "--python", py])
    finally:
        if old is None:
            os.environ.pop("PYTHONPATH")
        else:
            os.environ["PYTHONPATH"] = old
    assert info.torch_version == (1, 12)
    assert "1.13" in check_mode_supported("weights-only-false", info.torch_version)
    assert res.exit_code == 2
    assert "has no weights_only (added in 1.13)" in res.output
    assert "Traceback" not in res.output


def test_missing_interpreter_is_a_clear_refusal(tmp_path):
    res = CliRunner().invoke(discover_globals, ["t.py", "--python", str(tmp_path / "nope")])
    assert res.exit_code == 2 and "does not exist" in res.output


def test_cli_help_names_flags():
    res = CliRunner().invoke(discover_globals, ["--help"])
    assert res.exit_code == 0
    for flag in ("--python", "--out", "--max-iterations", "--timeout"):
        assert flag in res.output
    assert discover_globals.name == "discover-globals"


@pytest.mark.torch
def test_shared_helper_is_attributed_per_test(tmp_path):
    """Two tests reach one torch.load call site through a shared helper, in one file:
    neither is "allowlisted but still fails"; auto writes one safe_globals block."""
    _target()
    name = "real_shared_helper.py"
    shutil.copy(REAL / name, tmp_path / name)
    result, status = discover([name], python=PY, cwd=str(tmp_path), max_iterations=10, timeout=900)
    assert status == 0 and result["complete"], result["errors"]
    tests = result["tests"]
    assert sorted(tests) == [f"{name}::test_first_user", f"{name}::test_second_user"]
    want = {"real_shared_helper.TinyNet", "torch.nn.modules.linear.Linear"}
    for nodeid, t in tests.items():
        assert (t["initial_outcome"], t["outcome"], t["unfixable"]) == ("failed", "passed", None), nodeid
        (call,) = t["calls"]
        assert call["code"] == "return torch.load(buf)" and call["unfixable"] is None
        assert set(call["globals"]) == want and t["rounds"] == 2
    assert result["iterations"] == 2
    assert set(result["allowlist"][f"{name}:23"]) == want

    src = (REAL / name).read_text()
    res = TorchLoad("auto", discovered=result, torch_version=(2, 14), explain=True).run(
        src, ast.parse(src), path=name)
    assert "weights_only=False" not in res.text
    assert res.text.count("with torch.serialization.safe_globals([TinyNet, torch.nn.Linear]):") == 1
    assert [f.rule for f in res.findings] == ["torch-load/safe-globals"]
    (tmp_path / name).write_text(res.text)
    proc = _pytest(tmp_path, name)
    assert "2 passed" in proc.stdout, proc.stdout[-3000:]
