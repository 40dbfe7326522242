"""Fixture pairs for the restructuring transforms, collected by globbing.

tests/fixtures/restructure/<case>.in.py   the input
tests/fixtures/restructure/<case>.out.py  the file after `decouple apply --restructure ...` (absent: unchanged)
tests/fixtures/restructure/<case>.json    {"restructure": "auto" | "NAME[,NAME]",
                                           "advice": {class: [transform, ...]}  (diagnosis of the input,
                                                     widening steps only where one is named),
                                           "status": "<bucket>",
                                           "moves": [per test: transform, classes, device sets, node ids],
                                           "could_widen": {class: [step, ...]}  (widening steps that fit
                                                          but were not named),
                                           "rules": the generation (default gen1)}
DECOUPLE_REGEN_FIXTURES=1 rewrites the .out.py files, the "moves" and "could_widen" (read the diff
before committing).
"""

import ast
import glob
import json
import os
import shutil

import pytest

from codemod.engine.process import process_file
from transforms.diagnosis import diagnose
from transforms.label import HwLabel
from transforms.restructure import Restructure, moves_from_findings, parse_selection, widenings_from_findings
from transforms.rules.generations import GENERATIONS

HERE = os.path.join(os.path.dirname(__file__), "fixtures", "restructure")
CASES = sorted(os.path.basename(p)[: -len(".in.py")] for p in glob.glob(os.path.join(HERE, "*.in.py")))


def _spec(case):
    with open(os.path.join(HERE, case + ".json")) as f:
        return json.load(f)


def test_every_case_has_a_spec():
    assert len(CASES) >= 10
    for case in CASES:
        assert os.path.exists(os.path.join(HERE, case + ".json")), case


@pytest.mark.parametrize("case", CASES)
def test_diagnosis_advice(case):
    text = open(os.path.join(HERE, case + ".in.py")).read()
    gen = GENERATIONS[_spec(case).get("rules", "gen1")]
    widen = parse_selection(_spec(case)["restructure"]).widen
    found = {d.name: list(d.advice) for d in diagnose.diagnose(ast.parse(text), text, gen, widen=widen)}
    assert found == _spec(case)["advice"]


@pytest.mark.parametrize("case", CASES)
def test_fixture(case, tmp_path, regen):
    spec = _spec(case)
    rules = spec.get("rules", "gen1")
    transforms = [Restructure(parse_selection(spec["restructure"]), rules=rules), HwLabel(rules=rules)]
    src = os.path.join(HERE, case + ".in.py")
    work = tmp_path / "test_case.py"
    shutil.copyfile(src, work)
    result = process_file(str(work), transforms, "write")
    assert result.status != "failed", result.reason
    got = work.read_bytes()
    moves = [m.to_json("test_case.py") for m in moves_from_findings(result.findings)]
    could_widen = {c: [w.step for w in ws] for c, ws in widenings_from_findings(result.findings).items()}
    out = os.path.join(HERE, case + ".out.py")
    original = open(src, "rb").read()
    if regen:
        if got != original:
            open(out, "wb").write(got)
        elif os.path.exists(out):
            os.remove(out)
        spec["moves"] = moves
        spec["could_widen"] = could_widen
        with open(os.path.join(HERE, case + ".json"), "w") as f:
            json.dump(spec, f, indent=2)
            f.write("\n")
    expected = open(out, "rb").read() if os.path.exists(out) else original
    assert got == expected, f"{case}: output differs from {os.path.basename(out)}"
    assert result.status == spec["status"], result
    assert moves == spec["moves"]
    assert could_widen == spec["could_widen"]
    auto = parse_selection(spec["restructure"]).auto
    for m in moves:  # never a silent drop: every device a test ran on is still there
        assert set(m["after"]) >= set(m["before"]) or m["after"] == ["generic"], m
        assert not (auto and m["widened"]), m  # auto never adds a device
        same = (m["old_class"], m["old_instantiated"], m["before"]) == (
            m["new_class"],
            m["new_instantiated"],
            m["after"],
        )
        assert not same, m  # a test that stays where it was, on its devices, is no move
    if got != original:
        mtime = work.stat().st_mtime_ns
        again = process_file(str(work), transforms, "write")
        assert again.status != "changed" and not again.written
        assert work.stat().st_mtime_ns == mtime
