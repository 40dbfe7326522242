"""The engine and the CLI on real files: isolation, atomic writes, exit codes, discovery."""

import json
import os
import stat
import subprocess
import sys

import pytest

from codemod.engine import process as engine
from codemod.engine.discovery import discover, named_few, read_allowlist, stale_warning
from transforms.label import HwLabel

GENERIC_SRC = (
    "from torch.testing._internal.common_utils import run_tests, TestCase\n\n\n"
    "class TestA(TestCase):\n    def test_a(self):\n        pass\n"
)
MIXED_SRC = (
    "from torch.testing._internal.common_device_type import instantiate_device_type_tests\n"
    "from torch.testing._internal.common_utils import TestCase\n\n\n"
    "class TestM(TestCase):\n    def test_d(self, device):\n        pass\n\n    def test_p(self):\n        pass\n\n\n"
    "instantiate_device_type_tests(TestM, globals())\n"
)


def cli(*args, cwd=None):
    proc = subprocess.run([sys.executable, "-m", "codemod", *args], capture_output=True, text=True, cwd=cwd,
                          stdin=subprocess.DEVNULL)
    return proc.returncode, proc.stdout, proc.stderr


def write(path, text, mode=0o644):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    os.chmod(path, mode)
    return path


def test_write_keeps_mode_and_is_atomic(tmp_path):
    f = write(tmp_path / "test_a.py", GENERIC_SRC, 0o751)
    [r] = engine.run_files([str(f)], [HwLabel()], "write")
    assert r.status == "changed" and r.written
    assert stat.S_IMODE(f.stat().st_mode) == 0o751
    assert "    hw_classification = HardwareClassification.GENERIC\n" in f.read_text()
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".decouple-tmp")]


def test_unchanged_file_is_not_rewritten(tmp_path):
    f = write(tmp_path / "test_a.py", GENERIC_SRC)
    engine.run_files([str(f)], [HwLabel()], "write")
    before = f.stat().st_mtime_ns
    [r] = engine.run_files([str(f)], [HwLabel()], "write")
    assert r.status == "already" and not r.written
    assert f.stat().st_mtime_ns == before


def test_check_and_diff_write_nothing(tmp_path):
    f = write(tmp_path / "test_a.py", GENERIC_SRC)
    for mode in ("check", "diff"):
        [r] = engine.run_files([str(f)], [HwLabel()], mode)
        assert r.status == "changed" and not r.written
        assert f.read_text() == GENERIC_SRC
    assert "+    hw_classification = HardwareClassification.GENERIC" in r.diff


def test_bad_files_are_isolated(tmp_path):
    good = write(tmp_path / "test_good.py", GENERIC_SRC)
    bad = write(tmp_path / "test_bad.py", "class TestX(:\n    def test_a(self): pass\n")
    binary = tmp_path / "test_bin.py"
    binary.write_bytes(b"def test_\0\x01")
    undecodable = tmp_path / "test_latin.py"
    undecodable.write_bytes(b"# caf\xe9\ndef test_a():\n    pass\n")
    results = {os.path.basename(r.path): r for r in engine.run_files(
        [str(p) for p in (good, bad, binary, undecodable)], [HwLabel()], "write", jobs=1)}
    assert results["test_good.py"].status == "changed"
    assert results["test_bad.py"].status == "failed" and "syntax error: line 1" in results["test_bad.py"].reason
    assert results["test_bin.py"].status == "failed" and "binary" in results["test_bin.py"].reason
    assert results["test_latin.py"].status == "failed" and "decode" in results["test_latin.py"].reason
    assert undecodable.read_bytes() == b"# caf\xe9\ndef test_a():\n    pass\n"


def test_verification_failure_leaves_file_untouched(tmp_path, monkeypatch):
    f = write(tmp_path / "test_a.py", GENERIC_SRC)
    from transforms.label import hw_edit

    real = hw_edit.add_labels
    monkeypatch.setattr(hw_edit, "add_labels", lambda text, *a, **k: real(text, *a, **k) + "x = 1\n")
    [r] = engine.run_files([str(f)], [HwLabel()], "write", jobs=1)
    assert r.status == "failed" and "internal error" in r.reason
    assert f.read_text() == GENERIC_SRC


def test_apply_parses_the_input_and_the_output_once_each(tmp_path, monkeypatch):
    # The label transform checks its edit on the parsed output and hands the tree over: the engine
    # (transforms again, verification) does not parse the output a second time.
    import ast
    from collections import Counter

    f = write(tmp_path / "test_a.py", GENERIC_SRC)
    parsed = Counter()
    real = ast.parse
    monkeypatch.setattr(ast, "parse", lambda text, *a, **k: parsed.update([text]) or real(text, *a, **k))
    [r] = engine.run_files([str(f)], [HwLabel()], "write", jobs=1)
    assert r.status == "changed" and r.written
    assert parsed == Counter({GENERIC_SRC: 1, f.read_text(): 1})


def test_no_cyclic_collection_while_a_file_is_processed(tmp_path, monkeypatch):
    import gc

    import libcst

    seen = []
    real = libcst.parse_module
    monkeypatch.setattr(libcst, "parse_module", lambda text: seen.append(gc.isenabled()) or real(text))
    good = write(tmp_path / "test_a.py", GENERIC_SRC)
    bad = write(tmp_path / "test_b.py", "class TestX(:\n    def test_a(self): pass\n")
    assert gc.isenabled()
    results = engine.run_files([str(good), str(bad)], [HwLabel()], "write", jobs=1)
    assert [r.status for r in results] == ["changed", "failed"]
    assert seen and not any(seen)  # the LibCST parses (the import's edit, the verification) ran without it
    assert gc.isenabled()  # and it runs again after the run, whose last file failed
    gc.disable()
    try:
        engine.run_files([str(good)], [HwLabel()], "write", jobs=1)
        assert not gc.isenabled()  # a caller's choice is left alone
    finally:
        gc.enable()


def test_no_cyclic_collection_while_the_results_are_gathered(tmp_path):
    import gc

    paths = [str(write(tmp_path / f"test_{i}.py", GENERIC_SRC)) for i in range(8)]  # 8: a pool
    seen = []

    def progress(results, total):
        for r in results:
            seen.append(gc.isenabled())
            yield r

    results = engine.run_files(paths, [HwLabel()], "check", jobs=2, progress=progress)
    assert [r.status for r in results] == ["changed"] * 8
    assert seen == [False] * 8  # thousands of acyclic findings: no collection walks them meanwhile
    assert gc.isenabled()


def _worker_collects(conn, collects: bool) -> None:
    import gc

    gc.disable()  # as the parent's is while run_files gathers results and its pool forks
    engine._init_worker((), "check", False, None, None, os.getppid(), collects)
    conn.send(gc.isenabled())


@pytest.mark.skipif(not hasattr(os, "fork"), reason="the pool forks only where fork exists")
@pytest.mark.parametrize("collects", [True, False])
def test_a_worker_collects_between_files_as_its_parent_did_before_run_files(collects):
    import multiprocessing

    ctx = multiprocessing.get_context("fork")
    ours, theirs = ctx.Pipe()
    child = ctx.Process(target=_worker_collects, args=(theirs, collects))
    child.start()
    try:
        assert ours.poll(60) and ours.recv() is collects
    finally:
        child.join(60)


def test_parallel_results_are_sorted_and_equal_to_serial(tmp_path):
    files = [str(write(tmp_path / f"test_{i:02d}.py", GENERIC_SRC if i % 3 else MIXED_SRC)) for i in range(20)]
    serial = engine.run_files(files, [HwLabel()], "diff", jobs=1)
    parallel = engine.run_files(list(reversed(files)), [HwLabel()], "diff", jobs=2)
    assert [r.path for r in parallel] == sorted(files)
    assert [(r.path, r.status, r.diff) for r in serial] == [(r.path, r.status, r.diff) for r in parallel]


def test_discovery_respects_gitignore_and_default_excludes(tmp_path):
    repo = tmp_path / "pytorch"
    write(repo / "test" / "test_a.py", GENERIC_SRC)
    write(repo / "test" / "helper.py", GENERIC_SRC)
    write(repo / "test" / "cpython" / "test_vendored.py", GENERIC_SRC)
    write(repo / "test" / "generated" / "test_gen.py", GENERIC_SRC)
    write(repo / ".gitignore", "generated/\n")
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    found = discover([str(repo / "test")])
    assert [os.path.relpath(f, repo) for f in found.files] == ["test/test_a.py"]
    assert [os.path.relpath(f, repo) for f in found.excluded] == ["test/cpython/test_vendored.py"]


def test_cli_exit_codes(tmp_path):
    f = write(tmp_path / "test_a.py", GENERIC_SRC)
    m = write(tmp_path / "test_m.py", MIXED_SRC)
    code, out, err = cli("apply", "--check", str(f))
    assert code == 1 and "1 would change" in err
    code, out, err = cli("apply", "--diff", str(f))
    assert code == 1 and out.startswith("--- a/")
    code, out, err = cli("apply", str(f))
    assert code == 0 and "1 changed" in err
    code, out, err = cli("apply", "--check", str(f))
    assert code == 0 and "1 already classified" in err
    code, out, err = cli("apply", str(m))
    assert code == 1 and "needs-manual" in err and "split" in err
    code, out, err = cli("apply", str(tmp_path / "missing.py"))
    assert code == 2 and "no such file or folder" in err
    code, out, err = cli("apply", "--classification", "TPU", str(f))
    assert code == 2 and "TPU" in err


def test_cli_classify_json(tmp_path):
    write(tmp_path / "test_a.py", GENERIC_SRC)
    write(tmp_path / "test_m.py", MIXED_SRC)
    code, out, err = cli("classify", "--format", "json", str(tmp_path))
    data = json.loads(out)
    assert code == 1  # one class needs manual work
    by_file = {os.path.basename(f["path"]): f for f in data["files"]}
    [label] = [x for x in by_file["test_a.py"]["findings"] if x["rule"] == "hw/label"]
    assert label["cls"] == "TestA" and label["data"]["value"] == "GENERIC"
    assert by_file["test_m.py"]["status"] == "needs-manual"
    assert data["summary"]["changed"] == 1 and data["summary"]["needs-manual"] == 1


def test_allowlist_graduation(tmp_path):
    repo = tmp_path / "pytorch"
    write(repo / "test" / "test_a.py", GENERIC_SRC)
    write(repo / "test" / "test_m.py", MIXED_SRC)
    allow = repo / "tools" / "linter" / "adapters" / "test_linter_allowlist.json"
    write(allow, json.dumps(["test/test_a.py", "test/test_gone.py", "test/test_m.py"], indent=2) + "\n")
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    code, out, err = cli("apply", "--from-allowlist", str(allow), "--graduate")
    assert code == 1  # test_m.py still needs manual work
    assert json.loads(allow.read_text()) == ["test/test_gone.py", "test/test_m.py"]
    assert allow.read_text().startswith('[\n  "test/test_gone.py"')
    assert "1 allowlist entry names a file that does not exist: test/test_gone.py" in err
    assert read_allowlist(str(allow)).root == str(repo)


def test_same_file_named_twice_is_processed_once(tmp_path, monkeypatch):
    f = write(tmp_path / "test_a.py", GENERIC_SRC)
    monkeypatch.chdir(tmp_path)
    found = discover(["test_a.py", str(f), "./test_a.py"])
    assert found.files == ["test_a.py"]


def test_a_file_named_through_links_is_one_file_and_a_link_changed_between_runs_is_seen(tmp_path, monkeypatch):
    """discover() asks each folder's real path once (a run over thousands of files asked it three
    times per file): a file named through a folder link, a file link and directly is still one
    file, and a folder link retargeted between two runs in one process is followed anew."""
    real_a, real_b = tmp_path / "a", tmp_path / "b"
    real_a.mkdir()
    real_b.mkdir()
    write(real_a / "test_x.py", GENERIC_SRC)
    write(real_b / "test_x.py", GENERIC_SRC)
    (tmp_path / "via").symlink_to(real_a)
    (real_b / "test_link.py").symlink_to(real_a / "test_x.py")
    monkeypatch.chdir(tmp_path)
    found = discover(["via/test_x.py", "a/test_x.py", "b/test_link.py"])
    assert found.files == ["via/test_x.py"]
    (tmp_path / "via").unlink()
    (tmp_path / "via").symlink_to(real_b)
    found = discover(["via/test_x.py", "a/test_x.py"])
    assert found.files == ["a/test_x.py", "via/test_x.py"]  # now two files: via/ leads to b/


def test_graduate_needs_allowlist_before_touching_files(tmp_path):
    f = write(tmp_path / "test_a.py", GENERIC_SRC)
    code, out, err = cli("apply", "--graduate", str(f), cwd=tmp_path)
    assert code == 2 and "--graduate needs --from-allowlist" in err
    assert f.read_text() == GENERIC_SRC


BROKEN_LABEL_SRC = (
    "from torch.testing._internal.common_device_type import instantiate_device_type_tests\n"
    "from torch.testing._internal.common_utils import HardwareClassification, TestCase\n\n\n"
    "class TestB(TestCase):\n    hw_classification = HardwareClassification.GENERIC\n\n"
    "    def test_d(self, device):\n        pass\n\n\n"
    "instantiate_device_type_tests(TestB, globals())\n"
)
DUPLICATE_SRC = GENERIC_SRC + "\n\nclass TestA(TestCase):\n    def test_b(self):\n        pass\n"
FORCED_SRC = (
    "from torch.testing._internal.common_utils import TestCase\n\n\n"
    "class TestF(TestCase):\n    def test_d(self, device):\n        pass\n"
)


def test_graduation_only_for_files_the_linter_accepts(tmp_path):
    repo = tmp_path / "pytorch"
    write(repo / "test" / "test_ok.py", GENERIC_SRC)
    write(repo / "test" / "test_broken.py", BROKEN_LABEL_SRC)
    write(repo / "test" / "test_dup.py", DUPLICATE_SRC)
    write(repo / "test" / "test_forced.py", FORCED_SRC)
    allow = repo / "tools" / "linter" / "adapters" / "test_linter_allowlist.json"
    entries = ["test/test_broken.py", "test/test_dup.py", "test/test_forced.py", "test/test_ok.py"]
    write(allow, json.dumps(entries, indent=2) + "\n")
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    code, out, err = cli(
        "apply", "--from-allowlist", str(allow), "--graduate", "--set", "TestF=GENERIC", "--force", "--rules", "gen1"
    )  # the rules that report duplicates
    assert json.loads(allow.read_text()) == entries[:3]
    # the existing label that breaks its rules is shown, and counts as work left
    assert "warning: [hw/already-disagrees]" in err and "the label breaks" in err
    assert "error: [hw/duplicate_class]" in err
    assert code == 1


HELPER_SRC = "import torch\n\n\ndef make_inputs(n):\n    return [torch.ones(i) for i in range(n)]\n"
PYTEST_SRC = "import torch\n\n\ndef test_ones():\n    assert torch.ones(2).sum() == 2\n"
LABELLED_SRC = GENERIC_SRC.replace("import run_tests,", "import HardwareClassification, run_tests,").replace(
    "(TestCase):\n", "(TestCase):\n    hw_classification = HardwareClassification.GENERIC\n\n"
)


def test_files_the_linter_accepts_as_they_are_graduate(tmp_path):
    """Graduate only: a file without a test class (helpers, pytest functions) or with every
    class labelled passes the linter as it is, so its entry goes; one that does not parse never."""
    repo = tmp_path / "pytorch"
    sources = {"test_a.py": GENERIC_SRC, "test_fn.py": PYTEST_SRC, "test_helper.py": HELPER_SRC,
               "test_ok.py": LABELLED_SRC, "test_broken.py": "import (\n"}
    for name, text in sources.items():
        write(repo / "test" / name, text)
    allow = repo / "tools" / "linter" / "adapters" / "test_linter_allowlist.json"
    entries = sorted(f"test/{name}" for name in sources)
    write(allow, json.dumps(entries, indent=2) + "\n")
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    code, out, err = cli("apply", "--check", "--from-allowlist", str(allow), "--format", "json")
    assert code == 2  # the file that does not parse
    files = {os.path.basename(f["path"]): f for f in json.loads(out)["files"]}
    assert {n: (f["status"], f["fully_classified"]) for n, f in files.items()} == {
        "test_a.py": ("changed", True), "test_fn.py": ("skipped", True), "test_helper.py": ("skipped", True),
        "test_ok.py": ("already", True), "test_broken.py": ("failed", False)}
    assert files["test_broken.py"]["reason"].startswith("syntax error: line 1")
    assert sorted(os.path.basename(p) for p in json.loads(out)["on_allowlist"]) == sorted(sources)
    code, out, err = cli("apply", "--check", "--from-allowlist", str(allow))
    assert "4 allowlisted files pass the linter after this run (3 as they are: graduate only)" in err
    # --check --graduate: which entries would go (the JSON names them), nothing written, exit 1
    code, out, err = cli("apply", "--check", "--graduate", "--from-allowlist", str(allow), "--format", "json")
    assert code == 2 and sorted(json.loads(out)["graduated"]) == [e for e in entries if e != "test/test_broken.py"]
    assert json.loads(allow.read_text()) == entries
    parsed = allow.with_name("parsed_allowlist.json")  # the same entries but the one that does not parse
    write(parsed, json.dumps([e for e in entries if e != "test/test_broken.py"], indent=2) + "\n")
    code, out, err = cli("apply", "--check", "--graduate", "--from-allowlist", str(parsed))
    assert code == 1 and "would graduate from the allowlist: 4 files" in err
    parsed.unlink()
    code, out, err = cli("apply", "--diff", "--graduate", "--from-allowlist", str(allow))
    assert code == 2 and "--graduate goes with writing, or with --check" in err
    code, out, err = cli("apply", "--from-allowlist", str(allow), "--graduate")
    assert json.loads(allow.read_text()) == ["test/test_broken.py"]
    assert "graduated from the allowlist: 4 files" in err and "pass the linter after this run" not in err


def test_a_run_without_the_label_transform_never_calls_a_test_class_linter_clean(tmp_path):
    helper, unlabelled = write(tmp_path / "test_h.py", HELPER_SRC), write(tmp_path / "test_a.py", GENERIC_SRC)
    for transforms in ([], [HwLabel()]):
        assert engine.process_file(str(helper), transforms, engine.Mode.CHECK).fully_classified
    assert not engine.process_file(str(unlabelled), [], engine.Mode.CHECK).fully_classified
    assert engine.process_file(str(unlabelled), [HwLabel()], engine.Mode.CHECK).fully_classified  # once labelled


def test_diff_applies_with_git_even_without_final_newline(tmp_path):
    src = GENERIC_SRC.rstrip("\n")
    f = write(tmp_path / "test_a.py", src)
    [r] = engine.run_files([str(f)], [HwLabel()], "diff")
    assert r.diff.endswith("\\ No newline at end of file\n")
    patch = tmp_path / "p.diff"
    patch.write_text(r.diff.replace(f"a/{f}", "a/test_a.py").replace(f"b/{f}", "b/test_a.py"))
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    subprocess.run(["git", "-C", str(tmp_path), "apply", "p.diff"], check=True)
    assert "hw_classification = HardwareClassification.GENERIC" in f.read_text()
    assert not f.read_text().endswith("\n")


def test_conflicting_set_values_are_a_usage_error(tmp_path):
    f = write(tmp_path / "test_a.py", GENERIC_SRC)
    code, out, err = cli("apply", "--set", "TestA=CPU", "--set", "TestA=GENERIC", str(f))
    assert code == 2 and "two different values" in err


def test_broken_target_interpreter_is_an_error(tmp_path):
    f = write(tmp_path / "test_a.py", GENERIC_SRC)
    fake = write(tmp_path / "python", "#!/bin/sh\necho not a python >&2\nexit 1\n", 0o755)
    code, out, err = cli("apply", "--python", str(fake), str(f))
    assert code == 2 and "is not a working Python interpreter" in err and "Traceback" not in err
    assert f.read_text() == GENERIC_SRC


def test_lint_prints_lintrunner_messages_with_the_autofix(tmp_path):
    f = write(tmp_path / "test_a.py", GENERIC_SRC)
    m = write(tmp_path / "test_m.py", MIXED_SRC)
    bad = write(tmp_path / "test_bad.py", "def test_x(:\n")
    listing = write(tmp_path / "paths.txt", f"{m}\n{bad}\n")
    code, out, err = cli("lint", str(f), "--paths-file", str(listing))
    assert code == 0  # findings are lintrunner's business, not a failed run
    msgs = [json.loads(line) for line in out.splitlines()]
    by = {(os.path.basename(x["path"]), x["name"]): x for x in msgs}
    fix = by[("test_a.py", "autofix")]
    assert fix["code"] == "DECOUPLE" and fix["original"] == GENERIC_SRC
    # the replacement is exactly what `apply` writes
    assert cli("apply", str(f))[0] == 0 and fix["replacement"] == f.read_text()
    assert by[("test_m.py", "hw/needs-manual")]["severity"] == "error"  # upstream: missing label
    assert "split" in by[("test_m.py", "hw/needs-manual")]["description"]
    assert by[("test_bad.py", "input-error")]["severity"] == "error"
    assert m.read_text() == MIXED_SRC


def test_bad_config_is_a_clear_error(tmp_path):
    write(tmp_path / "pyproject.toml", "[tool.decouple]\njobs = 0\n")
    f = write(tmp_path / "test_a.py", GENERIC_SRC)
    for command in ("apply", "classify", "lint"):
        code, out, err = cli(command, str(f), cwd=tmp_path)
        assert code == 2 and "jobs must be a positive integer" in err and "Traceback" not in err
    assert f.read_text() == GENERIC_SRC


def test_repo_roots_are_git_s_answers_asked_once_per_repository(tmp_path, monkeypatch):
    from codemod.engine import discovery

    outer, nested = tmp_path / "outer", tmp_path / "outer" / "sub" / "nested"
    for repo in (outer, nested):
        (repo / "test" / "deep").mkdir(parents=True)
        subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (tmp_path / "plain" / "test").mkdir(parents=True)
    folders = [outer / "test" / "deep", outer / "test", outer / "sub", nested / "test" / "deep", nested,
               tmp_path / "plain" / "test"]
    asked = [str(f) for f in folders]
    expected = {f: subprocess.run(["git", "-C", f, "rev-parse", "--show-toplevel"], capture_output=True,
                                  text=True).stdout.strip() or None for f in asked}
    calls = []
    real = discovery._git_root
    monkeypatch.setattr(discovery, "_git_root", lambda folder: calls.append(folder) or real(folder))
    discovery._work_tree_of.cache_clear()
    assert {f: discovery._work_tree_of(f) for f in asked} == expected
    assert expected[str(outer / "sub")] == str(outer) and expected[str(nested / "test" / "deep")] == str(nested)
    assert sorted(calls) == sorted([str(outer), str(nested), "/"])  # one per repository, and one for none
    discovery._work_tree_of.cache_clear()


def test_same_tree_ignores_positions_and_nothing_else():
    import ast

    base = ast.parse("class T:\n    def test_a(self, x=1):\n        return [x, 'a']\n")
    moved = ast.parse("\n\nclass T:\n\n    def test_a(self,   x=1):\n        return [x,\n 'a']\n")
    assert engine.same_tree(base, moved)
    for other in (
        "class T:\n    def test_a(self, x=2):\n        return [x, 'a']\n",  # a constant
        "class T:\n    def test_a(self, x=1):\n        return [x, 'a', 1]\n",  # a list's length
        "class T:\n    def test_a(self, x=1):\n        return (x, 'a')\n",  # a node's type
        "class T:\n    def test_b(self, x=1):\n        return [x, 'a']\n",  # a name
        "class T:\n    async def test_a(self, x=1):\n        return [x, 'a']\n",
        "class T:\n    def test_a(self, x=True):\n        return [x, 'a']\n",  # equal to 1, not the same
        "class T:\n    def test_a(self, x=1.0):\n        return [x, 'a']\n",
    ):
        assert not engine.same_tree(base, ast.parse(other)), other
    # Objects both trees share are equal without a look; what differs beside them is still seen.
    assert engine.same_tree(base, base)
    shared = ast.parse("class T:\n    def test_a(self, x=1):\n        return [x, 'b']\n")
    shared.body[0].body[0].args = base.body[0].body[0].args
    assert not engine.same_tree(base, shared)
    shared.body[0].body[0].body = base.body[0].body[0].body
    assert engine.same_tree(base, shared)


# --- the allowlist's entries: where each stands, in one pass ----------------------------------------

def test_allowlist_listing_sorts_entries_as_realpath_would(tmp_path):
    repo = tmp_path / "pytorch"
    write(repo / "test" / "test_a.py", GENERIC_SRC)
    (repo / "test" / "d").mkdir()
    write(tmp_path / "elsewhere" / "sub" / "test_v.py", GENERIC_SRC)
    (repo / "test" / "link_out").symlink_to(tmp_path / "elsewhere" / "sub")
    (repo / "test" / "test_link.py").symlink_to(tmp_path / "elsewhere" / "sub" / "test_v.py")
    (repo / "test" / "test_dangling.py").symlink_to(repo / "test" / "test_never.py")
    entries = [
        "test/test_a.py",  # present
        "test/gone/test_b.py",  # stale: its folder is gone too
        "test/test_c.py",  # stale
        "test/./d/../test_a.py",  # present, spelled oddly
        "test/./nope/../test_a.py",  # stale: `nope/..` resolves only where `nope` exists
        "test/link_out/test_v.py",  # outside: a folder link leaves the repository
        "test/link_out/../test_v.py",  # outside: `..` climbs from the link's target, not from test/
        "test/test_link.py",  # outside: the file is a link that leaves
        "test/test_dangling.py",  # a link to a file that does not exist: stale
        "../outside.py",  # outside
        str(tmp_path / "elsewhere" / "sub" / "test_v.py"),  # absolute: outside
    ]
    allow = write(repo / "allow.json", json.dumps(entries))
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    listing = read_allowlist(str(allow)).listing()
    assert listing.present == [os.path.join(repo, entries[0]), os.path.join(repo, entries[3])]
    assert listing.stale == ["test/gone/test_b.py", "test/test_c.py", "test/./nope/../test_a.py",
                             "test/test_dangling.py"]
    assert listing.outside == entries[5:8] + entries[9:]
    # the reference: realpath and exists, entry by entry
    root = os.path.realpath(repo)
    for entry in entries:
        path = os.path.join(repo, entry)
        real = os.path.realpath(path)
        leaves = os.path.isabs(entry) or os.path.commonpath([root, real]) != root
        assert (entry in listing.outside) == leaves, entry
        assert leaves or (path in listing.present) == os.path.exists(path), entry


def test_allowlist_listing_is_linear_in_system_calls(tmp_path, monkeypatch):
    repo = tmp_path / "pytorch"
    for i in range(3):
        write(repo / "test" / f"test_{i}.py", GENERIC_SRC)
    folders = 40
    entries = [f"test/test_{i}.py" for i in range(3)]
    entries += [f"test/test_gone_{i}.py" if i % 2 else f"test/d{i % folders}/test_{i}.py" for i in range(20_000)]
    allow = write(repo / "allow.json", json.dumps(entries))
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    allowlist = read_allowlist(str(allow))
    calls = {"lstat": 0, "realpath": 0, "isdir": 0}

    def counted(name, real):
        def call(*args, **kwargs):
            calls[name] += 1
            return real(*args, **kwargs)
        return call

    monkeypatch.setattr(os, "lstat", counted("lstat", os.lstat))
    monkeypatch.setattr(os.path, "realpath", counted("realpath", os.path.realpath))
    monkeypatch.setattr(os.path, "isdir", counted("isdir", os.path.isdir))
    listing = allowlist.listing()
    assert len(listing.present) == 3 and len(listing.stale) == 20_000 and not listing.outside
    # one lstat per entry of a folder that exists (test/), one realpath and isdir per folder (and
    # realpath's own lstat per part of the folder's path)
    assert calls["realpath"] <= folders + 2 and calls["isdir"] <= folders + 1
    assert calls["lstat"] <= 3 + 10_000 + calls["realpath"] * (len(repo.parts) + 2)


def test_a_long_list_of_names_is_counted_past_the_first_few():
    assert named_few(["a", "b"]) == "a, b"
    assert named_few([f"p{i}" for i in range(20_000)]) == "p0, p1, p2, p3, p4 and 19,995 more"
    assert stale_warning(["x.py"] * 6) == "6 allowlist entries name files that do not exist: " + (
        "x.py, " * 4 + "x.py and 1 more")
