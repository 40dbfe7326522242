"""The hooks in .pre-commit-hooks.yaml, run by the real pre-commit on a temporary repository.

pre-commit builds the hook environment with pip (the tool and its dependencies from the
package index); where that cannot work (no index reachable) the test skips and says so.
"""

import os
import shutil
import subprocess
import sys

import pytest

from conftest import REPO

pytest.importorskip("pre_commit")

GENERIC_SRC = (
    "from torch.testing._internal.common_utils import run_tests, TestCase\n\n\n"
    "class TestA(TestCase):\n    def test_a(self):\n        pass\n"
)
LABELLED_SRC = (
    "from torch.testing._internal.common_utils import HardwareClassification, TestCase\n\n\n"
    "class TestOk(TestCase):\n    hw_classification = HardwareClassification.GENERIC\n\n"
    "    def test_a(self):\n        pass\n"
)
GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid"}
# what pip prints when it cannot reach an index: the only reason to skip
_OFFLINE = ("No matching distribution found", "Could not find a version", "Failed to establish a new connection",
            "Temporary failure in name resolution", "Network is unreachable")


def git(*args, cwd):
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, env={**os.environ, **GIT_ENV})


def snapshot_of_this_repo(dest):
    """The work tree's files (uncommitted and untracked, not ignored) as a one-commit repository."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                            check=True, capture_output=True).stdout
    for rel in filter(None, listed.decode().split("\0")):
        src = os.path.join(REPO, rel)
        if os.path.isfile(src):
            os.makedirs(os.path.dirname(os.path.join(dest, rel)), exist_ok=True)
            shutil.copy2(src, os.path.join(dest, rel))
    git("init", "-q", cwd=dest)
    git("add", "-A", cwd=dest)
    git("commit", "-q", "-m", "snapshot", cwd=dest)
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=dest, check=True, capture_output=True,
                          text=True).stdout.strip()


def pre_commit(*args, cwd, home):
    env = {**os.environ, **GIT_ENV, "PRE_COMMIT_HOME": str(home), "PRE_COMMIT_COLOR": "never"}
    env.pop("PYTHONPATH", None)
    proc = subprocess.run([sys.executable, "-m", "pre_commit", *args], cwd=cwd, capture_output=True, text=True,
                          env=env, stdin=subprocess.DEVNULL, timeout=1500)
    output = proc.stdout + proc.stderr
    log = os.path.join(home, "pre-commit.log")
    if proc.returncode not in (0, 1) or "An unexpected error has occurred" in output:
        details = output + (open(log).read() if os.path.exists(log) else "")
        if any(marker in details for marker in _OFFLINE):
            pytest.skip("pre-commit could not build the hook environment offline:\n" + details[-2000:])
        raise AssertionError(details)
    return proc.returncode, output


def test_hooks_run_under_the_real_pre_commit(tmp_path):
    tool = tmp_path / "tool"
    tool.mkdir()
    rev = snapshot_of_this_repo(tool)
    project = tmp_path / "pytorch"
    (project / "test").mkdir(parents=True)
    (project / "test" / "test_ok.py").write_text(LABELLED_SRC)
    (project / "test" / "helper.py").write_text(GENERIC_SRC)  # not a test file name: not checked
    (project / ".pre-commit-config.yaml").write_text(
        f"repos:\n- repo: {tool}\n  rev: {rev}\n  hooks:\n  - id: decouple-check\n  - id: decouple-lint\n")
    git("init", "-q", cwd=project)
    git("add", "-A", cwd=project)
    home = tmp_path / "pre-commit-home"

    code, out = pre_commit("run", "--all-files", cwd=project, home=home)
    assert code == 0, out
    assert "decouple apply --check" in out and "Passed" in out

    (project / "test" / "test_new.py").write_text(GENERIC_SRC)
    git("add", "-A", cwd=project)
    code, out = pre_commit("run", "--all-files", cwd=project, home=home)
    assert code == 1, out
    assert "test/test_new.py:4: error: [autofix] decouple apply: TestA: GENERIC" in out
    assert "1 would change" in out
    assert out.count("Failed") == 2
    # pre-commit ran the checks only: nothing was written
    assert (project / "test" / "test_new.py").read_text() == GENERIC_SRC

    # An allowlisted file: the lint hook judges it as upstream's linter does (one advice, passes);
    # the check hook, for a contributor labelling, still says what it needs.
    (project / "test" / "test_new.py").rename(project / "test" / "test_listed.py")
    allowlist = project / "tools" / "linter" / "adapters" / "test_linter_allowlist.json"
    allowlist.parent.mkdir(parents=True)
    allowlist.write_text('[\n  "test/test_listed.py"\n]\n')
    git("add", "-A", cwd=project)
    code, out = pre_commit("run", "decouple-lint", "--all-files", "--verbose", cwd=project, home=home)
    assert code == 0, out
    assert "test/test_listed.py: advice: [allowlisted] on the allowlist, which the upstream linter skips" in out
    code, out = pre_commit("run", "decouple-check", "--all-files", cwd=project, home=home)
    assert code == 1 and "1 would change" in out
