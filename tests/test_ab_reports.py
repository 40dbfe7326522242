"""Tests for the A/B report views: Markdown (en/zh), HTML, JUnit XML and the string table.

Fixtures in tests/fixtures/ab_results/ are hand-built results:
  quant_prepack_aarch64.json  two quantization tests fail identically in both arms
                              (`RuntimeError: unknown architecure`; fbgemm listed but
                              cannot prepack on aarch64) -> SAFE
  sparse_weights_only.json    three tests error in both arms with an UnpicklingError;
                              a diagnostic arm with TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1
                              passes them -> SAFE
  regression.json             new failures, crash, timeout, missing test, flaky, ...,
                              plus pipes, backticks and control characters -> REGRESSION
"""

from __future__ import annotations

import ast
import html.parser
import json
import os
import re
import shutil
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

import pytest

from codemod.ab.result.model import (
    CATEGORIES,
    REGRESSING,
    ABResult,
    ArmResult,
    DiagnosticSummary,
    Environment,
    Outcome,
)
from codemod.ab.result.model import TestComparison as Comparison  # not "Test*": pytest would try to collect it
from codemod.report.ab import html as ab_html
from codemod.report.ab import junit as ab_junit
from codemod.report.ab import markdown as ab_markdown
from codemod.report.shared import i18n
from codemod.report.shared.markdown import md_cell, md_code, md_fence

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "ab_results")
NAMES = ("quant_prepack_aarch64", "sparse_weights_only", "regression")


def load(name: str) -> ABResult:
    with open(os.path.join(FIXTURES, name + ".json"), encoding="utf-8") as fh:
        return ABResult.from_json(json.load(fh))


def table_rows(md: str) -> list[list[str]]:
    """Markdown table rows split on unescaped pipes (GFM rule)."""
    rows = []
    for line in md.splitlines():
        if line.startswith("|"):
            cells = re.split(r"(?<!\\)\|", line)
            assert cells[0] == "" and cells[-1] == "", line
            rows.append([c.strip() for c in cells[1:-1]])
    return rows


def tables(md: str) -> list[list[list[str]]]:
    """Consecutive table lines grouped into tables."""
    out, cur = [], []
    for line in md.splitlines() + [""]:
        if line.startswith("|"):
            cur.append(line)
        elif cur:
            out.append(table_rows("\n".join(cur)))
            cur = []
    return out


def category_table(md: str) -> list[list[str]]:
    return next(t for t in tables(md) if t[0] in (["Category", "Count"], ["类别", "数量"]))


def row_for(md: str, nodeid_fragment: str) -> list[str]:
    hits = [r for r in table_rows(md) if nodeid_fragment in r[0]]
    assert len(hits) == 1, (nodeid_fragment, hits)
    return hits[0]


# ---------------------------------------------------------------------------
# Fixtures themselves
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("name", NAMES)
def test_fixture_is_consistent(name):
    r = load(name)
    assert r.verdict in ("SAFE", "REGRESSION")
    assert r.counts == dict(Counter(c.category for c in r.tests))
    assert all(c.category in CATEGORIES for c in r.tests)
    # round trip through the model's own JSON form
    assert ABResult.from_json(json.loads(json.dumps(r.to_json()))) == r
    regressing = any(c.category in REGRESSING for c in r.tests)
    assert (r.verdict == "REGRESSION") == regressing


# ---------------------------------------------------------------------------
# Markdown building blocks
# ---------------------------------------------------------------------------

def test_md_code_span_survives_backticks_and_newlines():
    assert md_code("plain") == "`plain`"
    assert md_code("a`b") == "``a`b``"
    assert md_code("``x``") == "``` ``x`` ```"
    assert md_code("`x`") == "`` `x` ``"
    assert md_code("line1\nline2") == "`line1 ↵ line2`"
    assert md_code("") == ""


def test_md_cell_escapes_pipes_and_newlines():
    assert md_cell("`a|b`") == "`a\\|b`"
    assert md_cell("one\ntwo") == "one<br>two"


def test_md_fence_longer_than_any_backtick_run():
    assert md_fence("x = 1", "text") == "```text\nx = 1\n```"
    body = "doc:\n````\nnested ``` fence\n````"
    fenced = md_fence(body, "text")
    assert fenced.startswith("`````text\n") and fenced.endswith("\n`````")
    assert body in fenced


# ---------------------------------------------------------------------------
# Markdown, English
# ---------------------------------------------------------------------------

def test_markdown_quantization_prepack_case():
    r = load("quant_prepack_aarch64")
    md = ab_markdown.render(r)
    # verdict with one reason sentence, first thing in the report
    assert md.startswith("## A/B verification: SAFE\n")
    assert ("Verdict: **SAFE**. No test regresses; 2 failures are pre-existing with identical signatures."
            in md)
    # the report leads with the counts of A and B side by side (computed for a schema 1 result)
    lead = tables(md)[0]
    assert lead[0] == ["Tests", "A", "B", "B − A"]
    assert ["failed", "2", "2", "0"] in lead and ["collected", "2", "2", "0"] in lead
    # counts per category
    counts = category_table(md)
    assert counts[0] == ["Category", "Count"]
    assert ["pre-existing", "2"] in counts and ["**Total**", "**2**"] in counts
    # both failing tests in the table with their outcomes and signature in a code span
    # identical failures are one row: the shared node-id prefix once, then the test names
    row = row_for(md, "test_linear_chain")
    assert row == ["2 tests: `test/quantization/eager/test_bias_correction_eager.py::TestBiasCorrectionEager::` "
                   "`test_conv_chain`, `test_linear_chain`",
                   "failed", "failed", "pre-existing", "`RuntimeError: unknown architecure`", ""]
    # grouped pre-existing statement, separating "safe" from "environment broken"
    assert ("The change is safe: no test that passed in A fails, crashes, times out or disappears in B "
            "(2 tests compared).") in md
    assert "These tests fail identically without the change, so the change did not cause them:" in md
    assert ("`test_conv_chain`, `test_linear_chain` fail in both arms with `RuntimeError: unknown architecure`. "
            "**Cause confirmed**: the quantized engine `fbgemm` cannot prepack weights on this CPU (aarch64): "
            "the environment's prepack smoke test fails with the same error as the tests, independently of the "
            "change. Evidence: the environment probe's prepack smoke test of `fbgemm` fails with "
            "`RuntimeError: unknown architecure`. Remedy: run these tests on a CPU the engine supports") in md
    assert "Failure sets identical: the same 2 tests fail in A and in B." in md
    # environment facts, with the engine that is listed but cannot prepack highlighted
    for fact in ("- **Python**: `3.11.7` (`/opt/venv/bin/python`)",
                 "- **Architecture**: `aarch64`",
                 "- **torch**: `2.14.1`",
                 "- **torch git version**: `9c1f2e7a4b0d5e6f8a9b0c1d2e3f4a5b6c7d8e9f`",
                 "- **CUDA**: not available",
                 "- **Quantized engine**: `qnnpack`",
                 "- **Supported quantized engines**: `qnnpack`, `onednn`, `fbgemm`, `none`",
                 "- **HardwareClassification**: available",
                 "> ⚠️ **`fbgemm` is listed as supported but cannot prepack**"):
        assert fact in md, fact
    prepack = next(t for t in tables(md) if t[0][0] == "Engine")
    assert prepack[2:] == [["`qnnpack`", "yes", "ok"], ["`onednn`", "yes", "ok"],
                           ["⚠️ `fbgemm`", "yes", "**FAILED: `RuntimeError: unknown architecure`**"]]
    assert "| `TORCH_DEVICE_BACKEND_AUTOLOAD` | `1` |" in md
    # what the runner changed, normaliser version
    assert "- Unset in every arm: `CI`, `PYTORCH_RETRY_TEST_CASES`" in md
    assert "- Set in every arm: `PYTORCH_PRINT_REPRO_ON_FAILURE=0`, `PYTHONHASHSEED=0`" in md
    assert "signature normaliser version: `1`" in md
    # reproduction: repro.sh (next to the report) per arm, no temporary root, no inline env chain
    for arm in r.arms:
        assert f"```sh\nbash repro.sh {arm.name}\n```" in md
        assert arm.command not in md and arm.root not in md
    assert "#### Arm A: the files as committed at `HEAD`" in md
    assert "#### Arm B: the work tree, uncommitted changes included" in md
    assert "`repro.sh`, written next to this report, runs each arm's pytest commands as the runner ran them" in md
    # one collapsible traceback block for the group (tracebacks are identical but for the root)
    assert md.count("<details>") == 1
    assert ("<details><summary>2 tests with <code>RuntimeError: unknown architecure</code> (A failed, B failed)"
            "</summary>" in md)
    assert "```text\ncall failed RuntimeError: unknown architecure\n```" in md    # the full signature
    assert "torch.ops.quantized.linear_prepack(w, b)" in md


def test_markdown_weights_only_case_with_diagnostic_arm():
    r = load("sparse_weights_only")
    md = ab_markdown.render(r)
    sig = ("_pickle.UnpicklingError: Unsupported global: GLOBAL "
           "torch.ao.nn.sparse.quantized.dynamic.linear.Linear was not an allowed global by default.")
    assert (f"`test_qlinear_packed_params_x86` error in both arms with `{sig}`. **Cause confirmed**: the test's "
            "own `torch.load` reads a whole pickled object (`GLOBAL torch.ao.nn.sparse.quantized.dynamic.linear"
            ".Linear`), which torch >= 2.6 refuses by default (`weights_only=True`; this is torch 2.14.1). "
            "Evidence: rerun with `TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1` (arm `no-weights-only`, the code of arm "
            "`A`), 3 of 3 tests pass. Remedy: make the call explicit in the test: `decouple apply --torch-load "
            "auto --globals globals.json test/ao/sparsity/test_qlinear_packed_params.py`") in md
    assert "environment is broken" not in md
    # the diagnostic arm's statement (the runner's words) and its per-test changes
    assert ("- **no-weights-only**: arm `A` rerun with `TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1`. "
            "3 errors in A pass with TORCH\\_FORCE\\_NO\\_WEIGHTS\\_ONLY\\_LOAD=1.") in md
    diag = next(t for t in tables(md) if t[0][0] == "Diagnostic arm")
    assert len(diag) == 2 + 1                                  # one row for the 3 identical changes
    assert diag[2][1].startswith("3 tests: `test/ao/sparsity/test_qlinear_packed_params.py::")
    assert diag[2][2:] == ["error", "passed"]
    # reproduction of the diagnostic arm, labelled as such, with its variable
    assert "(diagnostic, based on arm `A`)" in md
    assert "- Extra environment: `TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1`" in md
    assert "#### Arm no-weights-only: arm A's files with `TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1`" in md
    assert "```sh\nbash repro.sh no-weights-only\n```" in md
    assert "Failure sets identical: the same 3 tests fail in A and in B." in md


def test_markdown_regression_case_and_escaping():
    r = load("regression")
    md = ab_markdown.render(r)
    assert md.startswith("## A/B verification: REGRESSION\n")
    assert "Verdict: **REGRESSION**. 5 tests regress: 2 new failures, 1 crash, 1 timeout, 1 missing in B." in md
    # every table row has exactly as many cells as its header: pipes are escaped
    for table in tables(md):
        assert all(len(row) == len(table[0]) for row in table), table
    row = row_for(md, "test_add_pipe")
    assert row[0] == "`test/test_ops_sample.py::TestOpsSample::test_add_pipe[a\\|b]`"
    assert row[1:4] == ["passed", "failed", "**new-failure**"]
    # signature contains backticks and pipes: longer code-span delimiter, escaped pipes
    assert row[4] == "`AssertionError: 'a\\|\\|b' != 'a\\|b'`"
    assert "```text\ncall failed AssertionError: 'a||b' != 'a|b' `x` &lt;tag&gt;\n```" not in md
    assert "```text\ncall failed AssertionError: 'a||b' != 'a|b' `x` <tag>\n```" in md   # full, in the details
    assert row_for(md, "test_removed")[1:4] == ["passed", "absent", "**missing-in-b**"]
    assert row_for(md, "test_segfault_conv")[5] == "signal `SIGSEGV`"
    assert row_for(md, "test_timing_sensitive")[5] == "reruns: passed, failed, passed"
    assert row_for(md, "test_with_subtests")[5] == "1 failing subtest"
    different = row_for(md, "test_dtype_promotion")
    assert different[4] == ("A: `TypeError: unsupported operand type(s) for +: 'Tensor' and 'NoneType'`"
                            "<br>B: `NameError: name 'HardwareClassification' is not defined`")
    # quiet categories stay out of the differences table, but are counted
    assert not [r_ for r_ in table_rows(md) if "test_case_1`" in r_[0]]
    assert ["same-pass", "12"] in category_table(md)
    # the traceback with ``` inside gets a four-backtick fence; control characters are made visible
    assert "````text\n    def test_add_pipe(self):\n        # uses ``` fences" in md
    assert "\x00" not in md and "\x1b" not in md and "\ufffe" not in md
    assert "red control chars: \\x00\\x07\\x0b\\x0c\\ufffe end" in md
    # what this proves
    assert ("The change is not safe: 5 tests regress in B (new failure: 2, crash: 1, timeout: 1, "
            "missing in B: 1): `test/test_ops_sample.py::TestOpsSample::test_add_pipe[a|b]`") in md
    assert "`test/test_ops_sample.py::TestOpsSample::test_removed`." in md
    assert ("1 test ran in A but is skipped or not run in B; it is not counted as fixed: "
            "`test/test_ops_sample.py::TestOpsSample::test_now_skipped`.") in md
    assert ("- `test/test_ops_sample.py::TestOpsSample::test_cuda_only` fails in both arms with `AssertionError: "
            "Torch not compiled with CUDA enabled`. **Cause unknown**: no entry of the cause table matches") in md
    # B fails differently, importing HardwareClassification that this torch lacks: a regression of the torch version
    assert ("- `test/test_ops_sample.py::TestOpsSample::test_dtype_promotion` fails in both arms, differently; "
            "in B it errors with `NameError: name 'HardwareClassification' is not defined`. **Cause confirmed**: "
            "the modified file imports `HardwareClassification`, which the target torch (2.14.1) does not have") in md
    assert "Failure sets differ: 3 failing in A, 7 failing in B." in md
    assert "- **HardwareClassification**: **missing: the modified files cannot import it on this interpreter**" in md
    assert ("The target interpreter has no HardwareClassification: files that import it fail at import there."
            in md)
    assert "- **Out-of-tree backends**: `torch_npu=2.6.0`" in md
    assert "- **CUDA**: `12.8`" in md and "- **Current accelerator**: `cuda`" in md
    # arm B: extra arguments, command with backticks in a fence
    assert "Extra arguments: `--hw-classification GENERIC`" in md
    assert "```sh\nbash repro.sh B\n```" in md
    assert "- Arm B attributed crashes to: `test/test_ops_sample.py::TestOpsSample::test_segfault_conv`" in md
    assert "- Shard: `1/2`" in md
    assert "- **pytest**: `8.3.4`" in md
    assert ("#### Runner warnings\n\n- ⚠️ pytest-timeout is not installed in the target interpreter: "
            "the thread-method timeout was used | beware") in md
    assert ("Renamed tests (--map): `test/test_ops_sample.py::TestOpsSample::test_renamed_old` → "
            "`test/test_ops_sample.py::TestOpsSample::test_renamed_new`") in md


def _constructed(verdict="INCONCLUSIVE", ran_b=False) -> ABResult:
    nid = "test/test_x.py::TestX::test_one"
    tb = "doc with fences:\n````\n```\nboom\n" + "x" * 20_000 + "\nValueError: the end"
    a = Outcome(nodeid=nid, outcome="failed", exc_type="ValueError", message="bad value 0x7f3a", signature="ValueError: bad value <hex>",
                traceback=tb)
    b = Outcome(nodeid=nid, outcome="failed", exc_type="ValueError", message="bad value 0x11aa", signature="ValueError: bad value <hex>",
                traceback=tb)
    return ABResult(
        tool_version="0.1.0", normaliser_version="2", verdict=verdict, verdict_reason="",
        arms=[ArmResult(name="A", label="original", root="/tmp/a", source="git:HEAD~1", command="python -m pytest test/test_x.py"),
              ArmResult(name="B", label="modified", root="/tmp/b", source="worktree", ran=ran_b,
                        error="ImportError: cannot import name 'HardwareClassification'")],
        tests=[Comparison(nodeid=nid, category="pre-existing", a=a, b=b)],
        environment=Environment(machine="x86_64", supported_engines=["fbgemm"], prepack={"fbgemm": "ok"}),
    )


def test_markdown_constructed_inconclusive_result():
    r = _constructed()
    md = ab_markdown.render(r)
    assert "Verdict: **INCONCLUSIVE**. No conclusion: arm `B` could not run: " \
           "`ImportError: cannot import name 'HardwareClassification'`." in md
    assert "Nothing is proven about the change: arm `B` could not run" in md
    assert "**This arm could not run: `ImportError: cannot import name 'HardwareClassification'`**" in md
    assert "bash repro.sh B" not in md and "bash repro.sh A" in md    # an arm that did not run has no command
    # counts computed from the tests when the runner gave none
    assert ["pre-existing", "1"] in category_table(md)
    # a traceback with ```` inside: five-backtick fence; clipped to the tail
    assert "`````text\n" in md
    assert "... 8" in md and "characters omitted ..." in md
    assert "ValueError: the end\n`````" in md
    assert "signature normaliser version: `2`" in md
    assert "- **HardwareClassification**: unknown" in md


def test_markdown_safe_reason_generated_when_runner_gave_none():
    r = _constructed("SAFE", ran_b=True)
    r.tests[0].category = "same-pass"
    r.tests[0].a = Outcome(nodeid=r.tests[0].nodeid, outcome="passed")
    r.tests[0].b = Outcome(nodeid=r.tests[0].nodeid, outcome="passed")
    md = ab_markdown.render(r)
    assert "Verdict: **SAFE**. No test regresses in B (1 test compared)." in md
    assert "No test differs between the arms and none fails in both." in md
    assert "No test fails identically in both arms: this run shows no pre-existing failure." in md


def test_markdown_partial_diagnostic_generated_statement():
    nodeids = [f"test/test_s.py::TestS::test_{i}" for i in range(3)]
    tests = []
    for nid in nodeids:
        o = Outcome(nodeid=nid, outcome="error", exc_type="_pickle.UnpicklingError",
                    message="WeightsUnpickler error: Unsupported global: GLOBAL torch.ScriptObject was not an "
                            "allowed global by default. Please use add_safe_globals",
                    signature="error UnpicklingError GLOBAL torch.ScriptObject")
        tests.append(Comparison(nodeid=nid, category="pre-existing", a=o, b=o))
    diag = DiagnosticSummary(name="no-autoload", based_on="B", variables={"TORCH_DEVICE_BACKEND_AUTOLOAD": "0"},
                             changed={nodeids[0]: ["error", "passed"], nodeids[1]: ["error", "passed"]})
    r = ABResult(verdict="SAFE", tests=tests, diagnostics=[diag],
                 arms=[ArmResult(name="A", label="a", root="/a", source="git:HEAD"),
                       ArmResult(name="B", label="b", root="/b", source="worktree")])
    md = ab_markdown.render(r)
    assert ("error in both arms with `_pickle.UnpicklingError: Unsupported global: GLOBAL "
            "torch.ScriptObject was not an allowed global by default.`") in md
    # the user's diagnostic arm is not the weights_only experiment: the cause stays to be confirmed
    assert ("**Probable cause, not yet confirmed**: the test's own `torch.load` reads a whole pickled object "
            "(`GLOBAL torch.ScriptObject`)") in md
    assert ("Evidence: not yet run: `decouple ab --diagnose` reruns these tests with "
            "`TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1`.") in md
    # no statement from the runner: generated from the changed outcomes
    assert "2 tests go from error in arm `B` to passed with `TORCH_DEVICE_BACKEND_AUTOLOAD=0`." in md
    zh = ab_markdown.render(r, "zh")
    assert "**可能的原因（尚未确认）**：测试自身的 `torch.load` 加载的是完整的 pickle 对象" in zh
    assert "设置 `TORCH_DEVICE_BACKEND_AUTOLOAD=0` 后，`B` 组中 2 个测试由“错误”变为“通过”。" in zh


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_empty_result_renders_everywhere(lang):
    r = ABResult()
    md = ab_markdown.render(r, lang)
    assert ("INCONCLUSIVE" in md) and (("no test was compared" in md) if lang == "en" else ("没有可比较的测试" in md))
    doc = ab_html.render(r, lang)
    assert len(_parse(doc).rows) == 0
    root, suite, cases = _cases(ab_junit.render(r))
    assert cases == [] and suite.get("tests") == "0"


# ---------------------------------------------------------------------------
# Markdown, Chinese
# ---------------------------------------------------------------------------

ZH_HEADINGS = ("### 背景", "### 环境信息", "### 复现步骤", "### 结果", "### 原因分析")


@pytest.mark.parametrize("name", NAMES)
def test_markdown_zh_structure(name):
    md = ab_markdown.render(load(name), "zh")
    positions = [md.index(h + "\n") for h in ZH_HEADINGS]
    assert positions == sorted(positions), "sections must follow 背景/环境信息/复现步骤/结果/原因分析"
    for english in ("### Background", "### Environment", "What this proves", "Verdict:", "Counts per category",
                    "not introduced by the change", "Arm A"):
        assert english not in md


def test_markdown_zh_content():
    md = ab_markdown.render(load("sparse_weights_only"), "zh")
    assert md.startswith("## A/B 验证报告：安全（SAFE）\n")
    assert "结论：**安全（SAFE）**。B 组没有任何测试出现回归；3 个失败在 A 组中以完全相同的错误签名同样失败。" in md
    assert "| 既有失败（`pre-existing`） | 3 |" in md
    assert ("`test_qlinear_packed_params_x86` 在两组中均以 `_pickle.UnpicklingError: Unsupported global: GLOBAL "
            "torch.ao.nn.sparse.quantized.dynamic.linear.Linear was not an allowed global by default.` 报错。"
            "**原因已确认**：测试自身的 `torch.load` 加载的是完整的 pickle 对象") in md
    assert ("证据：设置 `TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1` 后重新运行（`no-weights-only` 组，使用 `A` 组的代码），"
            "3 个测试中有 3 个通过。解决办法：在测试中显式指定") in md
    # the diagnostic statement is generated in Chinese from the structured data
    assert "设置 `TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1` 后，`A` 组中 3 个测试由“错误”变为“通过”。" in md
    assert "失败集合完全相同：A、B 两组中失败的都是同样的 3 个测试。" in md
    assert "- **架构**：`x86_64`" in md
    assert "#### A 组：`HEAD` 版本中已提交的文件" in md and "#### B 组：工作区中的文件（含未提交的改动）" in md
    assert "/tmp/decouple-ab-q2m9" not in md
    # Chinese throughout, apart from code and ids
    for english in ("base HEAD", "work tree", "diagnostic", "original (HEAD)", "modified"):
        assert english not in md, english
    assert md.count("结论：") == 1                                   # the verdict is said once


def test_markdown_zh_regression_and_prepack():
    md = ab_markdown.render(load("regression"), "zh")
    assert "结论：**回归（REGRESSION）**。B 组中有 5 个测试出现回归（新增失败：2，崩溃：1，超时：1，B 组缺失：1）。" in md
    assert "**新增失败（`new-failure`）**" in md
    assert "不计为已修复" in md
    md = ab_markdown.render(load("quant_prepack_aarch64"), "zh")
    assert "> ⚠️ **`fbgemm` 列为受支持引擎，但无法完成预打包**" in md
    assert ("`test_linear_chain` 在两组中均以 `RuntimeError: unknown architecure` 失败。**原因已确认**：量化引擎 "
            "`fbgemm` 无法在此 CPU（aarch64）上完成权重预打包") in md
    assert "证据：环境探测中 `fbgemm` 的预打包冒烟测试以 `RuntimeError: unknown architecure` 失败。" in md


def test_unknown_language_is_rejected():
    r = load("regression")
    with pytest.raises(ValueError, match="unsupported report language 'fr'"):
        ab_markdown.render(r, "fr")
    with pytest.raises(ValueError):
        ab_html.render(r, "de")
    with pytest.raises(ValueError):
        i18n.t("h.background", "jp")


# ---------------------------------------------------------------------------
# i18n table
# ---------------------------------------------------------------------------

def test_every_string_is_translated():
    for key, entry in i18n.STRINGS.items():
        assert set(entry) == set(i18n.LANGS), key
        for lang, text in entry.items():
            forms = text.values() if isinstance(text, dict) else [text]
            if isinstance(text, dict):
                assert set(text) == {"one", "other"}, key
            if key != "sentence.sep":  # deliberately blank in Chinese
                assert all(f.strip() for f in forms), (key, lang)
        # both languages use the same placeholders
        names = {lang: set(re.findall(r"\{(\w+)\}", str(entry[lang]))) for lang in i18n.LANGS}
        assert names["en"] == names["zh"], key


def test_labels_and_plurals():
    for cat in CATEGORIES:
        zh = i18n.category_label(cat, "zh")
        assert re.search(r"[\u4e00-\u9fff]", zh), cat
        assert i18n.category_label(cat, "en")
    assert i18n.category_label("pre-existing", "zh") == "既有失败"
    assert i18n.verdict_label("REGRESSION", "zh") == "回归"
    assert i18n.outcome_label("error", "zh") == "错误"
    assert i18n.t("tests.n", "en", n=1) == "1 test" and i18n.t("tests.n", "en", n=3) == "3 tests"
    assert i18n.t("cause.ev.diag", "en", n=1, k=1, vars="V", arm="d", base="A").endswith("1 of 1 test passes")
    assert i18n.t("h.analysis", "zh") == "原因分析"
    with pytest.raises(ValueError):
        i18n.category_label("pre-existing", "xx")


# ---------------------------------------------------------------------------
# JUnit XML
# ---------------------------------------------------------------------------

def _cases(xml_text: str):
    root = ET.fromstring(xml_text.encode("utf-8"))
    suite = root.find("testsuite")
    return root, suite, suite.findall("testcase")


def _props(case) -> dict:
    return {p.get("name"): p.get("value") for p in case.find("properties").findall("property")}


def test_junit_regression_counts_and_properties():
    r = load("regression")
    xml_text = ab_junit.render(r)
    assert xml_text.startswith('<?xml version="1.0" encoding="UTF-8"?>')
    root, suite, cases = _cases(xml_text)
    expected_tests = [c for c in r.tests if c.b is not None or c.category == "missing-in-b"]
    assert len(cases) == len(expected_tests) == 24
    n_fail = sum(1 for c in cases if c.find("failure") is not None)
    n_err = sum(1 for c in cases if c.find("error") is not None)
    n_skip = sum(1 for c in cases if c.find("skipped") is not None)
    assert (n_fail, n_err, n_skip) == (6, 2, 2)
    for el in (root, suite):
        assert (el.get("tests"), el.get("failures"), el.get("errors"), el.get("skipped")) == ("24", "6", "2", "2")
    suite_props = {p.get("name"): p.get("value") for p in suite.find("properties")}
    assert suite_props["ab.verdict"] == "REGRESSION"
    assert suite_props["ab.normaliser_version"] == "1"
    assert suite_props["ab.count.same-pass"] == "12"

    by_id = {c.nodeid: c for c in r.tests}
    for case in cases:
        props = _props(case)
        nodeid = case.get("file") + "::TestOpsSample::" + case.get("name")
        comp = by_id[nodeid]
        assert case.get("classname") == "test.test_ops_sample.TestOpsSample"
        assert props["ab.category"] == comp.category
        assert props["ab.a_outcome"] == (comp.a.outcome if comp.a else "absent")

    pipe = next(c for c in cases if c.get("name") == "test_add_pipe[a|b]")
    failure = pipe.find("failure")
    assert failure.get("message") == "call failed AssertionError: 'a||b' != 'a|b' `x` <tag>"
    assert failure.get("type") == "AssertionError"
    assert pipe.get("time") == "0.020"
    # text = traceback; control characters XML forbids are escaped visibly, ANSI kept as text
    assert '>       self.assertEqual(x | y, "a|b")' in failure.text
    assert failure.text.endswith("E       \\x1b[31mred\\x1b[0m control chars: \\x00\\x07\\x0b\\x0c\\ufffe end")
    crash = next(c for c in cases if c.get("name") == "test_segfault_conv").find("error")
    assert crash.get("type") == "crash (SIGSEGV)" and crash.get("message") == "call crashed SIGSEGV"
    missing = next(c for c in cases if c.get("name") == "test_removed")
    assert missing.find("failure").get("type") == "ab.missing-in-b"
    assert _props(missing)["ab.b_outcome"] == "absent"
    added = next(c for c in cases if c.get("name") == "test_added")
    assert _props(added)["ab.a_outcome"] == "absent" and len(list(added)) == 1  # properties only: a pass
    different = _props(next(c for c in cases if c.get("name") == "test_dtype_promotion"))
    assert different["ab.a_signature"].startswith("call failed TypeError")
    xfail = next(c for c in cases if c.get("name") == "test_known_bug").find("skipped")
    assert xfail.get("type") == "pytest.xfail"
    flaky = _props(next(c for c in cases if c.get("name") == "test_timing_sensitive"))
    assert flaky["ab.reruns"] == "passed,failed,passed"


def test_junit_preexisting_cases():
    r = load("sparse_weights_only")
    root, suite, cases = _cases(ab_junit.render(r))
    assert len(cases) == 3 and suite.get("errors") == "3" and suite.get("failures") == "0"
    for case in cases:
        assert case.get("classname") == "test.ao.sparsity.test_qlinear_packed_params.TestQlinearPackedParams"
        assert _props(case) == {"ab.category": "pre-existing", "ab.a_outcome": "error", "ab.b_outcome": "error"}
        err = case.find("error")
        assert err.get("type") == "_pickle.UnpicklingError"
        assert err.get("message") == r.tests[0].b.signature
        assert "loaded_model = torch.load(f)" in err.text


def test_junit_split_nodeid():
    split = ab_junit.split_nodeid
    assert split("test/a/test_b.py::TestC::test_d") == ("test/a/test_b.py", "test.a.test_b.TestC", "test_d")
    assert split("test/a/test_b.py::TestC::test_d[x::y]") == ("test/a/test_b.py", "test.a.test_b.TestC",
                                                              "test_d[x::y]")
    assert split("test_m.py::test_func") == ("test_m.py", "test_m", "test_func")
    assert split("test/test_m.py") == ("test/test_m.py", "test.test_m", "test_m.py")


# ---------------------------------------------------------------------------
# HTML
# ---------------------------------------------------------------------------

class _Collector(html.parser.HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.rows = []          # attrs of tr.ab-test
        self.tags = Counter()
        self.attrs = []         # (tag, name, value)
        self.options = []
        self.h2 = []
        self._in = None
        self._text = []
        self.html_lang = None

    def handle_starttag(self, tag, attrs):
        d = dict(attrs)
        self.tags[tag] += 1
        self.attrs += [(tag, k, v) for k, v in attrs]
        if tag == "html":
            self.html_lang = d.get("lang")
        if tag == "tr" and "ab-test" in (d.get("class") or "").split():
            self.rows.append(d)
        if tag in ("option", "h2"):
            self._in, self._text = (tag, d), []

    def handle_data(self, data):
        if self._in:
            self._text.append(data)

    def handle_endtag(self, tag):
        if self._in and tag == self._in[0]:
            text = "".join(self._text).strip()
            if tag == "option":
                self.options.append((self._in[1].get("value"), text))
            else:
                self.h2.append(text)
            self._in = None


def _parse(doc: str) -> _Collector:
    p = _Collector()
    p.feed(doc)
    p.close()
    return p


@pytest.mark.parametrize("name", NAMES)
def test_html_table_rows_and_self_contained(name):
    r = load(name)
    doc = ab_html.render(r)
    p = _parse(doc)
    assert doc.startswith("<!DOCTYPE html>")
    assert len(p.rows) == len(r.tests)
    assert Counter(row["data-category"] for row in p.rows) == Counter(c.category for c in r.tests)
    ids = [row["id"] for row in p.rows]
    assert len(set(ids)) == len(ids)
    assert {row["data-nodeid"] for row in p.rows} == {c.nodeid for c in r.tests}
    for c in r.tests:
        assert ab_html.row_id(c.nodeid) in ids
    # full table rendered server-side: nothing hidden but the JS-only controls
    assert not any("hidden" in row for row in p.rows)
    assert ("div", "hidden", None) in p.attrs
    # no network: no external resources at all
    assert "http://" not in doc and "https://" not in doc
    assert not [a for a in p.attrs if a[1] == "src" or (a[1] == "href" and not a[2].startswith("#"))
                or a[0] == "link"]
    assert "url(" not in doc and "@import" not in doc
    assert "default-src 'none'" in doc
    assert p.tags["script"] == 1 and p.tags["style"] == 1


def test_html_content_and_escaping():
    r = load("regression")
    doc = ab_html.render(r)
    p = _parse(doc)
    assert p.html_lang == "en"
    assert '<header id="ab-summary" class="verdict-REGRESSION" data-verdict="REGRESSION">' in doc
    assert "Verdict: <strong>REGRESSION</strong>. 5 tests regress: 2 new failures" in doc
    assert 'data-filter="new-failure">new failure: <strong>2</strong></button>' in doc
    # a signature with markup is escaped, never parsed as a tag
    assert p.tags["tag"] == 0
    assert "&lt;tag&gt;" in doc
    assert "\x1b" not in doc and "\x00" not in doc
    # category select: "all" plus one option per category present
    values = [v for v, _ in p.options]
    assert values[0] == "" and set(values[1:]) == {c.category for c in r.tests}
    assert ("pre-existing", "pre-existing (pre-existing): 1") in p.options
    # collapsible tracebacks, environment and reproduction sections
    # one per test with something to show: 2 new failures, crash, timeout, different, flaky, pre-existing, fixed
    assert p.tags["details"] == 8
    assert p.h2 == ["Background", "Results", "Cause analysis", "Environment", "Reproduction"]
    assert '<pre class="ab-command"><code>bash repro.sh B</code></pre>' in doc
    assert "/tmp/decouple-ab-r5t1" not in doc
    assert '<li class="warn">⚠️ pytest-timeout is not installed' in doc
    row = next(row for row in p.rows if row["data-nodeid"].endswith("test_add_pipe[a|b]"))
    assert row["class"] == "ab-test cat-new-failure regressing"
    assert row["data-a"] == "passed" and row["data-b"] == "failed"


def test_html_prepack_warning_and_zh():
    r = load("quant_prepack_aarch64")
    doc = ab_html.render(r, "zh")
    p = _parse(doc)
    assert p.html_lang == "zh-CN"
    assert p.h2 == ["背景", "环境信息", "复现步骤", "结果", "原因分析"]
    assert "<title>A/B 验证报告：安全（SAFE）</title>" in doc
    assert "⚠️ <strong><code>fbgemm</code> 列为受支持引擎，但无法完成预打包</strong>" in doc
    assert ("pre-existing", "既有失败 (pre-existing): 2") in p.options
    assert "<code>test_linear_chain</code> 在两组中均以 <code>RuntimeError: unknown architecure</code> 失败。" in doc
    assert "<strong>原因已确认</strong>" in doc
    doc_en = ab_html.render(r)
    assert '<tr class="warn"><td><code>fbgemm</code></td><td>yes</td>' in doc_en


# ---------------------------------------------------------------------------
# HTML in a real browser (headless Chromium through selenium)
# ---------------------------------------------------------------------------

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync")


def _driver(profile_dir, javascript=True):
    for path in (CHROMIUM, CHROMEDRIVER):
        if not (os.path.exists(path) or shutil.which(path)):
            pytest.skip(f"{path} is missing (Debian: apt-get install chromium chromium-driver)")
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed (pip install selenium)")
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    opts = Options()
    opts.binary_location = CHROMIUM
    for flag in CHROMIUM_FLAGS:
        opts.add_argument(flag)
    opts.add_argument(f"--user-data-dir={profile_dir}")
    opts.add_argument("--window-size=1400,1000")
    if not javascript:
        opts.add_experimental_option("prefs", {"profile.managed_default_content_settings.javascript": 2})
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    drv = _driver(tmp_path_factory.mktemp("chromium-profile"))
    yield drv
    drv.quit()


def _visible_rows(drv):
    return drv.execute_script(
        "return Array.from(document.querySelectorAll('#ab-tests tbody tr.ab-test'))"
        ".filter(r => !r.hidden && r.offsetParent !== null).map(r => r.dataset.nodeid);")


def _column(drv, index):
    return drv.execute_script(
        "return Array.from(document.querySelectorAll('#ab-tests tbody tr.ab-test'))"
        f".map(r => r.cells[{index}].textContent.trim());")


@pytest.mark.browser
def test_browser_sort_and_filter(browser, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select, WebDriverWait

    r = load("regression")
    page = tmp_path / "report.html"
    page.write_text(ab_html.render(r), encoding="utf-8")
    browser.get(page.as_uri())
    WebDriverWait(browser, 10).until(
        lambda d: d.execute_script("return document.documentElement.dataset.abReady === '1'"))
    assert browser.find_element(By.ID, "ab-controls").is_displayed()
    assert len(_visible_rows(browser)) == 24
    assert browser.find_element(By.ID, "ab-shown").text == "24 of 24 tests shown"

    # numeric sort on "B time (s)": blanks (absent) last, numbers by value, not as text
    header = browser.find_element(By.CSS_SELECTOR, '#ab-tests th[data-col="b_time"]')
    header.click()
    assert header.get_attribute("aria-sort") == "ascending"
    times = _column(browser, 6)
    values = [float(v) for v in times if v]
    assert values == sorted(values) and values[-1] == 300.0 and times[-1] == ""
    header.click()
    assert header.get_attribute("aria-sort") == "descending"
    values = [float(v) for v in _column(browser, 6) if v]
    assert values == sorted(values, reverse=True)

    # numeric-aware text sort on the node id: test_case_2 before test_case_10
    browser.find_element(By.CSS_SELECTOR, '#ab-tests th[data-col="nodeid"]').click()
    ids = _column(browser, 1)
    assert ids.index(f"{r.paths[0]}::TestOpsSample::test_case_2") < ids.index(
        f"{r.paths[0]}::TestOpsSample::test_case_10")
    assert header.get_attribute("aria-sort") is None

    # typing into the filter hides rows
    box = browser.find_element(By.ID, "ab-filter")
    box.send_keys("test_case_1")
    assert sorted(v.rsplit("::", 1)[1] for v in _visible_rows(browser)) == ["test_case_1", "test_case_10",
                                                                            "test_case_11"]
    assert browser.find_element(By.ID, "ab-shown").text == "3 of 24 tests shown"
    box.clear()
    box.send_keys("unknown architecure")
    assert _visible_rows(browser) == []
    box.clear()
    box.send_keys("HardwareClassification")  # matches a signature
    assert [v.rsplit("::", 1)[1] for v in _visible_rows(browser)] == ["test_dtype_promotion"]
    box.clear()
    box.send_keys(" ")  # blank filter shows everything again
    assert len(_visible_rows(browser)) == 24

    # selecting a category filters by data-category
    select = Select(browser.find_element(By.ID, "ab-category"))
    select.select_by_value("same-pass")
    visible = _visible_rows(browser)
    assert len(visible) == 12
    cats = browser.execute_script(
        "return Array.from(document.querySelectorAll('#ab-tests tbody tr.ab-test'))"
        ".filter(r => !r.hidden).map(r => r.dataset.category);")
    assert set(cats) == {"same-pass"}
    # category and text filters combine
    box.send_keys("case_1")
    assert len(_visible_rows(browser)) == 3
    box.clear()
    box.send_keys(" ")
    select.select_by_value("new-failure")
    assert sorted(v.rsplit("::", 1)[1] for v in _visible_rows(browser)) == ["test_add_pipe[a|b]",
                                                                            "test_with_subtests"]
    select.select_by_value("")
    assert len(_visible_rows(browser)) == 24

    # a count chip in the header selects its category
    browser.find_element(By.CSS_SELECTOR, '.ab-chip[data-filter="crash"]').click()
    assert select.first_selected_option.get_attribute("value") == "crash"
    assert [v.rsplit("::", 1)[1] for v in _visible_rows(browser)] == ["test_segfault_conv"]

    # tracebacks open on click
    details = browser.find_element(By.CSS_SELECTOR, f'#{ab_html.row_id(r.tests[1].nodeid)} details')
    details.find_element(By.TAG_NAME, "summary").click()
    assert details.get_attribute("open") is not None
    assert "Segmentation fault" in details.text


@pytest.mark.browser
def test_browser_zh_filter(browser, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select, WebDriverWait

    page = tmp_path / "report-zh.html"
    page.write_text(ab_html.render(load("sparse_weights_only"), "zh"), encoding="utf-8")
    browser.get(page.as_uri())
    WebDriverWait(browser, 10).until(
        lambda d: d.execute_script("return document.documentElement.dataset.abReady === '1'"))
    assert browser.find_element(By.ID, "ab-shown").text == "显示 3 / 3 个测试"
    Select(browser.find_element(By.ID, "ab-category")).select_by_value("pre-existing")
    assert len(_visible_rows(browser)) == 3
    browser.find_element(By.ID, "ab-filter").send_keys("x86")
    assert browser.find_element(By.ID, "ab-shown").text == "显示 1 / 3 个测试"


@pytest.mark.browser
def test_browser_without_javascript_shows_full_table(tmp_path):
    from selenium.webdriver.common.by import By

    drv = _driver(tmp_path / "profile", javascript=False)
    try:
        page = tmp_path / "report.html"
        page.write_text(ab_html.render(load("regression")), encoding="utf-8")
        drv.get(page.as_uri())
        rows = drv.find_elements(By.CSS_SELECTOR, "#ab-tests tbody tr.ab-test")
        assert len(rows) == 24 and all(row.is_displayed() for row in rows)
        assert not drv.find_element(By.ID, "ab-controls").is_displayed()
        assert drv.find_element(By.TAG_NAME, "html").get_attribute("data-ab-ready") is None
    finally:
        drv.quit()


# ---------------------------------------------------------------------------
# CPU facts (probe.py, stdlib only)
# ---------------------------------------------------------------------------

X86_CPUINFO = """processor\t: 0
vendor_id\t: GenuineIntel
model name\t: Intel(R) Xeon(R) Platinum 8375C CPU @ 2.90GHz
flags\t\t: fpu sse4_2 avx avx2 fma f16c avx512f avx512bw avx512vl avx512_vnni amx_tile

processor\t: 1
model name\t: Intel(R) Xeon(R) Platinum 8375C CPU @ 2.90GHz
"""
ARM_CPUINFO = """processor\t: 0
BogoMIPS\t: 243.75
Features\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm lrcpc dcpop asimddp
CPU implementer\t: 0x41
CPU part\t: 0xd0c
"""


def test_probe_cpu_facts_x86_and_arm():
    from codemod.target.probe import cpu_facts
    x86 = cpu_facts(X86_CPUINFO)
    assert x86["cpu_model"] == "Intel(R) Xeon(R) Platinum 8375C CPU @ 2.90GHz"
    assert x86["cpu_flags"] == ["sse4_2", "avx", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl",
                                "avx512_vnni", "amx_tile"]
    assert x86["cpu_count"] == os.cpu_count()
    arm = cpu_facts(ARM_CPUINFO)
    assert arm["cpu_model"] == "implementer 0x41, part 0xd0c"
    assert arm["cpu_flags"] == ["asimd", "asimddp", "asimdhp"]


def test_cpu_facts_in_the_reports():
    r = load("quant_prepack_aarch64")
    r.environment.cpu_model, r.environment.cpu_flags = "implementer 0x41, part 0xd0c", ["asimd", "asimddp"]
    r.environment.cpu_count, r.environment.cpu_usable = 8, 2
    md = ab_markdown.render(r)
    assert "- **CPU**: `implementer 0x41, part 0xd0c`" in md
    assert "- **CPU features used by the quantized engines**: `asimd`, `asimddp`" in md
    assert "- **CPU cores**: 8 (2 usable by this process)" in md
    zh = ab_markdown.render(r, "zh")
    assert "- **CPU 核数**：8（本进程可用 2）" in zh
    from codemod.report.ab import terminal
    assert "implementer 0x41, part 0xd0c, 8 cores (asimd asimddp)" in terminal.render(r)


LAYOUT_NAMES = ("regression", "mixed", "weights_diagnose", "sparse_weights_only")


@pytest.mark.browser
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_browser_layout_no_cell_taller_than_the_viewport(browser, tmp_path, lang):
    """Every table cell fits in the viewport, with every collapsible block opened."""
    for name in LAYOUT_NAMES:
        page = tmp_path / f"{name}.{lang}.html"
        page.write_text(ab_html.render(load(name), lang), encoding="utf-8")
        browser.get(page.as_uri())
        tall = browser.execute_script("""
            document.querySelectorAll('details').forEach(function (d) { d.open = true; });
            var limit = window.innerHeight, out = [];
            document.querySelectorAll('td, th').forEach(function (cell) {
              var h = cell.getBoundingClientRect().height;
              if (h > limit) { out.push([h, limit, cell.textContent.slice(0, 80)]); }
            });
            return out;""")
        assert tall == [], (name, lang, tall)
        wide = browser.execute_script("return document.documentElement.scrollWidth - window.innerWidth;")
        assert wide <= 0, (name, lang, "horizontal scroll of the page", wide)


# ---------------------------------------------------------------------------
# the views read the model only


def _imports_of(path: Path):
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module, [alias.name for alias in node.names]
        elif isinstance(node, ast.Import):
            yield from ((alias.name, []) for alias in node.names)


def test_the_views_read_the_model_and_the_runner_never_a_view():
    # anywhere in a module, late imports included: the A/B views see the result model,
    # the notices and the cause table's texts, never the runner; the runner no view
    project = Path(__file__).resolve().parent.parent
    model_level = {
        "codemod.ab.result.model",
        "codemod.ab.result.diff",
        "codemod.ab.result.schema",
        "codemod.ab.result.notices",
        "codemod.ab.comparison.causes",
    }
    views = [*(project / "codemod" / "report" / "ab").glob("*.py"), *(project / "codemod" / "report" / "shared").glob("*.py")]
    assert len(views) > 10
    for path in views:
        for module, names in _imports_of(path):
            if module.startswith("codemod.ab"):
                imported = {module} if module in model_level else {f"{module}.{n}" for n in names}
                assert imported <= model_level, (path.name, module, names)
    model_files = [project / "codemod" / "ab" / "result" / n for n in ("model.py", "diff.py", "schema.py", "notices.py")]
    for path in [*model_files, project / "codemod" / "ab" / "comparison" / "causes.py"]:  # the model level is no runner
        assert {m for m, _ in _imports_of(path) if m.startswith("codemod")} <= model_level, path
    for path in (project / "codemod" / "ab").rglob("*.py"):
        assert not any(m.startswith("codemod.report") for m, _ in _imports_of(path)), path.name
