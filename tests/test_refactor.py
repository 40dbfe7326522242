"""`decouple refactor` / `decouple pr-body` on real git repositories in temporary folders.

The A/B parts run a tiny suite against a stub `torch` package (put first on the arms'
PYTHONPATH with --env) so that they take seconds; one torch-marked test runs the real thing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest
from click.testing import CliRunner

from codemod.cli.main import main

ALLOWLIST = "tools/linter/adapters/test_linter_allowlist.json"

GENERIC_FILE = '''\
import unittest

from torch.testing._internal.common_utils import run_tests, TestCase


class Test{name}(TestCase):
    def test_one(self):
        self.assertEqual(1 + 1, 2)

    def test_two(self):
        self.assertTrue(True)


if __name__ == "__main__":
    run_tests()
'''

# Its test looks at the class's own attributes: the label makes it fail (a real regression).
INTROSPECTING_FILE = '''\
from torch.testing._internal.common_utils import run_tests, TestCase


class TestIntrospect(TestCase):
    def test_no_public_attributes(self):
        public = [k for k in vars(type(self)) if not k.startswith(("_", "test"))]
        self.assertEqual(public, [])
'''

MANUAL_FILE = '''\
from torch.testing._internal.common_device_type import instantiate_device_type_tests
from torch.testing._internal.common_utils import run_tests, TestCase


class TestMixed(TestCase):
    def test_on_device(self, device):
        pass

    def test_no_device(self):
        pass


instantiate_device_type_tests(TestMixed, globals())
'''

STUB_COMMON_UTILS = '''\
import enum
import unittest

TestCase = unittest.TestCase


class HardwareClassification(enum.Enum):
    GENERIC = "generic"
    ACCELERATOR = "accelerator"
    CPU = "cpu"
    CUDA = "cuda"
    MPS = "mps"
    XPU = "xpu"


def run_tests():
    unittest.main()
'''


# Generates the CPU instance of a device-generic class, as the real one names it (TestFooCPU::test_x_cpu).
STUB_DEVICE_TYPE = '''\
import inspect
import unittest


def instantiate_device_type_tests(generic, scope, **kwargs):
    def bind(f):
        if "device" in inspect.signature(f).parameters:
            return lambda self: f(self, "cpu")
        return f

    attrs = {k + "_cpu": bind(v) for k, v in vars(generic).items() if k.startswith("test")}
    # the class's other members (its hw_classification among them) come along, as the real one copies them
    attrs.update({k: v for k, v in vars(generic).items() if not k.startswith(("test", "__"))})
    del scope[generic.__name__]
    scope[generic.__name__ + "CPU"] = type(generic.__name__ + "CPU", (unittest.TestCase,), attrs)
'''


def git(cwd, *args) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def write(root, rel, text):
    path = os.path.join(root, *rel.split("/"))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write(text)


@pytest.fixture
def stub_torch(tmp_path):
    root = tmp_path / "stub"
    for rel in ("torch/__init__.py", "torch/testing/__init__.py", "torch/testing/_internal/__init__.py"):
        write(str(root), rel, "")
    write(str(root), "torch/testing/_internal/common_utils.py", STUB_COMMON_UTILS)
    write(str(root), "torch/testing/_internal/common_device_type.py", STUB_DEVICE_TYPE)
    return str(root)


@pytest.fixture
def repo(tmp_path, monkeypatch):
    root = tmp_path / "pytorch"
    root.mkdir()
    r = str(root)
    git(r, "init", "-q", "-b", "main")
    git(r, "config", "user.name", "Test")
    git(r, "config", "user.email", "test@example.invalid")
    git(r, "config", "commit.gpgsign", "false")
    files = {
        "test/test_alpha.py": GENERIC_FILE.format(name="Alpha"),
        "test/test_beta.py": GENERIC_FILE.format(name="Beta"),
        "test/sub/test_gamma.py": GENERIC_FILE.format(name="Gamma"),
        "test/test_mixed.py": MANUAL_FILE,
        "test/test_introspect.py": INTROSPECTING_FILE,
        "README.md": "unrelated\n",
    }
    for rel, text in files.items():
        write(r, rel, text)
    entries = ["test/sub/test_gamma.py", "test/test_alpha.py", "test/test_beta.py", "test/test_introspect.py",
               "test/test_mixed.py"]
    write(r, ALLOWLIST, json.dumps(entries, indent=2) + "\n")
    git(r, "add", "-A")
    git(r, "commit", "-qm", "base")
    monkeypatch.chdir(r)
    return r


def decouple(*args):
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.output


def snapshot(root):
    """Everything the user could notice: refs, HEAD, status, every file's bytes."""
    files = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d != ".git"]
        for name in filenames:
            path = os.path.join(dirpath, name)
            with open(path, "rb") as f:
                files[os.path.relpath(path, root)] = f.read()
    return (git(root, "show-ref"), git(root, "symbolic-ref", "HEAD"), git(root, "status", "--porcelain"),
            git(root, "worktree", "list", "--porcelain").count("worktree "), files)


def blob(root, ref, rel) -> bytes:
    return subprocess.run(["git", "show", f"{ref}:{rel}"], cwd=root, check=True, capture_output=True).stdout


def test_branch_from_base_with_one_commit_title_body_and_graduation(repo):
    base = git(repo, "rev-parse", "HEAD").strip()
    write(repo, "README.md", "moved on\n")
    git(repo, "commit", "-qam", "later work")
    before = snapshot(repo)
    code, out = decouple("refactor", "test/test_alpha.py", "--base", base, "--no-ab", "--out", "../out")
    assert code == 0, out
    branch = "hw-classification/test_alpha"
    assert git(repo, "rev-parse", f"{branch}^").strip() == base
    assert git(repo, "rev-list", "--count", f"{base}..{branch}").strip() == "1"
    message = git(repo, "log", "-1", "--format=%B", branch)
    assert message.splitlines()[0] == "[Testcase Refactoring] Add hw_classification in test/test_alpha.py"
    assert "- TestAlpha = GENERIC (line 6): not instantiated anywhere" in message
    assert f"- graduated from {ALLOWLIST}" in message
    assert git(repo, "diff", "--name-only", f"{branch}^", branch).split() == ["test/test_alpha.py", ALLOWLIST]
    # the allowlist keeps its exact bytes apart from the removed line
    old = blob(repo, base, ALLOWLIST).decode()
    assert blob(repo, branch, ALLOWLIST).decode() == old.replace('  "test/test_alpha.py",\n', "")
    assert b"hw_classification = HardwareClassification.GENERIC" in blob(repo, branch, "test/test_alpha.py")
    # the user's checkout, branch and files are exactly as they were; nothing else was made
    after = snapshot(repo)
    assert after[1:] == before[1:]
    assert set(after[0].splitlines()) - set(before[0].splitlines()) == {
        f"{git(repo, 'rev-parse', branch).strip()} refs/heads/{branch}"}
    body = open(os.path.join(os.path.dirname(repo), "out", "hw-classification", "test_alpha", "PR_BODY.md")).read()
    # no A/B run yet: no per-file command is printed that nothing ran; the A/B command runs them
    assert "python test/test_alpha.py" not in body
    assert "`decouple ab test/test_alpha.py --base HEAD~1 --test-plan`" in body
    assert "lists each command here with what it printed" in body
    assert "pytorch/pytorch#185590" in body


def test_batch_one_commit_per_group_and_skipped_files(repo):
    code, out = decouple("refactor", "--from-allowlist", ALLOWLIST, "--limit", "3", "--group-size", "2",
                         "--no-ab")
    assert code == 0, out
    # allowlist order; test_introspect is doable too but past the limit; test_mixed needs manual work
    groups = {"hw-classification/sub-test_gamma-and-1-more": ["test/sub/test_gamma.py", "test/test_alpha.py"],
              "hw-classification/test_beta": ["test/test_beta.py"]}
    base = git(repo, "rev-parse", "main").strip()
    for branch, files in groups.items():
        assert git(repo, "rev-list", f"{base}..{branch}").count("\n") == 1
        changed = git(repo, "diff", "--name-only", f"{branch}^", branch).split()
        assert changed == sorted(files + [ALLOWLIST])
        entries = json.loads(blob(repo, branch, ALLOWLIST))
        assert [e for e in entries if e in files] == []
    title = git(repo, "log", "-1", "--format=%s", "hw-classification/sub-test_gamma-and-1-more").strip()
    assert title == ("[Testcase Refactoring] Add hw_classification in test/sub/test_gamma.py, "
                     "test/test_alpha.py")
    summary = json.load(open(".decouple-out/batch.json"))
    assert [b["branch"] for b in summary["branches"]] == list(groups)
    assert [b["files"] for b in summary["branches"]] == list(groups.values())
    assert summary["skipped"] == []  # the limit was reached before test_mixed was looked at
    code, out = decouple("refactor", "--from-allowlist", ALLOWLIST, "--group-size", "5", "--no-ab",
                         "--branch", "all")
    summary = json.load(open(".decouple-out/batch.json"))
    assert [s["path"] for s in summary["skipped"]] == ["test/test_mixed.py"]
    assert "needs manual work: TestMixed" in summary["skipped"][0]["reason"]
    assert "test/test_mixed.py" in open(".decouple-out/batch.md").read()


def test_dirty_tree_is_refused_and_nothing_is_made(repo):
    write(repo, "README.md", "edited\n")
    before = snapshot(repo)
    code, out = decouple("refactor", "test/test_alpha.py", "--no-ab")
    assert code == 2
    assert "uncommitted changes (README.md)" in out and "--allow-dirty" in out
    assert snapshot(repo) == before


def test_allow_dirty_keeps_unrelated_changes_out_and_in_place(repo):
    write(repo, "README.md", "edited\n")
    write(repo, "test/test_alpha.py", GENERIC_FILE.format(name="Alpha") + "# my local note\n")
    write(repo, "test/test_beta.py", GENERIC_FILE.format(name="Beta") + "# staged\n")
    git(repo, "add", "test/test_beta.py")
    write(repo, "untracked.txt", "scratch\n")
    before = snapshot(repo)
    code, out = decouple("refactor", "test/test_alpha.py", "--no-ab", "--allow-dirty", "--out", "../out")
    assert code == 0, out
    branch = "hw-classification/test_alpha"
    assert git(repo, "diff", "--name-only", f"{branch}^", branch).split() == ["test/test_alpha.py", ALLOWLIST]
    assert b"my local note" not in blob(repo, branch, "test/test_alpha.py")
    assert snapshot(repo)[1:] == before[1:]  # status (staged + unstaged + untracked) and bytes identical


def test_dry_run_changes_nothing(repo):
    before = snapshot(repo)
    code, out = decouple("refactor", "--from-allowlist", ALLOWLIST, "--group-size", "2", "--dry-run")
    assert code == 0, out   # a batch skips test_mixed by design: the code the real run exits with
    assert "would create branch hw-classification/sub-test_gamma-and-1-more" in out
    assert "+    hw_classification = HardwareClassification.GENERIC" in out
    assert "skip test/test_mixed.py: needs manual work" in out
    assert snapshot(repo) == before
    assert not os.path.exists(".decouple-out")


def test_manual_work_is_committed_partially_and_listed(repo):
    write(repo, "test/test_both.py", GENERIC_FILE.format(name="Fine") + "\n\n" + MANUAL_FILE)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "both")
    code, out = decouple("refactor", "test/test_both.py", "--no-ab")
    assert code == 1, out  # manual work left
    message = git(repo, "log", "-1", "--format=%B", "hw-classification/test_both")
    assert "- TestFine = GENERIC" in message
    assert "- needs manual work: TestMixed (line" in message and "| fits: split-class" in message
    assert "graduated" not in message
    body = open(".decouple-out/hw-classification/test_both/PR_BODY.md").read()
    assert "`test/test_both.py::TestMixed`" in body and "fitting restructuring: split-class" in body


def test_unparsable_file_is_exit_2_and_makes_no_branch(repo):
    write(repo, "test/test_broken.py", "class TestBroken:\n    def test_x(self)\n        pass\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "broken")
    code, out = decouple("refactor", "test/test_broken.py", "--no-ab")
    assert code == 2
    assert "test/test_broken.py: syntax error" in out
    assert "hw-classification/test_broken" not in git(repo, "branch")


def test_existing_foreign_branch_is_not_touched(repo):
    git(repo, "branch", "hw-classification/test_alpha")
    code, out = decouple("refactor", "test/test_alpha.py", "--no-ab")
    assert code == 2
    assert "was not made by decouple refactor" in out
    assert git(repo, "rev-parse", "hw-classification/test_alpha") == git(repo, "rev-parse", "main")


def _ab_args(stub_torch):
    return ["--python", sys.executable, "--env", f"PYTHONPATH={stub_torch}", "-j", "2", "--confirm", "1"]


def test_regression_exits_1_and_keeps_the_branch(repo, stub_torch):
    code, out = decouple("refactor", "test/test_introspect.py", *_ab_args(stub_torch))
    assert code == 1, out
    branch = "hw-classification/test_introspect"
    assert "REGRESSION: the branch is kept for inspection" in out
    assert git(repo, "rev-parse", f"{branch}^") == git(repo, "rev-parse", "main")
    folder = ".decouple-out/hw-classification/test_introspect"
    result = json.load(open(f"{folder}/ab.json"))
    assert result["verdict"] == "REGRESSION"
    assert os.path.getsize(f"{folder}/ab.html") > 0 and "REGRESSION" in open(f"{folder}/ab.md").read()
    assert "REGRESSION" in open(f"{folder}/PR_BODY.md").read()


def test_safe_rerun_resumes_base_move_reported_and_pr_body_matches(repo, stub_torch):
    args = ["refactor", "--from-allowlist", ALLOWLIST, "--limit", "2", "--group-size", "1", *_ab_args(stub_torch)]
    code, out = decouple(*args)
    assert code == 0, out
    heads = {b: git(repo, "rev-parse", b) for b in ("hw-classification/sub-test_gamma",
                                                   "hw-classification/test_alpha")}
    first = json.load(open(".decouple-out/batch.json"))
    assert [b["verdict"] for b in first["branches"]] == ["SAFE", "SAFE"]

    # the split-machine path gives the same body from the saved result
    folder = ".decouple-out/hw-classification/test_alpha"
    code, body = decouple("pr-body", "--ab", f"{folder}/ab.json", "--branch", "hw-classification/test_alpha")
    assert code == 0
    assert body == open(f"{folder}/PR_BODY.md").read()
    assert "Verdict: **SAFE**" in body and "<details><summary>Environment</summary>" in body
    assert "`decouple ab test/test_alpha.py --base HEAD~1 --env PYTHONPATH=…/stub --test-plan`" in body
    code, zh = decouple("pr-body", "--ab", f"{folder}/ab.json", "--branch", "hw-classification/test_alpha",
                        "--lang", "zh")
    assert "## 测试计划" in zh and "python test/test_alpha.py --hw-classification GENERIC -v" in zh

    # rerun: both branches are verified already, nothing is rebuilt or rerun
    code, out = decouple(*args)
    assert code == 0, out
    second = json.load(open(".decouple-out/batch.json"))
    assert [b["status"] for b in second["branches"]] == ["verified-before", "verified-before"]
    assert {b: git(repo, "rev-parse", b) for b in heads} == heads
    assert "A/B: " not in out

    # the base moved: reported, not rebuilt
    write(repo, "README.md", "moved on\n")
    git(repo, "commit", "-qam", "later work")
    code, out = decouple(*args)
    assert code == 1
    third = json.load(open(".decouple-out/batch.json"))
    assert [b["status"] for b in third["branches"]] == ["base-moved", "base-moved"]
    assert {b: git(repo, "rev-parse", b) for b in heads} == heads


def test_no_ab_then_ab_then_pr_body(repo, stub_torch):
    code, out = decouple("refactor", "test/test_beta.py", "--no-ab")
    assert code == 0, out
    body = open(".decouple-out/hw-classification/test_beta/PR_BODY.md").read()
    assert "Not run yet" in body
    git(repo, "checkout", "-q", "hw-classification/test_beta")
    code, out = decouple("ab", "test/test_beta.py", "--base", "main", "--json", "../ab.json",
                         *_ab_args(stub_torch))
    assert code == 0, out
    code, body = decouple("pr-body", "--ab", "../ab.json")
    assert code == 0
    assert "## How this was verified" in body and "Not run yet" not in body and "**SAFE**" in body


def test_rerun_verifies_a_branch_made_with_no_ab_without_rebuilding_it(repo, stub_torch):
    code, out = decouple("refactor", "test/test_beta.py", "--no-ab")
    assert code == 0, out
    head = git(repo, "rev-parse", "hw-classification/test_beta")
    git(repo, "checkout", "-q", "hw-classification/test_beta")  # checked out here: verified all the same
    code, out = decouple("refactor", "test/test_beta.py", "--base", "main", *_ab_args(stub_torch))
    assert code == 0, out
    record = json.load(open(".decouple-out/batch.json"))["branches"][0]
    assert (record["status"], record["verdict"]) == ("ab-rerun", "SAFE")
    assert git(repo, "rev-parse", "hw-classification/test_beta") == head
    assert "Not run yet" not in open(".decouple-out/hw-classification/test_beta/PR_BODY.md").read()


def test_pr_body_refuses_a_foreign_commit(repo):
    code, out = decouple("pr-body", "--branch", "main")
    assert code == 2 and "not a commit made by `decouple refactor`" in out


def test_restructure_moves_recorded_mapped_in_the_ab_and_shown_in_the_pr(repo, stub_torch):
    # a batch (--group-size): only doable files are taken; the restructuring makes test_mixed doable
    code, out = decouple("refactor", "test/test_mixed.py", "test/test_alpha.py", "--restructure", "auto",
                         "--group-size", "2", "--branch", "all", *_ab_args(stub_torch))
    assert code == 0, out
    summary = json.load(open(".decouple-out/batch.json"))
    assert summary["skipped"] == [] and "test/test_mixed.py" in summary["branches"][0]["files"]
    message = git(repo, "log", "-1", "--format=%B", "all")
    assert ("- moved test_on_device: TestMixed (instantiated) -> TestMixedAccelerator (instantiated) by split-class"
            in message)
    folder = ".decouple-out/all"
    result = json.load(open(f"{folder}/ab.json"))
    assert result["verdict"] == "SAFE" and result["mapping"]
    assert json.load(open(f"{folder}/test-map.json"))["map"]
    body = open(f"{folder}/PR_BODY.md").read()
    assert "Tests moved by the restructuring" in body and "`TestMixedAccelerator`: " in body
    # the map is not in the branch: no command that needs it is printed, and the body says why
    assert "test-map.json" not in git(repo, "show", "--name-only", "--format=", "all")
    assert "--map-file" not in body and "decouple ab test/" not in body
    assert "(`test-map.json`, written next to this body by `decouple refactor`; not part of this PR)" in body
    code, again = decouple("pr-body", "--ab", f"{folder}/ab.json", "--branch", "all")
    assert again == body


@pytest.mark.torch
def test_real_torch_example_file_is_safe(repo):
    python = os.environ.get("DECOUPLE_TORCH_PYTHON")
    if not python:
        pytest.skip("DECOUPLE_TORCH_PYTHON not set")
    code, out = decouple("refactor", "test/test_alpha.py", "--python", python, "-j", "2", "--confirm", "1")
    assert code == 0, out
    result = json.load(open(".decouple-out/hw-classification/test_alpha/ab.json"))
    assert result["verdict"] == "SAFE"
    assert result["environment"]["has_hw_classification"] is True


def test_commit_message_round_trips_odd_paths_and_branch_names_are_valid(repo):
    from codemod.refactor import plan

    files = [plan.FilePlan("test/my dir/test_ünï code.py", labels=[plan.ClassLabel("TestX", "CPU", 3, "e: `x` | y")],
                           loads=[plan.LoadEdit(7, "added weights_only=False: why")],
                           manual=[plan.ManualClass("TestY", 9, "breaks [device_param]", "split-class: split it")],
                           graduated_from=ALLOWLIST),
             plan.FilePlan("test/test_plain.py", labels=[plan.ClassLabel("TestZ", "GENERIC", 1, "none")])]
    facts = plan.parse_commit_message(plan.commit_message(files, "a" * 40))
    assert facts.base == "a" * 40
    assert [(p.path, p.labels, p.loads, p.manual, p.graduated_from) for p in facts.files] == [
        (p.path, p.labels, p.loads, p.manual, p.graduated_from) for p in files]
    branch = plan.default_branch([files[0].path, files[1].path])
    assert branch == "hw-classification/my-dir-test_-n-code-and-1-more"
    git(repo, "check-ref-format", "--branch", branch)
    assert plan.parse_commit_message("Fix a bug\n\nDecouple-Base: " + "a" * 40) is None


def test_the_commit_and_the_pr_body_name_the_rules_generation():
    from codemod.refactor import plan, prbody

    files = [plan.FilePlan("test/test_a.py", labels=[plan.ClassLabel("TestA", "CUDA", 3, "e")], rules="gen2")]
    message = plan.commit_message(files, "b" * 40)
    assert "Decouple-Rules: gen2" in message.splitlines()
    facts = plan.parse_commit_message(message)
    assert facts.rules == "gen2"
    assert "The labels follow the gen2 rules of the test linter" in prbody.compose(facts, None)
    older = plan.parse_commit_message(message.replace("Decouple-Rules: gen2\n", ""))
    assert older.rules == "" and "rules of the test linter" not in prbody.compose(older, None)


REJECTING_LINTER = '''\
import json, os, sys
for name in sys.argv[1:]:
    text = open(name, encoding="utf-8").read()
    if os.path.basename(name) == "test_beta.py" or "TestDecoupleGateCanary" in text:  # the gate's canary: judged
        print(json.dumps({"path": name, "line": 1, "char": None, "code": "TEST_LINTER", "severity": "error",
                          "name": "[stand_in]", "original": None, "replacement": None,
                          "description": "rejected by the checkout's own linter"}))
'''


def test_the_base_commits_linter_gates_what_is_committed_and_graduated(repo):
    write(repo, "tools/linter/adapters/test_linter.py", REJECTING_LINTER)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "the checkout's linter")
    code, out = decouple("refactor", "--from-allowlist", ALLOWLIST, "--limit", "3", "--group-size", "5",
                         "--no-ab", "--branch", "gated", "--python", sys.executable)
    assert code == 0, out
    changed = git(repo, "diff", "--name-only", "gated^", "gated").split()
    assert "test/test_beta.py" not in changed and "test/test_alpha.py" in changed
    assert "test/test_beta.py" in json.loads(blob(repo, "gated", ALLOWLIST))  # not graduated
    skipped = json.load(open(".decouple-out/batch.json"))["skipped"]
    beta = [s for s in skipped if s["path"] == "test/test_beta.py"]
    assert beta and "[stand_in] rejected by the checkout's own linter" in beta[0]["reason"]
    # --linter off: the same file goes in
    code, out = decouple("refactor", "test/test_beta.py", "--no-ab", "--linter", "off", "--branch", "ungated")
    assert code == 0, out
    assert "test/test_beta.py" in git(repo, "diff", "--name-only", "ungated^", "ungated").split()


# A class whose test needs CUDA, with no device parameter and no instantiation: gen1's rules
# leave it GENERIC (CUDA would need instantiate_device_type_tests); gen2's rules make it CUDA.
CUDA_NEEDING_FILE = '''\
import torch
from torch.testing._internal.common_utils import run_tests, TestCase


class TestStreams(TestCase):
    def test_event(self):
        event = torch.cuda.Event()
        event.record()
'''


def test_the_branch_holds_the_edits_the_plan_made_under_the_base_commits_rules(repo):
    """The plan (and the gate) follow the generation of the base commit's linter; the commit
    must hold those very edits, not the newest generation's (a gen1 checkout once got gen2's
    CUDA label, which its linter rejects, committed and graduated)."""
    fixture = os.path.join(os.path.dirname(__file__), "fixtures", "linters", "gen1_shape.py")
    with open(fixture, encoding="utf-8") as f:
        write(repo, "tools/linter/adapters/test_linter.py", f.read())
    write(repo, "test/test_streams.py", CUDA_NEEDING_FILE)
    entries = json.loads(open(ALLOWLIST).read()) + ["test/test_streams.py"]
    write(repo, ALLOWLIST, json.dumps(sorted(entries), indent=2) + "\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "a gen1 checkout")
    code, dry = decouple("refactor", "test/test_streams.py", "--dry-run", "--linter", "off")
    assert code == 0, dry
    assert "+    hw_classification = HardwareClassification.GENERIC" in dry
    code, out = decouple("refactor", "test/test_streams.py", "--no-ab", "--linter", "off")
    assert code == 0, out
    branch = "hw-classification/test_streams"
    written = blob(repo, branch, "test/test_streams.py").decode()
    assert "hw_classification = HardwareClassification.GENERIC" in written
    assert "HardwareClassification.CUDA" not in written
    assert "Decouple-Rules: gen1" in git(repo, "log", "-1", "--format=%B", branch).splitlines()


def test_a_linter_that_cannot_run_is_exit_2_and_no_branch(repo):
    write(repo, "tools/linter/adapters/test_linter.py", "print('not json')\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "a broken linter")
    code, out = decouple("refactor", "test/test_alpha.py", "--no-ab", "--python", sys.executable)
    assert code == 2 and "linter gate:" in out and "not a LintMessage" in out
    assert "hw-classification/test_alpha" not in git(repo, "branch", "--list")


def test_the_target_is_checked_as_apply_checks_it(repo, tmp_path, monkeypatch):
    # One builder serves `apply` and `refactor`: a named interpreter that cannot run stops both
    # before anything is made, and a torch without HardwareClassification is a warning.
    code, out = decouple("refactor", "test/test_alpha.py", "--no-ab", "--python", str(tmp_path / "no-python"))
    assert code == 2 and "does not exist" in out
    assert "hw-classification/test_alpha" not in git(repo, "branch", "--list")
    old = tmp_path / "old-torch"
    write(str(old), "torch/__init__.py", "")
    write(str(old), "torch/version.py", '__version__ = "2.13.0"\n')
    write(str(old), "torch/testing/_internal/common_utils.py", "TestCase = object\n")
    monkeypatch.setenv("PYTHONPATH", str(old))  # the probe finds this torch first
    code, out = decouple("refactor", "test/test_alpha.py", "--no-ab", "--python", sys.executable)
    assert code == 0, out
    assert "warning: torch 2.13.0 in " in out and "has no HardwareClassification" in out
    assert "hw-classification/test_alpha" in git(repo, "branch", "--list")


def test_configured_excludes_keep_allowlisted_files_out_reported_as_excluded(repo):
    write(repo, "pyproject.toml", '[tool.decouple]\nexclude = ["test/sub/"]\n')
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "exclude a folder")
    code, out = decouple("refactor", "--from-allowlist", ALLOWLIST, "--group-size", "5", "--no-ab",
                         "--branch", "batch")
    assert code == 0, out
    assert "1 file excluded by a pattern (listed in the batch summary)" in out
    changed = git(repo, "diff", "--name-only", "batch^", "batch").split()
    assert "test/sub/test_gamma.py" not in changed and "test/test_alpha.py" in changed
    assert "test/sub/test_gamma.py" in json.loads(blob(repo, "batch", ALLOWLIST))  # not graduated
    assert "test/test_alpha.py" not in json.loads(blob(repo, "batch", ALLOWLIST))
    summary = json.load(open(".decouple-out/batch.json"))
    assert summary["excluded"] == [{"path": "test/sub/test_gamma.py", "pattern": "test/sub/",
                                    "reason": "excluded by the pattern `test/sub/`"}]
    assert [s["path"] for s in summary["skipped"]] == ["test/test_mixed.py"]  # manual work, not excluded
    batch_md = open(".decouple-out/batch.md").read()
    assert "## Excluded files (1)\n\n- `test/sub/test_gamma.py`: excluded by the pattern `test/sub/`\n" in batch_md


def test_exclude_option_has_gitignore_semantics_relative_to_the_repository_root(repo, monkeypatch):
    # No slash: any depth. An explicitly named file is excluded too, as `apply` excludes it.
    code, out = decouple("refactor", "test/test_alpha.py", "--exclude", "test_alpha.py", "--no-ab")
    assert code == 0, out
    assert out.startswith("nothing to refactor: test/test_alpha.py: excluded by the pattern `test_alpha.py`")
    assert "hw-classification/test_alpha" not in git(repo, "branch", "--list")
    # A pattern with a slash is anchored at the repository root, wherever the command runs from.
    monkeypatch.chdir(os.path.join(repo, "test"))
    code, out = decouple("refactor", "sub", "--exclude", "sub/", "--exclude", "!test/sub/", "--dry-run")
    assert code == 0 and "would create branch hw-classification/sub-test_gamma" in out, out
    code, out = decouple("refactor", ".", "--exclude", "test/sub/*", "--exclude", "test/test_[ai]*.py",
                         "--dry-run", "--group-size", "9", "--branch", "rest")
    assert "exclude test/sub/test_gamma.py: excluded by the pattern `test/sub/*`" in out
    assert "exclude test/test_alpha.py: excluded by the pattern `test/test_[ai]*.py`" in out
    assert "exclude test/test_introspect.py" in out and "exclude test/test_mixed.py" not in out
    assert "+++ b/test/test_beta.py" in out and "+++ b/test/test_alpha.py" not in out


def test_vendored_folders_are_excluded_unless_no_default_excludes(repo):
    write(repo, "test/cpython/test_vendored.py", GENERIC_FILE.format(name="Vendored"))
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "vendored")
    code, out = decouple("refactor", "test/cpython", "--dry-run")
    assert code == 0 and "exclude test/cpython/test_vendored.py: excluded by the pattern `test/cpython/*`" in out
    assert "would create branch" not in out
    code, out = decouple("refactor", "test/cpython", "--dry-run", "--no-default-excludes")
    assert code == 0 and "would create branch hw-classification/cpython-test_vendored" in out, out


def test_a_move_keeps_the_tests_that_stayed_with_longer_names_through_the_commit():
    # test_add moved; test_add_scalar stayed: the map from the commit (what a resume and pr-body read)
    # must not move test_add_scalar's instances with it (they would be "missing in B")
    import re

    from codemod.refactor import plan

    move = plan.Moved(transform="split-class", test="test_add", old_class="TestMixed", new_class="TestMixedAccelerator",
                      old_instantiated=True, new_instantiated=True, before=("cpu", "cuda"), after=("cpu", "cuda"),
                      kept_longer=("test_add_scalar",))
    files = [plan.FilePlan("test/test_mixed.py", moves=[move])]
    message = plan.commit_message(files, "c" * 40)
    assert "; stays: test_add_scalar" in message
    facts = plan.parse_commit_message(message)
    assert facts.files[0].moves == [move]
    patterns = [re.compile(old.removeprefix("re:")) for old in plan.test_map(facts.files)]
    assert any(p.search("test/test_mixed.py::TestMixedCPU::test_add_cpu") for p in patterns)
    assert not any(p.search("test/test_mixed.py::TestMixedCPU::test_add_scalar_cpu") for p in patterns)
    forgotten = plan.Moved(**{**move.__dict__, "kept_longer": ()})
    without = plan.test_map([plan.FilePlan("test/test_mixed.py", moves=[forgotten])])
    assert any(re.search(old.removeprefix("re:"), "test/test_mixed.py::TestMixedCPU::test_add_scalar_cpu")
               for old in without)  # the fact the commit now carries is what keeps it out
