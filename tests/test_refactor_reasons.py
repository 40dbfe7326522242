"""`decouple refactor` says the real reason: a skipped file's existing label that breaks its
rules names the label and the rule; --dry-run exits with the code the real run exits with;
a branch that only removes a file from the allowlist is titled and described as such; a
graduated file whose tests run unclassified is manual work (exit 1, in the PR body); the PR
body's Test Plan lists the commands the A/B run ran in B, with what they printed."""

from __future__ import annotations

import json
import os

from test_refactor import ALLOWLIST, GENERIC_FILE, _ab_args, decouple, git, repo, stub_torch, write  # noqa: F401

BROKEN_LABELS = '''\
from torch.testing._internal.common_device_type import instantiate_device_type_tests
from torch.testing._internal.common_utils import HardwareClassification, run_tests, TestCase


class TestWrongValue(TestCase):
    hw_classification = HardwareClassification.GENERIC

    def test_on_device(self, device):
        pass


class TestNotAMember(TestCase):
    hw_classification = "GENERIC"

    def test_plain(self):
        pass


instantiate_device_type_tests(TestWrongValue, globals())
'''

LABELLED_FILE = GENERIC_FILE.replace(
    "class Test{name}(TestCase):\n", "class Test{name}(TestCase):\n    hw_classification = HardwareClassification.GENERIC\n\n"
).replace("import run_tests, TestCase", "import HardwareClassification, run_tests, TestCase")

# The label lands on the template; the module copies its tests into a class of its own and
# deletes the template: at run time nothing carries the label.
TEMPLATE_FILE = '''\
import unittest

from torch.testing._internal.common_utils import run_tests, TestCase


class TemplateTests(TestCase):
    def test_one(self):
        self.assertEqual(1 + 1, 2)


class CopiedTests(unittest.TestCase):
    pass


for _name, _value in list(vars(TemplateTests).items()):
    if _name.startswith("test"):
        setattr(CopiedTests, _name, _value)
del TemplateTests

if __name__ == "__main__":
    run_tests()
'''


def _commit(repo_root, rel, text, allowlisted=True):
    write(repo_root, rel, text)
    if allowlisted:
        entries = json.loads(open(os.path.join(repo_root, ALLOWLIST)).read())
        write(repo_root, ALLOWLIST, json.dumps(sorted(entries + [rel]), indent=2) + "\n")
    git(repo_root, "add", "-A")
    git(repo_root, "commit", "-qm", f"add {rel}")


def test_a_broken_existing_label_names_the_label_and_the_rule(repo):
    _commit(repo, "test/test_broken.py", BROKEN_LABELS)
    code, out = decouple("refactor", "test/test_broken.py", "--dry-run", "--linter", "off")
    assert code == 1, out
    line = next(x for x in out.splitlines() if x.startswith("skip test/test_broken.py"))
    assert "torch.load" not in line, line
    assert "TestWrongValue (its existing label GENERIC breaks the linter's [instantiation], [device_param] rules:" in line
    assert "TestNotAMember (its existing label breaks the linter's [hw_classification] rule: " in line
    assert "not a HardwareClassification member: 'GENERIC'" in line


def test_dry_run_exits_with_the_code_of_the_real_run(repo):
    # files named: one left for manual work is exit 1; a batch skips such files by design (exit 0)
    cases = [(["test/test_mixed.py"], 1), (["test/test_alpha.py"], 0), (["test/test_beta.py", "test/test_mixed.py"], 1),
             (["--from-allowlist", ALLOWLIST, "--group-size", "2"], 0)]
    for i, (args, expected) in enumerate(cases):
        dry, out = decouple("refactor", *args, "--dry-run")
        real, out_real = decouple("refactor", *args, "--no-ab", "--branch", f"case-{i}")
        assert (dry, real) == (expected, expected), (args, out, out_real)


def test_an_allowlist_only_branch_says_so(repo):
    _commit(repo, "test/test_done.py", LABELLED_FILE.format(name="Done"))
    code, out = decouple("refactor", "test/test_done.py", "--no-ab")
    assert code == 0, out
    branch = "hw-classification/test_done"
    assert git(repo, "log", "-1", "--format=%s", branch).strip() == (
        "[Testcase Refactoring] Remove test/test_done.py from the test linter allowlist")
    assert git(repo, "diff", "--name-only", f"{branch}^", branch).split() == [ALLOWLIST]
    body = open(".decouple-out/hw-classification/test_done/PR_BODY.md").read()
    assert body.startswith("## Summary\n\nRemoves `test/test_done.py` from the test linter allowlist "
                           f"(`{ALLOWLIST}`), so that the linter checks it too. No test source changes. Every "
                           "test class in `test/test_done.py` already carries")
    assert "Adds `hw_classification` to 0 test class" not in body
    code, again = decouple("pr-body", "--branch", branch)   # read back from the commit: the same body
    assert again == body and code == 0


def test_graduated_file_whose_tests_run_unclassified_is_manual_work(repo, stub_torch):
    _commit(repo, "test/test_template.py", TEMPLATE_FILE)
    code, out = decouple("refactor", "test/test_template.py", *_ab_args(stub_torch))
    assert code == 1, out
    assert "runs unclassified at run time, although graduated: test/test_template.py: CopiedTests" in out
    folder = ".decouple-out/hw-classification/test_template"
    result = json.load(open(f"{folder}/ab.json"))
    assert result["verdict"] == "SAFE" and result["runtime"][0]["classes"] == ["CopiedTests"]
    body = open(f"{folder}/PR_BODY.md").read()
    assert ("- `test/test_template.py`: `CopiedTests` run unclassified at run time (the source labels "
            "`TemplateTests`)") in body
    assert "None: every test class" not in body


def test_the_pr_test_plan_lists_what_each_command_printed_in_b(repo, stub_torch):
    code, out = decouple("refactor", "test/test_alpha.py", *_ab_args(stub_torch))
    assert code == 0, out
    body = open(".decouple-out/hw-classification/test_alpha/PR_BODY.md").read()
    plan = body[body.index("## Test Plan"):body.index("## How this was verified")]
    # the stub's run_tests is unittest.main: the option the real one accepts is refused, and the
    # body says so (what it printed, as comments under the command) rather than promising it works
    assert ("```sh\npython test/test_alpha.py --hw-classification GENERIC -v\n"
            "# test_alpha.py: error: unrecognized arguments: --hw-classification\n# (exit 2)\n```") in plan
    assert "decouple ab" not in plan
    # the verification leads with the verdict, the one command, then the counts side by side
    section = body[body.index("## How this was verified"):]
    assert "Verdict: **SAFE**" in section and "`decouple ab test/test_alpha.py --base HEAD~1" in section
    assert "| Tests | A | B |" in section and "| passed | 2 | 2 |" in section
