"""Compact report views: short signatures, short tracebacks, groups of identical failures,
node ids that stay distinguishable, and the module split (JUnit never imports Markdown)."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys

from codemod.report.ab import terminal
from codemod.ab.result.model import ABResult, Outcome
from codemod.ab.result.model import TestComparison as Comparison
from codemod.report.ab import html as ab_html
from codemod.report.ab import markdown as ab_markdown
from codemod.report.ab.facts import (
    SIGNATURE_CELL,
    compact_signature,
    failure_groups,
    middle_truncate,
    report_traceback,
    short_traceback,
)

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "ab_results")

# The shape of pytest's long-style traceback for a test whose torch.load fails
# (written for this test; the library frame's source is long, as in torch).
LIBRARY_SOURCE = "\n".join(f"        # line {i} of the library's own documentation" for i in range(200))
LONG_TB = f"""self = <test_load.TestLoad testMethod=test_whole_module_roundtrip>

    def test_whole_module_roundtrip(self):
        buf = io.BytesIO()
        torch.save(Net(), buf)
        buf.seek(0)
>       model = helper(buf)

test_load.py:18: 
_ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ 

buf = <_io.BytesIO object at 0x7f>

    def helper(buf):
>       return torch.load(buf)

helpers/io_utils.py:4: 
_ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ 

f = <_io.BytesIO object at 0x7f>

    def load(f, map_location=None):
{LIBRARY_SOURCE}
        try:
            return _load(f)
        except pickle.UnpicklingError as e:
>           raise pickle.UnpicklingError(_get_wo_message(str(e))) from None
E           _pickle.UnpicklingError: Weights only load failed.
E           	WeightsUnpickler error: Unsupported global: GLOBAL test_load.Net was not an allowed global by default.

/opt/venv/lib/python3.11/site-packages/torch/serialization.py:1614: UnpicklingError
"""


def test_short_traceback_keeps_own_frames_and_the_raising_frame():
    short = short_traceback(LONG_TB)
    assert short.splitlines() == [
        "test_load.py:18: in test_whole_module_roundtrip",
        "    model = helper(buf)",
        "helpers/io_utils.py:4: in helper",
        "    return torch.load(buf)",
        "/opt/venv/lib/python3.11/site-packages/torch/serialization.py:1614: in load",
        "    raise pickle.UnpicklingError(_get_wo_message(str(e))) from None",
        "E   _pickle.UnpicklingError: Weights only load failed.",
        "E   WeightsUnpickler error: Unsupported global: GLOBAL test_load.Net was not an allowed global by default.",
    ]
    assert "line 150 of the library" not in short
    shown = report_traceback(LONG_TB, "en")
    assert "<site-packages>/torch/serialization.py:1614: in load" in shown and "/opt/venv" not in shown


def test_short_traceback_hides_library_frames_between_own_frames_and_keeps_chains():
    lib = ("    def inner():\n>       raise ValueError('x')\nE       ValueError: x\n\n"
           "/usr/lib/python3.11/site-packages/lib/core.py:9: ValueError")
    mid = "    def middle():\n>       inner()\n\n/usr/lib/python3.11/site-packages/lib/mid.py:5: "
    own = "    def test_a():\n>       middle()\n\ntest_a.py:3: "
    sep = "\n_ _ _ _ _ _ _ _ _ _\n"
    chained = (own + sep + mid + sep + lib + "\n\nThe above exception was the direct cause of the following exception:\n\n"
               + own + sep + lib)
    short = short_traceback(chained)
    assert "    (1 frames hidden)" in short
    assert "The above exception was the direct cause of the following exception:" in short
    assert short.count("test_a.py:3: in test_a") == 2


def test_short_style_and_foreign_text_pass_unchanged():
    already = "t.py:3: in test_x\n    f()\nE   ValueError: no"
    assert short_traceback(already) == already
    assert short_traceback("Fatal Python error: Segmentation fault") == "Fatal Python error: Segmentation fault"
    assert short_traceback("") == ""


def _failure(nodeid: str, message: str, exc: str = "RuntimeError", outcome: str = "failed") -> Outcome:
    return Outcome(nodeid=nodeid, outcome=outcome, exc_type=exc, message=message,
                   signature=f"call {outcome} {exc}: {message}")


def test_compact_signature_is_short_and_cut_at_a_word():
    long_message = "expected " + " ".join(f"word{i}" for i in range(300))
    o = _failure("t.py::test_x", long_message)
    short = compact_signature(o)
    assert len(short) <= SIGNATURE_CELL and short.endswith("…")
    assert short[:-1].split(" ")[-1].startswith("word")            # no word cut in half
    assert short.rstrip("…").endswith(tuple(f"word{i}" for i in range(300)))
    wo = _failure("t.py::test_y", "Weights only load failed. This file can still be loaded, ... \n"
                  "WeightsUnpickler error: Unsupported global: GLOBAL a.b.Net was not an allowed global by default. "
                  "Please use `torch.serialization.add_safe_globals([Net])` ...", exc="_pickle.UnpicklingError")
    assert compact_signature(wo) == ("_pickle.UnpicklingError: Unsupported global: GLOBAL a.b.Net was not an "
                                     "allowed global by default.")
    assert compact_signature(Outcome(nodeid="x", outcome="passed")) == ""


def test_middle_truncation_keeps_the_distinguishing_tail():
    ids = [f"test/quantization/core/experimental/test_quantized_tensor_long_name.py::TestQuantizedTensor::test_{n}"
           for n in ("qtensor_per_channel_load_save", "qtensor_per_tensor_load_save", "qtensor_fp8_load_save")]
    shown = [middle_truncate(i, 60) for i in ids]
    assert all(len(s) == 60 and "…" in s for s in shown)
    assert len(set(shown)) == 3
    assert all(s.endswith(i[-30:]) for s, i in zip(shown, ids))
    assert middle_truncate("short", 60) == "short"


def _grouped_result() -> ABResult:
    with open(os.path.join(RESULTS, "regression.json"), encoding="utf-8") as fh:
        r = ABResult.from_json(json.load(fh))
    base = next(t for t in r.tests if t.category == "pre-existing")
    for n in ("test_cuda_two", "test_cuda_three"):
        c = copy.deepcopy(base)
        c.nodeid = c.nodeid.replace("test_cuda_only", n)
        r.tests.append(c)
    r.counts["pre-existing"] += 2
    return r


def test_identical_failures_are_grouped_in_every_view():
    r = _grouped_result()
    groups = [g for g in failure_groups(r.tests) if g[0].category == "pre-existing"]
    assert len(groups) == 1 and len(groups[0]) == 3
    md = ab_markdown.render(r)
    rows = [line for line in md.splitlines() if "Torch not compiled with CUDA enabled`" in line and line.startswith("|")]
    assert len(rows) == 1
    assert rows[0].startswith("| 3 tests: `test/test_ops_sample.py::TestOpsSample::` `test_cuda_only`, ")
    assert md.count("Torch not compiled with CUDA enabled (A failed, B failed)") == 0
    assert md.count("<summary>3 tests with <code>AssertionError: Torch not compiled with CUDA enabled</code>") == 1
    doc = ab_html.render(r)
    assert doc.count("same failure as row") == 2                  # two rows point to the first of the group
    out = terminal.render(r, width=140)
    assert out.count("AssertionError: Tor") == 1
    assert "  pre-existing       3 tests:" in out
    for n in ("test_cuda_only", "test_cuda_two", "test_cuda_three"):
        assert f"test/test_ops_sample.py::TestOpsSample::{n}" in out


def test_terminal_rows_keep_long_node_ids_distinguishable():
    r = ABResult(verdict="REGRESSION")
    prefix = "test/quantization/core/experimental/test_quantized_tensor_long_name.py::TestQuantizedTensor::"
    for i, n in enumerate(("test_per_channel", "test_per_tensor", "test_fp8")):
        r.tests.append(Comparison(nodeid=prefix + n, category="new-failure",
                                  a=Outcome(nodeid=prefix + n, outcome="passed"),
                                  b=_failure(prefix + n, f"different message {i}")))
    out = terminal.render(r)
    rows = [line for line in out.splitlines() if line.startswith("  new-failure")]
    assert len(rows) == 3
    shown = [row.split()[1] for row in rows]
    assert all("…" in s and len(s) <= 70 for s in shown)
    assert [s.rsplit("::", 1)[1] for s in shown] == ["test_per_channel", "test_per_tensor", "test_fp8"]


def test_junit_does_not_import_the_markdown_view():
    code = ("import sys, codemod.report.ab.junit as j; "
            "assert 'codemod.report.ab.markdown' not in sys.modules, sorted(sys.modules)")
    subprocess.run([sys.executable, "-c", code], check=True)
