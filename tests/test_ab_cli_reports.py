"""`decouple ab` report writing: bad report paths, unwritable reports, undecodable text, bad merge input."""

from __future__ import annotations

import json
import os
import sys

import pytest
from click.testing import CliRunner

from codemod.cli.ab import REPORT_WRITE_ERROR, ab
from codemod.ab.result.model import ABResult

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "ab_results")


def invoke(args):
    return CliRunner().invoke(ab, args, catch_exceptions=False)


@pytest.mark.parametrize("content", ["[]", '{"schema_version": 1, "arms": 5}', '{"schema_version": 1, "tests": [3]}',
                                     '{"schema_version": 1, "environment": "x86"}', "not json", '"text"'])
def test_merge_of_wrong_shape_is_a_clean_usage_error(tmp_path, content):
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    res = invoke(["merge", str(bad)])
    assert res.exit_code == 2, res.output
    assert "not an A/B result" in res.output and "Traceback" not in res.output


def test_merge_of_non_utf8_file_is_a_clean_usage_error(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_bytes(b'{"schema_version": 1, "x": "\xff"}')
    res = invoke(["merge", str(bad)])
    assert res.exit_code == 2 and "not an A/B result" in res.output


def test_unwritable_report_is_exit_2_with_the_verdict_printed(tmp_path):
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full on this system")
    md = tmp_path / "ok.md"
    res = invoke(["merge", os.path.join(RESULTS, "regression.json"), "--allow-missing", "--json", "/dev/full",
                  "--markdown", str(md)])
    assert res.exit_code == REPORT_WRITE_ERROR == 2, res.output
    assert "decouple ab: REGRESSION" in res.output                 # the verdict is still printed
    assert "cannot write /dev/full" in res.output and "Traceback" not in res.output
    assert md.read_text(encoding="utf-8").startswith("## A/B verification")   # the other reports are written


def test_report_in_a_missing_folder_is_refused_before_any_work(tmp_path):
    target = tmp_path / "nonexistent" / "dir" / "x.md"
    res = invoke(["merge", os.path.join(RESULTS, "regression.json"), "--markdown", str(target)])
    assert res.exit_code == 2 and "does not exist" in res.output
    assert not (tmp_path / "nonexistent").exists()                 # no folder silently created
    res = invoke(["x.py", "--a-root", str(tmp_path), "--b-root", str(tmp_path), "--markdown", str(target)])
    assert res.exit_code == 2 and "does not exist" in res.output and "decouple ab:" not in res.output.split("Error")[0]
    assert not (tmp_path / "nonexistent").exists()


def test_lone_surrogate_in_a_test_message_gives_a_valid_json_report(tmp_path):
    name = os.fsdecode(b"caf\xe9.txt")
    assert "\udce9" in name
    for side in ("a", "b"):
        (tmp_path / side).mkdir()
        (tmp_path / side / "test_s.py").write_text(
            "import os\n"
            "def test_name():\n"
            "    raise FileNotFoundError(os.fsdecode(b'caf\\xe9.txt'))\n"
            "def test_ok():\n"
            "    pass\n")
    out = tmp_path / "r.json"
    md, html, xml = tmp_path / "r.md", tmp_path / "r.html", tmp_path / "r.xml"
    res = invoke(["test_s.py", "--a-root", str(tmp_path / "a"), "--b-root", str(tmp_path / "b"), "-q", "-j", "2",
                  "--json", str(out), "--markdown", str(md), "--html", str(html), "--junit", str(xml)])
    assert res.exit_code == 0, res.output                         # SAFE: the failure is pre-existing
    assert "SAFE" in res.output
    data = json.loads(out.read_bytes().decode("utf-8"))           # strict UTF-8, valid JSON
    result = ABResult.from_json(data)
    row = next(t for t in result.tests if t.nodeid.endswith("test_name"))
    assert row.category == "pre-existing" and name in row.b.message    # the surrogate reads back unchanged
    for path in (md, html, xml):
        assert "caf\\udce9.txt" in path.read_bytes().decode("utf-8")


def _repo(tmp_path):
    import subprocess
    repo = tmp_path / "repo"
    (repo / "tests").mkdir(parents=True)
    (repo / "tests" / "test_one.py").write_text("def test_a():\n    assert 1\n\ndef test_b():\n    assert 2\n")
    (repo / "tests" / "test_two.py").write_text("class TestTwo:\n    def test_c(self):\n        pass\n")
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "base"]):
        subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)
    (repo / "tests" / "test_two.py").write_text(
        "import enum\nHardwareClassification = enum.Enum('HardwareClassification', 'GENERIC')\n\n\n"
        "class TestTwo:\n    hw_classification = HardwareClassification.GENERIC\n\n    def test_c(self):\n        pass\n")
    return repo


def test_repro_script_runs_each_arm_per_file_from_the_commit(tmp_path, monkeypatch):
    import subprocess
    repo = _repo(tmp_path)
    monkeypatch.chdir(repo / "tests")
    out = tmp_path / "out"
    out.mkdir()
    res = invoke(["test_one.py", "test_two.py", "--base", "HEAD", "-q", "-j", "2",
                  "--markdown", str(out / "ab.md"), "--json", str(out / "ab.json")])
    assert res.exit_code == 0, res.output
    script = out / "repro.sh"
    assert os.access(script, os.X_OK)
    text = script.read_text()
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True).stdout.strip()
    assert f"git -C \"$TOP\" --literal-pathspecs archive {head} -- " in text   # the commit, not the ref or a temp root
    # No temporary root; the only absolute paths are the test's own folder and the interpreter
    # (which lives under /tmp when the checkout does).
    rest = text.replace(str(tmp_path), "").replace(sys.executable, "")
    assert "decouple-ab-" not in rest and "/tmp/" not in rest
    for arm in ("A", "B"):                                             # one pytest process per file
        body = text.split(f"arm_{arm}() {{")[1].split("\n}")[0]
        assert body.count("-m pytest") == 2
        assert "tests/test_one.py || status=1" in body and "tests/test_two.py || status=1" in body
    assert f"Reproduce: bash {script}" in res.output
    md = (out / "ab.md").read_text()
    assert "```sh\nbash repro.sh A\n```" in md and "env -u" not in md
    # What changed: the label written, per file and class
    assert "| `tests/test_two.py` | `TestTwo` | `GENERIC` |  |" in md
    data = json.loads((out / "ab.json").read_text())
    assert data["schema_version"] == 5 and data["changes"]["ref"] == "HEAD"
    # the script reproduces the run from anywhere in the repository
    proc = subprocess.run(["bash", str(script), "A", "B"], cwd=repo / "tests", capture_output=True, text=True,
                          env={**os.environ, "PYTHON": sys.executable}, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.count("passed") == 4                            # 2 files x 2 arms
    assert subprocess.run(["bash", str(script), "nope"], capture_output=True, cwd=repo).returncode == 2
    assert subprocess.run(["git", "status", "--porcelain"], cwd=repo, capture_output=True,
                          text=True).stdout.strip() == "M tests/test_two.py"     # nothing left behind


def test_merge_keeps_what_changed_and_recomputes_the_causes(tmp_path):
    src = json.loads(open(os.path.join(RESULTS, "weights_diagnose.json"), encoding="utf-8").read())
    assert src["schema_version"] == 2                                  # an older result, given the identity of a run
    legacy = "the warm interpreter failed (the warm interpreter died); fresh processes from here on"
    identity = {"run_id": "r1", "base_commit": "a" * 40, "a_tree": "t" * 40, "b_tree": "files:x", "shards": 2}
    one = dict(src, shard="1/2", causes=[], warnings=[legacy], identity=identity)
    two = dict(src, shard="2/2", causes=[], identity=identity)
    for i, data in enumerate((one, two)):
        (tmp_path / f"s{i}.json").write_text(json.dumps(data))
    out = tmp_path / "m.json"
    res = invoke(["merge", str(tmp_path / "s0.json"), str(tmp_path / "s1.json"), "--json", str(out)])
    assert res.exit_code == 0, res.output
    merged = json.loads(out.read_text())
    # the changes read back whole (schema 4 adds the structure of the diff, 5 the narrowed devices: empty here)
    for old, new in zip(src["changes"]["files"], merged["changes"]["files"], strict=True):
        assert {k: new[k] for k in old} == old
        assert (new["imports_extended"], new["instantiations"], new["moves"], new["narrowed"]) == ([], [], [], [])
    assert {k: v for k, v in merged["changes"].items() if k != "files"} == {
        k: v for k, v in src["changes"].items() if k != "files"}
    assert merged["schema_version"] == 5
    assert merged["warnings"] == [
        {"code": "text", "params": {"text": legacy}, "arm": "", "diagnose": False, "reasons": []},
        {"code": "merge.merged-shards", "params": {"shards": "1/2, 2/2"}, "arm": "", "diagnose": False, "reasons": []},
    ]
    (cause,) = merged["causes"]
    assert (cause["cause"], cause["status"]) == ("weights-only-default", "confirmed")
    old = dict(src, schema_version=1)                                  # a result from before schema 2 still reads
    old.pop("causes"), old.pop("changes")
    (tmp_path / "old.json").write_text(json.dumps(old))
    assert invoke(["merge", str(tmp_path / "old.json")]).exit_code == 0


def test_merge_refuses_what_is_not_one_run_naming_the_files(tmp_path):
    src = json.loads(open(os.path.join(RESULTS, "regression.json"), encoding="utf-8").read())
    identity = {"run_id": "r1", "base_commit": "a" * 40, "a_tree": "t" * 40, "b_tree": "files:x", "shards": 2}
    files = {
        "now-1.json": dict(src, shard="1/2", identity=identity),
        "now-2.json": dict(src, shard="2/2", identity=identity),
        "then-2.json": dict(src, shard="2/2", identity=dict(identity, run_id="r0", b_tree="files:old")),
    }
    for name, data in files.items():
        (tmp_path / name).write_text(json.dumps(data))
    path = {name: str(tmp_path / name) for name in files}
    res = invoke(["merge", path["now-1.json"], path["then-2.json"]])
    assert res.exit_code == 2 and "Traceback" not in res.output
    assert "not the shards of one run but of 2 runs" in res.output
    assert "now-1.json;" in res.output and "then-2.json)" in res.output
    assert "arm B's files (files:x vs files:old)" in res.output
    res = invoke(["merge", path["now-1.json"], path["now-1.json"], path["now-2.json"]])
    assert res.exit_code == 2 and "shard 1/2 given twice" in res.output
    res = invoke(["merge", path["now-1.json"]])
    assert res.exit_code == 2 and "shards missing: 2/2" in res.output
    res = invoke(["merge", path["now-1.json"], "--allow-missing"])
    assert res.exit_code in (1, 3) and "shards missing: 2/2" in res.output.splitlines()[0], res.output


def test_real_run_with_an_unwritable_json_report(tmp_path):
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full on this system")
    for side in ("a", "b"):
        (tmp_path / side).mkdir()
        (tmp_path / side / "test_ok.py").write_text("def test_ok():\n    pass\n")
    res = invoke(["test_ok.py", "--a-root", str(tmp_path / "a"), "--b-root", str(tmp_path / "b"), "-q", "-j", "2",
                  "--json", "/dev/full"])
    assert res.exit_code == 2, res.output
    assert "decouple ab: SAFE" in res.output and "cannot write /dev/full" in res.output
