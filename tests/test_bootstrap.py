"""scripts/bootstrap.sh decides for itself what a fresh clone still needs (the README's first command).

pip is replaced by a recorder in a venv made without pip: the tests see which installs the script
asks for, without installing anything.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent

FAKE_PIP = """#!/bin/sh
echo "$@" >> "{log}"
"""

# pip as it behaves on a full disk: a message, then exit 1 (the partial install stays behind)
FULL_DISK_PIP = """#!/bin/sh
echo "$@" >> "{log}"
case "$*" in *torch*) echo "ERROR: Could not install packages due to an OSError: [Errno 28] No space left on device"; exit 1;; esac
"""


def fresh_checkout(tmp_path: Path, fake_pip: str = FAKE_PIP) -> tuple[Path, Path]:
    clone = tmp_path / "clone"
    shutil.copytree(PROJECT / "scripts", clone / "scripts")
    shutil.copytree(PROJECT / "codemod", clone / "codemod", ignore=shutil.ignore_patterns("__pycache__"))
    venv = clone / ".venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    log = tmp_path / "pip.log"
    pip = venv / "bin" / "pip"
    pip.write_text(fake_pip.format(log=log))
    pip.chmod(0o755)
    return clone, log


def bootstrap(clone: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DECOUPLE_", "PYTHON"))}
    return subprocess.run(["bash", "scripts/bootstrap.sh", *args], cwd=clone, env=env, capture_output=True,
                          text=True, stdin=subprocess.DEVNULL, timeout=120)


def test_demo_installs_the_tool_although_codemod_imports_from_the_checkout(tmp_path):
    # From the checkout's root, `import codemod` succeeds without any install (the current folder is on
    # sys.path): that once made the demo skip the install and fail with "decouple: No such file".
    clone, log = fresh_checkout(tmp_path)
    assert subprocess.run([str(clone / ".venv/bin/python"), "-c", "import codemod"], cwd=clone).returncode == 0
    proc = bootstrap(clone, "demo")
    assert proc.returncode == 0, proc.stderr
    calls = log.read_text().splitlines()
    assert "install -q -e ." in calls
    assert any(call.startswith("install -q torch==2.14.1") for call in calls)


def test_demo_does_not_reinstall_a_tool_installed_from_this_checkout(tmp_path):
    clone, log = fresh_checkout(tmp_path)
    venv = clone / ".venv"
    # what `pip install -e .` leaves behind: the command, and `codemod` importable from anywhere
    (venv / "bin" / "decouple").write_text("#!/bin/sh\n")
    (venv / "bin" / "decouple").chmod(0o755)
    site = next((venv / "lib").glob("python*/site-packages"))
    (site / "decouple-checkout.pth").write_text(f"{clone}\n")
    proc = bootstrap(clone, "demo")
    assert proc.returncode == 0, proc.stderr
    assert "install -q -e ." not in log.read_text().splitlines()


def test_demo_reinstalls_a_tool_installed_from_another_checkout(tmp_path):
    clone, log = fresh_checkout(tmp_path)
    other = tmp_path / "other"
    shutil.copytree(clone / "codemod", other / "codemod")
    venv = clone / ".venv"
    (venv / "bin" / "decouple").write_text("#!/bin/sh\n")
    (venv / "bin" / "decouple").chmod(0o755)
    site = next((venv / "lib").glob("python*/site-packages"))
    (site / "decouple-checkout.pth").write_text(f"{other}\n")
    proc = bootstrap(clone, "demo")
    assert proc.returncode == 0, proc.stderr
    assert "install -q -e ." in log.read_text().splitlines()


def test_a_failed_install_stops_the_set_up_and_the_demo(tmp_path):
    # The filter on pip's output once swallowed pip's status: torch failed to install on a full disk,
    # the set-up said nothing, and the demo ran on to "torch cannot be imported".
    clone, log = fresh_checkout(tmp_path, FULL_DISK_PIP)
    proc = bootstrap(clone, "demo")
    assert proc.returncode == 1
    assert "No space left on device" in proc.stdout
    assert "bootstrap: '" in proc.stderr and "install -q torch==2.14.1" in proc.stderr and "failed (exit 1)" in proc.stderr
    shutil.copytree(PROJECT / "examples", clone / "examples")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DECOUPLE_", "PYTHON"))}
    env["DECOUPLE_DEMO_DIR"] = str(tmp_path / "demo")
    demo = subprocess.run(["bash", "scripts/demo.sh"], cwd=clone, env=env, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=120)
    assert demo.returncode == 2
    assert "demo: the set-up failed" in demo.stderr
    assert "decouple classify" not in demo.stdout and not (tmp_path / "demo").exists()
