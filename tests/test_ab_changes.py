"""`What changed`: the diff between a git arm and the work tree, read per file and class."""

from __future__ import annotations

import json
import os
import subprocess

from codemod.ab.arms.changes import class_spans, git_changes, torch_load_edit
from codemod.ab.result.model import ABResult
from codemod.report.ab import html as ab_html
from codemod.report.ab import markdown as ab_markdown

ORIGINAL = '''import io
import torch
from torch.testing._internal.common_utils import TestCase


class TestSave(TestCase):
    def test_module(self):
        buf = io.BytesIO()
        torch.save(torch.nn.Linear(2, 2), buf)
        buf.seek(0)
        torch.load(buf)


class TestKernels(TestCase):
    def test_add(self):
        self.assertEqual(1 + 1, 2)

    class Inner:
        pass


def helper(path):
    return torch.load(path)
'''

MODIFIED = '''import io
import torch
from torch.testing._internal.common_utils import HardwareClassification, TestCase
from torch.nn import Linear


class TestSave(TestCase):
    hw_classification = HardwareClassification.GENERIC

    def test_module(self):
        buf = io.BytesIO()
        torch.save(torch.nn.Linear(2, 2), buf)
        buf.seek(0)
        with torch.serialization.safe_globals([Linear]):
            torch.load(buf)


class TestKernels(TestCase):
    hw_classification = HardwareClassification.CPU

    def test_add(self):
        self.assertEqual(1 + 1, 2)

    class Inner:
        pass


def helper(path):
    return torch.load(path, weights_only=False)
'''


def _git(repo, *args):
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}
    subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)


def test_changes_per_file_and_class(tmp_path):
    repo = tmp_path / "repo"
    (repo / "test").mkdir(parents=True)
    (repo / "test" / "test_save.py").write_text(ORIGINAL)
    (repo / "test" / "test_same.py").write_text("def test_x():\n    pass\n")
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "base")
    (repo / "test" / "test_save.py").write_text(MODIFIED)
    (repo / "test" / "test_new.py").write_text("class TestNew:\n    hw_classification = HardwareClassification.MPS\n")
    c = git_changes(str(repo / "test"), "HEAD", ["test/test_save.py", "test/test_same.py", "test/test_new.py"])
    assert c.error == "" and c.ref == "HEAD"
    assert "test/test_save.py" in c.stat and "test/test_new.py (untracked)" in c.stat
    files = {f.path: f for f in c.files}
    assert set(files) == {"test/test_save.py", "test/test_new.py"}
    save = files["test/test_save.py"]
    classes = {k.name: k for k in save.classes}
    assert classes["TestSave"].labels == ["GENERIC"]
    assert classes["TestSave"].torch_load == ["safe_globals([Linear])"]
    assert classes["TestKernels"].labels == ["CPU"] and classes["TestKernels"].torch_load == []
    assert save.torch_load == ["weights_only=False"]                    # in a function outside classes
    # imports: the new one, and the one extended, each as a whole statement
    assert save.imports == ["from torch.nn import Linear"]
    assert save.imports_extended == ["from torch.testing._internal.common_utils import HardwareClassification, TestCase"]
    assert files["test/test_new.py"].classes[0].labels == ["MPS"]
    # recorded in the result model; survives JSON; shown in both languages
    r = ABResult(verdict="SAFE", changes=c)
    again = ABResult.from_json(json.loads(json.dumps(r.to_json())))
    assert again.changes == c
    md = ab_markdown.render(again)
    assert "**What changed**" in md and "git diff `HEAD` --stat:" in md
    assert "| `test/test_save.py` | `TestSave` | `GENERIC` | `safe_globals([Linear])` |" in md
    assert "| `test/test_save.py` | (outside classes) |  | `weights_only=False` |" in md
    zh = ab_markdown.render(again, "zh")
    assert "**改动内容**" in zh and "| 文件 | 类 | 写入的标签 | torch.load 改动 |" in zh
    assert 'class="ab-changes"' in ab_html.render(again)


def test_line_shapes():
    assert torch_load_edit("    torch.load(f, weights_only=True)") == "weights_only=True"
    assert torch_load_edit("with torch.serialization.safe_globals([a.B, C]):") == "safe_globals([a.B, C])"
    assert torch_load_edit("x = 1") is None
    spans = class_spans("class A:\n    class B:\n        x = 1\n    y = 2\n")
    assert spans == [(1, 4, "A"), (2, 3, "A.B")]
    assert class_spans("class A(:\n  pass\n") == [(1, 2, "A")]           # does not parse: the class lines


def test_not_a_repository_is_an_error_not_a_crash(tmp_path):
    c = git_changes(str(tmp_path), "HEAD", ["x.py"])
    assert c.error and not c.files


def test_the_base_versions_are_read_in_one_batch_whatever_the_names(tmp_path):
    """Both versions of every file are read (the old ones by one `git cat-file --batch`): names
    with spaces, with a newline or a non-ASCII letter (which git diff quotes), and a file beside
    a folder are each read whole."""
    from codemod.ab.arms.changes import _shown

    repo = tmp_path / "repo"
    (repo / "t" / "sub dir").mkdir(parents=True)
    names = ["t/test a.py", "t/sub dir/test_b.py", "t/test\nc.py", "t/test_d.py", "t/tést_e.py"]
    for i, name in enumerate(names):
        (repo / name).write_text(f"class TestX{i}:\n    pass\n" * (i + 1))
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "base")
    texts = _shown("HEAD", [*names, "t/missing.py", "t/sub dir"], repo)
    assert texts == {name: (repo / name).read_text() for name in names}
    for name in names:
        (repo / name).write_text((repo / name).read_text().replace("    pass\n", "    hw_classification = "
                                                                   "HardwareClassification.CPU\n", 1))
    c = git_changes(str(repo), "HEAD", ["t"])
    assert c.error == ""
    assert {f.path: [k.labels for k in f.classes] for f in c.files} == {"t/test\nc.py": [["CPU"]],
        "t/test a.py": [["CPU"]], "t/sub dir/test_b.py": [["CPU"]], "t/test_d.py": [["CPU"]],
        "t/tést_e.py": [["CPU"]]}
