"""The sentences of the PR body, in English and Chinese: one table, so both bodies say the same."""

from __future__ import annotations

_S: dict[str, dict[str, str | dict[str, str]]] = {
    "en": {
        "summary": "Summary",
        "summary.text": "Adds `hw_classification` to {classes} in {files}{loads}{grad}.",
        "summary.loads": {
            "one": ", makes {n} `torch.load` call explicit",
            "other": ", makes {n} `torch.load` calls explicit",
        },
        "summary.grad": " and removes {which} from the test linter allowlist",
        "summary.allowlist": "Removes {files} from the test linter allowlist ({allowlist}), so that the linter checks "
        "{them} too. No test source changes.",
        "summary.labelled": "Every test class in {files} already carries a `hw_classification` the linter accepts.",
        "tracking": "Part of the test-decoupling effort tracked in {issue}.",
        "rules": " The labels follow the {rules} rules of the test linter (`tools/linter/adapters/test_linter.py`).",
        "classes": {"one": "{n} test class", "other": "{n} test classes"},
        "files": {"one": "{n} file", "other": "{n} files"},
        "which.one": "it",
        "which.all": "them",
        "which.some": "{n} of them",
        "changes": "Changes",
        "col.file": "File",
        "col.class": "Class",
        "col.value": "Value",
        "col.evidence": "Evidence",
        "no.labels": "No class needed a label.",
        "load": "{file} line {line}: `torch.load` {message}",
        "restructured": "{file}: restructured before labelling: {what}",
        "moves": "Tests moved by the restructuring (classes and devices before and after):",
        "col.test": "Test",
        "col.before": "Before",
        "col.after": "After",
        "graduated": "Removed from {allowlist}: {files}.",
        "no_class": "{files}: no test class, nothing for the linter to reject.",
        "manual": "Still needs manual work",
        "manual.item": "{where} (line {line}): {reason}",
        "manual.fits": "fitting restructuring: {fits}",
        "manual.runtime": "{where}: {classes} run unclassified at run time (the source labels {labelled}): the "
        "allowlist entry is removed, but PyTorch's `--hw-classification` filter drops these tests",
        "plan": "Test Plan",
        "plan.text": "Each file as its tree runs it; what each printed when the A/B run below ran it in the "
        "modified tree:",
        "plan.not_run": "not run: {note}",
        "plan.pending": "The A/B run (`decouple ab --test-plan`) runs each file as its tree runs it, in the modified "
        "tree, and lists each command here with what it printed.",
        "verified": "How this was verified",
        "verified.intro": "An A/B run: the original (A) and the modified (B) files in one interpreter, every test's "
        "outcome compared.",
        "verified.weaker": "Verdict: **{verdict}**. {files}. The run as a whole says {run}: {reason}.",
        "verified.command": "To repeat it, with this branch checked out (`HEAD~1` is its base, {base}): {command}",
        "verified.no_command": "The run compared each moved test with its old self through a test-id map "
        "(`test-map.json`, written next to this body by `decouple refactor`; not part of this PR), so no "
        "command is given here.",
        "verified.pending": "Not run yet. With this branch checked out, `decouple ab` on the machine that matters, "
        "then `decouple pr-body --ab ab.json`, writes the verdict here:",
        "verified.nothing": "Nothing to run: no test source changes, and no test class in {files}.",
        "not_exercised": "Not exercised here (their tests ran in neither arm):",
        "more": "… and {n} more in the attached report.",
        "none": "No test differs between the arms, and none fails in both.",
        "environment": "Environment",
        "not_available": "Not available",
    },
    "zh": {
        "summary": "概要",
        "summary.text": "为 {files}中的 {classes}添加 `hw_classification`{loads}{grad}。",
        "summary.loads": "，将 {n} 处 `torch.load` 调用改为显式",
        "summary.grad": "，并将{which}移出测试 linter 白名单",
        "summary.allowlist": "将 {files} 移出测试 linter 白名单（{allowlist}），使 linter 也检查{them}。"
        "测试源码没有改动。",
        "summary.labelled": "{files} 中的每个测试类都已带有 linter 接受的 `hw_classification`。",
        "tracking": "属于测试解耦工作的一部分，跟踪 issue：{issue}。",
        "rules": "标签遵循测试 linter（`tools/linter/adapters/test_linter.py`）的 {rules} 规则。",
        "classes": "{n} 个测试类",
        "files": "{n} 个文件",
        "which.one": "该文件",
        "which.all": "这些文件",
        "which.some": "其中 {n} 个文件",
        "changes": "改动",
        "col.file": "文件",
        "col.class": "测试类",
        "col.value": "取值",
        "col.evidence": "依据",
        "no.labels": "没有需要添加标签的类。",
        "load": "{file} 第 {line} 行：`torch.load` {message}",
        "restructured": "{file}：添加标签前先做了重构：{what}",
        "moves": "重构移动的测试（前后所在的类与设备）：",
        "col.test": "测试",
        "col.before": "之前",
        "col.after": "之后",
        "graduated": "已从 {allowlist} 中移除：{files}。",
        "no_class": "{files}：没有测试类，linter 原样接受。",
        "manual": "仍需人工处理",
        "manual.item": "{where}（第 {line} 行）：{reason}",
        "manual.fits": "适用的重构方式：{fits}",
        "manual.runtime": "{where}：{classes} 在运行时未分类（源码中带标签的是 {labelled}）：白名单条目已移除，"
        "但 PyTorch 的 `--hw-classification` 过滤会丢弃这些测试",
        "plan": "测试计划",
        "plan.text": "按目录树的方式运行每个文件；下面的 A/B 运行在修改后的目录树中执行各命令时的输出：",
        "plan.not_run": "未运行：{note}",
        "plan.pending": "A/B 运行（`decouple ab --test-plan`）会在修改后的目录树中按目录树的方式运行每个文件，"
        "并在此列出"
        "每条命令及其输出。",
        "verified": "验证方式",
        "verified.intro": "A/B 运行：原始文件（A）与修改后的文件（B）在同一解释器中运行，逐个测试比较结果。",
        "verified.weaker": "结论：**{verdict}**。{files}。整体运行结果为 {run}：{reason}。",
        "verified.command": "如需重复，检出此分支后运行（`HEAD~1` 即其基线 {base}）：{command}",
        "verified.no_command": "该运行按测试 ID 映射（`test-map.json`，由 `decouple refactor` 写在本文旁边，不属于本 "
        "PR）把每个移动过的测试与其原测试比较，因此这里不给出命令。",
        "verified.pending": "尚未运行。检出此分支后在目标机器上运行 `decouple ab`，"
        "再用 `decouple pr-body --ab ab.json` "
        "把结论写入此处：",
        "verified.nothing": "无需运行：测试源码没有改动，且 {files} 没有测试类。",
        "not_exercised": "本机未覆盖（两组中都没有运行其测试）：",
        "more": "…… 另有 {n} 项见附带的报告。",
        "none": "两组之间没有差异的测试，也没有两组都失败的测试。",
        "environment": "环境信息",
        "not_available": "不可用",
    },
}


def say(lang: str, key: str, n: int | None = None, **args: object) -> str:
    """The sentence `key` in `lang`, filled with `args` (and `n`, which picks the plural form)."""
    entry = _S[lang][key]
    if isinstance(entry, dict):
        entry = entry["one" if n == 1 else "other"]
    return entry.format(n=n, **args)
