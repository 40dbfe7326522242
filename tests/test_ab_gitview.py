"""The arms are git's view of the tree (docs/ab-internals.md#arms): arm A every file tracked at
the base commit, arm B the work tree's tracked and untracked-but-not-ignored files; nothing left
out by its name, what git ignores stays out, a tree too big is refused with its size."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from codemod.ab.arms import materialise
from codemod.ab.arms.materialise import materialise_dir, materialise_git
from codemod.ab.arms.options import RunOptions, UsageError
from codemod.ab.arms.trees import Selection
from codemod.ab.execution.run import run_ab
from codemod.cli.ab import ab
from test_isolation import git, repo_with

HELPER_TEST = """from build.helper import answer


def test_answer():
    assert answer() == 42
"""

TREE = {
    ".gitignore": "objs/\n*.o\nvenv/\n",
    "test/test_uses_build.py": HELPER_TEST,
    "test/build/__init__.py": "",
    "test/build/helper.py": "def answer():\n    return 42\n",
    "test/dist/data.txt": "tracked data\n",
    "test/gone.py": "X = 1\n",
}
IGNORED = {"test/objs/a.txt": "object\n", "test/b.o": "object\n", "test/venv/pyvenv.cfg": "home = /usr\n"}


def _files(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file() or p.is_symlink())


def test_the_work_tree_arm_is_what_git_names(tmp_path):
    repo = repo_with(tmp_path / "repo", TREE, {**IGNORED, "test/new_helper.py": "Y = 2\n"})
    (repo / "test" / "gone.py").unlink()  # tracked, deleted in the work tree
    nested = repo / "test" / "nested"
    nested.mkdir()
    git(nested, "init", "-q")
    (nested / "inside.py").write_text("Z = 3\n")
    dest = tmp_path / "b"
    used, _ = materialise_dir(repo, Selection(paths=["test"], common="test"), dest)
    assert used[0] == "test"
    assert _files(dest) == [
        "test/build/__init__.py", "test/build/helper.py", "test/dist/data.txt", "test/new_helper.py",
        "test/test_uses_build.py",
    ]
    assert (dest / "test" / "nested").is_dir() and not any((dest / "test" / "nested").iterdir())


def test_a_selected_path_git_ignores_is_copied_whole(tmp_path):
    repo = repo_with(tmp_path / "repo", TREE, {**IGNORED, "test/objs/test_gen.py": "def test_x():\n    pass\n"})
    dest = tmp_path / "b"
    materialise_dir(repo, Selection(paths=["test/objs"], common="test/objs"), dest)
    assert "test/objs/test_gen.py" in _files(dest) and "test/objs/a.txt" in _files(dest)
    assert "test/b.o" not in _files(dest)


def test_the_commit_arm_is_every_file_tracked_at_the_commit(tmp_path):
    repo = repo_with(tmp_path / "repo", TREE, IGNORED)
    sub = repo_with(tmp_path / "sub", {"s.py": "S = 1\n"})
    git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(sub), "test/third_party")
    git(repo, "commit", "-qm", "submodule")
    dest = tmp_path / "a"
    materialise_git(repo, git(repo, "rev-parse", "HEAD").strip(), Selection(paths=["test"], common="test"), dest)
    assert _files(dest) == [
        "test/build/__init__.py", "test/build/helper.py", "test/dist/data.txt", "test/gone.py",
        "test/test_uses_build.py",
    ]
    assert (dest / "test" / "third_party").is_dir() and not any((dest / "test" / "third_party").iterdir())


def test_a_change_to_a_tracked_folder_named_build_is_seen(tmp_path):
    repo = repo_with(tmp_path / "repo", TREE, IGNORED)
    (repo / "test" / "build" / "helper.py").write_text("def answer():\n    return 41\n")
    r = run_ab(RunOptions(paths=["test/test_uses_build.py"], base="HEAD", cwd=str(repo), jobs=2, confirm=0))
    assert {t.nodeid: t.category for t in r.tests} == {"test/test_uses_build.py::test_answer": "new-failure"}
    assert r.verdict == "REGRESSION"


def test_a_compared_directory_in_a_work_tree_is_that_work_trees_view(tmp_path):
    outer = repo_with(tmp_path / "outer", {".gitignore": "*.o\nscratch/\n", "a/test_a.py": "def test_a():\n    pass\n"})
    (outer / "a" / "junk.o").write_text("object\n")
    (outer / "scratch" / "b").mkdir(parents=True)
    (outer / "scratch" / "b" / "test_a.py").write_text("def test_a():\n    pass\n")
    (outer / "scratch" / "b" / "junk.o").write_text("object\n")
    sel = Selection(paths=["test_a.py"], common="")
    materialise_dir(outer / "a", sel, tmp_path / "arm-a")
    assert _files(tmp_path / "arm-a") == ["test_a.py"]  # git ignores *.o
    materialise_dir(outer / "scratch" / "b", sel, tmp_path / "arm-b")
    assert _files(tmp_path / "arm-b") == ["junk.o", "test_a.py"]  # git ignores the folder: copied whole


def test_a_tree_too_big_is_refused_with_its_size_before_anything_runs(tmp_path, monkeypatch):
    repo = repo_with(tmp_path / "repo", TREE, IGNORED)
    monkeypatch.setattr(materialise, "MAX_FILES", 3)
    with pytest.raises(UsageError) as err:
        run_ab(RunOptions(paths=["test"], base="HEAD", cwd=str(repo), jobs=2))
    said = str(err.value)
    assert "arm A" in said and "5 files" in said and "test/build/" in said and "narrower path" in said, said
    monkeypatch.chdir(repo)
    cli = CliRunner().invoke(ab, ["test", "--base", "HEAD", "--python", sys.executable])
    assert cli.exit_code == 2 and "narrower path" in cli.output, cli.output


def test_git_arms_leave_the_users_git_folder_as_it_was(tmp_path):
    from test_isolation import digest

    repo = repo_with(tmp_path / "repo", TREE, IGNORED)
    os.utime(repo / "test" / "build" / "helper.py", (1_000_000, 1_000_000))  # stat data only
    before = digest(repo)
    r = run_ab(RunOptions(paths=["test"], base="HEAD", cwd=str(repo), jobs=2, confirm=0))
    assert r.verdict == "SAFE", r.verdict_reason
    assert digest(repo) == before
    assert subprocess.run(["git", "status", "--porcelain"], cwd=repo, capture_output=True, text=True).stdout == ""
