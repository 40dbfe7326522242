"""Packs reach their files through their directories (codemod/target/packplugin.py), and many
files are packed by default: what each file records is what naming it would record."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from codemod.ab.result.notices import Notice
from codemod.ab.arms.options import RunOptions
from codemod.ab.arms.options import PACK_FROM
from codemod.ab.execution.packrun import pack_arguments, packing
from codemod.ab.execution.run import run_ab

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


def test_packing_follows_the_choice_then_the_warm_interpreter_then_the_number_of_files():
    assert packing(True, fork=False, warm=False, files=1) is True  # --pack
    assert packing(False, fork=True, warm=False, files=100) is False  # --no-pack: a process per file
    assert packing(None, fork=False, warm=False, files=100) is False  # --no-fork: a fresh process per file
    assert packing(None, fork=True, warm=False, files=1) is True  # forking refused
    assert packing(None, fork=True, warm=True, files=PACK_FROM - 1) is False
    assert packing(None, fork=True, warm=True, files=PACK_FROM) is True


def _whole(*files: str) -> dict[str, list[str]]:
    return {f: [f] for f in files}


def test_files_of_one_directory_are_reached_through_it(tmp_path):
    todo = ["t/test_a.py", "t/test_b.py", "t/nn/test_c.py", "u/x_test.py"]
    args, walked = pack_arguments(todo, _whole(*todo), tmp_path)
    assert args == ["t", "u"] and walked == todo


def test_a_file_run_in_parts_or_named_otherwise_is_named_and_keeps_its_directory_named_too(tmp_path):
    todo = ["t/test_a.py", "t/test_b.py", "t/sub/check_c.py", "u/test_d.py", "test_e.py"]
    args = {**_whole(*todo), "t/test_b.py": ["t/test_b.py::TestB"]}
    named, walked = pack_arguments(todo, args, tmp_path)
    # t/ holds a named file (a part of test_b, and check_c which the default patterns miss):
    # naming t/ would collect them twice, so all of t/ is named; u/ and the root are walked
    # only where nothing named lies below: "." would hold t/, so test_e.py is named too
    assert walked == ["u/test_d.py"]
    assert named == ["t/test_a.py", "t/test_b.py::TestB", "t/sub/check_c.py", "test_e.py", "u"]


def test_a_test_folder_conftest_that_naming_the_directory_would_load_keeps_the_files_named(tmp_path):
    (tmp_path / "t" / "test_helpers").mkdir(parents=True)
    (tmp_path / "t" / "test_helpers" / "conftest.py").write_text("")
    todo = ["t/test_a.py", "t/test_b.py"]
    assert pack_arguments(todo, _whole(*todo), tmp_path) == (todo, [])
    # a conftest on the way to a file of the pack loads either way
    todo = [*todo, "t/test_helpers/test_c.py"]
    assert pack_arguments(todo, _whole(*todo), tmp_path) == (["t"], todo)


def _tree(root: Path, n: int) -> None:
    """n files that record the pid of their process, a file outside the selection, and a
    conftest that would leave one selected file out of `pytest DIR`."""
    (root / "t").mkdir(parents=True)
    for i in range(n):
        (root / "t" / f"test_w{i}.py").write_text(
            "import os\n\n"
            "def test_pid():\n"
            "    with open(os.environ['AB_PIDS'], 'a') as fh:\n"
            f"        fh.write(os.environ['TMPDIR'].split(os.sep)[-2] + ' {i} ' + str(os.getpid()) + '\\n')\n"
        )
    (root / "t" / "test_outside.py").write_text("def test_outside():\n    raise AssertionError('not selected')\n")
    (root / "t" / "conftest.py").write_text("collect_ignore = ['test_w0.py']\n")


def _pids(path: Path) -> dict[str, dict[str, str]]:
    by_arm: dict[str, dict[str, str]] = {}
    for line in path.read_text().split("\n"):
        if line:
            arm, i, pid = line.split()
            by_arm.setdefault(arm, {})[i] = pid
    return by_arm


@linux_only
def test_many_files_run_packed_from_the_warm_interpreter_with_the_outcomes_of_naming_them(tmp_path):
    from test_ab_scale import stand_in_torch

    site = stand_in_torch(tmp_path)
    root = tmp_path / "r"
    _tree(root, PACK_FROM)
    files = [f"t/test_w{i}.py" for i in range(PACK_FROM)]
    pids = tmp_path / "pids"
    env = {"PYTHONPATH": str(site), "AB_PIDS": str(pids)}
    r = run_ab(RunOptions(paths=files, a_root=str(root), b_root=str(root), cwd=str(tmp_path), jobs=2, confirm=0,
                          env=env))
    # every selected file ran (test_w0 too: named, a conftest's collect_ignore does not apply),
    # the file outside the selection did not
    assert {t.nodeid: t.category for t in r.tests} == {f"{f}::test_pid": "same-pass" for f in files}
    assert r.warnings == [Notice("run.packed-many", {"processes": "1", "files": str(PACK_FROM)})]
    assert str(r.warnings[0]).startswith(f"{PACK_FROM} files: each arm's files ran in 1 pytest session of several")
    by_arm = _pids(pids)
    assert {arm: len(set(p.values())) for arm, p in by_arm.items()} == {"A": 1, "B": 1}
    assert {arm: sorted(p) for arm, p in by_arm.items()} == {arm: sorted(map(str, range(PACK_FROM))) for arm in "AB"}

    pids.unlink()
    alone = run_ab(RunOptions(paths=files, a_root=str(root), b_root=str(root), cwd=str(tmp_path), jobs=2, confirm=0,
                              pack=False, env=env))
    assert {t.nodeid: t.category for t in alone.tests} == {t.nodeid: t.category for t in r.tests}
    assert not alone.warnings
    assert {arm: len(set(p.values())) for arm, p in _pids(pids).items()} == {"A": PACK_FROM, "B": PACK_FROM}


@linux_only
def test_a_file_the_configured_patterns_miss_is_run_on_its_own(tmp_path):
    """python_files = check_*.py: the walk of the directory does not reach test_*.py files,
    so each goes on alone, named, and records what it would have."""
    root = tmp_path / "r"
    _tree(root, 3)
    (root / "pytest.ini").write_text("[pytest]\npython_files = check_*.py\n")
    files = [f"t/test_w{i}.py" for i in range(3)]
    pids = tmp_path / "pids"
    r = run_ab(RunOptions(paths=files, a_root=str(root), b_root=str(root), cwd=str(tmp_path), jobs=2, confirm=0,
                          pack=True, fork=False, env={"AB_PIDS": str(pids)}))
    assert {t.nodeid: t.category for t in r.tests} == {f"{f}::test_pid": "same-pass" for f in files}
    assert {arm: len(set(p.values())) for arm, p in _pids(pids).items()} == {"A": 3, "B": 3}
