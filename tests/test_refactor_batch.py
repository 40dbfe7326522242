"""`decouple refactor` batches (issue 39): a batch is as strong as its weakest file, failures in
both arms are said everywhere, a file with no test class gets its branch, a resume never plans a
file an earlier branch holds, batch.md lists every branch of state.json, and the PR body carries
no local path."""

from __future__ import annotations

import json
import os
import re
import sys

from codemod.survey.model import KIND, SCHEMA_VERSION
from test_refactor import ALLOWLIST, GENERIC_FILE, _ab_args, decouple, git, repo, stub_torch, write  # noqa: F401

# Its one test fails the same way with and without the label.
FAILING_FILE = '''\
from torch.testing._internal.common_utils import run_tests, TestCase


class TestBroken(TestCase):
    def test_always(self):
        raise RuntimeError("broken environment")


if __name__ == "__main__":
    run_tests()
'''

# Its import fails in both arms: its tests never run.
IMPORT_FAILS_FILE = '''\
import a_module_this_machine_lacks

from torch.testing._internal.common_utils import run_tests, TestCase


class TestNeverRuns(TestCase):
    def test_one(self):
        pass


if __name__ == "__main__":
    run_tests()
'''

# No test class at all: the linter has nothing to check.
HELPERS_FILE = '''\
def make_input(n):
    return list(range(n))
'''


def _add(repo_root, files: dict[str, str]) -> None:
    entries = json.loads(open(os.path.join(repo_root, ALLOWLIST)).read())
    for rel, text in files.items():
        write(repo_root, rel, text)
    write(repo_root, ALLOWLIST, json.dumps(sorted(entries + list(files)), indent=2) + "\n")
    git(repo_root, "add", "-A")
    git(repo_root, "commit", "-qm", "more files")


def test_a_batch_is_as_strong_as_its_weakest_file(repo, stub_torch):
    _add(repo, {"test/test_failing.py": FAILING_FILE, "test/test_import_fails.py": IMPORT_FAILS_FILE,
                "test/test_helpers.py": HELPERS_FILE})
    files = ["test/test_beta.py", "test/test_failing.py", "test/test_alpha.py", "test/test_import_fails.py",
             "test/test_helpers.py"]
    code, out = decouple("refactor", *files, "--group-size", "2", *_ab_args(stub_torch))
    assert code == 3, out  # INCONCLUSIVE: a file never ran
    safe, weak, helpers = ("hw-classification/test_beta-and-1-more", "hw-classification/test_alpha-and-1-more",
                           "hw-classification/test_helpers")
    # failures in both arms on the console and in batch.md, not only in the PR body
    assert f"{safe}: created, SAFE; 1 failing in both arms, unchanged" in out
    # the run alone would say SAFE (test_alpha's tests pass): the file that never ran decides
    assert (f"{weak}: created, INCONCLUSIVE: test/test_import_fails.py: never ran: import failed in both arms: "
            "ModuleNotFoundError") in out
    result = json.load(open(f".decouple-out/{weak}/ab.json"))
    assert result["verdict"] == "SAFE"
    batch_md = open(".decouple-out/batch.md").read()
    assert "| SAFE; 1 failing in both arms, unchanged |" in batch_md
    assert "| INCONCLUSIVE: test/test_import_fails.py: never ran: import failed in both arms" in batch_md
    body = open(f".decouple-out/{weak}/PR_BODY.md").read()
    assert ("Verdict: **INCONCLUSIVE**. `test/test_import_fails.py`: never ran: import failed in both arms: "
            "ModuleNotFoundError") in body
    assert "Not exercised here (their tests ran in neither arm):" in body
    assert "- `TestNeverRuns` (`test/test_import_fails.py`): import failed in both arms: ModuleNotFoundError" in body
    # pr-body composes the same body and exits with the branch's verdict, not the run's
    code, again = decouple("pr-body", "--ab", f".decouple-out/{weak}/ab.json", "--branch", weak)
    assert (code, again) == (3, body)
    # a file with no test class: its own branch, the allowlist line and nothing else; no A/B run
    assert f"{helpers}: created, A/B not run - no test class in its files: no test to run" in out
    assert git(repo, "diff", "--name-only", f"{helpers}^", helpers).split() == [ALLOWLIST]
    assert git(repo, "log", "-1", "--format=%s", helpers).strip() == (
        "[Testcase Refactoring] Remove test/test_helpers.py from the test linter allowlist")
    assert "- no test class: nothing to label" in git(repo, "log", "-1", "--format=%B", helpers)
    helpers_body = open(f".decouple-out/{helpers}/PR_BODY.md").read()
    assert "`test/test_helpers.py`: no test class, nothing for the linter to reject." in helpers_body
    assert "Nothing to run: no test source changes, and no test class in `test/test_helpers.py`." in helpers_body

    # a resume plans no branch for a file a branch of state.json holds, whatever the grouping
    code, dry = decouple("refactor", "--from-allowlist", ALLOWLIST, "--group-size", "1", "--dry-run")
    created = re.findall(r"would create branch (\S+)", dry)
    assert created == ["hw-classification/sub-test_gamma", "hw-classification/test_introspect"], dry
    for branch in (safe, weak, helpers):
        assert f"branch {branch}: verified-before" in dry or f"branch {branch}: ab-rerun" in dry, dry
    # batch.md lists every branch of state.json, this run's and the earlier ones
    code, out = decouple("refactor", "test/sub/test_gamma.py", "--no-ab")
    assert code == 0, out
    assert "3 branches of earlier runs not looked at (listed in the batch summary)" in out
    batch_md = open(".decouple-out/batch.md").read()
    state = json.load(open(".decouple-out/state.json"))
    assert {b["branch"] for b in state["branches"]} == {safe, weak, helpers, "hw-classification/sub-test_gamma"}
    for b in state["branches"]:
        assert f"| `{b['branch']}` |" in batch_md
    assert "## Branches of earlier runs (3, from state.json)" in batch_md


def test_pr_bodies_carry_no_local_path_and_stay_short(repo, stub_torch):
    code, out = decouple("refactor", "test/test_alpha.py", "test/test_beta.py", "--branch", "two",
                         *_ab_args(stub_torch))
    assert code == 0, out
    body = open(".decouple-out/two/PR_BODY.md").read()
    for local in (sys.executable, os.path.dirname(sys.executable), repo, stub_torch, os.path.expanduser("~") + "/"):
        assert local not in body, local
    assert not re.search(r"(?<![\w.])/(tmp|home|root|work|Users)/", body), body
    assert "`<venv>/bin/python`" in body or "`python" in body
    assert len(body.splitlines()) <= 60, len(body.splitlines())  # a two-class change
    assert "<details><summary>Environment</summary>" in body and body.rstrip().endswith("</details>")
    # the Test Plan is the commands a reviewer runs, with what they printed; the tool's command is one line
    plan = body[body.index("## Test Plan"):body.index("## How this was verified")]
    assert plan.count("python test/test_") == 2 and "decouple" not in plan
    assert body.count("`decouple ab test/test_alpha.py test/test_beta.py --base HEAD~1") == 1


def test_a_named_file_left_for_manual_work_is_exit_1_whatever_the_group_size(repo):
    for args in ([], ["--group-size", "1"], ["--limit", "5"]):
        code, out = decouple("refactor", "test/test_alpha.py", "test/test_mixed.py", *args, "--dry-run")
        assert code == 1, (args, out)
    # candidates of the allowlist are a batch's: the others are listed, not counted
    code, out = decouple("refactor", "--from-allowlist", ALLOWLIST, "--group-size", "1", "--dry-run")
    assert code == 0 and "skip test/test_mixed.py: needs manual work" in out


def test_batches_name_the_survey_files_no_batch_holds(repo, tmp_path):
    survey = {
        "kind": KIND, "schema_version": SCHEMA_VERSION,
        "batches": [{"number": 1, "files": ["test/test_alpha.py"], "owners": [], "directory": "test", "classes": 1}],
        "files": [{"path": "test/test_alpha.py", "status": "ready"},
                  {"path": "test/test_mixed.py", "status": "restructure"},
                  {"path": "test/test_beta.py", "status": "manual"}],
    }
    path = tmp_path / "survey.json"
    path.write_text(json.dumps(survey))
    code, out = decouple("refactor", "--batches", str(path), "--dry-run")
    assert "would create branch hw-classification/test_alpha" in out, out
    assert ("skip test/test_mixed.py: the survey marks it restructure but put it in no batch: name it "
            "(`decouple refactor test/test_mixed.py --restructure auto`) or survey again") in out
    assert "test/test_beta.py" not in out
