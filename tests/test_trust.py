"""Trust (issue 18): the checkout is never touched, a reproduction is exact, input from
elsewhere stays data. Every hostile input is generated here; each test failed before its fix."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}


def cli(*args, cwd=None, env=None, timeout=600):
    proc = subprocess.run([sys.executable, "-m", "codemod", *args], capture_output=True, text=True, cwd=cwd,
                          stdin=subprocess.DEVNULL, env=env, timeout=timeout)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, proc.stdout, proc.stderr


def git(cwd, *args) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True,
                          env={**os.environ, **GIT_ENV}).stdout


def files_of(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and ".git" not in p.relative_to(folder).parts}


# --- the arms' environment: PWD and OLDPWD ----------------------------------------------------

PWD_TEST = """\
import os


def test_pwd_is_the_arm_root():
    for var in ("PWD", "OLDPWD"):
        folder = os.environ.get(var)
        if folder:  # a test that trusts $PWD writes where it names
            with open(os.path.join(folder, "written-through-" + var), "w") as f:
                f.write("x")
    assert os.environ["PWD"] == os.getcwd()
"""


@pytest.mark.parametrize("fork", ["--fork", "--no-fork"])
def test_a_test_writing_to_pwd_or_oldpwd_writes_in_its_arm(tmp_path, fork):
    checkout, elsewhere = tmp_path / "checkout", tmp_path / "previous"
    elsewhere.mkdir()
    for side in ("a", "b"):
        (checkout / side).mkdir(parents=True)
        (checkout / side / "test_pwd.py").write_text(PWD_TEST)
    before = files_of(checkout)
    env = {**os.environ, "PWD": str(checkout), "OLDPWD": str(elsewhere)}
    code, out, err = cli("ab", "test_pwd.py", "--a-root", "a", "--b-root", "b", "-q", "-j", "2", fork,
                         "--json", str(tmp_path / "r.json"), cwd=checkout, env=env)
    assert code == 0, out + err
    assert files_of(checkout) == before and list(elsewhere.iterdir()) == []
    result = json.loads((tmp_path / "r.json").read_text())
    assert {t["category"] for t in result["tests"]} == {"same-pass"}
