"""Fixture pairs for the whole labelling pipeline, collected by globbing.

tests/fixtures/hw/<case>.in.py   the input (any bytes: CRLF, BOM, latin-1, broken syntax)
tests/fixtures/hw/<case>.out.py  the expected file after `decouple apply` (absent: unchanged)
tests/fixtures/hw/<case>.json    optional: {"args": {...HwLabel fields...},
                                            "status": "<bucket>", "rules": [...],
                                            "absent": [rules no finding may have],
                                            "says": {rule: [text a finding of that rule says, ...]}}
A case follows the gen1 rules unless its args name another generation (`"rules": "gen2"`).
Run with DECOUPLE_REGEN_FIXTURES=1 to rewrite the .out.py files after a deliberate change
(then read the diff before committing it).
"""

import glob
import json
import os
import shutil

import pytest

from codemod.engine.process import process_file
from transforms.label import HwLabel

HERE = os.path.join(os.path.dirname(__file__), "fixtures", "hw")
CASES = sorted(os.path.basename(p)[: -len(".in.py")] for p in glob.glob(os.path.join(HERE, "*.in.py")))


def _spec(case):
    path = os.path.join(HERE, case + ".json")
    if not os.path.exists(path):
        return {}
    with open(path) as f:
        return json.load(f)


@pytest.mark.parametrize("case", CASES)
def test_fixture(case, tmp_path, regen):
    spec = _spec(case)
    args = spec.get("args", {})
    args["per_class"] = tuple(tuple(x) for x in args.get("per_class", ()))
    args.setdefault("rules", "gen1")
    transform = HwLabel(**args)
    src = os.path.join(HERE, case + ".in.py")
    work = tmp_path / "test_case.py"
    shutil.copyfile(src, work)
    result = process_file(str(work), [transform], "write")
    got = work.read_bytes()
    out = os.path.join(HERE, case + ".out.py")
    original = open(src, "rb").read()
    if regen:
        if got != original:
            open(out, "wb").write(got)
        elif os.path.exists(out):
            os.remove(out)
    expected = open(out, "rb").read() if os.path.exists(out) else original
    assert got == expected, f"{case}: output differs from {os.path.basename(out)}"
    if "status" in spec:
        assert result.status == spec["status"], result
    for rule in spec.get("rules", []):
        assert any(f.rule == rule for f in result.findings), (rule, [f.rule for f in result.findings])
    for rule in spec.get("absent", []):
        assert not any(f.rule == rule for f in result.findings), (rule, [f.message for f in result.findings])
    for rule, texts in spec.get("says", {}).items():
        messages = [f.message for f in result.findings if f.rule == rule]
        for text in texts:
            assert any(text in m for m in messages), (rule, text, messages)
    if got != original:
        # idempotent: a second run leaves the written file alone (mtime included)
        mtime = work.stat().st_mtime_ns
        again = process_file(str(work), [transform], "write")
        assert again.status != "changed" and not again.written
        assert work.stat().st_mtime_ns == mtime
