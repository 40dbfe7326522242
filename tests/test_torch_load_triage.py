"""The ast's torch.load candidates (transforms/torch_load/analysis/triage.py) against the LibCST finder:
every call and reference the finder resolves is a candidate (so a file the triage sends away
has nothing for the transform), and on the fixtures the counts are the same."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import libcst
import pytest

from transforms.torch_load import TorchLoad
from transforms.torch_load.analysis.calls import find_calls
from transforms.torch_load.analysis.source import LoadSource
from transforms.torch_load.analysis.triage import CENSUS_RULE, TorchLoadCensus, find_candidates

FIXTURES = Path(__file__).parent / "fixtures" / "torch_load"
SOURCES = sorted(FIXTURES.glob("*.in.py")) + sorted(FIXTURES.glob("*.out.py")) + sorted(FIXTURES.glob("real/*.py"))

CASES = {
    "unimported": ("x = torch.load(f)\n", 1, False),
    "alias": ("import torch as th\nx = th.load(f)\n", 1, False),
    "serialization alias": ("import torch.serialization as ser\nx = ser.load(f)\n", 1, False),
    "serialization from": ("from torch import serialization as s\nx = s.load(f, weights_only=True)\n", 1, False),
    "load alias": ("from torch.serialization import load as L\nx = L(f)\n", 1, False),
    "import in a function": ("def t(f):\n    import torch as T\n    return T.serialization.load(f)\n", 1, False),
    "reference": ("import torch\nloader = torch.load\n", 0, True),
    "mock target": ("import torch\nfrom unittest import mock\n@mock.patch('torch.load')\ndef t(m): pass\n", 0, True),
    "star": ("from torch.serialization import *\nx = load(f)\n", 0, True),
    "other loads": ("import json, pickle, torch\njson.load(f)\npickle.load(f)\ntorch.jit.load(f)\nself.load(f)\n", 0, False),
    "local load": ("import torch\ndef load(p):\n    return p\nload(f)\n", 0, False),
}


def _finder(text: str) -> tuple[int, int]:
    calls, refs = find_calls(LoadSource.parse(text, "t.py"))
    return len(calls), len(refs)


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.name)
def test_every_call_the_finder_resolves_is_a_candidate(path):
    text = path.read_text(encoding="utf-8")
    found = find_candidates(ast.parse(text))
    calls, refs = _finder(text)
    if calls or refs:
        assert found, path.name
    if not refs:  # a reference (`load` that may be another binding) is a call to the ast
        assert len(found.calls) == calls, path.name


@pytest.mark.parametrize("name", sorted(CASES))
def test_cases(name):
    text, calls, others = CASES[name]
    found = find_candidates(ast.parse(text))
    assert (len(found.calls), found.others) == (calls, others)
    finder_calls, refs = _finder(text)
    assert finder_calls <= len(found.calls) and (not refs or found)


def test_call_shapes_as_the_planner_reads_them():
    text = textwrap.dedent("""\
        import torch
        a = torch.load(f)
        b = torch.load(f, weights_only=None)
        c = torch.load(f, weights_only=False)
        d = torch.load(f, pickle_module=pickle)
        e = torch.load(f, "cpu", pickle)
        g = torch.load(*args)
        h = torch.load(f, **kw)
    """)
    shapes = [(c.line, c.explicit, c.pickle_module, c.starred) for c in find_candidates(ast.parse(text)).calls]
    assert shapes == [
        (2, False, False, False),
        (3, False, False, False),  # None counts as unset
        (4, True, False, False),
        (5, False, True, False),
        (6, False, True, False),  # a third positional is pickle_module
        (7, False, False, True),
        (8, False, False, True),
    ]
    result = TorchLoadCensus().run(text, ast.parse(text))
    assert result.text == text and result.manual == 0
    (census,) = result.findings
    assert census.rule == CENSUS_RULE
    assert census.data == {"calls": 7, "explicit": 1, "pickle_module": 2, "starred": 2, "others": False}


def test_a_file_without_candidates_never_reaches_libcst(monkeypatch):
    text = "import json\nimport torch\n\ndef test_a(f):\n    return json.load(f), torch.ones(2)\n"

    def boom(*a, **k):
        raise AssertionError("LibCST used")

    monkeypatch.setattr(libcst, "parse_module", boom)
    result = TorchLoad("weights-only-false").run(text, ast.parse(text))
    assert result.text == text and result.findings == []
    assert TorchLoadCensus().run(text, ast.parse(text)).findings == []
