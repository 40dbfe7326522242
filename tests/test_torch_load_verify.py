"""Strict verification of torch.load edits: the output must be the input plus exactly the
planned edits.  Faulty outputs are injected by wrapping the text-edit step; each must be
refused (file untouched, internal error reported), as the label path refuses a wrong label."""

from __future__ import annotations

import pytest

from codemod.engine.process import process_file
from codemod.engine.result import CHANGED, FAILED
from transforms.torch_load import TorchLoad, edits
from transforms.torch_load.verify import EditCheckError, PlannedEdits, check_planned_edits

SOURCE = """\
import io
from os import path

import torch


def test_roundtrip():
    buf = io.BytesIO()
    m = torch.load(buf)
    assert path.sep
"""

SG_SOURCE = """\
import io

import torch
from torch.testing._internal.common_utils import TestCase


class TestSave(TestCase):
    def test_roundtrip(self):
        buf = io.BytesIO()
        m = torch.load(buf)
        self.assertIsNotNone(m)
"""


def _discovered(path: str, line: int, code: str, names: list[str]) -> dict:
    return {
        "schema_version": 1,
        "resolved": {"mymod.nets.TinyNet": {"module": "mymod.nets", "qualname": "TinyNet"}},
        "tests": {f"{path}::TestSave::test_roundtrip": {
            "outcome": "passed", "globals": names, "unfixable": None,
            "calls": [{"file": path, "line": line, "code": code, "globals": names,
                       "scan": None, "status": "ok", "unfixable": None}]}},
    }


def _faulty(monkeypatch, fault):
    real = edits.apply_plan

    def apply(*args):
        return fault(real(*args))

    monkeypatch.setattr(edits, "apply_plan", apply)


def _process(tmp_path, text: str, transform: TorchLoad):
    f = tmp_path / "test_io.py"
    f.write_text(text)
    return f, process_file(str(f), [transform], "write")


def test_correct_output_is_written(tmp_path):
    f, res = _process(tmp_path, SOURCE, TorchLoad("weights-only-false"))
    assert res.status == CHANGED and res.written, res.reason
    assert "m = torch.load(buf, weights_only=False)\n" in f.read_text()


@pytest.mark.parametrize("name, fault", [
    ("renames an unrelated import", lambda t: t.replace("from os import path", "from os import sep")),
    ("drops import torch", lambda t: t.replace("import torch\n", "")),
    ("writes weights_only=True", lambda t: t.replace("weights_only=False", "weights_only=True")),
    ("drops an unrelated keyword-free line", lambda t: t.replace("    assert path.sep\n", "")),
    ("adds a comment", lambda t: t.replace("    buf = io", "    # unplanned\n    buf = io")),
])
def test_faulty_weights_only_false_output_is_refused(tmp_path, monkeypatch, name, fault):
    _faulty(monkeypatch, fault)
    f, res = _process(tmp_path, SOURCE, TorchLoad("weights-only-false"))
    assert res.status == FAILED, name
    assert res.reason.startswith("internal error: EditCheckError"), res.reason
    assert f.read_text() == SOURCE


SG_FAULTS = [
    ("drops an entry", lambda t: t.replace("safe_globals([TinyNet, torch.nn.Linear])",
                                           "safe_globals([TinyNet])")),
    ("imports another name", lambda t: t.replace("from mymod.nets import TinyNet",
                                                 "from mymod.nets import TinyNet, Other")),
    ("adds weights_only=True too", lambda t: t.replace("torch.load(buf)", "torch.load(buf, weights_only=True)")),
    ("wraps one statement more", lambda t: t.replace(
        "            m = torch.load(buf)\n        self.assertIsNotNone(m)",
        "            m = torch.load(buf)\n            self.assertIsNotNone(m)")),
]


def _sg_transform(path: str) -> TorchLoad:
    disc = _discovered(path, 10, "m = torch.load(buf)", ["mymod.nets.TinyNet", "torch.nn.Linear"])
    return TorchLoad("safe-globals", discovered=disc, torch_version=(2, 14))


def test_correct_safe_globals_output_is_written(tmp_path):
    f, res = _process(tmp_path, SG_SOURCE, _sg_transform(str(tmp_path / "test_io.py")))
    assert res.status == CHANGED and res.written, res.reason
    out = f.read_text()
    assert "        with torch.serialization.safe_globals([TinyNet, torch.nn.Linear]):\n" \
           "            m = torch.load(buf)\n        self.assertIsNotNone(m)\n" in out
    assert "from mymod.nets import TinyNet\n" in out


@pytest.mark.parametrize("name, fault", SG_FAULTS)
def test_faulty_safe_globals_output_is_refused(tmp_path, monkeypatch, name, fault):
    _faulty(monkeypatch, fault)
    f, res = _process(tmp_path, SG_SOURCE, _sg_transform(str(tmp_path / "test_io.py")))
    assert res.status == FAILED, name
    assert res.reason.startswith("internal error: EditCheckError"), res.reason
    assert f.read_text() == SG_SOURCE


def test_check_names_where_the_output_differs():
    plan = PlannedEdits(torch_name="torch", keywords={(9, 23): "False"})
    good = SOURCE.replace("torch.load(buf)", "torch.load(buf, weights_only=False)")
    check_planned_edits(SOURCE, good, plan)
    with pytest.raises(EditCheckError, match=r"near line 2: expected `from os import path`"):
        check_planned_edits(SOURCE, good.replace("import path", "import sep"), plan)
    with pytest.raises(EditCheckError, match="match no call"):
        check_planned_edits(SOURCE, good, PlannedEdits(torch_name="torch", keywords={(9, 5): "False"}))
