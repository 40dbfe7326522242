"""Hostile inputs, generated here: each gets its documented exit code and message, no
traceback, and no file changes that should not."""

import json
import os
import shutil
import stat
import subprocess
import sys

import pytest

from codemod.engine import process as engine
from codemod.util.files import MAX_SOURCE_BYTES
from transforms.core.base import Finding, TransformResult
from transforms.label import HwLabel

GENERIC_SRC = (
    "from torch.testing._internal.common_utils import run_tests, TestCase\n\n\n"
    "class TestA(TestCase):\n    def test_a(self):\n        pass\n"
)
LABELLED_LINE = "    hw_classification = HardwareClassification.GENERIC\n"
MIXED_SRC = (
    "from torch.testing._internal.common_device_type import instantiate_device_type_tests\n"
    "from torch.testing._internal.common_utils import TestCase\n\n\n"
    "class TestM(TestCase):\n    def test_d(self, device):\n        pass\n\n    def test_p(self):\n        pass\n\n\n"
    "instantiate_device_type_tests(TestM, globals())\n"
)


def cli(*args, cwd=None):
    proc = subprocess.run([sys.executable, "-m", "codemod", *args], capture_output=True, text=True, cwd=cwd,
                          stdin=subprocess.DEVNULL)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, proc.stdout, proc.stderr


def snapshot(folder):
    return {p: (p.read_bytes(), stat.S_IMODE(p.lstat().st_mode)) for p in sorted(folder.rglob("*"))
            if p.is_file() and not p.is_symlink()}


def git_init(folder):
    subprocess.run(["git", "init", "-q", str(folder)], check=True)


# --- deep / pathological input ------------------------------------------------------------------

def _elif(n):
    return "a = 1\nif a == 0:\n    pass\n" + "".join(f"elif a == {i}:\n    pass\n" for i in range(1, n))


DEEP = {
    "test_deep_expr.py": "x = " + "+".join(["1"] * 100_000) + "\n",
    "test_elif_3000.py": _elif(3000),
    "test_elif_1400.py": _elif(1400),
}


@pytest.fixture
def deep_tree(tmp_path):
    for name, tail in DEEP.items():
        (tmp_path / name).write_text(GENERIC_SRC + "\n\n" + tail)
    for i in range(6):  # enough files for the process pool
        (tmp_path / f"test_ok{i}.py").write_text(GENERIC_SRC)
    return tmp_path


def test_deep_input_is_a_per_file_error_in_every_command(deep_tree):
    before = {n: (deep_tree / n).read_bytes() for n in DEEP}
    for jobs in ("1", "2"):
        code, out, err = cli("classify", "-j", jobs, str(deep_tree))
        assert code == 2 and "6 to label" in err and "3 failed" in err
        for name in DEEP:
            assert f"{name}: error: too deeply nested for Python's parser/analysis (RecursionError" in err
    code, out, err = cli("lint", "-j", "2", str(deep_tree))
    assert code == 0
    msgs = {os.path.basename(m["path"]): m for m in map(json.loads, out.splitlines())}
    for name in DEEP:
        assert msgs[name]["name"] == "input-error" and "too deeply nested" in msgs[name]["description"]
    assert msgs["test_ok0.py"]["name"] == "autofix"
    code, out, err = cli("apply", "-j", "2", str(deep_tree))
    assert code == 2 and "6 changed" in err and "3 failed" in err
    assert all((deep_tree / n).read_bytes() == b for n, b in before.items())
    assert LABELLED_LINE in (deep_tree / "test_ok5.py").read_text()


class _DeepFindings:
    """A transform whose findings cannot be pickled (nested deeper than pickle recurses)."""

    name = "deep"

    def triage(self, text):
        return True

    def run(self, text, tree, path=None):
        data = {}
        for _ in range(100_000):
            data = {"x": data}
        return TransformResult(text, [Finding(rule="test/deep", message="deep", line=1, data=data)])

    def strip(self, tree):
        return tree


def test_result_that_cannot_cross_processes_is_that_files_error(tmp_path):
    files = [tmp_path / f"test_{i}.py" for i in range(8)]
    for f in files:
        f.write_text(GENERIC_SRC)
    results = engine.run_files([str(f) for f in files], [_DeepFindings()], "classify", jobs=2)
    assert [r.status for r in results] == ["failed"] * 8
    assert all("too deeply nested" in r.reason for r in results)


# --- size -----------------------------------------------------------------------------------------

def test_file_above_the_size_limit_is_refused_not_parsed(tmp_path):
    big = tmp_path / "test_big.py"
    body = "".join(f"class T{i}(TestCase):\n    def test_{i}(self):\n        pass\n\n\n" for i in range(30_000))
    big.write_text(GENERIC_SRC + "\n\n" + body)
    assert big.stat().st_size > MAX_SOURCE_BYTES
    small = tmp_path / "test_small.py"
    small.write_text(GENERIC_SRC)
    before = big.read_bytes()
    code, out, err = cli("apply", str(tmp_path))
    assert code == 2 and "1 changed" in err
    assert f"test_big.py: error: too large: {big.stat().st_size:,} bytes (the limit is {MAX_SOURCE_BYTES:,}" in err
    assert big.read_bytes() == before and LABELLED_LINE in small.read_text()


# --- allowlist, paths file, diff headers ----------------------------------------------------------

def test_non_utf8_allowlist_and_paths_file_are_usage_errors(tmp_path):
    f = tmp_path / "test_a.py"
    f.write_text(GENERIC_SRC)
    allow = tmp_path / "allow.json"
    allow.write_bytes(b'["test_a.py", "caf\xe9.py"]\n')
    code, out, err = cli("apply", "--from-allowlist", str(allow))
    assert code == 2 and "is not UTF-8" in err
    listing = tmp_path / "paths.txt"
    listing.write_bytes(b"test_a.py\ncaf\xe9.py\n")
    code, out, err = cli("lint", "--paths-file", str(listing), cwd=tmp_path)
    assert code == 2 and "--paths-file" in err and "not UTF-8" in err
    assert f.read_text() == GENERIC_SRC


def test_lint_paths_file_with_a_deleted_path_lints_the_rest(tmp_path):
    (tmp_path / "test_a.py").write_text(GENERIC_SRC)
    listing = tmp_path / "paths.txt"
    listing.write_text("test_a.py\ntest_deleted.py\n")
    code, out, err = cli("lint", "--paths-file", str(listing), cwd=tmp_path)
    assert code == 0
    msgs = {m["path"]: m for m in map(json.loads, out.splitlines())}
    assert msgs["test_deleted.py"]["description"] == "no such file or folder"
    assert msgs["test_a.py"]["name"] == "autofix"


def test_diff_headers_of_allowlist_entries_are_repo_relative(tmp_path):
    repo = tmp_path / "pytorch"
    (repo / "test").mkdir(parents=True)
    (repo / "test" / "test_a.py").write_text(GENERIC_SRC)
    allow = repo / "allow.json"
    allow.write_text('["test/test_a.py"]\n')
    git_init(repo)
    code, out, err = cli("apply", "--diff", "--from-allowlist", str(allow))
    assert code == 1
    assert out.startswith("--- a/test/test_a.py\n+++ b/test/test_a.py\n")
    subprocess.run(["git", "-C", str(repo), "apply", "-"], input=out, text=True, check=True)
    assert LABELLED_LINE in (repo / "test" / "test_a.py").read_text()


# --- --set naming no class ------------------------------------------------------------------------

def test_set_for_a_missing_class_is_a_usage_error_before_any_write(tmp_path):
    (tmp_path / "test_a.py").write_text(GENERIC_SRC)
    (tmp_path / "test_b.py").write_text(GENERIC_SRC.replace("TestA", "TestB"))
    before = snapshot(tmp_path)
    for args in (["apply", "-j", "1"], ["apply", "--check"], ["classify"]):
        code, out, err = cli(*args, "--set", "TestB=GENERIC", "--set", "TestNope=CPU", str(tmp_path))
        assert code == 2 and "--set TestNope: no test class of that name" in err, (args, err)
        assert snapshot(tmp_path) == before
    code, out, err = cli("apply", "--set", "TestB=GENERIC", str(tmp_path))
    assert code == 0 and "2 changed" in err


# --- symlinks -------------------------------------------------------------------------------------

def test_apply_writes_through_a_symlink_and_keeps_it(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    target = real / "test_a.py"
    target.write_text(GENERIC_SRC)
    os.chmod(target, 0o640)
    link = tmp_path / "test_link.py"
    link.symlink_to(target)
    code, out, err = cli("apply", str(link))
    assert code == 0 and "1 changed" in err
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert LABELLED_LINE in target.read_text() and stat.S_IMODE(target.stat().st_mode) == 0o640
    assert sorted(os.listdir(real)) == ["test_a.py"]  # no temporary file left


def test_graduation_writes_through_a_symlinked_allowlist(tmp_path):
    repo = tmp_path / "pytorch"
    (repo / "test").mkdir(parents=True)
    (repo / "test" / "test_a.py").write_text(GENERIC_SRC)
    (repo / "test" / "test_m.py").write_text(MIXED_SRC)
    real = repo / "real_allow.json"
    real.write_text('[\n  "test/test_a.py",\n  "test/test_m.py"\n]\n')
    link = repo / "allow.json"
    link.symlink_to(real.name)
    git_init(repo)
    code, out, err = cli("apply", "--from-allowlist", str(link), "--graduate")
    assert code == 1  # test_m.py needs manual work
    assert link.is_symlink() and json.loads(real.read_text()) == ["test/test_m.py"]


# --- lint replacements and encodings --------------------------------------------------------------

def _lint_and_apply(tmp_path, name, data):
    f = tmp_path / name
    f.write_bytes(data)
    code, out, err = cli("lint", str(f))
    assert code == 0
    msgs = [json.loads(line) for line in out.splitlines()]
    assert f.read_bytes() == data
    code, _, err = cli("apply", str(f))
    assert code == 0 and "1 changed" in err
    return msgs, f.read_bytes()


def test_lint_replacement_of_a_bom_file_is_byte_for_byte_what_apply_writes(tmp_path):
    msgs, written = _lint_and_apply(tmp_path, "test_bom.py", b"\xef\xbb\xbf" + GENERIC_SRC.encode())
    [fix] = [m for m in msgs if m["name"] == "autofix"]
    assert written.startswith(b"\xef\xbb\xbf")
    assert fix["replacement"].encode("utf-8") == written
    assert fix["original"].encode("utf-8") == b"\xef\xbb\xbf" + GENERIC_SRC.encode()


@pytest.mark.parametrize("encoding", ["latin-1", "koi8-r"])
def test_lint_offers_no_autofix_that_would_re_encode_a_file(tmp_path, encoding):
    comment = {"latin-1": "# caf\u00e9 \u00fc\n", "koi8-r": "# \u0436\u0443\u043a\n"}[encoding]
    head = f"# -*- coding: {encoding} -*-\n{comment}"
    data = (head + GENERIC_SRC).encode(encoding)
    msgs, written = _lint_and_apply(tmp_path, "test_enc.py", data)
    assert not [m for m in msgs if m["replacement"] is not None]
    [note] = [m for m in msgs if m["name"] == "engine/no-autofix"]
    assert "no autofix offered" in note["description"] and "run `decouple apply`" in note["description"]
    # apply itself keeps the encoding: the non-ASCII bytes are untouched
    assert written.startswith(head.encode(encoding)) and LABELLED_LINE in written.decode(encoding)


def test_lint_offers_the_autofix_for_a_latin1_cookie_file_that_is_ascii(tmp_path):
    data = ("# -*- coding: latin-1 -*-\n" + GENERIC_SRC).encode("latin-1")
    msgs, written = _lint_and_apply(tmp_path, "test_ascii.py", data)
    [fix] = [m for m in msgs if m["name"] == "autofix"]
    assert fix["replacement"].encode("utf-8") == written


# --- excludes -------------------------------------------------------------------------------------

def test_excludes_are_gitignore_patterns_relative_to_the_repository(tmp_path):
    # A checkout that itself lives under a folder named like a default exclude.
    repo = tmp_path / "test" / "cpython" / "pytorch"
    for rel in ("test/test_a.py", "test/sub/test_b.py", "test/cpython/test_vendored.py"):
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(GENERIC_SRC)
    git_init(repo)
    code, out, err = cli("classify", "--format", "json", str(repo / "test"))
    names = sorted(os.path.relpath(f["path"], repo) for f in json.loads(out)["files"])
    assert names == ["test/sub/test_b.py", "test/test_a.py"]
    # `*` stays within one folder; a pattern with a slash is anchored at the root
    code, out, err = cli("classify", "--format", "json", "--exclude", "test/test_*.py", "test", cwd=repo)
    assert [f["path"] for f in json.loads(out)["files"]] == ["test/sub/test_b.py"]
    code, out, err = cli("classify", "--format", "json", "--exclude", "sub/", "test", cwd=repo)
    assert [f["path"] for f in json.loads(out)["files"]] == ["test/test_a.py"]


def test_a_folder_its_git_tree_ignores_is_walked_when_named(tmp_path):
    # e.g. the stdlib's test suite under ~/.pyenv, whose .gitignore ignores versions/
    (tmp_path / ".gitignore").write_text("/versions\n")
    (tmp_path / "versions" / "test").mkdir(parents=True)
    (tmp_path / "versions" / "test" / "test_a.py").write_text(GENERIC_SRC)
    git_init(tmp_path)
    code, out, err = cli("apply", "--check", str(tmp_path / "versions" / "test"))
    assert code == 1 and "1 would change" in err


# --- --check / --strict ---------------------------------------------------------------------------

def test_check_fails_only_for_edits_and_strict_for_manual_work(tmp_path):
    m = tmp_path / "test_m.py"
    m.write_text(MIXED_SRC)
    for flag in ("--check", "--diff"):
        code, out, err = cli("apply", flag, str(m))
        assert code == 0 and "1 need manual work" in err and "needs-manual" in err
        code, out, err = cli("apply", flag, "--strict", str(m))
        assert code == 1
    (tmp_path / "test_a.py").write_text(GENERIC_SRC)
    assert cli("apply", "--check", str(tmp_path))[0] == 1
    assert m.read_text() == MIXED_SRC


# --- bad files and hostile names ------------------------------------------------------------------

def test_bad_files_each_get_a_message_and_stay_untouched(tmp_path):
    (tmp_path / "test_syntax.py").write_text("class TestX(:\n    def test_a(self): pass\n")
    (tmp_path / "test_binary.py").write_bytes(b"class TestB:\n    def test_\0\x01")
    (tmp_path / "test_undecodable.py").write_bytes(b"# caf\xe9\nclass TestU(TestCase):\n    def test_a(self): pass\n")
    os.mkfifo(tmp_path / "test_fifo.py")
    (tmp_path / "test_good.py").write_text(GENERIC_SRC)
    before = snapshot(tmp_path)
    named = [str(tmp_path / n) for n in ("test_syntax.py", "test_binary.py", "test_undecodable.py",
                                         "test_fifo.py", "test_good.py")]
    code, out, err = cli("apply", "--check", *named)
    assert code == 2 and "1 would change" in err and "4 failed" in err
    assert "test_syntax.py: error: syntax error: line 1" in err
    assert "test_binary.py: error: binary file" in err
    assert "test_undecodable.py: error: cannot decode" in err
    assert "test_fifo.py: error: not a regular file" in err
    code, out, err = cli("apply", *named)
    assert code == 2 and "1 changed" in err
    after = snapshot(tmp_path)
    assert {p: v for p, v in after.items() if p.name != "test_good.py"} == {
        p: v for p, v in before.items() if p.name != "test_good.py"}
    code, out, err = cli("apply", str(tmp_path / "test_missing.py"))
    assert code == 2 and "no such file or folder" in err


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a chmod-000 file anyway (the FIFO case covers it)")
def test_unreadable_file(tmp_path):
    f = tmp_path / "test_locked.py"
    f.write_text(GENERIC_SRC)
    os.chmod(f, 0)
    code, out, err = cli("apply", str(f))
    assert code == 2 and "unreadable" in err


def test_hostile_file_names_are_labelled(tmp_path):
    names = ["-k_test.py", "test_with spaces.py", "test_new\nline.py", "test_\u00fcn\u00efc\u00f6de.py"]
    for n in names:
        (tmp_path / n).write_text(GENERIC_SRC)
    code, out, err = cli("apply", "--", *names, cwd=tmp_path)
    assert code == 0 and f"{len(names)} changed" in err
    for n in names:
        assert LABELLED_LINE in (tmp_path / n).read_text()
    code, out, err = cli("apply", "--check", str(tmp_path))
    assert code == 0 and f"{len(names)} already classified" in err


def test_folder_named_like_a_test_file_is_walked_not_read(tmp_path):
    d = tmp_path / "test_dir.py"
    d.mkdir()
    (d / "test_inner.py").write_text(GENERIC_SRC)
    code, out, err = cli("apply", "--check", str(d))
    assert code == 1 and "1 would change" in err
    shutil.rmtree(d)
