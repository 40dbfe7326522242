"""The threat model of docs/guarantees.md#what-a-test-can-reach: a careless test (one that writes
to its cwd, `$PWD`, `$TMPDIR`, `~/.cache`, runs git and subprocesses) never reaches the user's
repository, the tool's own state or a later run. Each promise there has its test here."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import py_compile
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


# ---------------------------------------------------------------------------
# no state a test can write is shared across runs

FORGE = '''import importlib.util
import marshal
import os
import colorsys
from importlib._bootstrap_external import _code_to_timestamp_pyc


def test_forges_the_bytecode_of_a_standard_module():
    source = colorsys.__file__
    st = os.stat(source)
    code = compile("raise RuntimeError('poisoned')", source, "exec")
    target = importlib.util.cache_from_source(source)
    os.makedirs(os.path.dirname(target), exist_ok=True)
    with open(target, "wb") as fh:
        fh.write(_code_to_timestamp_pyc(code, st.st_mtime, st.st_size))
    with open(os.environ["AB_FORGED"], "a") as fh:
        fh.write(target + "\\n")
'''

USES_COLORSYS = '''import colorsys


def test_uses_the_standard_module():
    assert colorsys.rgb_to_hsv(1.0, 0.0, 0.0) == (0.0, 1.0, 1.0)
'''


@pytest.mark.parametrize("fork", [True, False], ids=["warm", "no-fork"])
def test_bytecode_a_test_forges_is_never_read_by_a_later_run(tmp_path, fork):
    first, second = tmp_path / "first", tmp_path / "second"
    for root in (first / "a", first / "b", second / "a", second / "b"):
        root.mkdir(parents=True)
    (first / "a" / "test_forge.py").write_text("def test_forges_the_bytecode_of_a_standard_module():\n    pass\n")
    (first / "b" / "test_forge.py").write_text(FORGE)
    for root in (second / "a", second / "b"):
        (root / "test_colorsys.py").write_text(USES_COLORSYS)
    forged = tmp_path / "forged.txt"
    r1 = run_ab(RunOptions(paths=["test_forge.py"], a_root=str(first / "a"), b_root=str(first / "b"),
                           cwd=str(tmp_path), jobs=2, confirm=0, fork=fork, env={"AB_FORGED": str(forged)}))
    assert _categories(r1) == {"test_forge.py::test_forges_the_bytecode_of_a_standard_module": "same-pass"}
    written = forged.read_text().split()
    assert written and not any(os.path.exists(w) for w in written), written  # the run's prefix is gone
    r2 = run_ab(RunOptions(paths=["test_colorsys.py"], a_root=str(second / "a"), b_root=str(second / "b"),
                           cwd=str(tmp_path), jobs=2, confirm=0, fork=fork))
    assert _categories(r2) == {"test_colorsys.py::test_uses_the_standard_module": "same-pass"}, [
        (t.nodeid, t.b and t.b.message) for t in r2.tests]


def _pyc(source_text: str, beside: Path) -> None:
    """Bytecode of `source_text` for the module `beside`, where a plain interpreter looks for
    it, valid whatever the module's source says (an unchecked-hash pyc)."""
    other = beside.parent / "other_source.py"
    other.write_text(source_text)
    target = importlib.util.cache_from_source(str(beside))
    py_compile.compile(str(other), cfile=target, dfile=str(beside),
                       invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)
    other.unlink()


READS_BYTECODE = '''import helper
import pkg_with_bytecode
import pkg_without_bytecode


def test_reads_the_environments_bytecode_and_compiles_its_own_files():
    assert pkg_with_bytecode.FROM == "installed bytecode"
    assert pkg_without_bytecode.FROM == "source"
    assert helper.FROM == "source"
'''


@pytest.mark.parametrize("fork", [True, False], ids=["warm", "no-fork"])
def test_the_environments_bytecode_is_read_and_never_written(tmp_path, fork, monkeypatch):
    monkeypatch.delenv("PYTHONPYCACHEPREFIX", raising=False)
    site = tmp_path / "site"
    for name in ("pkg_with_bytecode", "pkg_without_bytecode"):
        (site / name).mkdir(parents=True)
        (site / name / "__init__.py").write_text('FROM = "source"\n')
    _pyc('FROM = "installed bytecode"\n', site / "pkg_with_bytecode" / "__init__.py")
    installed = digest(site)
    for arm in ("a", "b"):
        (tmp_path / arm).mkdir()
        (tmp_path / arm / "test_bytecode.py").write_text(READS_BYTECODE)
        (tmp_path / arm / "helper.py").write_text('FROM = "source"\n')
        # stale bytecode beside an arm's own file (copied with the tree) is never read
        _pyc('FROM = "stale"\n', tmp_path / arm / "helper.py")
    r = run_ab(RunOptions(paths=["test_bytecode.py"], a_root=str(tmp_path / "a"), b_root=str(tmp_path / "b"),
                          cwd=str(tmp_path), jobs=2, confirm=0, fork=fork, env={"PYTHONPATH": str(site)}))
    assert _categories(r) == {
        "test_bytecode.py::test_reads_the_environments_bytecode_and_compiles_its_own_files": "same-pass"
    }, [(t.nodeid, t.b and t.b.message) for t in r.tests]
    assert digest(site) == installed


ENV_DUMP = '''import json
import os
import sys


def test_dumps_its_environment():
    with open(os.environ["AB_OUT"] + "." + os.path.basename(os.path.dirname(os.getcwd())), "w") as fh:
        json.dump({"env": dict(os.environ), "prefix": sys.pycache_prefix, "cwd": os.getcwd()}, fh)
'''


def test_a_test_sees_no_path_of_the_tools_cache(tmp_path, result_cache, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    for arm in ("a", "b"):
        (tmp_path / arm).mkdir()
        (tmp_path / arm / "test_env.py").write_text(ENV_DUMP)
    out = tmp_path / "env.json"
    r = run_ab(RunOptions(paths=["test_env.py"], a_root=str(tmp_path / "a"), b_root=str(tmp_path / "b"),
                          cwd=str(tmp_path), jobs=2, confirm=0, env={"AB_OUT": str(out)}))
    assert _categories(r) == {"test_env.py::test_dumps_its_environment": "same-pass"}
    for arm in ("A", "B"):
        seen = json.loads(Path(f"{out}.{arm}").read_text())
        run_root = str(Path(seen["cwd"]).parents[2])  # RUN/arms/<arm>/root
        values = [*seen["env"].values(), seen["prefix"]]
        assert not [v for v in values if str(result_cache) in v]
        assert "DECOUPLE_CACHE_DIR" not in seen["env"]
        # what the runner's own variables name lies in the run's temporary root, deleted with it
        assert not [k for k in seen["env"] if k.startswith("DECOUPLE_")]  # the runner's own: its plugins took them
        assert seen["prefix"].startswith(run_root)
        assert seen["env"]["GIT_CEILING_DIRECTORIES"] == os.path.realpath(run_root)
        assert not Path(run_root).exists()


# Where a test's code sees the environment: a conftest.py and a test module as they are imported, a
# test, and a process a test starts. Each appends the runner's variables it sees to its arm's file.
SEES_RUNNER_VARIABLES = """import json
import os
import subprocess
import sys


def record(where, names=None):
    if names is None:
        names = [k for k in os.environ if k.startswith("DECOUPLE_")]
    arm = os.path.basename(os.path.dirname(os.getcwd()))  # RUN/arms/<arm>/root
    with open(os.environ["AB_OUT"] + "." + arm, "a") as fh:
        fh.write(json.dumps({"where": where, "seen": names}) + "\\n")


def record_a_child(where):
    code = "import os; print(' '.join(k for k in os.environ if k.startswith('DECOUPLE_')))"
    record(where, subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.split())
"""
RUNNER_VARIABLE_FILES = {
    "tests/seen.py": SEES_RUNNER_VARIABLES,
    "tests/conftest.py": "import seen\n\nseen.record('conftest')\n",
    # the first test ends its process: the rest of the file runs in a new one, told what to leave out
    "tests/test_one.py": "import os\n\nimport seen\n\nseen.record('module')\n\n\n"
                         "def test_ends_its_process():\n    os._exit(3)\n\n\n"
                         "def test_sees():\n    seen.record('test')\n    seen.record_a_child('child')\n",
    "tests/test_two.py": "import seen\n\n\ndef test_sees():\n    seen.record('test')\n",
}


@pytest.mark.parametrize("fork, pack", [(True, False), (False, False), (True, True)], ids=["fork", "no-fork", "pack"])
def test_a_test_sees_none_of_the_runners_variables(tmp_path, fork, pack):
    for arm in ("a", "b"):
        for rel, text in RUNNER_VARIABLE_FILES.items():
            (tmp_path / arm / rel).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / arm / rel).write_text(text)
    out = tmp_path / "seen"
    r = run_ab(RunOptions(paths=["tests"], a_root=str(tmp_path / "a"), b_root=str(tmp_path / "b"), cwd=str(tmp_path),
                          jobs=2, confirm=0, fork=fork, pack=pack, env={"AB_OUT": str(out)}))
    # (the runner read what its plugin recorded: the event file's path reached it)
    assert _categories(r)["tests/test_two.py::test_sees"] == "same-pass", [(t.nodeid, t.category) for t in r.tests]
    for arm in ("A", "B"):
        records = [json.loads(line) for line in Path(f"{out}.{arm}").read_text().splitlines()]
        assert {rec["where"] for rec in records} == {"conftest", "module", "test", "child"}, records
        assert [rec for rec in records if rec["seen"]] == [], records


def test_the_environments_own_sitecustomize_still_runs(tmp_path):
    support, site = tmp_path / "run" / "support", tmp_path / "site"
    support.mkdir(parents=True)
    site.mkdir()
    shutil.copy2(Path(isolation.__file__).parents[2] / "target" / "bytecode.py", support / "sitecustomize.py")
    (site / "sitecustomize.py").write_text("MARK = 'the environment'\n")
    code = ("import sys, importlib.machinery as m; "
            "print(sys.modules['sitecustomize'].MARK, m.SourceFileLoader.get_data.__module__)")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(support), str(site)])}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert out.split() == ["the", "environment", "sitecustomize"]
