"""The threat model of docs/guarantees.md#what-a-test-can-reach: a careless test (one that writes
to its cwd, `$PWD`, `$TMPDIR`, `~/.cache`, runs git and subprocesses) never reaches the user's
repository, the tool's own state or a later run. Each promise there has its test here."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from codemod.ab.arms import isolation
from codemod.ab.arms.changes import git_changes
from codemod.ab.arms.options import RunOptions, UsageError
from codemod.ab.execution.run import run_ab
from codemod.cli.ab import ab

GIT_IDENTITY = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}


def git(repo: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    return subprocess.run(
        ["git", *args], cwd=repo, env={**env, **GIT_IDENTITY}, check=True, capture_output=True, text=True
    ).stdout


def repo_with(path: Path, files: dict[str, str], untracked: dict[str, str] | None = None) -> Path:
    """A repository whose one commit holds `files`, with `untracked` written beside them."""
    for rel, text in files.items():
        (path / rel).parent.mkdir(parents=True, exist_ok=True)
        (path / rel).write_text(text)
    git(path, "init", "-q")
    git(path, "add", "-A")
    git(path, "commit", "-qm", "base")
    for rel, text in (untracked or {}).items():
        (path / rel).parent.mkdir(parents=True, exist_ok=True)
        (path / rel).write_text(text)
    return path


def digest(root: Path) -> str:
    """Every name, mode and byte under `root`, `.git` included."""
    h = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        st = path.lstat()
        h.update(str(path.relative_to(root)).encode() + b"\0" + oct(st.st_mode).encode())
        if path.is_file() and not path.is_symlink():
            h.update(hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest()


# ---------------------------------------------------------------------------
# the tool's own git commands


def test_reading_the_diff_leaves_the_users_git_folder_as_it_was(tmp_path):
    repo = repo_with(tmp_path / "repo", {"tests/test_a.py": "def test_a():\n    pass\n", "tests/h.py": "X = 1\n"})
    (repo / "tests" / "test_a.py").write_text("def test_a():\n    assert True\n")
    # stat data changed, content not: `git diff` (porcelain) refreshes and rewrites .git/index for it
    os.utime(repo / "tests" / "h.py", (1_000_000, 1_000_000))
    before = digest(repo / ".git")
    changes = git_changes(str(repo), "HEAD", ["tests"])
    assert digest(repo / ".git") == before
    assert changes.error == "", changes.error
    assert [f.path for f in changes.files] == ["tests/test_a.py"]
    assert "h.py" not in changes.stat


# ---------------------------------------------------------------------------
# git cannot find the user's repository from an arm

# A careless test: it commits whatever repository git finds from its cwd.
CARELESS_GIT = '''import os
import subprocess


def test_commits_where_git_says():
    top = subprocess.run(["git", "rev-parse", "--show-toplevel"], capture_output=True, text=True)
    if top.returncode == 0:
        root = top.stdout.strip()
        with open(os.path.join(root, "written_by_a_test.txt"), "w") as fh:
            fh.write("x")
        subprocess.run(["git", "add", "-A"], cwd=root)
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "by a test"], cwd=root)
    assert top.returncode != 0, "git found " + top.stdout


def test_a_repository_of_its_own_works(tmp_path):
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    (tmp_path / "f").write_text("x")
    subprocess.run(["git", "add", "f"], cwd=tmp_path, check=True)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "own"], cwd=tmp_path, check=True)
    top = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=tmp_path, capture_output=True, text=True)
    assert os.path.realpath(top.stdout.strip()) == os.path.realpath(tmp_path)
'''


def _careless_repo(path: Path) -> Path:
    repo = repo_with(path, {"tests/test_git.py": CARELESS_GIT, ".gitignore": "tmp/\n"})
    (repo / "tests" / "test_git.py").write_text(CARELESS_GIT + "\n# changed in B\n")
    return repo


def _categories(result) -> dict[str, str]:
    return {t.nodeid: t.category for t in result.tests}


EXPECTED_GIT = {
    "tests/test_git.py::test_commits_where_git_says": "same-pass",
    "tests/test_git.py::test_a_repository_of_its_own_works": "same-pass",
}


def test_a_test_running_git_from_a_hook_leaves_the_repository_byte_identical(tmp_path, monkeypatch):
    repo = _careless_repo(tmp_path / "repo")
    log = git(repo, "log", "--format=%H")
    before = digest(repo)
    # what git exports to every hook (a `decouple ab` in a pre-push hook, or a shell that set them)
    monkeypatch.setenv("GIT_DIR", str(repo / ".git"))
    monkeypatch.setenv("GIT_WORK_TREE", str(repo))
    monkeypatch.setenv("GIT_INDEX_FILE", str(repo / ".git" / "index"))
    r = run_ab(RunOptions(paths=["tests"], base="HEAD", cwd=str(repo), jobs=2, confirm=0))
    assert _categories(r) == EXPECTED_GIT, [(t.nodeid, t.b and t.b.message) for t in r.tests]
    assert digest(repo) == before
    assert git(repo, "log", "--format=%H") == log
    assert {"GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"} <= set(r.env_unset)


def test_tmpdir_inside_the_checkout_moves_the_arms_out_of_it(tmp_path, monkeypatch):
    repo = _careless_repo(tmp_path / "repo")
    (repo / "tmp").mkdir()  # git-ignored
    before = digest(repo)
    monkeypatch.setenv("TMPDIR", str(repo / "tmp"))
    monkeypatch.setattr(tempfile, "tempdir", None)
    r = run_ab(RunOptions(paths=["tests"], base="HEAD", cwd=str(repo), jobs=2, confirm=0))
    assert _categories(r) == EXPECTED_GIT, [(t.nodeid, t.b and t.b.message) for t in r.tests]
    assert digest(repo) == before
    moved = [w for w in r.warnings if w.code == "run.temp-moved"]
    assert moved and moved[0].params["tree"] == os.path.realpath(repo), r.warnings
    assert not Path(moved[0].params["used"]).resolve().is_relative_to(repo.resolve())


def test_without_a_temporary_folder_outside_a_work_tree_nothing_runs(tmp_path, monkeypatch):
    repo = _careless_repo(tmp_path / "repo")
    (repo / "tmp").mkdir()
    monkeypatch.setenv("TMPDIR", str(repo / "tmp"))
    monkeypatch.setattr(tempfile, "tempdir", None)
    monkeypatch.setattr(isolation, "FALLBACK_TEMP", (str(repo),))
    before = digest(repo)
    with pytest.raises(UsageError, match="set TMPDIR to a folder outside"):
        run_ab(RunOptions(paths=["tests"], base="HEAD", cwd=str(repo), jobs=2))
    assert digest(repo) == before
    monkeypatch.chdir(repo)
    cli = CliRunner().invoke(ab, ["tests", "--base", "HEAD", "--python", sys.executable], catch_exceptions=False)
    assert cli.exit_code == 2 and "set TMPDIR to a folder outside" in cli.output, cli.output
    assert digest(repo) == before


def test_a_temporary_folder_inside_a_compared_directory_is_not_used(tmp_path, monkeypatch):
    base, moved = isolation.temp_base([tmp_path / "b"], {})
    assert moved is None
    (tmp_path / "b" / "tmp").mkdir(parents=True)
    monkeypatch.setenv("TMPDIR", str(tmp_path / "b" / "tmp"))
    monkeypatch.setattr(tempfile, "tempdir", None)
    base, moved = isolation.temp_base([tmp_path / "b"], {})
    assert moved == (str(tmp_path / "b" / "tmp"), os.path.realpath(tmp_path / "b"))
    assert not os.path.realpath(base).startswith(os.path.realpath(tmp_path / "b"))


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_every_variable_git_calls_local_to_a_repository_is_kept_from_the_arms():
    local = subprocess.run(["git", "rev-parse", "--local-env-vars"], capture_output=True, text=True, check=True)
    names = local.stdout.split()
    assert names and all(isolation.removed(n) for n in names), [n for n in names if not isolation.removed(n)]
