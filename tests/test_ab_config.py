"""`decouple ab` takes its defaults from [tool.decouple] like the other commands: `python` is the
interpreter of the A/B runs and `jobs` their parallelism; the flags override them."""

import os
import subprocess
import sys

from codemod.cli.ab import AbRunOptions, run_cmd
from codemod.cli.options import build
from codemod.util.config import Config

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _tree(tmp_path, config):
    for arm in ("a", "b"):
        (tmp_path / arm).mkdir()
        (tmp_path / arm / "test_x.py").write_text("def test_x():\n    pass\n")
    (tmp_path / "pyproject.toml").write_text(config)


def _ab(tmp_path, *args):
    proc = subprocess.run([sys.executable, "-m", "codemod", "ab", "test_x.py", "--a-root", "a", "--b-root", "b",
                           "-q", *args], capture_output=True, text=True, cwd=tmp_path, stdin=subprocess.DEVNULL,
                          env={**os.environ, "PYTHONPATH": REPO}, timeout=300)
    return proc.returncode, proc.stdout, proc.stderr


def test_ab_runs_the_configured_interpreter_unless_told_otherwise(tmp_path):
    _tree(tmp_path, '[tool.decouple]\npython = "/nonexistent/python"\n')
    code, out, err = _ab(tmp_path)
    assert code == 2 and "/nonexistent/python" in err
    code, out, err = _ab(tmp_path, "--python", sys.executable, "--confirm", "0")
    assert code == 0 and "SAFE" in out + err


def _options(*args):
    """AbRunOptions as `decouple ab run ARGS` builds them (every other option at its default)."""
    return build(AbRunOptions, run_cmd.make_context("run", ["t.py", "--base", "HEAD", *args]).params)


def test_run_options_take_python_and_jobs_from_the_configuration():
    configured = Config(python="/opt/target/python", jobs=3)
    opts = _options().run_options(configured)
    assert (opts.python, opts.jobs) == ("/opt/target/python", 3)
    flagged = _options("--python", "/other/python", "-j", "1").run_options(configured)
    assert (flagged.python, flagged.jobs) == ("/other/python", 1)
    bare = _options().run_options(Config())
    assert (bare.python, bare.jobs) == (sys.executable, os.cpu_count() or 1)
