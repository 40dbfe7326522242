"""End-to-end A/B runs on tiny fixture suites (no torch)."""

from __future__ import annotations

import copy
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import typing
from pathlib import Path

import pytest
from click.testing import CliRunner

from codemod.target import eventtypes
from codemod.cli.ab import ab
from codemod.ab.result.notices import Notice
from codemod.ab.arms.options import RunOptions
from codemod.ab.execution.run import run_ab, run_single_file
from codemod.report.ab import terminal

HERE = Path(__file__).resolve().parent
FIX = HERE / "fixtures" / "ab"
PROJECT = HERE.parent


def git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True).stdout


def make_repo(dest: Path, a: Path, b: Path | None = None) -> Path:
    """A git repo whose HEAD is `a`, with `b` laid over the work tree (uncommitted)."""
    shutil.copytree(a, dest)
    git(dest, "init", "-q")
    git(dest, "add", "-A")
    git(dest, "commit", "-qm", "base")
    if b is not None:
        for path in dest.rglob("*"):
            if ".git" not in path.parts and path.is_file() and not (b / path.relative_to(dest)).exists():
                path.unlink()
        shutil.copytree(b, dest, dirs_exist_ok=True)
    return dest


def tree_digest(root: Path) -> str:
    h = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        st = path.lstat()
        h.update(str(path.relative_to(root)).encode() + b"\0" + oct(st.st_mode).encode())
        if path.is_file() and not path.is_symlink():
            h.update(hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest()


# ---------------------------------------------------------------------------
# the mixed suite: one run, many assertions


@pytest.fixture(scope="module")
def mixed(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("mixed")
    repo = make_repo(tmp / "repo", FIX / "mixed" / "a", FIX / "mixed" / "b")
    (repo / "untracked_note.txt").write_text("dirty\n")
    before = tree_digest(repo)
    state = tmp / "flaky-state"
    t0 = time.monotonic()
    result = run_ab(RunOptions(paths=["tests"], base="HEAD", cwd=str(repo), timeout=2.0, confirm=1, jobs=2,
                               env={"AB_FLAKY_STATE": str(state)}))
    return {"result": result, "repo": repo, "before": before, "after": tree_digest(repo),
            "seconds": time.monotonic() - t0}


def row(result, nodeid):
    return next(t for t in result.tests if t.nodeid == nodeid)


def test_mixed_verdict_and_counts(mixed):
    r = mixed["result"]
    assert r.verdict == "REGRESSION"
    assert r.counts["new-failure"] == 4       # becomes_failure, 2 x import error, subtests
    # test_removed and test_gets_skipped ran in A: coverage lost
    assert r.counts["crash"] == 1 and r.counts["coverage-lost"] == 2 and "missing-in-b" not in r.counts
    assert r.base_ref == "HEAD" and r.normaliser_version


def test_identical_passes(mixed):
    r = mixed["result"]
    for nodeid in ("tests/test_same.py::test_pass", "tests/test_hang.py::test_first", "tests/test_crash.py::test_before"):
        assert row(r, nodeid).category == "same-pass"


def test_identical_failure_with_line_shift_is_preexisting(mixed):
    t = row(mixed["result"], "tests/test_same.py::test_fail_same")
    assert t.category == "pre-existing"
    assert t.a.signature == t.b.signature
    assert t.a.exc_type == "AssertionError" and "value mismatch" in t.a.signature
    assert t.a.traceback and "line N" not in t.a.traceback  # full traceback kept raw for the report


def test_new_failure_fixed_and_skip(mixed):
    r = mixed["result"]
    nf = row(r, "tests/test_change.py::test_becomes_failure")
    assert nf.category == "new-failure" and nf.b.outcome == "failed"
    assert nf.a.reruns == ["passed"] and nf.b.reruns == ["failed"]       # --confirm 1
    assert row(r, "tests/test_change.py::test_gets_fixed").category == "fixed"
    skip = row(r, "tests/test_change.py::test_gets_skipped")
    assert skip.category == "coverage-lost" and skip.b.outcome == "skipped" and skip.note.startswith("skipped in B")


def test_removed_added_and_xfail(mixed):
    r = mixed["result"]
    removed = row(r, "tests/test_change.py::test_removed")
    assert (removed.category, removed.note) == ("coverage-lost", "not collected in B")
    assert row(r, "tests/test_change.py::test_added").category == "added-in-b"
    x = row(r, "tests/test_change.py::test_xfail_to_xpass")
    assert x.category == "xfail-to-xpass" and (x.a.outcome, x.b.outcome) == ("xfailed", "xpassed")


def test_collection_import_error_in_b_only(mixed):
    r = mixed["result"]
    b = r.arm("B")
    assert set(b.collection_errors) == {"tests/test_imp.py"}
    err = b.collection_errors["tests/test_imp.py"]
    assert err.exc_type == "ModuleNotFoundError" and "decouple_ab_no_such_module" in err.message
    for nodeid in ("tests/test_imp.py::test_one", "tests/test_imp.py::test_two"):
        t = row(r, nodeid)
        assert t.category == "new-failure" and t.b.phase == "collect"
    # the other files of arm B were still run
    assert b.outcomes["tests/test_same.py::test_pass"].outcome == "passed"


def test_abort_attributed_to_the_right_test_and_rest_of_file_reported(mixed):
    r = mixed["result"]
    b = r.arm("B")
    t = row(r, "tests/test_crash.py::test_crashes")
    assert t.category == "crash" and t.b.outcome == "crashed" and t.b.signal == "SIGABRT"
    assert b.crashes == ["tests/test_crash.py::test_crashes"]
    assert b.outcomes["tests/test_crash.py::test_after"].outcome == "passed"
    assert row(r, "tests/test_crash.py::test_after").category == "same-pass"


def test_hanging_test_hits_timeout_and_file_continues(mixed):
    r = mixed["result"]
    t = row(r, "tests/test_hang.py::test_hang")
    assert t.a.outcome == t.b.outcome == "timeout" and t.category == "pre-existing"
    assert row(r, "tests/test_hang.py::test_last").category == "same-pass"


def test_flaky_detected(mixed):
    t = row(mixed["result"], "tests/test_flaky.py::test_flaky")
    assert t.category == "flaky", t
    assert "was " in t.note and len(t.a.reruns) == len(t.b.reruns) == 1


def test_unittest_subtest_failure(mixed):
    t = row(mixed["result"], "tests/test_sub.py::TestSub::test_values")
    assert t.category == "new-failure"
    assert [s.nodeid for s in t.b.subtests] == ["tests/test_sub.py::TestSub::test_values (i=2)"]
    assert "2 not less than 2" in t.b.signature


def test_work_tree_untouched_and_temp_roots_removed(mixed, decouple_cache):
    assert mixed["before"] == mixed["after"]
    for arm in mixed["result"].arms:
        assert not Path(arm.root).exists()
    assert "decouple_ab" not in " ".join(os.listdir(mixed["repo"]))
    # the arms' bytecode prefixes were the run's own: nothing of them is kept in the user's cache
    assert list(decouple_cache.rglob("*.pyc")) == []


def test_environment_and_reproduction_recorded(mixed):
    r = mixed["result"]
    assert "CI" in r.env_unset and "PYTORCH_RETRY_TEST_CASES" in r.env_unset
    assert r.env_set["PYTHONHASHSEED"] == "0" and r.env_set["PYTORCH_PRINT_REPRO_ON_FAILURE"] == "0"
    assert r.env_set["AB_FLAKY_STATE"]
    a, b = r.arm("A"), r.arm("B")
    sha = git(mixed["repo"], "rev-parse", "HEAD").strip()
    assert a.command.startswith("D=$(mktemp -d) && git -C ")          # a fresh directory every time
    assert f"archive {sha} -- " in a.command and 'cd "$D"' in a.command and "-m pytest" in a.command
    assert "--maxfail=0" in a.command
    assert b.command.startswith(f"cd {mixed['repo']}") and "env -u CI" in b.command
    assert r.environment.python and r.environment.pytest_version


def test_terminal_summary(mixed):
    text = terminal.render(mixed["result"])
    assert text.startswith("decouple ab: REGRESSION")
    assert "tests/test_crash.py::test_crashes" in text and "SIGABRT" in text
    assert "Counts:" in text and "Reproduce:" in text and "Environment:" in text


def test_json_roundtrip(mixed):
    from codemod.ab.result.model import ABResult
    data = json.loads(json.dumps(mixed["result"].to_json()))
    again = ABResult.from_json(data)
    assert again.to_json() == data


# ---------------------------------------------------------------------------
# plain directories through the CLI: --map, --diag, --shard, merge


@pytest.fixture(scope="module")
def diag_roots(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("diag")
    shutil.copytree(FIX / "diag" / "a", tmp / "a")
    shutil.copytree(FIX / "diag" / "b", tmp / "b")
    return tmp


def invoke(args):
    return CliRunner().invoke(ab, args, catch_exceptions=False)


def test_shards_map_diag_and_merge(diag_roots):
    common = ["tests", "--a-root", str(diag_roots / "a"), "--b-root", str(diag_roots / "b"), "-q",
              "--map", "TestOld=TestNew", "--diag", "envfix:AB_DIAG_OK=1", "--confirm", "1", "-j", "2"]
    s1, s2 = diag_roots / "s1.json", diag_roots / "s2.json"
    r1 = invoke(common + ["--shard", "1/2", "--json", str(s1)])
    assert r1.exit_code == 0, r1.output          # test_env.py only: SAFE
    d1 = json.loads(s1.read_text())
    rows = {t["nodeid"]: t for t in d1["tests"]}
    moved = rows["tests/test_env.py::TestNew::test_needs_env"]
    assert moved["category"] == "pre-existing" and moved["mapped_from"] == "tests/test_env.py::TestOld::test_needs_env"
    assert rows["tests/test_env.py::TestNew::test_plain"]["category"] == "same-pass"
    diag = d1["diagnostics"][0]
    assert diag["name"] == "envfix" and diag["based_on"] == "A"
    assert diag["changed"] == {"tests/test_env.py::TestOld::test_needs_env": ["failed", "passed"]}
    assert diag["statement"] == "1 test failing in A passes with AB_DIAG_OK=1."
    assert "envfix" in r1.output and "SAFE" in r1.output

    r2 = invoke(common + ["--shard", "2/2", "--json", str(s2)])
    assert r2.exit_code == 1, r2.output          # test_other.py: new failure
    merged = diag_roots / "merged.json"
    rm = invoke(["merge", str(s1), str(s2), "--json", str(merged), "-q"])
    assert rm.exit_code == 1, rm.output
    m = json.loads(merged.read_text())
    assert m["verdict"] == "REGRESSION" and m["shard"] is None
    assert m["counts"] == {"new-failure": 1, "pre-existing": 1, "same-pass": 2}
    assert m["tests"][0]["nodeid"] == "tests/test_other.py::test_other_two"


def test_no_tests_is_inconclusive(tmp_path):
    for side in ("a", "b"):
        (tmp_path / side).mkdir()
        (tmp_path / side / "test_empty.py").write_text("X = 1\n")
    r = invoke(["test_empty.py", "--a-root", str(tmp_path / "a"), "--b-root", str(tmp_path / "b"), "-q"])
    assert r.exit_code == 3, r.output
    assert "INCONCLUSIVE" in r.output


def test_bad_python_exits_2(tmp_path):
    args = ["x.py", "--a-root", str(tmp_path), "--b-root", str(tmp_path)]
    r = CliRunner().invoke(ab, args + ["--python", str(tmp_path / "nope" / "python")])
    assert r.exit_code == 2
    assert "no such interpreter" in r.output
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    r = CliRunner().invoke(ab, args + ["--python", str(venv / "bin" / "python")])
    assert r.exit_code == 2
    assert "pytest is not installed" in r.output


def test_usage_errors_exit_2(tmp_path):
    assert invoke(["x.py"]).exit_code == 2
    assert invoke(["x.py", "--base", "HEAD", "--a-root", str(tmp_path)]).exit_code == 2
    r = CliRunner().invoke(ab, ["x.py", "--a-root", str(tmp_path), "--b-root", str(tmp_path), "--diag", "bad"])
    assert r.exit_code == 2 and "--diag" in r.output
    assert "merge" in invoke(["--help"]).output


def test_bad_base_ref_exits_2(tmp_path):
    repo = make_repo(tmp_path / "repo", FIX / "diag" / "a")
    r = subprocess.run([sys.executable, "-m", "codemod.cli.ab", "tests", "--base", "no-such-ref", "-q"],
                       cwd=repo, capture_output=True, text=True)
    assert r.returncode == 2 and "no-such-ref" in r.stderr


# ---------------------------------------------------------------------------
# signals


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_signal_cleans_up(tmp_path, signum):
    repo = make_repo(tmp_path / "repo", FIX / "sleep")
    before = tree_digest(repo)
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    marker = tmp_path / "marker"
    env = {**os.environ, "TMPDIR": str(tmpdir), "AB_SLEEP_MARKER": str(marker),
           "PYTHONPATH": str(PROJECT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.Popen([sys.executable, "-m", "codemod.cli.ab", "test_sleep.py", "--base", "HEAD", "-q", "-j", "2"],
                            cwd=repo, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            if marker.exists() and len(marker.read_text().split()) >= 2:
                break
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.1)
        else:
            pytest.fail("the sleeping tests never started")
        assert any(p.name.startswith("decouple-ab-") for p in tmpdir.iterdir())
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == (130 if signum == signal.SIGINT else 143), err
    assert "interrupted" in err.decode()
    assert list(tmpdir.iterdir()) == []
    assert tree_digest(repo) == before
    for pid in marker.read_text().split():
        with pytest.raises(ProcessLookupError):
            os.kill(int(pid), 0)


# ---------------------------------------------------------------------------
# the capture plugin on its own


def test_plugin_phases_chain_and_pytest_subtests(tmp_path):
    (tmp_path / "test_cases.py").write_text(
        "import pytest\n"
        "@pytest.fixture\n"
        "def bad_teardown():\n"
        "    yield\n"
        "    raise ValueError('teardown boom')\n"
        "@pytest.fixture\n"
        "def bad_setup():\n"
        "    raise RuntimeError('setup boom')\n"
        "def test_setup(bad_setup):\n    pass\n"
        "def test_teardown(bad_teardown):\n    pass\n"
        "@pytest.mark.xfail(strict=True)\n"
        "def test_strict():\n    pass\n"
        "def test_chain():\n"
        "    try:\n        {}['k']\n"
        "    except KeyError as e:\n        raise RuntimeError('wrapped') from e\n"
        "def test_unpickling():\n"
        "    import pickle\n    raise pickle.UnpicklingError('bad')\n"
        "def test_subtests(subtests):\n"
        "    for i in range(3):\n"
        "        with subtests.test(msg='m', i=i):\n"
        "            assert i != 1\n"
    )
    before = sorted(p.name for p in tmp_path.iterdir())
    fr = run_single_file(str(tmp_path), "test_cases.py")
    o = fr.outcomes
    assert (o["test_cases.py::test_setup"].outcome, o["test_cases.py::test_setup"].phase) == ("error", "setup")
    assert o["test_cases.py::test_setup"].exc_type == "RuntimeError"
    assert (o["test_cases.py::test_teardown"].outcome, o["test_cases.py::test_teardown"].phase) == ("error", "teardown")
    assert o["test_cases.py::test_strict"].outcome == "failed"
    assert o["test_cases.py::test_chain"].exc_chain == ["KeyError"]
    assert o["test_cases.py::test_unpickling"].exc_type == "_pickle.UnpicklingError"
    sub = o["test_cases.py::test_subtests"]
    assert sub.outcome == "failed" and [s.nodeid for s in sub.subtests] == ["test_cases.py::test_subtests [m] (i=1)"]
    assert sorted(p.name for p in tmp_path.iterdir()) == before       # nothing written next to the tests


def test_every_event_line_has_the_shape_the_plugin_declares(tmp_path):
    # the runner reads the lines as the plugin's TypedDicts: every kind of event, with
    # exactly the declared keys (the optional ones only where they apply)
    (tmp_path / "test_kinds.py").write_text(
        "import pytest\n"
        "def test_pass():\n    pass\n"
        "@pytest.mark.skip(reason='why')\n"
        "def test_skip():\n    pass\n"
        "@pytest.mark.xfail\n"
        "def test_xfail():\n    assert False\n"
        "def test_subtests(subtests):\n"
        "    with subtests.test(msg='m', i=1):\n        assert False\n"
        "def test_dropped():\n    pass\n"
    )
    (tmp_path / "conftest.py").write_text(
        "def pytest_collection_modifyitems(items, config):\n"
        "    config.hook.pytest_deselected(items=[i for i in items if 'dropped' in i.nodeid])\n"
        "    items[:] = [i for i in items if 'dropped' not in i.nodeid]\n")
    (tmp_path / "test_broken.py").write_text("import no_such_module_here\n")
    (tmp_path / "test_skipped.py").write_text("import pytest\npytest.skip('not here', allow_module_level=True)\n")
    events = tmp_path / "events.jsonl"
    env = {**os.environ, "PYTHONPATH": str(PROJECT), "DECOUPLE_AB_EVENTS": str(events)}
    subprocess.run([sys.executable, "-m", "pytest", "-p", "codemod.target.plugin", "-p", "no:cacheprovider",
                    "--continue-on-collection-errors", "-q", "."], cwd=tmp_path, env=env, capture_output=True)
    shapes = {typing.get_args(typing.get_type_hints(cls)["ev"])[0]: cls for cls in typing.get_args(eventtypes.Event)}
    seen = set()
    for line in events.read_text().splitlines():
        record = json.loads(line)
        shape = shapes[record["ev"]]
        assert shape.__required_keys__ <= set(record) <= shape.__required_keys__ | shape.__optional_keys__, record
        seen.add(record["ev"])
        if record["ev"] == "deselected":   # who dropped it, and its census
            assert record["reason"] == "deselected by pytest_collection_modifyitems (conftest.py)", record
            assert record["hw"] == {"test_kinds.py::test_dropped": None}
    assert seen == set(shapes) - {"plugin-error"}


def test_plugin_syntax_error_is_a_collection_error(tmp_path):
    (tmp_path / "test_bad.py").write_text("def test_x(:\n    pass\n")
    fr = run_single_file(str(tmp_path), "test_bad.py")
    assert fr.outcomes == {}
    err = fr.collection_errors["test_bad.py"]
    assert (err.outcome, err.phase, err.exc_type) == ("error", "collect", "SyntaxError")


# Generous limits: collection on a loaded 2-core machine can take many seconds, and
# a limit that expires during collection is a different (collection) outcome.
FILE_LIMIT = 30


def test_file_timeout_stops_the_file(tmp_path):
    shutil.copy2(FIX / "mixed" / "a" / "tests" / "test_hang.py", tmp_path / "test_hang.py")
    fr = run_single_file(str(tmp_path), "test_hang.py", timeout=0, file_timeout=FILE_LIMIT)
    o = fr.outcomes
    assert [o[f"test_hang.py::{n}"].outcome for n in ("test_first", "test_hang", "test_last")] == \
        ["passed", "timeout", "not-run"]
    assert Notice("file.timeout", {"file": "test_hang.py", "seconds": str(FILE_LIMIT)}, arm=fr.arm) in fr.notes


# ---------------------------------------------------------------------------
# regressions from review


def test_helper_modules_next_to_selected_dir_are_materialised(tmp_path):
    # tests/pkg/sub/test_nested.py imports tests.helpers and uses a fixture of
    # the top-level conftest.py: both arms need the package base directory
    repo = make_repo(tmp_path / "repo", FIX / "helpers")
    r = run_ab(RunOptions(paths=["tests/pkg/sub/test_nested.py"], base="HEAD", cwd=str(repo), jobs=2))
    assert r.verdict == "SAFE", (r.verdict_reason, [(t.nodeid, t.category, t.b and t.b.message) for t in r.tests])
    assert r.counts == {"same-pass": 2}
    assert not r.arm("A").collection_errors and not r.arm("B").collection_errors


def test_materialise_copies_the_import_root_of_a_directory_whole(tmp_path):
    from codemod.ab.arms.materialise import materialise_dir
    from codemod.ab.arms.trees import Selection

    src = tmp_path / "src"
    for rel in ("test/test_a.py", "test/helper.py", "test/data/blob.bin", "torch/__init__.py", "setup.py",
                "test/build/x.py", "test/venv2/pyvenv.cfg", "test/__pycache__/h.cpython-311.pyc",
                "test/sub/.git/HEAD", "build/test_sel/test_b.py", "pytest.ini"):
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_text("x = 1\n")
    (src / "test" / "empty").mkdir()
    dest = tmp_path / "dest"
    # PyTorch layout: test/ has no __init__.py, so the import root is test/, never the
    # source torch/ package beside it (it would shadow the installed torch); a directory in no
    # git work tree is copied whole, nothing left out by its name (a repository's .git aside)
    materialise_dir(src, Selection(paths=["test/test_a.py"], common="test"), dest)
    got = sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*") if p.is_file())
    assert got == ["pytest.ini", "test/__pycache__/h.cpython-311.pyc", "test/build/x.py", "test/data/blob.bin",
                   "test/helper.py", "test/test_a.py", "test/venv2/pyvenv.cfg"]
    assert (dest / "test" / "empty").is_dir() and (dest / "test" / "sub").is_dir()
    dest2 = tmp_path / "dest2"
    materialise_dir(src, Selection(paths=["build/test_sel"], common="build/test_sel"), dest2)
    assert (dest2 / "build" / "test_sel" / "test_b.py").is_file()


def test_addopts_exitfirst_and_ini_below_root(tmp_path):
    # sub/pytest.ini: addopts = -x (must not hide test_2/test_3) and rootdir = sub/
    # (reruns must use node ids valid from the arm root, or every rerun is
    # not-run and the new failure turns "flaky")
    r = run_ab(RunOptions(paths=["sub"], a_root=str(FIX / "cfg" / "a"), b_root=str(FIX / "cfg" / "b"),
                          cwd=str(tmp_path), jobs=2, confirm=1))
    rows = {t.nodeid: t for t in r.tests}
    assert set(rows) == {"sub/test_a.py::test_1", "sub/test_a.py::test_2", "sub/test_a.py::test_3"}
    assert rows["sub/test_a.py::test_2"].category == "same-pass"
    t3 = rows["sub/test_a.py::test_3"]
    assert t3.category == "new-failure", t3
    assert (t3.a.reruns, t3.b.reruns) == (["passed"], ["failed"])
    assert r.verdict == "REGRESSION"
    assert "--maxfail=0" in r.arm("B").command and "sub/test_a.py" in r.arm("B").command


def test_order_dependent_difference_is_not_flaky(tmp_path):
    # in the file test_2 passes in A and fails in B; alone it fails in both
    r = run_ab(RunOptions(paths=["test_o.py"], a_root=str(FIX / "order" / "a"), b_root=str(FIX / "order" / "b"),
                          cwd=str(tmp_path), jobs=2, confirm=1))
    t = row(r, "test_o.py::test_2")
    assert t.category == "new-failure", t
    assert "order-dependent" in t.note and (t.a.reruns, t.b.reruns) == (["failed"], ["failed"])
    assert (t.a.suite_reruns, t.b.suite_reruns) == (["passed"], ["failed"])
    assert r.verdict == "REGRESSION"


def test_relative_python_and_removed_xfail(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rel = os.path.relpath(sys.executable, tmp_path)
    assert not os.path.isabs(rel)
    res = CliRunner().invoke(ab, ["test_x.py", "--a-root", str(FIX / "xfail" / "a"), "--b-root",
                                  str(FIX / "xfail" / "b"), "-q", "--no-color", "--python", rel, "-j", "2",
                                  "--json", str(tmp_path / "r.json")])
    assert res.exit_code == 1, res.output                     # REGRESSION, not a traceback + exit 2
    data = json.loads((tmp_path / "r.json").read_text())
    assert data["python"] == os.path.abspath(sys.executable)    # abspath, not resolve(): venv links kept
    (t,) = data["tests"]
    assert t["category"] == "new-failure" and (t["a"]["outcome"], t["b"]["outcome"]) == ("xfailed", "failed")


def test_run_ab_leaves_its_options_as_they_were(tmp_path, monkeypatch):
    # a relative --python is resolved for the run, and the run's file times are its result's
    monkeypatch.chdir(tmp_path)
    rel = os.path.relpath(sys.executable, tmp_path)
    opts = RunOptions(paths=["test_x.py"], a_root=str(FIX / "xfail" / "a"), b_root=str(FIX / "xfail" / "b"),
                      python=rel, jobs=1, confirm=1, env={"AB_X": "1"}, mapping={"test_x.py::old": "test_x.py::new"})
    before = copy.deepcopy(opts)
    result = run_ab(opts)
    assert opts == before and opts.python == rel
    assert result.python == os.path.abspath(sys.executable)
    assert set(result.file_durations) == {"test_x.py"} and result.file_durations["test_x.py"] > 0
    assert "file_durations" not in result.to_json()


def test_resolve_python_forms(tmp_path):
    from codemod.ab.execution.interpreter import resolve_python
    from codemod.ab.arms.options import UsageError
    link = tmp_path / "venv" / "bin" / "python"
    link.parent.mkdir(parents=True)
    link.symlink_to(sys.executable)
    assert resolve_python("venv/bin/python", tmp_path) == str(link)           # the link, not its target
    assert os.path.isabs(resolve_python(Path(sys.executable).name, tmp_path)) or shutil.which(Path(sys.executable).name) is None
    with pytest.raises(UsageError):
        resolve_python("decouple-no-such-python-xyz", tmp_path)


def test_module_skip_deleted_new_paths_and_private_tmpdir(tmp_path):
    a, b = str(FIX / "lesser" / "a"), str(FIX / "lesser" / "b")
    r = run_ab(RunOptions(paths=["test_modskip.py", "test_gone.py", "test_new.py", "test_tmp.py"], a_root=a,
                          b_root=b, cwd=str(tmp_path), jobs=2, env={"AB_MARK": f"{os.getpid()}-{time.time_ns()}"}))
    assert r.arm("A").ran and r.arm("B").ran, (r.arm("A").error, r.arm("B").error)
    m1 = row(r, "test_modskip.py::test_m1")
    assert m1.category == "coverage-lost" and "no backend" in m1.note, m1
    gone = row(r, "test_gone.py::test_g")
    assert gone.category == "coverage-lost" and "B collects no test of test_gone.py" in gone.note
    assert row(r, "test_new.py::test_n").category == "added-in-b"
    assert row(r, "test_tmp.py::test_private_tmpdir").category == "same-pass"   # no collision between arms
    res = CliRunner().invoke(ab, ["nope.py", "--a-root", a, "--b-root", b, "-q"])
    assert res.exit_code == 2 and "exists in neither arm" in res.output


def test_file_stopped_in_both_arms_is_inconclusive(tmp_path):
    for side in ("a", "b"):
        (tmp_path / side).mkdir()
        (tmp_path / side / "test_f.py").write_text(
            "import time\ndef test_1():\n    time.sleep(600)\ndef test_2():\n    pass\n")
    r = run_ab(RunOptions(paths=["test_f.py"], a_root=str(tmp_path / "a"), b_root=str(tmp_path / "b"),
                          cwd=str(tmp_path), jobs=2, file_timeout=FILE_LIMIT, timeout=0))
    t = row(r, "test_f.py::test_2")
    assert (t.a.outcome, t.b.outcome, t.category) == ("not-run", "not-run", "inconclusive")   # not same-skip
    assert r.verdict == "INCONCLUSIVE" and "neither arm" in r.verdict_reason
    assert "inconclusive 1" in terminal.render(r)
