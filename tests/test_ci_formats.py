"""CI output formats: GitHub workflow-command annotations and SARIF 2.1.0, for classify,
apply --check and lint; lint severities as the upstream linter reports them."""

import json
import os
import subprocess
import sys
from urllib.parse import unquote

import jsonschema
import pytest

from codemod.report.findings import github
from conftest import REPO

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
# a valid label whose rules the class breaks (GENERIC but instantiated): the linter says error
BROKEN_LABEL_SRC = (
    "from torch.testing._internal.common_device_type import instantiate_device_type_tests\n"
    "from torch.testing._internal.common_utils import HardwareClassification, TestCase\n\n\n"
    "class TestB(TestCase):\n    hw_classification = HardwareClassification.GENERIC\n\n"
    "    def test_d(self, device):\n        pass\n\n\n"
    "instantiate_device_type_tests(TestB, globals())\n"
)
LABELLED_SRC = (
    "from torch.testing._internal.common_utils import HardwareClassification, TestCase\n\n\n"
    "class TestOk(TestCase):\n    hw_classification = HardwareClassification.GENERIC\n\n"
    "    def test_a(self):\n        pass\n"
)

with open(os.path.join(REPO, "tests", "schemas", "sarif-2.1.0-subset.json"), encoding="utf-8") as _f:
    SARIF_SCHEMA = json.load(_f)


def cli(*args, cwd=None, stdin=None, env=None):
    proc = subprocess.run([sys.executable, "-m", "codemod", *args], capture_output=True, text=True, cwd=cwd,
                          input=stdin, stdin=None if stdin is not None else subprocess.DEVNULL,
                          env={**os.environ, **(env or {})})
    return proc.returncode, proc.stdout, proc.stderr


@pytest.fixture
def tree(tmp_path):
    files = {"test_a.py": GENERIC_SRC, "test_m.py": MIXED_SRC, "test_b.py": BROKEN_LABEL_SRC,
             "test_ok.py": LABELLED_SRC, "test_bad.py": "def test_x(:\n"}
    for name, text in files.items():
        (tmp_path / "test" / name).parent.mkdir(exist_ok=True)
        (tmp_path / "test" / name).write_text(text)
    return tmp_path


def parse_annotations(out):
    """`::cmd k=v,k=v::msg` -> (cmd, {k: v}, msg), un-escaping as the runner does."""
    parsed = []
    for line in out.splitlines():
        assert line.startswith("::"), line
        head, msg = line[2:].split("::", 1)
        cmd, _, props = head.partition(" ")
        fields = dict(p.split("=", 1) for p in props.split(",")) if props else {}
        undo = lambda s: s.replace("%3A", ":").replace("%2C", ",").replace("%0D", "\r").replace("%0A", "\n").replace("%25", "%")
        parsed.append((cmd, {k: undo(v) for k, v in fields.items()}, undo(msg)))
    return parsed


def test_escaping_follows_the_workflow_command_rules():
    assert github.escape_data("50% done\r\nnext") == "50%25 done%0D%0Anext"
    assert github.escape_property("a:b,c%d\ne") == "a%3Ab%2Cc%25d%0Ae"
    # a message keeps `:` and `,` (only properties escape them)
    line = github.annotation({"path": "t/test_x,y:z.py", "line": 3, "code": "DECOUPLE", "name": "hw/label",
                              "severity": "advice", "description": "a: b, c\n100%"})
    assert line == "::notice file=t/test_x%2Cy%3Az.py,line=3,title=DECOUPLE hw/label::a: b, c%0A100%25"


def test_github_annotations_for_classify_check_and_lint(tree):
    for args in (["classify"], ["apply", "--check"], ["lint"]):
        code, out, err = cli(*args, "test", "--format", "github", cwd=tree)
        assert code in (1, 2), (args, err)  # check/lint: changes needed; classify: a bad file
        notes = parse_annotations(out)
        by = {(os.path.basename(p["file"]), p["title"]): (cmd, p, msg) for cmd, p, msg in notes}
        assert all(p["file"].startswith("test/") for _, p, _ in notes)  # workspace-relative
        cmd, props, msg = by[("test_a.py", "DECOUPLE autofix")]
        assert cmd == "error" and props["line"] == "4" and "TestA: GENERIC" in msg
        assert by[("test_m.py", "DECOUPLE hw/needs-manual")][0] == "error"
        assert by[("test_b.py", "DECOUPLE hw/already-disagrees")][0] == "error"
        cmd, props, msg = by[("test_bad.py", "DECOUPLE input-error")]
        assert cmd == "error" and "line" not in props and "syntax error" in msg
        assert not any(os.path.basename(p["file"]) == "test_ok.py" for _, p, _ in notes)
    assert (tree / "test" / "test_a.py").read_text() == GENERIC_SRC


def test_hostile_file_name_survives_the_annotation(tmp_path):
    name = "test_a,b:c%d.py"
    (tmp_path / name).write_text(GENERIC_SRC)
    code, out, _ = cli("apply", "--check", "--format", "github", name, cwd=tmp_path)
    [(cmd, props, msg)] = parse_annotations(out)
    assert code == 1 and props["file"] == name and props["line"] == "4"


def _validate(doc, root):
    jsonschema.validate(doc, SARIF_SCHEMA, format_checker=jsonschema.FormatChecker())
    [run] = doc["runs"]
    rules = [r["id"] for r in run["tool"]["driver"]["rules"]]
    base = unquote(run["originalUriBaseIds"]["%SRCROOT%"]["uri"][len("file://"):])
    for r in run["results"]:
        assert rules[r["ruleIndex"]] == r["ruleId"]
        loc = r["locations"][0]["physicalLocation"]["artifactLocation"]
        assert loc["uriBaseId"] == "%SRCROOT%" and os.path.exists(os.path.join(base, unquote(loc["uri"])))
    assert os.path.samefile(base, root)
    return run


def test_sarif_validates_for_classify_check_and_lint(tree):
    for args in (["classify"], ["apply", "--check"], ["lint"]):
        code, out, err = cli(*args, "test", "--format", "sarif", cwd=tree)
        run = _validate(json.loads(out), tree)
        levels = {(r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"], r["ruleId"]): r["level"]
                  for r in run["results"]}
        assert levels[("test/test_a.py", "autofix")] == "error"
        assert levels[("test/test_m.py", "hw/needs-manual")] == "error"
        assert levels[("test/test_bad.py", "input-error")] == "error"
        bad = [r for r in run["results"] if r["ruleId"] == "input-error"][0]
        assert "region" not in bad["locations"][0]["physicalLocation"]  # no line: no region


def test_sarif_escapes_paths_and_rejects_a_broken_document(tmp_path):
    name = "test a#b%.py"
    (tmp_path / name).write_text(GENERIC_SRC)
    code, out, _ = cli("apply", "--check", "--format", "sarif", name, cwd=tmp_path)
    doc = json.loads(out)
    _validate(doc, tmp_path)
    assert doc["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "test%20a%23b%25.py"
    # the schema is not a rubber stamp
    doc["runs"][0]["results"][0]["level"] = "fatal"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(doc, SARIF_SCHEMA)
    del doc["runs"][0]["tool"]["driver"]["name"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(doc, SARIF_SCHEMA)


def test_apply_accepts_the_ci_formats_only_with_check(tmp_path):
    f = tmp_path / "test_a.py"
    f.write_text(GENERIC_SRC)
    for fmt in ("github", "sarif"):
        code, _, err = cli("apply", "--format", fmt, str(f))
        assert code == 2 and "goes with --check" in err
        assert cli("apply", "--diff", "--format", fmt, str(f))[0] == 2
    assert f.read_text() == GENERIC_SRC


def test_lint_formats_and_exit_codes(tree):
    code, out, err = cli("lint", "test", cwd=tree)
    assert code == 0 and all(json.loads(line)["code"] == "DECOUPLE" for line in out.splitlines())
    code, out, _ = cli("lint", "test/test_a.py", "test/test_m.py", "--format", "text", cwd=tree)
    assert code == 1
    assert "test/test_a.py:4: error: [autofix] decouple apply:" in out
    assert "test/test_m.py:5: error: [hw/needs-manual]" in out
    assert cli("lint", "test/test_ok.py", "--format", "text", cwd=tree)[:2] == (0, "")
    code, _, err = cli("lint", "test/test_ok.py", "--format", "json", cwd=tree)
    assert code == 2 and "'json' is not one of" in err


def test_lint_severities_match_the_upstream_linter(tree):
    # a mixed class (no value fits) that carries a label anyway: the label breaks its rules
    (tree / "test" / "test_d.py").write_text(MIXED_SRC.replace(
        "class TestM(TestCase):\n", "class TestM(TestCase):\n    hw_classification = HardwareClassification.GENERIC\n\n"
    ).replace("import TestCase", "import HardwareClassification, TestCase"))
    (tree / "test" / "test_f.py").write_text(MIXED_SRC.replace("TestM", "TestF"))
    code, out, _ = cli("lint", "test", cwd=tree)
    sev = {(os.path.basename(m["path"]), m["name"]): m["severity"] for m in map(json.loads, out.splitlines())}
    assert sev[("test_a.py", "autofix")] == "error"               # [hw_classification] missing
    assert sev[("test_m.py", "hw/needs-manual")] == "error"       # missing, and no value fits
    assert sev[("test_b.py", "hw/already-disagrees")] == "error"  # the label breaks GENERIC's rules
    assert sev[("test_d.py", "hw/already")] == "error"            # likewise, with nothing better to infer
    assert ("test_ok.py", "hw/already") not in sev                # info: not shown
    # a forced value the linter will reject is an error, even though `apply --force` writes it
    code, out, _ = cli("lint", "test/test_f.py", "--set", "TestF=GENERIC", "--force", cwd=tree)
    sev = {m["name"]: m["severity"] for m in map(json.loads, out.splitlines())}
    assert sev == {"autofix": "error", "hw/forced": "error"}


HELPER_SRC = "import torch\n\n\ndef make_inputs(n):\n    return [torch.ones(i) for i in range(n)]\n"
ALLOWLIST = os.path.join("tools", "linter", "adapters", "test_linter_allowlist.json")


@pytest.fixture
def listed(tree):
    """The tree in a checkout whose allowlist (beside where its linter lives) names every file
    of it but test_ok.py (labelled): the work left in each, the shapes upstream's linter skips."""
    (tree / "test" / "test_helper.py").write_text(HELPER_SRC)
    entries = ["test/test_a.py", "test/test_b.py", "test/test_bad.py", "test/test_helper.py", "test/test_m.py"]
    (tree / ALLOWLIST).parent.mkdir(parents=True)
    (tree / ALLOWLIST).write_text(json.dumps(entries, indent=2) + "\n")
    return tree


def test_lint_is_upstream_s_neighbour_on_allowlisted_files(listed):
    """Upstream's linter skips what its allowlist names: by default each such file gets one
    advice (what `decouple refactor` would do with it, no autofix) and lint passes."""
    code, out, err = cli("lint", "test", "--format", "text", cwd=listed)
    assert code == 0, out + err
    lines = out.splitlines()
    assert len(lines) == 5 and all(": advice: [allowlisted] on the allowlist, which the upstream linter skips" in line
                                   for line in lines)
    said = {line.split(":")[0]: line.split("`decouple refactor` would ", 1)[1] for line in lines}
    assert said["test/test_a.py"].startswith("label TestA as GENERIC and remove its allowlist entry; ")
    assert said["test/test_helper.py"].startswith(
        "remove its allowlist entry and nothing else: the linter accepts the file as it is")
    assert said["test/test_m.py"].startswith("skip it, for manual work: TestM: ")
    assert said["test/test_b.py"].startswith("skip it, for manual work: TestB: ")
    assert said["test/test_bad.py"].startswith("skip it: syntax error: line 1")
    code, out, _ = cli("lint", "test", cwd=listed)  # lintrunner: no autofix for an allowlisted file
    assert code == 0 and {(m["severity"], m["replacement"]) for m in map(json.loads, out.splitlines())} == {
        ("advice", None)}
    for fmt in ("github", "sarif"):
        assert cli("lint", "test", "--format", fmt, cwd=listed)[0] == 0
    # A file the allowlist does not name is judged as before, beside them.
    (listed / "test" / "test_new.py").write_text(GENERIC_SRC)
    code, out, _ = cli("lint", "test", "--format", "text", cwd=listed)
    assert code == 1 and "test/test_new.py:4: error: [autofix]" in out and out.count("[allowlisted]") == 5


@pytest.mark.parametrize("asked", [["--include-allowlisted", "test"], ["--from-allowlist", ALLOWLIST]])
def test_lint_shows_the_work_in_allowlisted_files_when_asked(listed, asked):
    code, out, _ = cli("lint", *asked, "--format", "text", cwd=listed)
    assert code == 1 and "[allowlisted]" not in out
    assert "test/test_a.py:4: error: [autofix] decouple apply:" in out
    assert "test/test_m.py:5: error: [hw/needs-manual]" in out


def test_lint_refuses_a_checkout_allowlist_it_cannot_read(listed):
    (listed / ALLOWLIST).write_text("[not json\n")
    code, out, err = cli("lint", "test", "--format", "text", cwd=listed)
    assert code == 2 and "the checkout's allowlist: allowlist " in err and "is not JSON" in err
    code, _, err = cli("apply", "--check", "test/test_a.py", cwd=listed)  # only lint reads it
    assert code == 1 and "allowlist" not in err
