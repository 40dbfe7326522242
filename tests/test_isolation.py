"""The threat model of docs/guarantees.md#what-a-test-can-reach: a careless test (one that writes
to its cwd, `$PWD`, `$TMPDIR`, `~/.cache`, runs git and subprocesses) never reaches the user's
repository, the tool's own state or a later run. Each promise there has its test here."""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

from codemod.ab.arms.changes import git_changes

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
