"""Command-line conventions: `-` for standard input, --quiet everywhere, NO_COLOR, help that
lists every `ab` subcommand."""

import os
import pty
import select
import subprocess
import sys

import click
import click.testing
import pytest

from codemod.cli.main import main
from codemod.cli.options import gate_options
from conftest import FIXTURES

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


def cli(*args, cwd=None, stdin=None, env=None):
    proc = subprocess.run([sys.executable, "-m", "codemod", *args], capture_output=True, cwd=cwd,
                          input=stdin, stdin=None if stdin is not None else subprocess.DEVNULL,
                          env={**os.environ, **(env or {})})
    return proc.returncode, proc.stdout.decode(), proc.stderr.decode()


def test_classify_reads_stdin_under_the_given_name(tmp_path):
    code, out, err = cli("classify", "-", "--stdin-filename", "test/test_x.py", stdin=GENERIC_SRC.encode(),
                         cwd=tmp_path)
    assert code == 0 and "test/test_x.py  TestA  4     GENERIC  label" in out
    code, out, _ = cli("classify", "-", stdin=GENERIC_SRC.encode(), cwd=tmp_path)
    assert code == 0 and out.splitlines()[1].startswith("<stdin>  TestA")
    assert os.listdir(tmp_path) == []  # nothing written anywhere


def test_apply_diff_from_stdin_matches_the_file_diff_and_writes_nothing(tmp_path):
    f = tmp_path / "test" / "test_x.py"
    f.parent.mkdir()
    f.write_bytes(GENERIC_SRC.replace("\n", "\r\n").encode())  # CRLF kept through stdin too
    code, from_file, _ = cli("apply", "--diff", "test/test_x.py", cwd=tmp_path)
    code2, from_stdin, _ = cli("apply", "--diff", "-", "--stdin-filename", "test/test_x.py",
                               stdin=f.read_bytes(), cwd=tmp_path)
    assert code == code2 == 1 and from_stdin == from_file and "+    hw_classification" in from_stdin
    code, _, _ = cli("apply", "--check", "-", stdin=GENERIC_SRC.encode())
    assert code == 1
    assert f.read_bytes() == GENERIC_SRC.replace("\n", "\r\n").encode()


def test_check_strict_from_stdin_fails_on_manual_work_as_for_the_file(tmp_path):
    f = tmp_path / "test_m.py"
    f.write_text(MIXED_SRC)  # nothing to edit, one class for a human
    for strict, code in (([], 0), (["--strict"], 1)):
        assert cli("apply", "--check", *strict, "test_m.py", cwd=tmp_path)[0] == code
        assert cli("apply", "--check", *strict, "-", stdin=MIXED_SRC.encode(), cwd=tmp_path)[0] == code
        assert cli("apply", "--diff", *strict, "-", stdin=MIXED_SRC.encode(), cwd=tmp_path)[0] == code


def test_lint_from_stdin_names_the_stdin_filename(tmp_path):
    code, out, _ = cli("lint", "-", "--stdin-filename", "test/test_x.py", stdin=GENERIC_SRC.encode())
    assert code == 0 and '"path": "test/test_x.py"' in out and '"name": "autofix"' in out


@pytest.mark.parametrize("args, message", [
    (["apply", "-"], "needs --diff or --check"),
    (["classify", "-", "other.py"], "must be the only path"),
    (["classify", "x.py", "--stdin-filename", "y.py"], "--stdin-filename goes with `-`"),
])
def test_stdin_usage_errors(tmp_path, args, message):
    code, _, err = cli(*args, stdin=GENERIC_SRC.encode(), cwd=tmp_path)
    assert code == 2 and message in err


def test_bad_stdin_is_a_clear_input_error():
    code, out, err = cli("classify", "-", stdin=b"x = 1\0\n")
    assert code == 2 and "<stdin>: error: binary file" in err and "Traceback" not in err
    code, out, err = cli("lint", "-", "--format", "text", stdin=b"\xff\xfe not utf-8")
    assert code == 1 and "<stdin>: error: [input-error] cannot decode" in out


def _commands(group, prefix=()):
    for name, cmd in sorted(group.commands.items()):
        if isinstance(cmd, click.Group):
            yield from _commands(cmd, prefix + (name,))
        else:
            yield prefix + (name,), cmd


def test_every_command_has_quiet():
    missing = [" ".join(path) for path, cmd in _commands(main)
               if not any("--quiet" in p.opts for p in cmd.params)]
    assert not missing, f"commands without --quiet: {missing}"


def test_quiet_drops_the_summary_but_keeps_output_and_problems(tmp_path):
    (tmp_path / "test_a.py").write_text(GENERIC_SRC)
    (tmp_path / "test_bad.py").write_text("def test_x(:\n")
    code, out, err = cli("classify", ".", cwd=tmp_path)
    assert "2 files:" in err
    code, out, err = cli("classify", ".", "-q", cwd=tmp_path)
    assert code == 2 and "TestA" in out and "files:" not in err and "test_bad.py: error: syntax error" in err
    code, out, err = cli("apply", "--diff", "--quiet", "test_a.py", cwd=tmp_path)
    assert code == 1 and "+    hw_classification" in out and err == ""


def test_ab_help_lists_run_and_merge():
    code, out, _ = cli("ab", "--help")
    assert code == 0
    commands = out.split("Commands:", 1)[1]
    assert "run " in commands and "merge " in commands
    assert "Merge shard results" not in out  # no longer hidden in an epilog
    # `ab PATHS...` still means `ab run PATHS...`
    code, _, err = cli("ab", "tests/x.py")
    assert code == 2 and "--base REF" in err


def _tty_stdout(args, env):
    """Run with stdout on a pseudo-terminal; return what it printed."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "codemod", *args], stdout=follower, stderr=subprocess.DEVNULL,
                            stdin=subprocess.DEVNULL, env=env)
    os.close(follower)
    chunks = []
    while True:
        ready, _, _ = select.select([leader], [], [], 120)
        if not ready:
            break
        try:
            data = os.read(leader, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(timeout=120)
    os.close(leader)
    return b"".join(chunks).decode(errors="replace")


def test_no_color_is_honoured_on_a_terminal():
    result = os.path.join(FIXTURES, "ab_results", "regression.json")
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    # (shard 1/2 of a run: merged alone with --allow-missing)
    coloured = _tty_stdout(["ab", "merge", result, "--allow-missing"], env)
    assert "\x1b[" in coloured and "REGRESSION" in coloured
    plain = _tty_stdout(["ab", "merge", result, "--allow-missing"], {**env, "NO_COLOR": "1"})
    assert "REGRESSION" in plain and "\x1b[" not in plain
    # an explicit --color still wins (NO_COLOR is a default, not a ban)
    assert "\x1b[" in _tty_stdout(["ab", "merge", result, "--allow-missing", "--color"], {**env, "NO_COLOR": "1"})


def test_the_gate_python_is_one_option_and_apply_keeps_its_target_python():
    def python_help(command):
        [option] = [p for p in main.commands[command].params if p.name == "python"]
        return option.help

    assert python_help("classify") == python_help("lint")
    assert python_help("classify").startswith("Interpreter that runs the linter gate")
    assert python_help("apply").startswith("Target interpreter")

    @click.command()
    @gate_options
    def probe(linter, rules, python):
        click.echo(f"{linter} {rules} {python}")

    result = click.testing.CliRunner().invoke(probe, ["--linter", "off", "--rules", "gen1", "--python", "py"])
    assert result.output == "off gen1 py\n"
