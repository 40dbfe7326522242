"""The linter gate, with stand-in linters written for these tests (never the upstream one).

Each stand-in is a small script placed at tools/linter/adapters/test_linter.py of a
temporary checkout. Like the real linters it reports every module-level test class without a
`hw_classification` (`[hw_classification]`), and it rejects the files whose basename it was
told to reject, reporting the path it was given relative to its own repository root, so the
tests also see that the gate ran it on a mirror laid out like the checkout. `judges`, when
given, is the only folder (repository-relative) whose files it looks at: it skips the others
silently, as the newer generation of the upstream linter does.
"""

from __future__ import annotations

import json
import os
import sys
import textwrap

import pytest
from click.testing import CliRunner

from codemod.cli.main import main
from codemod.engine import linter_gate
from transforms.rules.generations import GENERATIONS

GENERIC = "class TestA(TestCase):\n    def test_a(self):\n        pass\n"
LABEL = "hw_classification = HardwareClassification.GENERIC"

STAND_IN = '''\
import ast, json, os, sys
from pathlib import Path
ROOT = Path(__file__).resolve().parents[3]
REJECT = {reject!r}
MODE = {mode!r}
JUDGES = {judges!r}
allowlist = json.loads((Path(__file__).parent / "test_linter_allowlist.json").read_text())
if MODE == "garbage":
    print("this is not JSON")
    sys.exit(0)
if MODE == "crash":
    raise RuntimeError("stand-in linter crashed")


def say(path, line, name, description):
    print(json.dumps({{"path": path, "line": line, "char": None, "code": "TEST_LINTER",
                      "severity": "error", "name": name, "original": None,
                      "replacement": None, "description": description}}))


for name in sys.argv[1:]:
    rel = os.path.relpath(name, ROOT)
    if JUDGES is not None and not rel.startswith(JUDGES):
        continue
    if os.path.basename(name) in REJECT:
        say(name, 2, "[stand_in]", f"chosen for rejection: {{rel}} allowlist={{allowlist}}")
    try:
        tree = ast.parse(open(name, encoding="utf-8").read())
    except (OSError, SyntaxError, UnicodeDecodeError) as e:
        print(f"Failed to parse {{name!r}}: {{e}}", file=sys.stderr)
        continue
    for node in tree.body:
        tests = [s for s in getattr(node, "body", []) if getattr(s, "name", "").startswith("test")]
        label = [s for s in getattr(node, "body", []) if "hw_classification" in ast.dump(s)[:200]]
        if isinstance(node, ast.ClassDef) and tests and not label:
            say(name, node.lineno, "[hw_classification]", f"{{node.name}} has no label")
'''


def make_checkout(root, reject=(), mode="normal", files=("test_a.py", "test_b.py"), judges=None):
    linter = root / "tools" / "linter" / "adapters" / "test_linter.py"
    linter.parent.mkdir(parents=True)
    linter.write_text(STAND_IN.format(reject=sorted(reject), mode=mode, judges=judges))
    allowlist = linter.parent / "test_linter_allowlist.json"
    entries = [f"test/{name}" for name in files]
    allowlist.write_text(json.dumps(entries, indent=2) + "\n")
    (root / "test").mkdir()
    for name in files:
        (root / "test" / name).write_text(GENERIC)
    return linter, allowlist


def cli(*args, cwd, stdin=None):
    old = os.getcwd()
    os.chdir(cwd)
    try:
        return CliRunner().invoke(main, list(args), input=stdin, catch_exceptions=False)
    finally:
        os.chdir(old)


def test_rejected_file_is_neither_written_nor_graduated(tmp_path):
    linter, allowlist = make_checkout(tmp_path, reject={"test_b.py"})
    linter_bytes = linter.read_bytes()
    r = cli("apply", "--from-allowlist", str(allowlist), "--graduate", "--python", sys.executable,
            "-j", "1", cwd=tmp_path)
    assert r.exit_code == 1, r.output
    assert LABEL in (tmp_path / "test" / "test_a.py").read_text()
    assert (tmp_path / "test" / "test_b.py").read_text() == GENERIC  # not written
    assert json.loads(allowlist.read_text()) == ["test/test_b.py"]  # only test_a graduated
    assert linter.read_bytes() == linter_bytes  # the user's linter is never touched
    out = r.output
    # The linter's own message, on the mirror laid out like the checkout, with an empty allowlist.
    assert "[stand_in] chosen for rejection: test/test_b.py allowlist=[]" in out
    assert "linter gate (tools/linter/adapters/test_linter.py): 2 files checked" in out
    assert "1 rejected by the linter (not written nor graduated): test/test_b.py" in out


def test_auto_finds_the_linter_above_the_paths_and_diff_drops_rejected(tmp_path):
    make_checkout(tmp_path, reject={"test_a.py"})
    r = cli("apply", "--diff", "test", "-j", "1", cwd=tmp_path)
    assert r.exit_code == 1
    assert "b/test/test_b.py" in r.output and "b/test/test_a.py" not in r.output
    assert "[stand_in]" in r.output


def test_json_carries_the_gate_summary_and_findings(tmp_path):
    make_checkout(tmp_path, reject={"test_a.py"})
    r = cli("classify", "--format", "json", "test", "-j", "1", cwd=tmp_path)
    data = json.loads(r.output)
    gate = data["linter_gate"]
    assert gate["checked"] == 2 and gate["rejected"] == [os.path.join("test", "test_a.py")]
    rejected = [f for f in data["files"] if f["path"].endswith("test_a.py")][0]
    assert [x["rule"] for x in rejected["findings"]].count("gate/rejected") == 1
    assert rejected["status"] == "needs-manual"


def test_lint_offers_no_autofix_the_linter_rejects(tmp_path):
    make_checkout(tmp_path, reject={"test_a.py"})
    r = cli("lint", "--include-allowlisted", "test/test_a.py", "test/test_b.py", "-j", "1", cwd=tmp_path)
    assert r.exit_code == 0
    msgs = [json.loads(line) for line in r.output.splitlines()]
    autofix = {m["path"] for m in msgs if m["name"] == "autofix"}
    assert autofix == {"test/test_b.py"}
    gate = [m for m in msgs if m["name"] == "gate/rejected"]
    assert len(gate) == 1 and gate[0]["severity"] == "error" and gate[0]["path"] == "test/test_a.py"


@pytest.mark.parametrize("mode, words", [("garbage", "not a LintMessage JSON line"),
                                          ("crash", "stand-in linter crashed")])
def test_misbehaving_linter_is_exit_2_and_nothing_is_written(tmp_path, mode, words):
    make_checkout(tmp_path, mode=mode)
    r = cli("apply", "test", "-j", "1", cwd=tmp_path)
    assert r.exit_code == 2
    assert words in r.output and "nothing was written" in r.output
    assert (tmp_path / "test" / "test_a.py").read_text() == GENERIC


def test_off_and_config_and_no_linter_found(tmp_path):
    make_checkout(tmp_path, reject={"test_a.py", "test_b.py"})
    r = cli("apply", "--linter", "off", "--check", "test", "-j", "1", cwd=tmp_path)
    assert "linter gate" not in r.output
    (tmp_path / "pyproject.toml").write_text('[tool.decouple]\nlinter = "off"\n')
    r = cli("apply", "test", "-j", "1", cwd=tmp_path)
    assert r.exit_code == 0 and LABEL in (tmp_path / "test" / "test_a.py").read_text()


def test_no_linter_found_is_said_once(tmp_path):
    (tmp_path / "test_c.py").write_text(GENERIC)
    (tmp_path / "test_d.py").write_text(GENERIC)
    r = cli("apply", "--check", "test_c.py", "test_d.py", "-j", "1", cwd=tmp_path)
    assert r.output.count("linter gate") == 1
    assert "linter gate: no tools/linter/adapters/test_linter.py above 2 files: not gated" in r.output


def test_explicit_linter_path_and_missing_path(tmp_path):
    linter, _ = make_checkout(tmp_path, reject={"test_b.py"})
    other = tmp_path / "elsewhere"
    other.mkdir()
    (other / "test_x.py").write_text(GENERIC)
    r = cli("apply", "--check", "--linter", str(linter), str(other / "test_x.py"), "-j", "1", cwd=other)
    assert "1 file checked" in r.output  # a file outside the checkout is mirrored under _outside/
    r = cli("apply", "--check", "--linter", str(tmp_path / "nope.py"), "test", "-j", "1", cwd=tmp_path)
    assert r.exit_code == 2 and "no such file" in r.output


def test_predicted_messages_are_not_rejections():
    """The linter's errors the tool already expects (a class left for manual work) do not block."""
    text = textwrap.dedent(
        """
        class TestA(TestCase):
            def test_a(self, device): pass
            def test_b(self): pass
        """
    )
    for gen in GENERATIONS.values():
        assert linter_gate.predicted(text, gen) == {("[hw_classification]", 2)}
    assert linter_gate.predicted("def (", GENERATIONS["gen1"]) == {("[parse_error]", 0)}
    assert linter_gate.predicted("def (", GENERATIONS["gen2"]) == set()  # no message at all


def test_lint_reports_duplicates_as_errors_and_apply_exits_1(tmp_path):
    (tmp_path / "test_dup.py").write_text(
        GENERIC + GENERIC + "instantiate_device_type_tests(Helper, globals())\n"
        "instantiate_device_type_tests(Helper, globals())\n")
    r = cli("lint", "--linter", "off", "--rules", "gen1", "test_dup.py", "-j", "1", cwd=tmp_path)
    names = {m["name"]: m for m in map(json.loads, r.output.splitlines())}
    assert names["hw/duplicate_class"]["severity"] == "error" and names["hw/duplicate_class"]["line"] == 4
    assert names["hw/duplicate_instantiation"]["line"] == 8
    assert names["hw/duplicate_class"]["description"].endswith("[rules: gen1]")
    # The newer generation does not report duplicates: a warning, and no work left.
    r = cli("lint", "--linter", "off", "test_dup.py", "-j", "1", cwd=tmp_path)
    names = {m["name"]: m for m in map(json.loads, r.output.splitlines())}
    assert names["hw/duplicate_class"]["severity"] == "warning"
    assert "does not report it" in names["hw/duplicate_class"]["description"]
    r = cli("apply", "--check", "--strict", "--linter", "off", "test_dup.py", "-j", "1", cwd=tmp_path)
    assert r.exit_code == 1 and "0 need manual work" in r.output
    r = cli("apply", "--linter", "off", "--rules", "gen1", "test_dup.py", "-j", "1", cwd=tmp_path)
    assert r.exit_code == 1
    # The last definition is the one the linter checks: it got the label.
    assert (tmp_path / "test_dup.py").read_text().count(LABEL) == 1
    assert (tmp_path / "test_dup.py").read_text().index(LABEL) > len(GENERIC)


def test_standard_input_is_judged_at_its_stdin_filename(tmp_path):
    make_checkout(tmp_path, reject={"test_a.py"})
    r = cli("lint", "--include-allowlisted", "-", "--stdin-filename", "test/test_a.py", cwd=tmp_path, stdin=GENERIC)
    msgs = [json.loads(line) for line in r.output.splitlines()]
    assert [m["name"] for m in msgs if m["name"] in ("autofix", "gate/rejected")] == ["gate/rejected"]
    # The linter saw the buffer at the name's place in the mirror, with an empty allowlist.
    assert "chosen for rejection: test/test_a.py allowlist=[]" in msgs[-1]["description"]
    r = cli("apply", "--diff", "-", "--stdin-filename", "test/test_a.py", cwd=tmp_path, stdin=GENERIC)
    assert "+++ b/test/test_a.py" not in r.output and "[stand_in]" in r.output
    assert "1 rejected by the linter" in r.output
    r = cli("apply", "--diff", "-", "--stdin-filename", "test/test_b.py", cwd=tmp_path, stdin=GENERIC)
    assert r.exit_code == 1 and "+++ b/test/test_b.py" in r.output and "[stand_in]" not in r.output
    r = cli("classify", "--format", "json", "-", "--stdin-filename", "test/test_a.py", cwd=tmp_path, stdin=GENERIC)
    gate = json.loads(r.output)["linter_gate"]
    assert gate["checked"] == 1 and gate["rejected"] == ["test/test_a.py"]
    r = cli("lint", "--include-allowlisted", "--linter", "off", "-", "--stdin-filename", "test/test_a.py", cwd=tmp_path,
            stdin=GENERIC)
    assert '"name": "autofix"' in r.output and "gate/rejected" not in r.output


def test_standard_input_is_encoded_as_read_not_as_the_file_of_that_name(tmp_path):
    make_checkout(tmp_path)
    (tmp_path / "test" / "test_a.py").write_bytes(b"# -*- coding: latin-1 -*-\n# caf\xe9\n" + GENERIC.encode())
    buffer = "# costs 5 \u20ac\n" + GENERIC  # the euro sign has no latin-1 byte
    r = cli("apply", "--check", "-", "--stdin-filename", "test/test_a.py", cwd=tmp_path, stdin=buffer.encode())
    assert r.exit_code == 1, r.output
    assert "linter gate (tools/linter/adapters/test_linter.py): 1 file checked, 1 agree" in r.output


def test_standard_input_outside_any_checkout_is_said_not_gated(tmp_path):
    r = cli("apply", "--check", "-", cwd=tmp_path, stdin=GENERIC)
    assert r.exit_code == 1
    assert "linter gate: no tools/linter/adapters/test_linter.py above 1 file: not gated" in r.output


# --------------------------------------------------------------------------- files the linter does not judge


def test_a_file_the_linter_skips_is_not_judged_nor_written_nor_graduated(tmp_path):
    """A linter that judges only test/ (as the newer generation does) skips tools/test_c.py
    silently: the gate says so, does not count it as agreement, writes and graduates nothing of it."""
    linter, allowlist = make_checkout(tmp_path, judges="test/")
    (tmp_path / "tools" / "test_c.py").write_text(GENERIC)
    allowlist.write_text(json.dumps(["test/test_a.py", "tools/test_c.py"], indent=2) + "\n")
    r = cli("apply", "--from-allowlist", str(allowlist), "--graduate", "--python", sys.executable, "-j", "1",
            cwd=tmp_path)
    assert r.exit_code == 1, r.output
    assert LABEL in (tmp_path / "test" / "test_a.py").read_text()
    assert (tmp_path / "tools" / "test_c.py").read_text() == GENERIC  # not written
    assert json.loads(allowlist.read_text()) == ["tools/test_c.py"]  # only the judged file graduated
    assert "1 file checked, 1 agree with the tool" in r.output
    assert "linter gate: 1 file not judged by the linter (not written nor graduated): tools/test_c.py" in r.output
    assert "[gate/not-judged]" in r.output
    r = cli("classify", "--format", "json", "tools/test_c.py", "test/test_a.py", "-j", "1", cwd=tmp_path)
    gate = json.loads(r.output)["linter_gate"]
    assert gate["not_judged"] == [os.path.join("tools", "test_c.py")] and gate["checked"] == 1
    assert gate["agree"] == 1 and gate["rejected"] == []


def test_an_explicit_linter_for_files_outside_its_repository(tmp_path):
    """The issue's pitfall: `--linter PATH` on a file outside that linter's checkout. A linter that
    skips such files judged nothing: nothing is counted as agreement, nothing written."""
    linter, _ = make_checkout(tmp_path / "pytorch", judges="test/")
    other = tmp_path / "elsewhere"
    other.mkdir()
    (other / "test_x.py").write_text(GENERIC)
    r = cli("apply", "--linter", str(linter), str(other / "test_x.py"), "-j", "1", cwd=other)
    assert (other / "test_x.py").read_text() == GENERIC
    assert "agree" not in r.output and "not judged by the linter" in r.output
    assert "outside the linter's repository" in r.output


def test_a_file_the_linter_cannot_read_is_not_judged(tmp_path):
    """The newer generation logs a file it cannot parse on stderr and prints no message for it:
    silence is then no verdict."""
    make_checkout(tmp_path, judges="test/")
    (tmp_path / "test" / "test_a.py").write_bytes("\ufeff".encode() + GENERIC.encode())  # the stand-in reads UTF-8 plainly
    r = cli("apply", "--check", "test/test_a.py", "-j", "1", cwd=tmp_path)
    assert "not judged by the linter" in r.output and "could not read it" in r.output


def test_the_summary_and_json_name_the_rules_generation(tmp_path):
    (tmp_path / "test_a.py").write_text(GENERIC)
    r = cli("classify", "test_a.py", "-j", "1", cwd=tmp_path)
    assert "rules: gen2 (the newest: no tools/linter/adapters/test_linter.py above the files)" in r.output
    r = cli("classify", "--rules", "gen1", "--format", "json", "test_a.py", "-j", "1", cwd=tmp_path)
    assert json.loads(r.output)["generation"] == {
        "name": "gen1", "setting": "gen1", "linters": [], "differences": [], "exact": True}
    (tmp_path / "pyproject.toml").write_text('[tool.decouple]\nrules = "gen1"\n')
    r = cli("lint", "test_a.py", "-j", "1", cwd=tmp_path)
    assert all(m["description"].endswith("[rules: gen1]") for m in map(json.loads, r.output.splitlines()))
    (tmp_path / "pyproject.toml").write_text('[tool.decouple]\nrules = "gen7"\n')
    r = cli("classify", "test_a.py", "-j", "1", cwd=tmp_path)
    assert r.exit_code == 2 and "--rules gen7: expected auto or one of gen1, gen2" in r.output
    r = cli("classify", "--rules", "gen7", "test_a.py", cwd=tmp_path)
    assert r.exit_code == 2


@pytest.mark.parametrize("shape, name", [("gen1_shape", "gen1"), ("gen2_shape", "gen2")])
def test_auto_follows_the_checkouts_linter(tmp_path, shape, name):
    """`--rules auto` reads the linter the checkout has; the gate is off here (the shapes lint
    nothing), the generation still comes from the checkout."""
    shapes = os.path.join(os.path.dirname(__file__), "fixtures", "linters")
    adapters = tmp_path / "tools" / "linter" / "adapters"
    adapters.mkdir(parents=True)
    (adapters / "test_linter.py").write_text(open(os.path.join(shapes, f"{shape}.py")).read())
    (tmp_path / "test").mkdir()
    (tmp_path / "test" / "test_a.py").write_text(GENERIC + GENERIC)  # a duplicate: gen1 reports it
    r = cli("lint", "--linter", "off", "--format", "text", "test/test_a.py", "-j", "1", cwd=tmp_path)
    assert ("error: [hw/duplicate_class]" in r.output) == (name == "gen1"), r.output
    r = cli("classify", "--linter", "off", "test/test_a.py", "-j", "1", cwd=tmp_path)
    assert f"rules: {name} (the generation of tools/linter/adapters/test_linter.py)" in r.output
    other = "gen1" if name == "gen2" else "gen2"
    r = cli("classify", "--linter", "off", "--rules", other, "test/test_a.py", "-j", "1", cwd=tmp_path)
    assert f"rules: {other} (as asked (--rules {other})); differs: " in r.output
    assert f"is the {name} linter" in r.output


def test_checkouts_of_different_generations_cannot_share_a_run(tmp_path):
    shapes = os.path.join(os.path.dirname(__file__), "fixtures", "linters")
    for shape in ("gen1_shape", "gen2_shape"):
        adapters = tmp_path / shape / "tools" / "linter" / "adapters"
        adapters.mkdir(parents=True)
        (adapters / "test_linter.py").write_text(open(os.path.join(shapes, f"{shape}.py")).read())
        (tmp_path / shape / "test_a.py").write_text(GENERIC)
    r = cli("classify", "--linter", "off", "gen1_shape/test_a.py", "gen2_shape/test_a.py", cwd=tmp_path)
    assert r.exit_code == 2 and "linters are of different generations" in r.output
    r = cli("classify", "--linter", "off", "--rules", "gen2", "gen1_shape/test_a.py", "gen2_shape/test_a.py",
            cwd=tmp_path)
    assert r.exit_code == 0


def test_counts_are_singular_for_one_file_and_plural_for_two(tmp_path):
    # the gate's line through the real command: "1 file", "2 files", never "file(s)"
    for name in ("test_c.py", "test_d.py"):
        (tmp_path / name).write_text(GENERIC)
    one = cli("apply", "--check", "test_c.py", "-j", "1", cwd=tmp_path)
    two = cli("apply", "--check", "test_c.py", "test_d.py", "-j", "1", cwd=tmp_path)
    assert "linter gate: no tools/linter/adapters/test_linter.py above 1 file: not gated" in one.output
    assert "linter gate: no tools/linter/adapters/test_linter.py above 2 files: not gated" in two.output
    assert "1 file:" in one.output and "2 files:" in two.output  # the summary line's count too
    assert "(s)" not in one.output + two.output


@pytest.mark.parametrize("command", ["classify", "lint", "apply"])
def test_a_relative_python_is_the_one_where_the_command_started(tmp_path, command):
    # the gate runs the linter in the checkout's mirror: `--python ../py` from test/ must still be
    # the interpreter next to the checkout (it named nothing there before: "cannot run ../py")
    make_checkout(tmp_path, files=("test_a.py",))
    (tmp_path / "env").symlink_to(sys.prefix)  # this environment, beside the checkout
    relative = os.path.join("..", "env", os.path.relpath(sys.executable, sys.prefix))  # ../env/bin/python
    extra = ["--format", "text", "--include-allowlisted"] if command == "lint" else []
    r = cli(command, "test_a.py", "--python", relative, "-j", "1", *extra, cwd=tmp_path / "test")
    assert "cannot run" not in r.output and "No module named" not in r.output, r.output
    if command == "lint":
        assert r.exit_code == 1 and "TestA" in r.output, r.output  # judged: the class needs its label
    else:
        assert r.exit_code == 0, r.output
        assert "test_linter.py): 1 file checked, 1 agree with the tool" in r.output, r.output
