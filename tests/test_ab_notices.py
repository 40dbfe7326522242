"""The A/B runner's warnings as notices: the catalogue, the model, and the views in en/zh."""

from __future__ import annotations

import ast
import dataclasses
import json
import re
import sys
import types
from pathlib import Path

import pytest

from codemod.target import forkserver
from codemod.ab.result.model import SCHEMA_VERSION, ABResult
from codemod.ab.result.notices import CATALOGUE, FRAMES, LANGS, VERBATIM, Notice
from codemod.report.ab import html as ab_html
from codemod.report.ab import markdown as ab_markdown
from codemod.report.ab import terminal

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "tests" / "fixtures" / "ab_results"
PLACEHOLDER = re.compile(r"\{(\w+)(?:\|[^|{}]*\|[^|{}]*)?\}")  # `{n|one|many}`: the count n
CODE_SPAN = re.compile(r"`([^`]*)`")


def _placeholders(template: str) -> tuple[set[str], set[str]]:
    """(placeholders inside code spans, placeholders in prose)."""
    code = {name for span in CODE_SPAN.findall(template) for name in PLACEHOLDER.findall(span)}
    prose = set(PLACEHOLDER.findall(CODE_SPAN.sub("", template)))
    return code, prose


# ---------------------------------------------------------------------------
# the catalogue


def test_every_catalogue_entry_has_both_languages_and_the_same_placeholders():
    for code, entry in {**CATALOGUE, **FRAMES}.items():
        assert set(entry) == set(LANGS), code
        assert all(entry[lang].strip() for lang in LANGS), code
        assert entry["en"].count("`") % 2 == 0 and entry["zh"].count("`") % 2 == 0, code
        # the same parameters, and each one code (or prose) in both languages
        assert _placeholders(entry["en"]) == _placeholders(entry["zh"]), code
    for code, entry in CATALOGUE.items():
        code_params, prose_params = _placeholders(entry["en"])
        # prose parameters are numbers, the nested reasons or a legacy warning's text:
        # anything else would stay English in a Chinese report
        assert prose_params <= {"seconds", "processes", "files", "reasons", "text"}, code
        assert not (code_params & {"reasons"}), code


def _notice_calls(path: Path):
    """(code, parameter names or None when not a literal dict) of every Notice("...") in a file."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Notice" and node.args:
            first = node.args[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                params = node.args[1] if len(node.args) > 1 else None
                names = None
                if params is None:
                    names = set()
                elif isinstance(params, ast.Dict) and all(isinstance(k, ast.Constant) for k in params.keys):
                    names = {k.value for k in params.keys}
                yield first.value, names


def test_every_notice_the_runner_produces_is_in_the_catalogue():
    produced = [call for path in sorted((ROOT / "codemod").rglob("*.py")) for call in _notice_calls(path)]
    assert len(produced) >= 20
    for code, names in produced:
        assert code in CATALOGUE, code
        if names is not None:
            code_params, prose_params = _placeholders(CATALOGUE[code]["en"])
            assert names == (code_params | prose_params) - {"reasons"}, code
    # merge builds its parameter dicts apart: test_ab_compare checks them exactly


def test_every_fork_unsafe_reason_is_in_the_catalogue(monkeypatch):
    """The fork server cannot import the catalogue: it names its reasons by code."""

    def reason() -> Notice:
        found = forkserver.fork_unsafe()
        notice = Notice(found["code"], found["params"])
        code_params, prose_params = _placeholders(CATALOGUE[notice.code]["en"])
        assert set(notice.params) == code_params | prose_params
        return notice

    monkeypatch.setattr(forkserver.threading, "active_count", lambda: 2)
    monkeypatch.delitem(sys.modules, "torch_npu", raising=False)
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    assert reason().text("zh") == "某个导入启动了线程（fork() 出的子进程会继承一个只复制了一半的进程）"
    registered = types.SimpleNamespace(_get_privateuse1_backend_name=lambda: "npu")
    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(_C=registered))
    assert reason().text("zh") == "已注册树外设备后端（npu）"
    initialised = types.SimpleNamespace(is_initialized=lambda: True)
    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(_C=registered, xpu=initialised))
    assert reason().text("zh") == "导入时已初始化 torch.xpu"
    monkeypatch.setitem(sys.modules, "torch_npu", object())
    assert reason().text("zh") == "已导入 torch_npu（树外设备后端在导入时即完成初始化）"
    monkeypatch.delattr(forkserver.os, "waitid")
    assert reason().text() == "this platform has no waitid()"
    monkeypatch.delattr(forkserver.os, "fork")
    assert reason().text("zh") == "此平台没有 fork()"


# ---------------------------------------------------------------------------
# one notice


def test_text_is_plain_and_str_is_english():
    n = Notice("file.timeout", {"file": "test/test_nn.py", "seconds": "600"}, arm="B")
    assert str(n) == n.text("en") == "arm B: test/test_nn.py: --file-timeout 600s exceeded"
    assert n.text("zh") == "B 组：test/test_nn.py：超出 --file-timeout 限制（600 秒）"
    diag = Notice("hw-classification.no-enum", diagnose=True)
    assert str(diag) == "diagnose: --hw-classification not passed: the target torch has no HardwareClassification"


def test_render_formats_code_spans_and_escapes_prose():
    n = Notice("file.gave-up-resuming", {"file": "a_b.py", "processes": "4"}, arm="x_y")
    shown = n.render("en", lambda s: s.replace("_", "\\_"), lambda s: f"<{s}>")
    assert shown == "arm x\\_y: <a_b.py>: gave up resuming after 4 processes"


def test_a_count_takes_its_noun_in_english_and_stays_a_number_in_chinese():
    one, two = (Notice("run.packed", {"processes": n}) for n in ("1", "2"))
    assert one.text().startswith("--pack: each arm's files ran in 1 pytest session of several files each,")
    assert two.text().startswith("--pack: each arm's files ran in 2 pytest sessions of several files each,")
    assert two.text("zh").startswith("--pack：每组的文件分成 2 个 pytest 会话运行")
    # the noun goes through the format's escaping; a value that is no count takes the plural
    shown = Notice("warm.no-fork-packed", {}).render("en", lambda s: s.replace(" ", "_"), str)
    assert "ran_in_?_pytest_sessions_of" in shown


def test_a_legacy_warning_is_verbatim_in_every_language():
    n = Notice.verbatim("pytest-timeout is not installed")
    assert (n.code, n.text("en"), n.text("zh")) == (VERBATIM, "pytest-timeout is not installed",
                                                     "pytest-timeout is not installed")


def test_an_unknown_code_shows_its_id_and_parameters():
    """A result written by a newer version may hold a code this one does not know."""
    n = Notice("warm.something-new", {"module": "torch_xla"}, arm="A")
    assert n.text("zh") == "A 组：warm.something-new module=torch_xla"
    assert n.render("en", str, lambda s: f"`{s}`") == "arm A: `warm.something-new` `module=torch_xla`"


def test_a_missing_parameter_shows_as_a_question_mark():
    assert Notice("merge.missing-shards").text() == "missing shards: ?"


# ---------------------------------------------------------------------------
# the result JSON


def test_notices_round_trip_through_the_result_json():
    r = ABResult(warnings=[
        Notice("warm.given-up", reasons=[Notice("fork-unsafe.backend-imported", {"module": "torch_npu"}, arm="A")]),
        Notice("file.died-outside-test", {"file": "t.py", "status": "SIGSEGV"}, arm="B", diagnose=True),
    ])
    data = json.loads(json.dumps(r.to_json()))
    assert data["schema_version"] == SCHEMA_VERSION == 5
    assert data["warnings"][1] == {"code": "file.died-outside-test", "params": {"file": "t.py", "status": "SIGSEGV"},
                                   "arm": "B", "diagnose": True, "reasons": []}
    back = ABResult.from_json(data)
    assert back.warnings == r.warnings
    assert isinstance(back.warnings[0].reasons[0], Notice)


@pytest.mark.parametrize("version", [1, 2])
def test_plain_string_warnings_of_schema_1_and_2_read_as_verbatim_notices(version):
    back = ABResult.from_json({"schema_version": version, "warnings": ["merged shards 1/2, 2/2"]})
    assert back.warnings == [Notice.verbatim("merged shards 1/2, 2/2")]
    assert back.schema_version == 5


def test_a_warning_of_the_wrong_shape_is_refused():
    with pytest.raises(ValueError, match="wrong shape"):
        ABResult.from_json({"schema_version": 3, "warnings": ["a schema 3 warning is a notice, not a string"]})
    with pytest.raises(ValueError, match="wrong shape"):
        ABResult.from_json({"schema_version": 2, "warnings": [5]})


def test_the_diagnose_run_marks_its_own_warnings_and_drops_repeated_ones(tmp_path):
    from codemod.ab.execution import diagnose
    from codemod.ab.arms.options import RunOptions

    data = json.loads((RESULTS / "sparse_weights_only.json").read_text(encoding="utf-8"))
    data.update(arms=[a for a in data["arms"] if a["name"] in ("A", "B")], diagnostics=[])  # cause not yet confirmed
    result = ABResult.from_json(data)
    result.warnings = [Notice("warm.no-fork")]
    timeout = Notice("file.timeout", {"file": "test/ao/sparsity/test_qlinear_packed_params.py", "seconds": "600"},
                     arm="diagnose-noweightsonly")
    runs = []

    def second_run(opts):
        runs.append(opts)
        return ABResult(warnings=[Notice("warm.no-fork"), timeout])

    opts = RunOptions(paths=["test"], a_root=str(tmp_path), b_root=str(tmp_path))
    diagnose.diagnose(result, opts, second_run)
    assert [spec.name for spec in runs[0].diags] == ["diagnose-noweightsonly"]
    assert result.warnings == [Notice("warm.no-fork"), dataclasses.replace(timeout, diagnose=True)]
    assert result.warnings[1].text("zh") == (
        "诊断复跑：diagnose-noweightsonly 组：test/ao/sparsity/test_qlinear_packed_params.py：超出 --file-timeout 限制（600 秒）")


# ---------------------------------------------------------------------------
# the views


def _result_with_notices() -> ABResult:
    data = json.loads((RESULTS / "sparse_weights_only.json").read_text(encoding="utf-8"))
    # written by the previous version: the legacy warning is a plain string
    data.update(schema_version=2, warnings=["pytest-timeout is not installed in the target interpreter"])
    result = ABResult.from_json(data)
    backend = [Notice("fork-unsafe.backend-imported", {"module": "torch_npu"}, arm=arm) for arm in ("A", "B")]
    result.warnings += [
        Notice("pythonpath-into-tree", {"entry": "/src/pytorch/test", "root": "/src/pytorch"}),
        Notice("file.timeout", {"file": "test/test_nn.py", "seconds": "600"}, arm="B"),
        Notice("warm.given-up", reasons=backend),
        Notice("file.warm-interpreter-failed", arm="A",
               reasons=[Notice("warm.fork-failed", {"error": "fork: [Errno 12] Cannot allocate memory"})]),
        Notice("hw-classification.no-enum", diagnose=True),
        Notice("merge.missing-shards", {"shards": "3/4"}),
    ]
    return result


def _warnings_section(md: str, heading: str) -> list[str]:
    section = md.split(f"#### {heading}\n\n", 1)[1].split("\n\n", 1)[0]
    return section.splitlines()


def test_zh_report_says_every_warning_in_chinese():
    md = ab_markdown.render(_result_with_notices(), "zh")
    lines = _warnings_section(md, "运行器警告")
    assert lines == [
        "- ⚠️ pytest-timeout is not installed in the target interpreter",
        "- ⚠️ `PYTHONPATH` 中的条目 `/src/pytorch/test` 指向 `/src/pytorch` 内部：每个组都会从用户的目录树导入该处的模块",
        "- ⚠️ B 组：`test/test_nn.py`：超出 `--file-timeout` 限制（600 秒）",
        "- ⚠️ 未使用热解释器（A 组：已导入 `torch_npu`（树外设备后端在导入时即完成初始化）；"
        "B 组：已导入 `torch_npu`（树外设备后端在导入时即完成初始化））：每个文件都在全新进程中运行",
        "- ⚠️ A 组：热解释器中途失败（热解释器无法启动进程：`fork: [Errno 12] Cannot allocate memory`）；此后改用全新进程",
        "- ⚠️ 诊断复跑：未传递 `--hw-classification`：目标 torch 中没有 `HardwareClassification`",
        "- ⚠️ 缺少分片：`3/4`",
    ]
    # apart from the legacy warning (verbatim by design), code spans and the name torch,
    # no English word is left
    for line in lines[1:]:
        prose = re.sub(r"(`+).*?\1", "", line)
        assert set(re.findall(r"[A-Za-z]{2,}", prose)) <= {"torch"}, line


def test_zh_html_report_formats_the_code_of_a_warning():
    doc = ab_html.render(_result_with_notices(), "zh")
    assert ('<li class="warn">⚠️ B 组：<code>test/test_nn.py</code>：超出 <code>--file-timeout</code> 限制（600 秒）</li>'
            in doc)
    assert '<li class="warn">⚠️ 缺少分片：<code>3/4</code></li>' in doc
    assert '<li class="warn">⚠️ pytest-timeout is not installed in the target interpreter</li>' in doc


def test_en_report_and_terminal_say_the_same_notices_in_english():
    result = _result_with_notices()
    lines = _warnings_section(ab_markdown.render(result, "en"), "Runner warnings")
    assert lines[2] == "- ⚠️ arm B: `test/test_nn.py`: `--file-timeout` 600s exceeded"
    assert lines[5] == "- ⚠️ diagnose: `--hw-classification` not passed: the target torch has no `HardwareClassification`"
    shown = terminal.render(result)
    assert "Warnings:\n  - pytest-timeout is not installed in the target interpreter\n" in shown
    assert ("  - no warm interpreter (arm A: torch_npu was imported (an out-of-tree device backend initialises on "
            "import); arm B: torch_npu was imported (an out-of-tree device backend initialises on import)): every "
            "file ran in a fresh process\n") in shown
