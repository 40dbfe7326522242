"""Trust (issue 18): the checkout is never touched, a reproduction is exact, input from
elsewhere stays data. Every hostile input is generated here; each test failed before its fix."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
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


# --- repro.sh: every value from a result quoted, no newline from input, commits not refs --------

RESULTS = Path(__file__).resolve().parent / "fixtures" / "ab_results"


def _hostile_result(tmp_path: Path) -> dict:
    """A shard result as a CI runner running the PR's code could write it."""
    data = json.loads((RESULTS / "regression.json").read_text(encoding="utf-8"))
    pwn = lambda name: f"touch {tmp_path / name}"  # noqa: E731
    data["started"] = f"2026-01-01\n{pwn('via-started')}\n"
    data["tool_version"] = f"1.0\r\n{pwn('via-tool-version')}"
    data["python"] = f"$({pwn('via-python')})"
    for arm in data["arms"]:
        arm["source"] = f"dir:{tmp_path}/$({pwn('via-dir-cd')})\n{pwn('via-dir-comment')}"
        arm["name"] = arm["name"] + f"$({pwn('via-name-' + arm['name'])})"
        arm["extra_args"] = [f"`{pwn('via-args')}`"]
        arm["outcomes"] = {f"--basetemp={tmp_path / 'wiped'}": next(iter(arm["outcomes"].values()))}
    data["env_set"] = {"AB_OK": f"'\"; {pwn('via-env-value')}; \""}
    return data


def test_ab_merge_of_a_hostile_result_writes_a_repro_sh_that_runs_nothing_of_it(tmp_path):
    (tmp_path / "wiped").mkdir()
    (tmp_path / "wiped" / "keep").write_text("x")
    shard = tmp_path / "shard.json"
    shard.write_text(json.dumps(_hostile_result(tmp_path)))
    out = tmp_path / "out"
    out.mkdir()
    code, stdout, err = cli("ab", "merge", str(shard), "--allow-missing", "--markdown", str(out / "ab.md"))
    assert code in (0, 1, 3), err
    script = out / "repro.sh"
    text = script.read_text()
    stub = tmp_path / "python"  # the interpreter the script runs: records its arguments
    stub.write_text(f"#!/bin/sh\nprintf '%s\\n' \"$@\" >> {tmp_path / 'argv'}\n")
    stub.chmod(0o755)
    for args in ([], ["nope"], *[[a] for a in ("A", "B")]):
        subprocess.run(["bash", str(script), *args], cwd=tmp_path, env={**os.environ, "PYTHON": str(stub)},
                       capture_output=True, timeout=60)
    subprocess.run(["bash", str(script)], cwd=tmp_path, capture_output=True, timeout=60,
                   env={k: v for k, v in os.environ.items() if k != "PYTHON"})
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("via-")) == []
    assert (tmp_path / "wiped" / "keep").exists()
    # a comment stays one line: the newlines of the result are escaped in it
    header = text.splitlines()[1]
    assert header.startswith("# Reproduces the A/B run started 2026-01-01\\x0atouch ") and "\\x0d\\x0a" in header


def _committed_repo(tmp_path: Path) -> tuple[Path, str]:
    repo = tmp_path / "repo"
    (repo / "tests").mkdir(parents=True)
    (repo / "tests" / "test_v.py").write_text("def test_v():\n    assert 'v1'\n")
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "v1")
    return repo, git(repo, "rev-parse", "HEAD").strip()


def test_repro_sh_rebuilds_each_arm_from_the_commit_the_run_used_not_a_ref(tmp_path):
    repo, v1 = _committed_repo(tmp_path)
    (repo / "tests" / "test_v.py").write_text("def test_v():\n    assert 'v2'\n")
    git(repo, "commit", "-qam", "v2")
    v2 = git(repo, "rev-parse", "HEAD").strip()
    out = tmp_path / "out"
    out.mkdir()
    code, stdout, err = cli("ab", "tests/test_v.py", "--base", "HEAD~1", "-q", "-j", "2", "--markdown",
                            str(out / "ab.md"), "--json", str(out / "ab.json"), cwd=repo)
    assert code == 0, stdout + err
    arms = {a["name"]: a for a in json.loads((out / "ab.json").read_text())["arms"]}
    assert (arms["A"]["commit"], arms["B"]["commit"]) == (v1, v2)     # B: a clean work tree is its HEAD
    assert arms["B"]["tree"] == git(repo, "rev-parse", "HEAD^{tree}").strip()
    # the user moves on: HEAD~1 and the work tree are other code now
    (repo / "tests" / "test_v.py").write_text("def test_v():\n    assert 'v3'\n")
    git(repo, "commit", "-qam", "v3")
    (repo / "tests" / "test_v.py").write_text("def test_v():\n    assert 0, 'uncommitted'\n")
    text = (out / "repro.sh").read_text()
    assert f"archive {v1} -- tests" in text and f"archive {v2} -- tests" in text
    assert [line for line in text.splitlines() if "HEAD" in line and not line.lstrip().startswith("#")] == []
    for arm in ("A", "B"):
        proc = subprocess.run(["bash", str(out / "repro.sh"), arm], cwd=repo, capture_output=True, text=True,
                              env={**os.environ, "PYTHON": sys.executable}, timeout=300)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert "1 passed" in proc.stdout


def test_finding_the_commit_of_arm_b_leaves_the_users_git_index_untouched(tmp_path):
    from codemod.ab.arms.sources import clean_head

    repo, v1 = _committed_repo(tmp_path)
    test_file = repo / "tests" / "test_v.py"
    os.utime(test_file, ns=(test_file.stat().st_atime_ns, test_file.stat().st_mtime_ns - 10**10))
    index = repo / ".git" / "index"  # stale now: a plain `git status` refreshes and rewrites it
    before = (index.read_bytes(), index.stat().st_mtime_ns)
    assert clean_head(repo, ["tests"]) == v1
    assert (index.read_bytes(), index.stat().st_mtime_ns) == before


# --- result JSON read from elsewhere: validated, refused naming the file and the field -------------

@pytest.mark.parametrize("field,value,named", [
    ("tool_version", 5, "field tool_version: expected a string"),
    ("duration", "1.5", "field duration: expected a number"),
    ("env_set", {"A B": "1"}, "field env_set: 'A B' is not an environment variable name"),
    ("arms.0.commit", "HEAD", "field arms[0].commit: 'HEAD' is not a git object id"),
    ("arms.0.outcomes", {"t.py::x": {"nodeid": "t.py::x", "outcome": "passed", "duration": True}},
     'field arms[0].outcomes["t.py::x"].duration: expected a number, got a boolean'),
    ("arms.1.source", None, "field arms[1].source: expected a string, got null"),
])
def test_merge_and_durations_refuse_a_result_that_does_not_match_the_schema(tmp_path, field, value, named):
    data = json.loads((RESULTS / "regression.json").read_text(encoding="utf-8"))
    *path, last = field.split(".")
    node = data
    for part in path:
        node = node[int(part)] if part.isdigit() else node[part]
    node[last] = value
    bad = tmp_path / "shard.json"
    bad.write_text(json.dumps(data))
    code, out, err = cli("ab", "merge", str(bad))
    assert code == 2 and f"{bad}: not an A/B result" in err and named in err, err
    code, out, err = cli("ab", "t.py", "--a-root", str(tmp_path), "--b-root", str(tmp_path), "--shard", "1/2",
                         "--durations", str(bad))
    assert code == 2 and f"--durations {bad}: not an A/B result" in err and named in err, err


def test_pr_body_refuses_an_ab_result_that_does_not_match_the_schema(tmp_path):
    repo = _refactor_repo(tmp_path)
    assert cli("refactor", "test/test_alpha.py", "--no-ab", cwd=repo)[0] == 0
    for field, value, named in (("tool_version", ["1"], "field tool_version: expected a string"),
                                ("arms", {"A": 1}, "field arms: expected a list"),
                                ("env_set", {"A;B": "1"}, "field env_set: 'A;B' is not an environment variable name")):
        data = json.loads((RESULTS / "regression.json").read_text(encoding="utf-8"))
        data[field] = value
        bad = tmp_path / "ab.json"
        bad.write_text(json.dumps(data))
        code, body, err = cli("pr-body", "--ab", str(bad), "--branch", "hw-classification/test_alpha", cwd=repo)
        assert code == 2 and body == "" and f"{bad}: not an A/B result" in err and named in err, err


def test_durations_file_with_a_value_that_is_not_seconds_is_refused(tmp_path):
    for table, value in (("files", "NaN"), ("tests", "-1"), ("tests", '"2"'), ("files", "[]")):
        bad = tmp_path / "d.json"
        bad.write_text(f'{{"schema": "decouple-durations-1", "{table}": {{"a.py": {value}}}}}')
        code, out, err = cli("ab", "a.py", "--a-root", str(tmp_path), "--b-root", str(tmp_path), "--shard", "1/2",
                             "--durations", str(bad))
        assert code == 2 and f"--durations {bad}: not a durations file (field {table}[\"a.py\"]" in err, err


# --- two reports on one path: refused before the run ---------------------------------------------

def test_two_reports_on_one_file_are_refused_before_the_run(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "link.md").symlink_to(out / "r.json")
    (out / "r.json").write_text("kept")
    for flags, names in (
        (["--json", str(out / "r.json"), "--markdown", str(out / "r.json")], "--json and --markdown"),
        (["--json", str(out / "r.json"), "--html", str(out / "link.md")], "--json and --html"),
        (["--junit", str(out / "x.xml"), "--json", str(out / ".." / "out" / "x.xml")], "--json and --junit"),
        (["--markdown", str(out / "ab.md"), "--json", str(out / "repro.sh")], "--json and repro.sh"),
    ):
        code, stdout, err = cli("ab", "merge", str(RESULTS / "regression.json"), *flags)
        assert code == 2 and f"{names} name one file" in err, (flags, err)
        code, stdout, err = cli("ab", "t.py", "--a-root", str(tmp_path), "--b-root", str(tmp_path), *flags)
        assert code == 2 and f"{names} name one file" in err and "materialised" not in err, (flags, err)
    assert sorted(p.name for p in out.iterdir()) == ["link.md", "r.json"] and (out / "r.json").read_text() == "kept"
    code, stdout, err = cli("ab", "merge", str(RESULTS / "regression.json"), "--durations-out", "x")
    assert code == 2  # merge has no --durations-out (an option of the run)
    code, stdout, err = cli("ab", "t.py", "--a-root", str(tmp_path), "--b-root", str(tmp_path),
                            "--json", str(out / "d.json"), "--durations-out", str(out / "d.json"))
    assert code == 2 and "--json and --durations-out name one file" in err


# --- without git on PATH ----------------------------------------------------------------------------

def test_without_git_the_commands_that_need_it_say_so_and_the_others_work(tmp_path):
    empty = tmp_path / "bin"
    empty.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_PYTHON")}
    env["PATH"] = str(empty)
    for side in ("a", "b"):
        (tmp_path / side).mkdir()
        (tmp_path / side / "test_ok.py").write_text("def test_ok():\n    pass\n")
    (tmp_path / "test_x.py").write_text(
        "from torch.testing._internal.common_utils import TestCase\n\n\nclass TestX(TestCase):\n"
        "    def test_x(self):\n        pass\n")
    (tmp_path / "allow.json").write_text('["test_x.py"]\n')
    for args, expected in (
        (["--version"], 0),
        (["classify", "test_x.py"], 0),
        (["lint", "test_x.py"], 0),
        (["apply", "--check", "--from-allowlist", "allow.json"], 1),
        (["apply", "test_x.py"], 0),
        (["ab", "test_ok.py", "--a-root", "a", "--b-root", "b", "-q", "-j", "1", "--python", sys.executable], 0),
    ):
        code, out, err = cli(*args, cwd=tmp_path, env=env)
        assert code == expected, (args, out, err)
    assert "hw_classification = HardwareClassification.GENERIC" in (tmp_path / "test_x.py").read_text()
    for args in (["refactor", "test_x.py", "--no-ab"], ["pr-body"], ["ab", "test_ok.py", "--base", "HEAD"]):
        code, out, err = cli(*args, cwd=tmp_path, env=env)
        assert code == 2 and "git not found" in err, (args, out, err)


# --- refactor's own commits: no hook runs, a failed commit leaves no branch -----------------------

LABEL_ME = ("from torch.testing._internal.common_utils import TestCase\n\n\n"
            "class Test{name}(TestCase):\n    def test_x(self):\n        pass\n")


def _refactor_repo(tmp_path: Path, *names: str) -> Path:
    repo = tmp_path / "pytorch"
    (repo / "test").mkdir(parents=True)
    for name in names or ("alpha",):
        (repo / "test" / f"test_{name}.py").write_text(LABEL_ME.format(name=name.capitalize()))
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.name", "T")
    git(repo, "config", "user.email", "t@example.invalid")
    git(repo, "config", "commit.gpgsign", "false")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    return repo


def test_no_hook_runs_in_refactors_commits(tmp_path):
    repo = _refactor_repo(tmp_path)
    hooks = tmp_path / "hooks"  # where the user's core.hooksPath points (as husky or pre-commit set it)
    hooks.mkdir()
    ran = tmp_path / "ran"
    for hook in ("pre-commit", "prepare-commit-msg", "commit-msg", "post-commit", "post-checkout",
                 "reference-transaction", "post-index-change"):
        (hooks / hook).write_text(f"#!/bin/sh\necho {hook} >> {ran}\n"
                                  + ('echo "changed by a hook" >> "$1"\n' if hook == "prepare-commit-msg" else "")
                                  + ("exit 1\n" if hook in ("pre-commit", "post-checkout") else ""))
        (hooks / hook).chmod(0o755)
    git(repo, "config", "core.hooksPath", str(hooks))
    test_file = repo / "test" / "test_alpha.py"  # a stale index: the dirty check must not rewrite it
    os.utime(test_file, ns=(test_file.stat().st_atime_ns, test_file.stat().st_mtime_ns - 10**10))
    index = (repo / ".git" / "index").read_bytes()
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1"}
    code, out, err = cli("refactor", "test/test_alpha.py", "--no-ab", cwd=repo, env=env)
    assert code == 0, out + err
    assert not ran.exists(), ran.read_text()
    assert (repo / ".git" / "index").read_bytes() == index
    message = git(repo, "log", "-1", "--format=%B", "hw-classification/test_alpha")
    assert "changed by a hook" not in message and message.startswith("[Testcase Refactoring]")


def test_refactors_commit_leaves_the_users_object_store_as_it_was(tmp_path):
    """A commit runs git's automatic maintenance, which repacks the objects of the user's
    repository once there are enough loose ones (gc.auto): the tool's commit does not."""
    repo = _refactor_repo(tmp_path)
    git(repo, "config", "gc.auto", "1")
    git(repo, "config", "gc.autoDetach", "false")
    for i in range(600):  # loose objects in every fan-out folder, as a busy checkout has
        subprocess.run(["git", "hash-object", "-w", "--stdin"], cwd=repo, input=f"{i}\n", text=True,
                       check=True, capture_output=True)
    packs = sorted((repo / ".git" / "objects" / "pack").iterdir())
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1"}
    code, out, err = cli("refactor", "test/test_alpha.py", "--no-ab", cwd=repo, env=env)
    assert code == 0, out + err
    assert git(repo, "log", "-1", "--format=%s", "hw-classification/test_alpha").startswith("[Testcase")
    assert sorted((repo / ".git" / "objects" / "pack").iterdir()) == packs
    # (the same commit by hand does repack: what the test guards against is real)
    (repo / "x").write_text("x")
    git(repo, "add", "x")
    git(repo, "commit", "-qm", "x")
    assert sorted((repo / ".git" / "objects" / "pack").iterdir()) != packs


@pytest.mark.parametrize("breakage", ["no-email", "signing"])
def test_a_failed_commit_leaves_no_branch_and_the_rerun_works(tmp_path, breakage):
    repo = _refactor_repo(tmp_path)
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(HOME=str(home), GIT_CONFIG_NOSYSTEM="1", XDG_CONFIG_HOME=str(home))
    if breakage == "no-email":
        git(repo, "config", "--unset", "user.email")
        git(repo, "config", "user.useConfigOnly", "true")
    else:
        git(repo, "config", "commit.gpgsign", "true")
        git(repo, "config", "gpg.program", str(tmp_path / "no-such-gpg"))
    code, out, err = cli("refactor", "test/test_alpha.py", "--no-ab", cwd=repo, env=env)
    assert code == 2 and "git commit failed (no branch was made)" in err, out + err
    assert git(repo, "branch", "--list", "hw-classification/*") == ""
    git(repo, "config", "user.email", "t@example.invalid")
    git(repo, "config", "commit.gpgsign", "false")
    code, out, err = cli("refactor", "test/test_alpha.py", "--no-ab", cwd=repo, env=env)
    assert code == 0, out + err
    assert git(repo, "rev-parse", "hw-classification/test_alpha^").strip() == git(repo, "rev-parse", "main").strip()


# --- refactor's outputs: repro.sh, one folder per branch, state.json under concurrent runs -----------

STUB_COMMON_UTILS = """\
import enum
import unittest

TestCase = unittest.TestCase
HardwareClassification = enum.Enum("HardwareClassification", "GENERIC ACCELERATOR CPU CUDA MPS XPU")
"""


@pytest.fixture
def stub_torch(tmp_path):
    root = tmp_path / "stub"
    for rel in ("torch/__init__.py", "torch/testing/__init__.py", "torch/testing/_internal/__init__.py"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("")
    (root / "torch/testing/_internal/common_utils.py").write_text(STUB_COMMON_UTILS)
    return ["--python", sys.executable, "--env", f"PYTHONPATH={root}", "-j", "2", "--confirm", "1"]


def test_refactor_writes_the_repro_sh_its_reports_name_and_it_reproduces_the_branch(tmp_path, stub_torch):
    repo = _refactor_repo(tmp_path)
    code, out, err = cli("refactor", "test/test_alpha.py", *stub_torch, cwd=repo)
    assert code == 0, out + err
    folder = repo / ".decouple-out" / "hw-classification" / "test_alpha"
    assert "```sh\nbash repro.sh A\n```" in (folder / "ab.md").read_text()
    script = folder / "repro.sh"
    assert os.access(script, os.X_OK)
    arms = {a["name"]: a for a in json.loads((folder / "ab.json").read_text())["arms"]}
    head = git(repo, "rev-parse", "hw-classification/test_alpha").strip()
    assert arms["B"]["commit"] == head and arms["A"]["commit"] == git(repo, "rev-parse", "main").strip()
    # the temporary work tree B ran in is gone: the script rebuilds B from the branch's commit
    for arm in ("A", "B"):
        proc = subprocess.run(["bash", str(script), arm], cwd=repo, capture_output=True, text=True, timeout=300,
                              env={**os.environ, "PYTHON": sys.executable})
        assert proc.returncode == 0 and "1 passed" in proc.stdout, proc.stdout + proc.stderr


def test_each_branch_gets_its_own_output_folder(tmp_path):
    repo = _refactor_repo(tmp_path, "alpha", "beta", "gamma", "delta")
    branches = {"alpha": "x/a-b", "beta": "x-a/b", "gamma": "\u4fee\u590d/t", "delta": "\u6d4b\u8bd5/t"}
    for name, branch in branches.items():
        code, out, err = cli("refactor", f"test/test_{name}.py", "--no-ab", "--branch", branch, cwd=repo)
        assert code == 0, out + err
    bodies = sorted((repo / ".decouple-out").rglob("PR_BODY.md"))
    assert len(bodies) == 4
    for name, branch in branches.items():
        body = (repo / ".decouple-out" / branch / "PR_BODY.md").read_text()
        assert f"test/test_{name}.py" in body and not any(f"test/test_{o}.py" in body for o in branches if o != name)
    state = json.loads((repo / ".decouple-out" / "state.json").read_text())
    assert sorted(b["branch"] for b in state["branches"]) == sorted(branches.values())


def test_two_concurrent_refactor_runs_keep_both_branches_in_state_json(tmp_path, stub_torch):
    flag = tmp_path / "go"
    repo = _refactor_repo(tmp_path, "beta")
    waits = (f"    def test_x(self):\n        import os, time\n        end = time.time() + 120\n"
             f"        while not os.path.exists({str(flag)!r}) and time.time() < end:\n            time.sleep(0.05)\n")
    (repo / "test" / "test_alpha.py").write_text(LABEL_ME.format(name="Alpha").split("    def test_x")[0] + waits)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "alpha waits")
    first = subprocess.Popen([sys.executable, "-m", "codemod", "refactor", "test/test_alpha.py", *stub_torch],
                             cwd=repo, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
    try:
        assert first.stderr is not None
        for line in first.stderr:  # the first run has read state.json and committed; its A/B waits
            if line.startswith("A/B: hw-classification/test_alpha"):
                break
        code, out, err = cli("refactor", "test/test_beta.py", "--no-ab", cwd=repo)
        assert code == 0, out + err
    finally:
        flag.write_text("go")
        stdout, stderr = first.communicate(timeout=600)
    assert first.returncode == 0, stdout + stderr
    state = json.loads((repo / ".decouple-out" / "state.json").read_text())
    assert sorted(b["branch"] for b in state["branches"]) == ["hw-classification/test_alpha",
                                                              "hw-classification/test_beta"]
    assert not [p for p in (repo / ".decouple-out").iterdir() if p.name.endswith((".tmp", ".decouple-tmp"))]


# --- pr-body: the result must be the branch's -------------------------------------------------------

def test_pr_body_refuses_a_result_that_is_not_the_branchs_unless_forced(tmp_path, stub_torch):
    repo = _refactor_repo(tmp_path, "alpha", "beta")
    for name in ("alpha", "beta"):
        assert cli("refactor", f"test/test_{name}.py", "--no-ab", cwd=repo)[0] == 0
    git(repo, "checkout", "-q", "hw-classification/test_alpha")
    ab_json = tmp_path / "ab.json"
    code, out, err = cli("ab", "test/test_alpha.py", "--base", "main", "--json", str(ab_json), "-q", *stub_torch,
                         cwd=repo)
    assert code == 0, out + err
    code, body, err = cli("pr-body", "--ab", str(ab_json), "--branch", "hw-classification/test_alpha", cwd=repo)
    assert code == 0 and "## How this was verified" in body, err
    code, body, err = cli("pr-body", "--ab", str(ab_json), "--branch", "hw-classification/test_beta", cwd=repo)
    assert code == 2 and body == "", err
    assert f"{ab_json} is not the A/B result of hw-classification/test_beta" in err
    assert "it ran test/test_alpha.py, the branch changes test/test_beta.py" in err and "its arm B is the tree" in err
    code, body, err = cli("pr-body", "--ab", str(ab_json), "--branch", "hw-classification/test_beta", "--force",
                          cwd=repo)
    assert code == 0 and "## How this was verified" in body and "warning" in err and "(--force)" in err
    # another base: main moved on; and a B with uncommitted changes is no commit at all
    git(repo, "checkout", "-q", "main")
    (repo / "README.md").write_text("later\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "later")
    git(repo, "checkout", "-q", "hw-classification/test_alpha")
    (repo / "test" / "test_alpha.py").write_text((repo / "test" / "test_alpha.py").read_text() + "# local\n")
    code, out, err = cli("ab", "test/test_alpha.py", "--base", "main", "--json", str(ab_json), "-q", *stub_torch,
                         cwd=repo)
    assert code == 0, out + err
    code, body, err = cli("pr-body", "--ab", str(ab_json), "--branch", "hw-classification/test_alpha", cwd=repo)
    assert code == 2 and "its arm A is" in err and "the branch's base is" in err
    assert "its arm B is not a commit (changes in the work tree)" in err


def test_pr_body_into_a_missing_folder_is_refused_before_anything(tmp_path):
    repo = _refactor_repo(tmp_path)
    assert cli("refactor", "test/test_alpha.py", "--no-ab", cwd=repo)[0] == 0
    target = tmp_path / "no" / "such" / "PR_BODY.md"
    code, out, err = cli("pr-body", "--branch", "hw-classification/test_alpha", "-o", str(target), cwd=repo)
    assert code == 2 and f"cannot write {target}: folder {target.parent} does not exist" in err
    assert not (tmp_path / "no").exists()


# --- apply: an allowlist names files of its repository only ------------------------------------------

@pytest.mark.parametrize("entry", ["../outside/test_v.py", "ABSOLUTE", "test/test_link.py"])
def test_apply_from_allowlist_refuses_an_entry_outside_the_repository(tmp_path, entry):
    repo = _refactor_repo(tmp_path)
    victim = tmp_path / "outside" / "test_v.py"
    victim.parent.mkdir()
    victim.write_text(LABEL_ME.format(name="V"))
    (repo / "test" / "test_link.py").symlink_to(victim)
    entry = str(victim) if entry == "ABSOLUTE" else entry
    allow = repo / "allow.json"
    allow.write_text(json.dumps(["test/test_alpha.py", entry]) + "\n")
    before = files_of(tmp_path)
    for args in (["apply", "--from-allowlist", str(allow), "--graduate"], ["classify", "--from-allowlist", str(allow)]):
        code, out, err = cli(*args, cwd=repo)
        assert code == 2 and f"{entry}: outside the repository" in err, err
    assert files_of(tmp_path) == before


@pytest.mark.parametrize("in_git", [True, False])
def test_apply_of_a_folder_refuses_a_symlink_in_it_that_leaves_the_repository(tmp_path, in_git):
    repo = _refactor_repo(tmp_path) if in_git else tmp_path / "pytorch"
    (repo / "test").mkdir(parents=True, exist_ok=True)
    victim = tmp_path / "outside" / "test_v.py"
    victim.parent.mkdir()
    victim.write_text(LABEL_ME.format(name="V"))
    (repo / "test" / "test_link.py").symlink_to(os.path.relpath(victim, repo / "test"))
    (repo / "test" / "test_inside.py").symlink_to("test_alpha.py")  # stays in: taken, written through
    (repo / "test" / "test_alpha.py").write_text(LABEL_ME.format(name="Alpha"))
    if in_git:
        git(repo, "add", "-A")
        git(repo, "commit", "-qm", "links")
    before = files_of(tmp_path)
    target = "test" if in_git else str(repo / "test")
    for args in (["apply", target], ["classify", target]):
        code, out, err = cli(*args, cwd=repo)
        assert code == 2 and "test_link.py: a symlink to a file outside" in err, err
    assert files_of(tmp_path) == before
    code, out, err = cli("apply", target, "--exclude", "test/test_link.py", cwd=repo)  # left out: no refusal
    assert code == 0 and "1 changed" in err, err
    assert victim.read_bytes() == before["outside/test_v.py"] and (repo / "test" / "test_inside.py").is_symlink()


# --- every process a test starts is gone when the run ends ------------------------------------------

def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as f:  # a zombie is dead (only its parent may reap it)
        return f.read().rsplit(")", 1)[1].split()[0] != "Z"


def _daemon_test(pids: Path) -> str:
    """A test that starts a process which calls setsid() (leaves the group) and outlives it."""
    daemon = ("import os, sys, time; os.setsid(); "
              f"open(os.path.join({str(pids)!r}, str(os.getpid())), 'w').close(); time.sleep(120)")
    return (f"import os, subprocess, sys, time\n\n\ndef test_leaves_a_daemon():\n"
            f"    pid = subprocess.Popen([sys.executable, '-c', {daemon!r}]).pid\n"
            f"    end = time.time() + 60\n"
            f"    while str(pid) not in os.listdir({str(pids)!r}) and time.time() < end:\n        time.sleep(0.02)\n")


def _kill_all(pids: Path) -> None:
    for p in pids.iterdir():
        try:
            os.kill(int(p.name), 9)
        except OSError:
            pass


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the child subreaper is Linux's")
@pytest.mark.parametrize("fork", ["--fork", "--no-fork"])
def test_a_grandchild_that_calls_setsid_does_not_outlive_the_ab_run(tmp_path, fork):
    pids = tmp_path / "pids"
    pids.mkdir()
    for side in ("a", "b"):
        (tmp_path / side).mkdir()
        (tmp_path / side / "test_daemon.py").write_text(_daemon_test(pids))
    try:
        code, out, err = cli("ab", "test_daemon.py", "--a-root", "a", "--b-root", "b", "-q", "-j", "1", fork,
                             "--confirm", "0", cwd=tmp_path)
        assert code == 0, out + err
        started = [int(p.name) for p in pids.iterdir()]
        assert len(started) == 2  # one per arm
        assert [pid for pid in started if _alive(pid)] == []
    finally:
        _kill_all(pids)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the child subreaper is Linux's")
def test_a_grandchild_that_calls_setsid_does_not_outlive_discover_globals(tmp_path):
    py = os.environ.get("DECOUPLE_TORCH_PYTHON") or sys.executable
    if subprocess.run([py, "-c", "import torch, pytest"], capture_output=True).returncode != 0:
        pytest.skip(f"{py} cannot import torch and pytest (set DECOUPLE_TORCH_PYTHON)")
    pids = tmp_path / "pids"
    pids.mkdir()
    (tmp_path / "test_daemon.py").write_text(_daemon_test(pids))
    try:
        code, out, err = cli("discover-globals", "test_daemon.py", "--python", py, "--quiet", cwd=tmp_path)
        assert code == 0 and json.loads(out)["complete"], out + err
        started = [int(p.name) for p in pids.iterdir()]
        assert len(started) == 1 and not _alive(started[0])
    finally:
        _kill_all(pids)


# --- Ctrl-C: exit 130, no traceback, no temporary file -----------------------------------------------

def _workers_of(pid: int) -> list[int]:
    """The Python children of `pid`: its worker pool (not GitPython's `git` at import time)."""
    out = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                stat = Path(f"/proc/{name}/stat").read_text()
            except OSError:
                continue
            comm, rest = stat.rsplit(")", 1)
            if int(rest.split()[1]) == pid and comm.split("(", 1)[1].startswith("python"):
                out.append(int(name))
    return out


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("command", [["apply"], ["apply", "-j", "1"], ["classify"], ["lint"]])
def test_ctrl_c_is_exit_130_without_traceback_or_temporary_file(tmp_path, command):
    tree = tmp_path / "tree"
    tree.mkdir()
    body = "".join(f"    def test_{i}(self):\n        pass\n\n" for i in range(40))
    for i in range(1500):
        (tree / f"test_{i:04}.py").write_text(LABEL_ME.format(name=f"N{i}").split("    def test_x")[0] + body)
    jobs = [] if "-j" in command else ["-j", "2"]
    proc = subprocess.Popen([sys.executable, "-m", "codemod", *command, *jobs, str(tree)], cwd=tmp_path,
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)  # its own group: the SIGINT a terminal would send to it
    try:
        labelled = lambda: any("HardwareClassification.GENERIC" in p.read_text() for p in tree.iterdir())  # noqa: E731
        end = time.monotonic() + 300
        while time.monotonic() < end and proc.poll() is None:  # working: a file written, or the pool started
            if (command == ["apply", "-j", "1"] and labelled()) or (command != ["apply", "-j", "1"]
                                                                    and _workers_of(proc.pid)):
                break
            time.sleep(0.02)
        os.killpg(proc.pid, signal.SIGINT)
        err = proc.communicate(timeout=300)[1]
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "interrupted" in err, err
    assert [p.name for p in tree.iterdir() if not p.name.endswith(".py") or p.name.startswith(".")] == []
    for p in tree.iterdir():  # each file whole: untouched or labelled
        compile(p.read_text(), str(p), "exec")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc; PR_SET_PDEATHSIG")
def test_the_workers_end_with_a_parent_that_could_not_end_them(tmp_path):
    # A Ctrl-C that lands while the pool starts leaves the parent no pool to end, and the workers
    # ignore Ctrl-C: here the parent is killed outright, the harshest form of that.
    tree = tmp_path / "tree"
    tree.mkdir()
    body = "".join(f"    def test_{i}(self):\n        pass\n\n" for i in range(40))
    for i in range(1500):
        (tree / f"test_{i:04}.py").write_text(LABEL_ME.format(name=f"N{i}").split("    def test_x")[0] + body)
    proc = subprocess.Popen([sys.executable, "-m", "codemod", "classify", "-j", "2", str(tree)], cwd=tmp_path,
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        end = time.monotonic() + 300
        while time.monotonic() < end and proc.poll() is None and len(_workers_of(proc.pid)) < 2:
            time.sleep(0.02)
        workers = _workers_of(proc.pid)
        assert proc.poll() is None and workers, "the pool did not start"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)
        end = time.monotonic() + 120
        while time.monotonic() < end and any(_alive(w) for w in workers):
            time.sleep(0.1)
        assert not any(_alive(w) for w in workers)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)


@pytest.mark.skipif(not hasattr(signal, "pthread_kill"), reason="POSIX signals")
@pytest.mark.parametrize("module", ["click", "codemod.cli.main"])  # what `--version` imports (each command is imported on first use)
def test_ctrl_c_while_the_commands_are_imported_is_exit_130(module):
    code = ("import importlib.abc, runpy, signal, sys, threading\n"
            "class Interrupt(importlib.abc.MetaPathFinder):  # Ctrl-C lands as the module is imported\n"
            "    def find_spec(self, name, path=None, target=None):\n"
            f"        if name == {module!r}:\n"
            "            signal.pthread_kill(threading.get_ident(), signal.SIGINT)\n"
            "sys.meta_path.insert(0, Interrupt())\n"
            "sys.argv = ['decouple', '--version']\n"
            "runpy.run_module('codemod', run_name='__main__')\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)})
    assert proc.returncode == 130 and proc.stderr == "decouple: interrupted (Ctrl-C)\n", proc.stderr
    import tomllib  # the console script goes through the same guard

    pyproject = tomllib.loads((Path(__file__).resolve().parent.parent / "pyproject.toml").read_text())
    assert pyproject["project"]["scripts"]["decouple"] == "codemod.cli.entry:main"


def test_a_signal_during_a_write_waits_until_the_write_is_whole(tmp_path):
    target = tmp_path / "test_a.py"
    target.write_text("old\n")
    code = ("import os, signal, sys\n"
            "from codemod.util import files\n"
            "real = os.fsync\n"
            "def fsync(fd):\n"
            "    os.kill(os.getpid(), signal.SIGTERM)  # lands mid-write, before the rename\n"
            "    real(fd)\n"
            "os.fsync = fsync\n"
            f"files.write_atomic({str(target)!r}, b'new\\n')\n"
            "print('not reached')\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)})
    assert proc.returncode == -signal.SIGTERM and "not reached" not in proc.stdout
    assert sorted(os.listdir(tmp_path)) == ["test_a.py"] and target.read_text() == "new\n"


def test_writes_and_the_reaper_work_where_signals_cannot_be_held(tmp_path, monkeypatch):
    """Windows has no pthread_sigmask (nor prctl): a write is still made, a run still ends."""
    from codemod.util import files, reaper

    monkeypatch.delattr(signal, "pthread_sigmask")
    monkeypatch.setattr(reaper, "_PRCTL", None)
    target = tmp_path / "test_a.py"
    target.write_text("old\n")
    with reaper.orphans_reaped():
        files.write_atomic(str(target), b"new\n")
    assert sorted(os.listdir(tmp_path)) == ["test_a.py"] and target.read_text() == "new\n"


INTERRUPTED_WRITE = """\
import io, os, signal, sys, threading
target, args = os.path.realpath(sys.argv[1]), sys.argv[2:]
real_open = io.open


class Interrupted:  # Ctrl-C lands halfway through the first write
    def __init__(self, f):
        self.f, self.done = f, False

    def write(self, s):
        if self.done:
            return self.f.write(s)
        self.done = True
        self.f.write(s[: len(s) // 2])
        self.f.flush()
        signal.pthread_kill(threading.get_ident(), signal.SIGINT)
        return self.f.write(s[len(s) // 2 :])

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.f.close()

    def __getattr__(self, name):
        return getattr(self.f, name)


def opening(file, mode="r", *a, **k):
    f = real_open(file, mode, *a, **k)
    ours = not isinstance(file, int) and "w" in mode and os.path.realpath(os.fspath(file)) == target
    return Interrupted(f) if ours else f


io.open = opening
import builtins
builtins.open = opening
if args[0] == "discover-globals":  # the command's own write, without running a discovery
    import codemod.cli.discover_globals as dg
    dg.discover = lambda *a, **k: ({"targets": ["t.py"], "globals": ["x" * 4000]}, "complete")
    dg.summary = lambda *a, **k: ""
from codemod.cli.main import main
main(args, prog_name="decouple")
"""


@pytest.mark.skipif(not hasattr(signal, "pthread_kill"), reason="POSIX signals")
@pytest.mark.parametrize("command", ["pr-body", "apply --map-out", "discover-globals"])
def test_ctrl_c_during_an_output_write_leaves_the_output_whole(tmp_path, command):
    repo = _refactor_repo(tmp_path)
    if command == "pr-body":
        assert cli("refactor", "test/test_alpha.py", "--no-ab", cwd=repo)[0] == 0
        args = ["pr-body", "--branch", "hw-classification/test_alpha", "-o"]
    elif command == "apply --map-out":
        args = ["apply", "--check", "--restructure", "auto", "test/test_alpha.py", "--map-out"]
    else:
        args = ["discover-globals", "t.py", "--quiet", "--out"]
    whole, out = tmp_path / "whole", tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    for target, script in ((whole, "import sys\nfrom codemod.cli.main import main\nmain(sys.argv[2:])\n"),
                           (out, INTERRUPTED_WRITE)):
        if command == "discover-globals" and target == whole:
            script = INTERRUPTED_WRITE.replace("Interrupted(f) if", "f if")
        proc = subprocess.run([sys.executable, "-c", script, str(target), *args, str(target)], cwd=repo, env=env,
                              capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
        assert proc.returncode in ((0, 1) if target == whole else (130,)), proc.stderr
        assert "Traceback" not in proc.stderr, proc.stderr
    assert whole.read_text().endswith("\n") and out.read_text() == whole.read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "pytorch", "whole"]  # no temporary file


# --- nothing in an arm root points outside it ----------------------------------------------------------

LINK_TEST = """\
import os

HERE = os.path.dirname(os.path.abspath(__file__))


def test_writes_through_its_links():
    for name, was in (("abs_link.txt", "original\\n"), ("up_link.txt", "outside\\n"), ("other/data.txt", "other\\n")):
        path = os.path.join(HERE, name)
        assert open(path).read() in (was, "overwritten by a test")  # the copy reads as the link did
        with open(path, "w") as f:
            f.write("overwritten by a test")
    assert os.path.islink(os.path.join(HERE, "in_link.txt"))  # inside the arm: a link still
    assert not os.path.lexists(os.path.join(HERE, "dangling.txt"))
"""


def test_symlinks_that_leave_the_arm_are_copies_and_a_test_writing_through_them_writes_in_the_arm(tmp_path):
    repo = tmp_path / "repo"
    tests = repo / "tests"
    tests.mkdir(parents=True)
    (tests / "data.txt").write_text("original\n")
    (tmp_path / "outside.txt").write_text("outside\n")
    (tests / "abs_link.txt").symlink_to(tests / "data.txt")          # absolute, into the checkout
    (repo / "other").mkdir()
    (repo / "other" / "data.txt").write_text("other\n")
    (tests / "other").symlink_to(repo / "other")                      # a folder, absolute
    (tests / "loop").symlink_to(tests)                                # a folder holding the link itself
    (tests / "up_link.txt").symlink_to("../../outside.txt")           # relative, out of the repository
    (tests / "in_link.txt").symlink_to("data.txt")
    (tests / "dangling.txt").symlink_to(tmp_path / "nowhere" / "x.txt")
    (tests / "test_links.py").write_text(LINK_TEST)
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "links")
    before = files_of(tmp_path)
    code, out, err = cli("ab", "tests/test_links.py", "--base", "HEAD", "-q", "-j", "2", "--json",
                         str(tmp_path / "r.json"), cwd=repo)
    assert files_of(tmp_path) == {**before, "r.json": (tmp_path / "r.json").read_bytes()}
    assert not (tmp_path / "nowhere").exists()
    assert code == 0, out + err
    result = json.loads((tmp_path / "r.json").read_text())
    assert {t["category"] for t in result["tests"]} == {"same-pass"}
    notices = {(w["arm"], w["code"], w["params"]["path"]) for w in result["warnings"] if "symlink" in w["code"]}
    for arm in ("A", "B"):
        assert {(arm, "arm.symlink-copied", f"tests/{n}") for n in ("abs_link.txt", "other", "up_link.txt")} \
            <= notices
        assert {(arm, "arm.symlink-left-out", f"tests/{n}") for n in ("dangling.txt", "loop")} <= notices


def test_a_current_folder_deleted_under_the_shell_is_a_message_not_a_traceback(tmp_path):
    gone = tmp_path / "gone"
    gone.mkdir()
    code = ("import os, sys\n"
            f"os.chdir({str(gone)!r}); os.rmdir({str(gone)!r})\n"
            "sys.argv = ['decouple', 'classify', 'test_x.py']\n"
            "from codemod.cli.entry import main\n"
            "main()\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)})
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr == "decouple: the current folder no longer exists (deleted under the shell)\n"


@pytest.mark.skipif(not hasattr(signal, "pthread_sigmask"), reason="POSIX signal masks")
def test_a_ctrl_c_while_the_pool_starts_is_no_worker_traceback_and_reaches_the_parent(tmp_path):
    """The race of the test above, made certain: each worker gets SIGINT before its initializer
    runs, and the parent one while the pool is being made."""
    script = tmp_path / "race.py"
    script.write_text(
        "import multiprocessing, os, signal, sys, time\n"
        "from codemod.engine import process\n"
        "real = multiprocessing.get_context('fork')\n"
        "made = []\n"
        "class Ctx:\n"
        "    def Pool(self, jobs, initializer, initargs):\n"
        "        def first(*args):\n"
        "            os.kill(os.getpid(), signal.SIGINT)  # before the worker ignores it\n"
        "            time.sleep(0.05)\n"
        "            initializer(*args)\n"
        "            ignored = signal.getsignal(signal.SIGINT) is signal.SIG_IGN\n"
        "            os.write(1, f'worker {os.getpid()} {ignored}\\n'.encode())  # one write: lines never interleave\n"
        "        made.append(real.Pool(jobs, initializer=first, initargs=initargs))\n"
        "        os.kill(os.getpid(), signal.SIGINT)  # the parent's, while the pool starts\n"
        "        time.sleep(0.3)\n"
        "        return made[-1]\n"
        "try:\n"
        "    process._started_pool(Ctx(), 2, ((), None, False, None, None, os.getpid(), True))\n"
        "except KeyboardInterrupt:\n"
        "    print('parent interrupted after the pool started:', bool(made), flush=True)\n"
        "made[0].terminate()\n"
        "print('mask restored:', signal.SIGINT not in signal.pthread_sigmask(signal.SIG_BLOCK, []), flush=True)\n"
    )
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)})
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stdout.splitlines()
    assert sorted(line.split()[0] + " " + line.split()[2] for line in lines if line.startswith("worker")) == [
        "worker True", "worker True"], proc.stdout
    assert "parent interrupted after the pool started: True" in lines and "mask restored: True" in lines, proc.stdout
