"""English and Chinese strings for the A/B reports: one table, one lookup.

`t(key, lang, **fmt)` returns the string for `key` in `lang`, formatted with
`str.format(**fmt)`.  An entry may be plural-aware: a dict with "one" and
"other" forms, chosen by the `n` argument (Chinese has one form only).

Identifiers (node ids, exception types, variable names, category ids) are
never translated; category, outcome and verdict names get labels through
`category_label`, `outcome_label` and `verdict_label`.
"""

from __future__ import annotations

from typing import Any

from codemod.report.shared import i18n_accounting, i18n_coverage

LANGS = ("en", "zh")

_Entry = str | dict[str, str]

# key -> {lang -> template}.  Keep every key translated into every language
# (tests/test_ab_reports.py checks it).
STRINGS: dict[str, dict[str, _Entry]] = {
    # ---- titles and headings -------------------------------------------------
    "title": {"en": "A/B verification: {verdict}", "zh": "A/B 验证报告：{verdict}"},
    "h.verdict": {"en": "Verdict", "zh": "结论"},
    "h.background": {"en": "Background", "zh": "背景"},
    "h.environment": {"en": "Environment", "zh": "环境信息"},
    "h.reproduction": {"en": "Reproduction", "zh": "复现步骤"},
    "h.results": {"en": "Results", "zh": "结果"},
    "h.analysis": {"en": "Cause analysis", "zh": "原因分析"},
    "h.counts": {"en": "Counts per category", "zh": "各类别数量"},
    "h.tests": {"en": "Tests whose outcome differs or that fail in both arms", "zh": "结果不同或在两组中均失败的测试"},
    "h.all_tests": {"en": "All tests", "zh": "全部测试"},
    "h.tracebacks": {"en": "Tracebacks", "zh": "错误堆栈"},
    "h.diagnostics": {"en": "Diagnostic arms", "zh": "诊断组"},
    "h.collection_errors": {"en": "Collection errors and crashes", "zh": "收集错误与崩溃"},
    "h.warnings": {"en": "Runner warnings", "zh": "运行器警告"},
    "h.runner_env": {"en": "What the runner changed in the environment", "zh": "运行器对环境所做的修改"},
    "h.change_safe": {"en": "Is the change safe?", "zh": "改动是否安全？"},
    "h.not_the_change": {"en": "Failures in both arms", "zh": "两组均失败的测试"},
    "h.b_only": {"en": "Failures new or different in B", "zh": "B 组中新出现或方式不同的失败"},
    # ---- verdicts ----------------------------------------------------------------
    "verdict.SAFE": {"en": "SAFE", "zh": "安全"},
    "verdict.REGRESSION": {"en": "REGRESSION", "zh": "回归"},
    "verdict.INCONCLUSIVE": {"en": "INCONCLUSIVE", "zh": "无法判定"},
    "verdict.line": {"en": "Verdict: {verdict}. {reason}", "zh": "结论：{verdict}。{reason}"},
    "reason.safe": {
        "en": {
            "one": "No test regresses in B ({total} test compared).",
            "other": "No test regresses in B ({total} tests compared).",
        },
        "zh": "B 组没有任何测试出现回归（共比较 {total} 个测试）。",
    },
    "reason.safe_pre": {
        "en": {
            "one": "No test regresses in B; the {n} failure also fails in A with an identical signature.",
            "other": "No test regresses in B; the {n} failures also fail in A with identical signatures.",
        },
        "zh": "B 组没有任何测试出现回归；{n} 个失败在 A 组中以完全相同的错误签名同样失败。",
    },
    "reason.regression": {
        "en": {"one": "{n} test regresses in B ({parts}).", "other": "{n} tests regress in B ({parts})."},
        "zh": "B 组中有 {n} 个测试出现回归（{parts}）。",
    },
    "reason.arm_not_run": {"en": "arm {arm} could not run: {error}", "zh": "{arm} 组无法运行：{error}"},
    "reason.flaky": {
        "en": {"one": "{n} test is flaky", "other": "{n} tests are flaky"},
        "zh": "{n} 个测试结果不稳定",
    },
    "reason.no_tests": {"en": "no test was compared", "zh": "没有可比较的测试"},
    "reason.inconclusive": {"en": "No conclusion: {why}.", "zh": "无法得出结论：{why}。"},
    "reason.runner": {"en": "the runner reports {reason}", "zh": "运行器给出的原因为 {reason}"},
    "reason.unknown": {"en": "the runner gave no reason", "zh": "运行器未给出原因"},
    "list.sep": {"en": "; ", "zh": "；"},
    "sentence.sep": {"en": " ", "zh": ""},
    "period": {"en": ".", "zh": "。"},
    "kv": {"en": "{k}: {v}", "zh": "{k}：{v}"},
    "paren": {"en": "{a} ({b})", "zh": "{a}（{b}）"},
    "list.comma": {"en": ", ", "zh": "，"},
    "count.part": {"en": "{label}: {n}", "zh": "{label}：{n}"},
    # ---- counts and tables -------------------------------------------------------
    "col.category": {"en": "Category", "zh": "类别"},
    "col.count": {"en": "Count", "zh": "数量"},
    "col.test": {"en": "Test", "zh": "测试"},
    "col.a": {"en": "A", "zh": "A"},
    "col.b": {"en": "B", "zh": "B"},
    "col.a_time": {"en": "A time (s)", "zh": "A 耗时（秒）"},
    "col.b_time": {"en": "B time (s)", "zh": "B 耗时（秒）"},
    "col.signature": {"en": "Signature", "zh": "错误签名"},
    "col.note": {"en": "Note", "zh": "备注"},
    "col.diag_name": {"en": "Diagnostic arm", "zh": "诊断组"},
    "col.base": {"en": "Outcome in the base arm", "zh": "基准组结果"},
    "col.diag": {"en": "Outcome in the diagnostic arm", "zh": "诊断组结果"},
    "col.variable": {"en": "Variable", "zh": "变量"},
    "col.value": {"en": "Value", "zh": "取值"},
    "col.engine": {"en": "Engine", "zh": "引擎"},
    "col.prepack": {"en": "Prepack smoke test", "zh": "预打包冒烟测试"},
    "col.index": {"en": "#", "zh": "#"},
    "total": {"en": "Total", "zh": "合计"},
    "regressing": {"en": "regressing", "zh": "导致回归"},
    "no_differences": {
        "en": "No test differs between the arms and none fails in both.",
        "zh": "两组之间没有结果不同的测试，也没有在两组中均失败的测试。",
    },
    "absent": {"en": "absent", "zh": "不存在"},
    "sig.a": {"en": "A: {sig}", "zh": "A：{sig}"},
    "sig.b": {"en": "B: {sig}", "zh": "B：{sig}"},
    "note.in_both": {"en": "{what} in both", "zh": "两组均{what}"},
    "note.xfail_both": {"en": "expected failure in both", "zh": "两组均为预期失败"},
    "note.absent_both": {"en": "absent from both arms", "zh": "两组中均不存在"},
    "note.fails_in_b": {"en": "fails in B", "zh": "在 B 组中失败"},
    "note.module_skipped": {"en": "module skipped in {arm}", "zh": "{arm} 组中整个模块被跳过"},
    "note.was": {"en": "was {cat}", "zh": "原为{cat}"},
    "note.sequence": {"en": "{arm}: {runs}", "zh": "{arm} 组：{runs}"},
    "note.in_file": {"en": " (in file)", "zh": "（在文件中）"},
    "note.renamed": {"en": "renamed from {old} via --map", "zh": "经 --map 由 {old} 重命名而来"},
    "note.reruns": {"en": "reruns: {runs}", "zh": "重跑结果：{runs}"},
    "note.mapped": {"en": "mapped from {old}", "zh": "由 {old} 映射而来"},
    "note.signal": {"en": "signal {signal}", "zh": "信号 {signal}"},
    "note.subtests": {
        "en": {"one": "{n} failing subtest", "other": "{n} failing subtests"},
        "zh": "{n} 个子测试失败",
    },
    "tb.summary": {"en": "{nodeid}: A {a}, B {b}", "zh": "{nodeid}：A {a}，B {b}"},
    "tb.arm": {"en": "Arm {arm} ({outcome})", "zh": "{arm} 组（{outcome}）"},
    "tb.subtest": {"en": "Subtest {nodeid} ({outcome})", "zh": "子测试 {nodeid}（{outcome}）"},
    "tb.group_of": {
        "en": "{n} tests with {sig} (A {a}, B {b})",
        "zh": "{n} 个测试出现 {sig}（A {a}，B {b}）",
    },
    "tb.first_of": {
        "en": "Shown for {nodeid}; every test listed fails identically.",
        "zh": "以下为 {nodeid} 的信息；所列测试的失败完全相同。",
    },
    "tb.arm_both": {
        "en": "Arms A and B ({outcome}), identical signature",
        "zh": "A、B 两组（{outcome}），错误签名完全相同",
    },
    "tb.signature": {"en": "Full signature:", "zh": "完整错误签名："},
    "tests.n": {"en": {"one": "{n} test", "other": "{n} tests"}, "zh": "{n} 个测试"},
    "tests.group": {"en": "{head}: {prefix} {tests}", "zh": "{head}：{prefix} {tests}"},
    "tb.truncated": {"en": "... {n} characters omitted ...", "zh": "……省略 {n} 个字符……"},
    "tb.none": {"en": "(no traceback recorded)", "zh": "（未记录错误堆栈）"},
    "collection.error": {"en": "Arm {arm}, file {file}: {sig}", "zh": "{arm} 组，文件 {file}：{sig}"},
    "crashes": {"en": "Arm {arm} attributed crashes to: {tests}", "zh": "{arm} 组中导致崩溃的测试：{tests}"},
    # ---- HTML only -----------------------------------------------------------------
    "html.filter": {"en": "Filter", "zh": "筛选"},
    "html.filter_placeholder": {"en": "node id, outcome or signature", "zh": "节点 ID、结果或错误签名"},
    "html.all_categories": {"en": "All categories", "zh": "全部类别"},
    "html.shown": {"en": "{shown} of {total} tests shown", "zh": "显示 {shown} / {total} 个测试"},
    "html.sort_hint": {"en": "Click a column header to sort.", "zh": "点击列标题可排序。"},
    "html.same_as": {
        "en": "same failure as row {row} (a group of {n} tests)",
        "zh": "与第 {row} 行失败相同（共 {n} 个测试）",
    },
    "html.traceback": {"en": "traceback", "zh": "错误堆栈"},
    "html.nojs": {
        "en": "Sorting and filtering need JavaScript; the full table is shown below.",
        "zh": "排序和筛选需要 JavaScript；下方显示完整表格。",
    },
    # ---- diagnostics ---------------------------------------------------------------
    "diag.intro": {"en": "{name}: arm {base} rerun with {vars}.", "zh": "{name}：以 {vars} 重新运行 {base} 组。"},
    "diag.pair": {
        "en": {
            "one": "{n} test goes from {a} in arm {base} to {d} with {vars}",
            "other": "{n} tests go from {a} in arm {base} to {d} with {vars}",
        },
        "zh": "设置 {vars} 后，{base} 组中 {n} 个测试由“{a}”变为“{d}”",
    },
    "col.listed": {"en": "Listed in supported_engines", "zh": "是否列于 supported_engines"},
    "yes": {"en": "yes", "zh": "是"},
    "no": {"en": "no", "zh": "否"},
    "env.value_with_exe": {"en": "{version} ({exe})", "zh": "{version}（{exe}）"},
    "diag.none": {"en": "No outcome changes with {vars}.", "zh": "设置 {vars} 后没有任何测试结果发生变化。"},
    "diag.no_vars": {"en": "no variables", "zh": "无变量"},
    # ---- analysis ------------------------------------------------------------------
    "an.safe": {
        "en": {
            "one": "The change is safe: no test that passed in A fails, crashes, times out or disappears in B ({total} test compared).",
            "other": "The change is safe: no test that passed in A fails, crashes, times out or disappears in B ({total} tests compared).",
        },
        "zh": "改动是安全的：A 组中通过的测试在 B 组中没有出现新增失败、崩溃、超时或缺失（共比较 {total} 个测试）。",
    },
    "an.regression": {
        "en": {
            "one": "The change is not safe: {n} test regresses in B ({parts}): {tests}.",
            "other": "The change is not safe: {n} tests regress in B ({parts}): {tests}.",
        },
        "zh": "改动不安全：B 组中有 {n} 个测试出现回归（{parts}）：{tests}。",
    },
    "an.inconclusive": {"en": "Nothing is proven about the change: {why}.", "zh": "无法证明改动是否安全：{why}。"},
    "an.more": {"en": "and {n} more", "zh": "等另外 {n} 个"},
    "an.identical_sets": {
        "en": {
            "one": "Failure sets identical: the same {n} test fails in A and in B.",
            "other": "Failure sets identical: the same {n} tests fail in A and in B.",
        },
        "zh": "失败集合完全相同：A、B 两组中失败的都是同样的 {n} 个测试。",
    },
    "an.different_sets": {
        "en": "Failure sets differ: {a} failing in A, {b} failing in B.",
        "zh": "失败集合不同：A 组失败 {a} 个，B 组失败 {b} 个。",
    },
    "verb.failed": {"en": {"one": "fails", "other": "fail"}, "zh": "失败"},
    "verb.error": {"en": {"one": "errors", "other": "error"}, "zh": "报错"},
    "verb.crashed": {"en": {"one": "crashes", "other": "crash"}, "zh": "崩溃"},
    "verb.timeout": {"en": {"one": "times out", "other": "time out"}, "zh": "超时"},
    "an.not_the_change": {
        "en": "These tests fail identically without the change, so the change did not cause them:",
        "zh": "以下测试在未做改动时以完全相同的方式失败，因此并非此次改动引起：",
    },
    "cause.group.both": {
        "en": {"one": "{tests} {verb} in both arms with {sig}.", "other": "{tests} {verb} in both arms with {sig}."},
        "zh": "{tests} 在两组中均以 {sig} {verb}。",
    },
    "cause.group.b_changed": {
        "en": {
            "one": "{tests} fails in both arms, differently; in B it {verb} with {sig}.",
            "other": "{tests} fail in both arms, differently; in B they {verb} with {sig}.",
        },
        "zh": "{tests} 在两组中均失败但方式不同；在 B 组中以 {sig} {verb}。",
    },
    "cause.group.b_only": {
        "en": {"one": "{tests} {verb} in B only, with {sig}.", "other": "{tests} {verb} in B only, with {sig}."},
        "zh": "{tests} 仅在 B 组中以 {sig} {verb}。",
    },
    "cause.status.confirmed": {"en": "Cause confirmed", "zh": "原因已确认"},
    "cause.status.not-confirmed": {"en": "Cause not confirmed", "zh": "原因未得到证实"},
    "cause.status.suspected": {"en": "Probable cause, not yet confirmed", "zh": "可能的原因（尚未确认）"},
    "cause.status.unknown": {"en": "Cause unknown", "zh": "原因不明"},
    "cause.is": {"en": "{status}: {why}", "zh": "{status}：{why}"},
    "cause.unknown": {
        "en": "{status}: no entry of the cause table matches this failure.",
        "zh": "{status}：原因表中没有与此失败匹配的条目。",
    },
    "cause.evidence": {"en": "Evidence: {text}.", "zh": "证据：{text}。"},
    "cause.remedy": {"en": "Remedy: {text}", "zh": "解决办法：{text}"},
    "cause.ev.diag": {
        "en": {
            "one": "rerun with {vars} (arm {arm}, the code of arm {base}), {k} of {n} test passes",
            "other": "rerun with {vars} (arm {arm}, the code of arm {base}), {k} of {n} tests pass",
        },
        "zh": "设置 {vars} 后重新运行（{arm} 组，使用 {base} 组的代码），{n} 个测试中有 {k} 个通过",
    },
    "cause.ev.diag_pending": {
        "en": "not yet run: {cmd} reruns these tests with {vars}",
        "zh": "尚未运行：{cmd} 会设置 {vars} 重新运行这些测试",
    },
    "cause.ev.prepack_fails": {
        "en": "the environment probe's prepack smoke test of {engine} fails with {error}",
        "zh": "环境探测中 {engine} 的预打包冒烟测试以 {error} 失败",
    },
    "cause.ev.prepack_ok": {
        "en": "the environment probe's prepack smoke test passes for every engine",
        "zh": "环境探测中所有引擎的预打包冒烟测试均通过",
    },
    "cause.ev.prepack_unknown": {
        "en": "the environment probe has no prepack result",
        "zh": "环境探测中没有预打包测试结果",
    },
    "cause.ev.hwc_missing": {
        "en": "the environment probe found no HardwareClassification in torch {torch}",
        "zh": "环境探测发现 torch {torch} 中没有 HardwareClassification",
    },
    "cause.ev.hwc_present": {
        "en": "the environment probe found HardwareClassification in torch {torch}",
        "zh": "环境探测发现 torch {torch} 中有 HardwareClassification",
    },
    "cause.ev.hwc_unknown": {
        "en": "the environment probe could not tell whether torch {torch} has it",
        "zh": "环境探测无法确定 torch {torch} 中是否有它",
    },
    "cause.ev.import_missing": {
        "en": "the target interpreter cannot find {module}",
        "zh": "目标解释器中找不到 {module}",
    },
    "cause.ev.import_present": {
        "en": "the target interpreter finds {module}: the failure has another cause",
        "zh": "目标解释器中可以找到 {module}：失败另有原因",
    },
    "cause.ev.import_pending": {
        "en": "not yet checked: {cmd} looks {module} up in the target interpreter",
        "zh": "尚未检查：{cmd} 会在目标解释器中查找 {module}",
    },
    "an.env_clean": {
        "en": "No test fails identically in both arms: this run shows no pre-existing failure.",
        "zh": "没有在两组中以相同方式失败的测试：本次运行未发现既有失败。",
    },
    "an.different": {
        "en": {
            "one": "{n} test fails in both arms but with a different signature; the change may have altered how it fails: {tests}.",
            "other": "{n} tests fail in both arms but with different signatures; the change may have altered how they fail: {tests}.",
        },
        "zh": "{n} 个测试在两组中均失败，但错误签名不同，改动可能改变了其失败方式：{tests}。",
    },
    "an.similar": {
        "en": {
            "one": "{n} test fails in both arms with signatures that match only loosely (similar, not identical): {tests}.",
            "other": "{n} tests fail in both arms with signatures that match only loosely (similar, not identical): {tests}.",
        },
        "zh": "{n} 个测试在两组中均失败，错误签名仅大致相似（相似而非相同）：{tests}。",
    },
    "an.no_longer_run": {
        "en": {
            "one": "{n} test ran in A but is skipped or not run in B; it is not counted as fixed: {tests}.",
            "other": "{n} tests ran in A but are skipped or not run in B; they are not counted as fixed: {tests}.",
        },
        "zh": "{n} 个测试在 A 组中运行，但在 B 组中被跳过或未运行，不计为已修复：{tests}。",
    },
    "an.fixed": {
        "en": {
            "one": "{n} test fails in A and passes in B: {tests}.",
            "other": "{n} tests fail in A and pass in B: {tests}.",
        },
        "zh": "{n} 个测试在 A 组中失败、在 B 组中通过：{tests}。",
    },
    "an.flaky": {
        "en": {
            "one": "{n} test gave inconsistent results on alternating reruns: {tests}.",
            "other": "{n} tests gave inconsistent results on alternating reruns: {tests}.",
        },
        "zh": "{n} 个测试在交替重跑中结果不一致：{tests}。",
    },
    "an.broken_engine": {
        "en": "Quantized engine {engine} is listed in supported_engines but cannot prepack: {error}.",
        "zh": "量化引擎 {engine} 列在 supported_engines 中，但无法完成预打包：{error}。",
    },
    "an.no_hwc": {
        "en": "The target interpreter has no HardwareClassification: files that import it fail at import there.",
        "zh": "目标解释器中没有 HardwareClassification：导入它的文件在此环境中会在导入时失败。",
    },
    # ---- background ----------------------------------------------------------------
    "bg.intro": {
        "en": "The original test files (arm A: {a}) and the modified ones (arm B: {b}) ran in the same environment; per-test outcomes were compared.",
        "zh": "原始测试文件（A 组：{a}）与修改后的测试文件（B 组：{b}）在同一环境中运行，并逐个比较测试结果。",
    },
    "arm.git": {"en": "the files as committed at {ref}", "zh": "{ref} 版本中已提交的文件"},
    "arm.worktree": {"en": "the work tree, uncommitted changes included", "zh": "工作区中的文件（含未提交的改动）"},
    "arm.worktree_commit": {
        "en": "the work tree at commit {commit} (no uncommitted change among the files run)",
        "zh": "提交 {commit} 的工作区文件（所运行的文件中没有未提交的改动）",
    },
    "arm.dir": {"en": "directory {path}", "zh": "目录 {path}"},
    "arm.diag": {"en": "arm {base}'s files with {vars}", "zh": "{base} 组的文件，另设 {vars}"},
    "h.changes": {"en": "What changed", "zh": "改动内容"},
    "changes.stat": {"en": "git diff {ref} --stat:", "zh": "git diff {ref} --stat："},
    "col.file": {"en": "File", "zh": "文件"},
    "col.class": {"en": "Class", "zh": "类"},
    "col.label": {"en": "Label written", "zh": "写入的标签"},
    "col.torch_load": {"en": "torch.load edits", "zh": "torch.load 改动"},
    "changes.module_level": {"en": "(outside classes)", "zh": "（类之外）"},
    "changes.label_removed": {"en": "removed: {labels}", "zh": "删除：{labels}"},
    "changes.label_replaced": {"en": "{old} → {new}", "zh": "{old} → {new}"},
    "changes.imports": {"en": "Imports added: {imports}", "zh": "新增导入：{imports}"},
    "changes.other": {
        "en": "Changed without a label or torch.load edit: {files}",
        "zh": "有改动但不含标签或 torch.load 改动的文件：{files}",
    },
    "changes.none": {
        "en": "No difference from {ref} under the paths compared.",
        "zh": "所比较的路径下与 {ref} 没有差异。",
    },
    "changes.error": {"en": "The diff could not be read: {error}", "zh": "无法读取差异：{error}"},
    "bg.paths": {"en": "Paths: {paths}", "zh": "测试路径：{paths}"},
    "bg.base_ref": {"en": "Base revision: {ref}", "zh": "基准版本：{ref}"},
    "bg.started": {"en": "Started: {started}, duration {duration}", "zh": "开始时间：{started}，耗时 {duration}"},
    "bg.shard": {"en": "Shard: {shard}", "zh": "分片：{shard}"},
    "bg.python": {"en": "Target interpreter: {python}", "zh": "目标解释器：{python}"},
    "bg.tool": {
        "en": "Tool version: {tool}; signature normaliser version: {norm}",
        "zh": "工具版本：{tool}；错误签名归一化器版本：{norm}",
    },
    "bg.mapping": {"en": "Renamed tests (--map): {pairs}", "zh": "重命名的测试（--map）：{pairs}"},
    "bg.unset": {"en": "Unset in every arm: {names}", "zh": "在所有组中取消设置：{names}"},
    "bg.set": {"en": "Set in every arm: {pairs}", "zh": "在所有组中设置：{pairs}"},
    "bg.per_arm": {"en": "Set to a directory of each arm's own: {names}", "zh": "每组各自设置为独立目录：{names}"},
    "bg.env_unchanged": {"en": "The runner did not change the environment.", "zh": "运行器未修改环境。"},
    "seconds": {"en": "{s} s", "zh": "{s} 秒"},
    "unknown": {"en": "unknown", "zh": "未知"},
    "none": {"en": "none", "zh": "无"},
    # ---- environment ---------------------------------------------------------------
    "env.python": {"en": "Python", "zh": "Python"},
    "env.platform": {"en": "Platform", "zh": "平台"},
    "env.machine": {"en": "Architecture", "zh": "架构"},
    "env.torch": {"en": "torch", "zh": "torch"},
    "env.cpu_model": {"en": "CPU", "zh": "CPU 型号"},
    "env.cpu_flags": {"en": "CPU features used by the quantized engines", "zh": "量化引擎相关的 CPU 指令集"},
    "env.cores": {"en": "CPU cores", "zh": "CPU 核数"},
    "env.cores_value": {"en": "{n} ({usable} usable by this process)", "zh": "{n}（本进程可用 {usable}）"},
    "env.pytest": {"en": "pytest", "zh": "pytest"},
    "env.torch_git": {"en": "torch git version", "zh": "torch git 版本"},
    "env.cuda": {"en": "CUDA", "zh": "CUDA"},
    "env.rocm": {"en": "ROCm", "zh": "ROCm"},
    "env.xpu": {"en": "XPU", "zh": "XPU"},
    "env.mps": {"en": "MPS", "zh": "MPS"},
    "env.accelerator": {"en": "Current accelerator", "zh": "当前加速器"},
    "env.backends": {"en": "Out-of-tree backends", "zh": "外部设备后端"},
    "env.quantized_engine": {"en": "Quantized engine", "zh": "当前量化引擎"},
    "env.supported_engines": {"en": "Supported quantized engines", "zh": "支持的量化引擎"},
    "env.prepack": {"en": "Prepack smoke test", "zh": "预打包冒烟测试"},
    "env.hwc": {"en": "HardwareClassification", "zh": "HardwareClassification"},
    "env.variables": {"en": "Relevant variables", "zh": "相关环境变量"},
    "env.probe_error": {"en": "Probe error", "zh": "探测错误"},
    "env.available": {"en": "available", "zh": "可用"},
    "env.not_available": {"en": "not available", "zh": "不可用"},
    "env.hwc_missing": {
        "en": "missing: the modified files cannot import it on this interpreter",
        "zh": "缺失：修改后的文件在此解释器上无法导入它",
    },
    "env.prepack_ok": {"en": "ok", "zh": "正常"},
    "env.prepack_failed": {"en": "FAILED: {error}", "zh": "失败：{error}"},
    "env.prepack_warn": {
        "en": "{engine} is listed as supported but cannot prepack",
        "zh": "{engine} 列为受支持引擎，但无法完成预打包",
    },
    "env.none_set": {"en": "none set", "zh": "均未设置"},
    # ---- reproduction --------------------------------------------------------------
    "repro.intro": {
        "en": "{script}, written next to this report, runs each arm's pytest commands as the runner ran them: one "
        "process per test file, the same environment plus {fixed} (a rerun writes no bytecode); an arm from a "
        "commit is extracted from that commit into a temporary folder ({mktemp}, removed afterwards), an arm from "
        "the work tree or a directory runs there ({python} overrides the interpreter).",
        "zh": "与本报告一同写出的 {script} 按运行器的方式执行各组的 pytest 命令：每个测试文件一个进程，环境相同，另设 "
        "{fixed}（复跑时不写字节码）；来自某个提交的组会从该提交解压到临时目录（{mktemp}，结束后删除），来自工作区或"
        "目录的组直接在原处运行（可用 {python} 指定解释器）。",
    },
    "repro.arm": {"en": "Arm {arm}: {label}", "zh": "{arm} 组：{label}"},
    "repro.env": {"en": "Extra environment: {pairs}", "zh": "额外环境变量：{pairs}"},
    "repro.args": {"en": "Extra arguments: {args}", "zh": "额外参数：{args}"},
    "repro.not_run": {"en": "This arm could not run: {error}", "zh": "该组无法运行：{error}"},
    "repro.diag": {"en": "diagnostic, based on arm {base}", "zh": "诊断组，基于 {base} 组"},
    # ---- categories ------------------------------------------------------------------
    "cat.new-failure": {"en": "new failure", "zh": "新增失败"},
    "cat.crash": {"en": "crash", "zh": "崩溃"},
    "cat.timeout": {"en": "timeout", "zh": "超时"},
    "cat.missing-in-b": {"en": "missing in B", "zh": "B 组缺失"},
    "cat.no-longer-run": {"en": "no longer run", "zh": "不再运行"},
    "cat.xfail-to-xpass": {"en": "xfail to xpass", "zh": "预期失败变为意外通过"},
    "cat.xpass-to-xfail": {"en": "xpass to xfail", "zh": "意外通过变为预期失败"},
    "cat.different-failure": {"en": "different failure", "zh": "失败原因不同"},
    "cat.similar-failure": {"en": "similar failure", "zh": "失败原因相似"},
    "cat.flaky": {"en": "flaky", "zh": "结果不稳定"},
    "cat.inconclusive": {"en": "inconclusive (ran in neither arm)", "zh": "无法判定（两组均未运行）"},
    "cat.pre-existing": {"en": "pre-existing", "zh": "既有失败"},
    "cat.fixed": {"en": "fixed", "zh": "已修复"},
    "cat.newly-run": {"en": "newly run", "zh": "新增运行"},
    "cat.added-in-b": {"en": "added in B", "zh": "B 组新增"},
    "cat.same-skip": {"en": "same skip", "zh": "均跳过"},
    "cat.same-pass": {"en": "same pass", "zh": "均通过"},
    # ---- outcomes --------------------------------------------------------------------
    "out.passed": {"en": "passed", "zh": "通过"},
    "out.failed": {"en": "failed", "zh": "失败"},
    "out.error": {"en": "error", "zh": "错误"},
    "out.skipped": {"en": "skipped", "zh": "跳过"},
    "out.xfailed": {"en": "xfailed", "zh": "预期失败"},
    "out.xpassed": {"en": "xpassed", "zh": "意外通过"},
    "out.crashed": {"en": "crashed", "zh": "崩溃"},
    "out.timeout": {"en": "timeout", "zh": "超时"},
    "out.not-run": {"en": "not run", "zh": "未运行"},
}


STRINGS.update(i18n_coverage.STRINGS)
STRINGS.update(i18n_accounting.STRINGS)


def check_lang(lang: str) -> str:
    """Return `lang` when supported, else raise ValueError."""
    if lang not in LANGS:
        raise ValueError(f"unsupported report language {lang!r} (choose from {', '.join(LANGS)})")
    return lang


def template(key: str, lang: str, n: Any = None) -> str:
    """The raw template for `key` in `lang` (plural form picked by `n`)."""
    check_lang(lang)
    entry = STRINGS[key][lang]
    if isinstance(entry, dict):
        return entry["one"] if n == 1 else entry["other"]
    return entry


def t(key: str, lang: str, **fmt: Any) -> str:
    """Translate `key` into `lang` and format it with `fmt`."""
    text = template(key, lang, fmt.get("n"))
    return text.format(**fmt) if fmt else text


def category_label(category: str, lang: str) -> str:
    key = f"cat.{category}"
    return t(key, lang) if key in STRINGS else category


def outcome_label(outcome: str, lang: str) -> str:
    key = f"out.{outcome}"
    return t(key, lang) if key in STRINGS else outcome


def verdict_label(verdict: str, lang: str) -> str:
    key = f"verdict.{verdict}"
    return t(key, lang) if key in STRINGS else verdict
