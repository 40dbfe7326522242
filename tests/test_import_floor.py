"""A command imports only what it uses: LibCST only when an edit needs it, GitPython only for git
work, the A/B runner and the refactor pipeline only for their commands, the restructuring steps only
for --restructure (and the help that names them); and without `git` on PATH the commands that need
no git work."""

import json
import os
import subprocess
import sys

import pytest

from test_cache import GENERIC_SRC, LABELLED_SRC

HEAVY = ("libcst", "git", "codemod.ab", "codemod.refactor", "codemod.cli.ab", "codemod.cli.refactor",
         "transforms.restructure",
         "concurrent.futures")  # with logging: the linter gate's threads, only when a linter runs
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_SCRIPT = """
import json, sys
from codemod.cli.main import main
try:
    main(sys.argv[1:], prog_name="decouple")
except SystemExit as e:
    code = e.code
print("@@" + json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""


def run_and_list_modules(*args, cwd, env=None):
    proc = subprocess.run([sys.executable, "-c", _SCRIPT, *args], capture_output=True, text=True, cwd=cwd,
                          stdin=subprocess.DEVNULL, env={**os.environ, "PYTHONPATH": REPO, **(env or {})})
    [line] = [x for x in proc.stdout.splitlines() if x.startswith("@@")]
    report = json.loads(line[2:])
    heavy = sorted({m for m in report["modules"] for h in HEAVY if m == h or m.startswith(h + ".")})
    return report["code"], heavy


@pytest.mark.parametrize("args, code", [
    (["apply", "--check"], 0),
    (["apply", "--check", "--no-cache"], 0),
    (["apply"], 0),
    (["apply", "--diff"], 0),
    (["classify"], 0),
    (["lint"], 0),
    (["lint", "--format", "text"], 0),
])
def test_a_file_that_needs_no_edit_imports_no_libcst_no_git(tmp_path, args, code):
    (tmp_path / "test_done.py").write_text(LABELLED_SRC)
    assert run_and_list_modules(*args, "test_done.py", cwd=tmp_path) == (code, [])


def test_libcst_comes_with_an_edit_and_not_when_the_cache_has_the_result(tmp_path):
    (tmp_path / "test_todo.py").write_text(GENERIC_SRC)
    code, heavy = run_and_list_modules("apply", "--check", "test_todo.py", cwd=tmp_path)
    assert code == 1 and heavy == ["libcst"] + [m for m in heavy if m.startswith("libcst.")]  # verification
    assert run_and_list_modules("apply", "--check", "test_todo.py", cwd=tmp_path) == (1, [])  # cached


def test_help_and_version_import_no_heavy_module(tmp_path):
    assert run_and_list_modules("--version", cwd=tmp_path) == (0, [])
    code, heavy = run_and_list_modules("apply", "--help", cwd=tmp_path)  # --restructure names the steps
    assert code == 0 and "transforms.restructure" in heavy
    assert [m for m in heavy if not m.startswith("transforms.restructure")] == []


def test_the_restructuring_steps_come_with_restructure_and_the_help_names_them(tmp_path):
    from transforms.restructure import REGISTRY

    (tmp_path / "test_done.py").write_text(LABELLED_SRC)
    code, heavy = run_and_list_modules("apply", "--check", "--restructure", "auto", "test_done.py", cwd=tmp_path)
    assert code == 0 and "transforms.restructure" in heavy
    proc = subprocess.run([sys.executable, "-m", "codemod", "apply", "--help"], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": REPO}, stdin=subprocess.DEVNULL)
    unwrapped = "".join(proc.stdout.split())  # click wraps the help, at spaces and hyphens
    assert proc.returncode == 0 and "".join(f"or any of {', '.join(REGISTRY)} by name".split()) in unwrapped
    assert "".join("drop-only-for and cuda-to-accelerator add devices and run only when named".split()) in unwrapped


def test_without_git_on_path_the_codemod_commands_work(tmp_path):
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "test_todo.py").write_text(GENERIC_SRC)
    (tree / "test_done.py").write_text(LABELLED_SRC)
    env = {**os.environ, "PATH": str(tmp_path / "empty-bin")}  # no git, no anything
    (tmp_path / "empty-bin").mkdir()

    def decouple(*args):
        proc = subprocess.run([sys.executable, "-m", "codemod", *args], capture_output=True, text=True, cwd=tree,
                              env={**env, "PYTHONPATH": REPO}, stdin=subprocess.DEVNULL)
        return proc.returncode, proc.stdout, proc.stderr

    code, out, err = decouple("--version")
    assert code == 0 and "version" in out
    code, out, err = decouple("classify", ".")
    assert code == 0 and "TestA" in out and "Traceback" not in err
    code, out, err = decouple("lint", ".", "--format", "text")
    assert code == 1 and out.startswith("test_todo.py:4: error:") and "Traceback" not in err
    code, out, err = decouple("apply", "--check", ".")
    assert code == 1 and "1 would change" in err
    code, out, err = decouple("apply", ".")
    assert code == 0 and "Traceback" not in err
    assert "hw_classification = HardwareClassification.GENERIC" in (tree / "test_todo.py").read_text()
