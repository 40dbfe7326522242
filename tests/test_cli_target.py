"""`decouple apply` against real target interpreters: the HardwareClassification check and
the torch.load pipeline end to end (discover-globals -> apply --torch-load -> the tests pass)."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from codemod.engine.torch_probe import probe

PY = os.environ.get("DECOUPLE_TORCH_PYTHON") or sys.executable
OLD_PY = os.environ.get("DECOUPLE_OLD_TORCH_PYTHON") or "/work/venv213/bin/python"
REAL = Path(__file__).parent / "fixtures" / "torch_load" / "real"
GENERIC_SRC = (
    "from torch.testing._internal.common_utils import run_tests, TestCase\n\n\n"
    "class TestA(TestCase):\n    def test_a(self):\n        pass\n"
)


def cli(*args, cwd=None):
    proc = subprocess.run([sys.executable, "-m", "codemod", *args], capture_output=True, text=True,
                          cwd=cwd, stdin=subprocess.DEVNULL, timeout=900)
    return proc.returncode, proc.stdout, proc.stderr


def _needs(python, version_at_least=None, version_below=None):
    info = probe(python)
    if not info.ok:
        pytest.skip(f"no usable torch in {python}: {info.reason}")
    if version_at_least and info.torch_version < version_at_least:
        pytest.skip(f"needs torch >= {version_at_least} in {python}, found {info.torch_version_str}")
    if version_below and info.torch_version >= version_below:
        pytest.skip(f"needs torch < {version_below} in {python}, found {info.torch_version_str}")
    return info


@pytest.mark.torch
def test_old_target_torch_is_reported(tmp_path):
    _needs(OLD_PY, version_below=(2, 14))
    f = tmp_path / "test_a.py"
    f.write_text(GENERIC_SRC)
    code, out, err = cli("apply", "--check", "--python", OLD_PY, str(f))
    assert code == 1
    assert "has no HardwareClassification (first released in 2.14)" in err


@pytest.mark.torch
def test_new_target_torch_is_not_reported(tmp_path):
    info = _needs(PY, version_at_least=(2, 14))
    assert info.has_hw_classification is True
    f = tmp_path / "test_a.py"
    f.write_text(GENERIC_SRC)
    code, out, err = cli("apply", "--check", "--python", PY, str(f))
    assert code == 1 and "HardwareClassification" not in err


def test_broken_interpreter_refuses_torch_load(tmp_path):
    f = tmp_path / "test_a.py"
    f.write_text("import torch\n\ndef test_x():\n    torch.load('x')\n")
    code, out, err = cli("apply", "--torch-load", "auto", "--python", str(tmp_path / "nope"), str(f))
    assert code == 2 and "does not exist" in err and "Traceback" not in err
    assert f.read_text() == "import torch\n\ndef test_x():\n    torch.load('x')\n"


@pytest.mark.torch
@pytest.mark.parametrize("mode", ["safe-globals", "weights-only-false"])
def test_discover_then_apply_makes_the_test_pass(tmp_path, mode):
    _needs(PY, version_at_least=(2, 6))
    shutil.copy(REAL / "real_whole_module.py", tmp_path / "test_whole.py")
    run = lambda *a: subprocess.run([PY, "-m", "pytest", "-q", "-p", "no:cacheprovider", *a], cwd=tmp_path,
                                    capture_output=True, text=True, timeout=900)
    assert "1 failed" in run("test_whole.py").stdout
    code, out, err = cli("discover-globals", "test_whole.py", "--python", PY, "--out", "globals.json",
                         cwd=tmp_path)
    assert code == 0, err
    code, out, err = cli("apply", "--torch-load", mode, "--globals", "globals.json", "--python", PY,
                         "--no-label", "test_whole.py", cwd=tmp_path)
    assert code == 0, err
    text = (tmp_path / "test_whole.py").read_text()
    assert ("safe_globals([" in text) if mode == "safe-globals" else ("weights_only=False" in text)
    assert "1 passed" in run("test_whole.py").stdout


def _fake_torch(root: Path, version: str, with_enum: bool) -> None:
    internal = root / "torch" / "testing" / "_internal"
    internal.mkdir(parents=True)
    (root / "torch" / "__init__.py").write_text("raise ImportError('a source tree, not a build')\n")
    (root / "torch" / "version.py").write_text(f"__version__ = {version!r}\ngit_version = 'abc'\n")
    body = "class HardwareClassification(Enum):\n    GENERIC = 1\n" if with_enum else "class TestCase:\n    pass\n"
    (internal / "common_utils.py").write_text("from enum import Enum\n\n" + body)


@pytest.mark.parametrize("with_enum", [True, False])
def test_the_probe_in_this_process_finds_what_a_subprocess_of_this_interpreter_finds(tmp_path, monkeypatch,
                                                                                   with_enum):
    # The current folder is a PyTorch-shaped checkout: `python -c` looks there first, and so
    # must the probe that runs in this process (the label check's default target).
    _fake_torch(tmp_path, "2.99.0a0+gitabc", with_enum)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PYTHONSAFEPATH", raising=False)
    path_before = list(sys.path)
    here = probe(None, import_torch=False)
    there = probe(sys.executable, import_torch=False)
    assert sys.path == path_before and "torch" not in sys.modules
    assert here == there
    assert (here.torch_version, here.has_hw_classification) == ((2, 99), with_enum)


def test_the_probe_in_this_process_reports_a_torch_it_cannot_find(tmp_path, monkeypatch):
    (tmp_path / "torch").mkdir()  # a package without version.py: found first, unreadable
    (tmp_path / "torch" / "__init__.py").write_text("")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PYTHONSAFEPATH", raising=False)
    here, there = probe(None, import_torch=False), probe(sys.executable, import_torch=False)
    assert here == there and not here.ok
    assert "torch cannot be imported" in here.reason and "version.py" in here.reason


def test_the_probe_in_this_process_skips_the_current_folder_under_pythonsafepath(tmp_path, monkeypatch):
    if sys.version_info < (3, 11):
        pytest.skip("PYTHONSAFEPATH is Python >= 3.11")
    _fake_torch(tmp_path, "2.99.0a0+gitabc", True)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PYTHONSAFEPATH", "1")
    here, there = probe(None, import_torch=False), probe(sys.executable, import_torch=False)
    assert here == there and here.torch_version != (2, 99)
