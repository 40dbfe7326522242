"""PR_BODY.md: the pull-request description of one refactor branch.

Composed from two inputs only: the facts recorded in the branch's commit (`plan.CommitFacts`)
and the A/B result (`ABResult`, possibly loaded from a saved ab.json). The one-command path
(`decouple refactor`) and the split-machine path (`decouple pr-body --ab ab.json`) call the
same function with the same inputs, so their bodies are identical. The A/B part is built
from the report modules' public sentence functions (verdict line, analysis, environment
facts): one wording for the reports and the PR.
"""

from __future__ import annotations

import shlex

from codemod.ab.result.model import ABResult
from codemod.refactor import plan as _plan
from codemod.refactor.plan import TRACKING_ISSUE, CommitFacts
from codemod.report.ab import markdown as md
from codemod.report.ab.analysis import analysis
from codemod.report.ab.environment import environment_facts
from codemod.report.ab.facts import category_counts, interesting_tests, outcome_of, shown_signature, visible_controls
from codemod.report.ab.verdict import verdict_line
from codemod.report.shared.markdown import md_cell

# The tests table of the PR is compact: the full list and signatures live in the attached report.
MAX_ROWS = 20
MAX_SIGNATURE = 160

_S = {
    "en": {
        "summary": "Summary",
        "summary.text": "Adds `hw_classification` to {n} test class(es) in {files} file(s) of the test-decoupling "
        "refactor{loads}{grad}.",
        "summary.loads": ", makes {n} `torch.load` call(s) explicit",
        "summary.grad": " and removes {n} file(s) from the test linter allowlist",
        "summary.allowlist": "Removes {files} from the test linter allowlist ({allowlist}): every test class in it "
        "already carries a `hw_classification` the linter accepts, so the linter now checks it. No test source "
        "changes.",
        "changes": "Changes",
        "col.class": "Class",
        "col.value": "Value",
        "col.evidence": "Evidence",
        "loads": "`torch.load` calls (torch >= 2.6 loads with `weights_only=True` and refuses whole modules):",
        "load.line": "line {line}: {message}",
        "graduated": "Removed from {allowlist}: the linter now checks this file.",
        "restructured": "Restructured before labelling (each test's classes and devices before and after):",
        "col.test": "Test",
        "col.before": "Before",
        "col.after": "After",
        "map": "The A/B run compared each moved test with its old self under this test-id map "
        "(`test-map.json`, attached to this PR: `decouple refactor` writes it next to PR_BODY.md; "
        "for `decouple ab --map-file`):",
        "no.labels": "No class needed a label (already labelled).",
        "manual": "Still needs manual work",
        "manual.none": "None: every test class in these files carries a label the linter accepts.",
        "manual.item": "{where} (line {line}): {reason}",
        "manual.fits": "fitting restructuring: {fits}",
        "manual.runtime": "{where}: {classes} run unclassified at run time (the source labels {labelled}): the "
        "allowlist entry is removed, but PyTorch's `--hw-classification` filter drops these tests",
        "plan": "Test Plan",
        "plan.text": "Each file as its tree runs it, then the A/B comparison of the original and the modified "
        "files (same interpreter, per-test outcomes compared):",
        "plan.ran": "What each command printed when the A/B run ran it in B:",
        "plan.result": "{file}: {summary} (exit {rc})",
        "plan.not_run": "{file}: {note}",
        "plan.pending": "The A/B run with `--test-plan` runs each file's command in B and lists it here with what it "
        "printed.",
        "ab": "A/B verification",
        "ab.pending": "Not run yet: run the `decouple ab` command above on the machine that matters, then "
        "`decouple pr-body --ab ab.json` writes the verdict here.",
        "ab.more": "… and {n} more in the attached report.",
        "ab.none": "No test differs between the arms, and none fails in both.",
        "analysis": "Cause analysis",
        "environment": "Environment",
        "tracking": "Part of the test-decoupling effort tracked in {issue}.",
        "rules": "The labels follow the {rules} rules of the test linter (`tools/linter/adapters/test_linter.py`).",
    },
    "zh": {
        "summary": "概要",
        "summary.text": "为测试解耦重构在 {files} 个文件中的 {n} 个测试类添加 `hw_classification`{loads}{grad}。",
        "summary.loads": "，将 {n} 处 `torch.load` 调用改为显式",
        "summary.grad": "，并将 {n} 个文件移出测试 linter 白名单",
        "summary.allowlist": "将 {files} 移出测试 linter 白名单（{allowlist}）：其中每个测试类都已带有 linter 接受的 "
        "`hw_classification`，linter 现在会检查它。测试源码没有改动。",
        "changes": "改动",
        "col.class": "测试类",
        "col.value": "取值",
        "col.evidence": "依据",
        "loads": "`torch.load` 调用（torch >= 2.6 默认 `weights_only=True`，拒绝加载完整模块）：",
        "load.line": "第 {line} 行：{message}",
        "graduated": "已从 {allowlist} 中移除：linter 现在检查此文件。",
        "restructured": "添加标签前先做了重构（每个测试前后所在的类与设备）：",
        "col.test": "测试",
        "col.before": "之前",
        "col.after": "之后",
        "map": "A/B 运行按以下测试 ID 映射把每个移动过的测试与其原测试比较（`test-map.json`，作为附件随本 PR "
        "提供：`decouple refactor` 将其写在 PR_BODY.md 旁边；供 `decouple ab --map-file` 使用）：",
        "no.labels": "没有需要添加标签的类（已有标签）。",
        "manual": "仍需人工处理",
        "manual.none": "无：这些文件中的每个测试类都带有 linter 接受的标签。",
        "manual.item": "{where}（第 {line} 行）：{reason}",
        "manual.fits": "适用的重构方式：{fits}",
        "manual.runtime": "{where}：{classes} 在运行时未分类（源码中带标签的是 {labelled}）：白名单条目已移除，"
        "但 PyTorch 的 `--hw-classification` 过滤会丢弃这些测试",
        "plan": "测试计划",
        "plan.text": "按目录树的方式运行每个文件，然后用同一解释器对比原始文件与修改后文件（逐个测试比较结果）：",
        "plan.ran": "A/B 运行在 B 组中执行各命令时的输出：",
        "plan.result": "{file}：{summary}（退出码 {rc}）",
        "plan.not_run": "{file}：{note}",
        "plan.pending": "带 `--test-plan` 的 A/B 运行会在 B 组中执行每个文件的命令，并在此列出其输出。",
        "ab": "A/B 验证",
        "ab.pending": "尚未运行：请在目标机器上运行上面的 `decouple ab` 命令，然后用 "
        "`decouple pr-body --ab ab.json` 把结论写入此处。",
        "ab.more": "…… 另有 {n} 项见附带的报告。",
        "ab.none": "两组之间没有差异的测试，也没有两组都失败的测试。",
        "analysis": "原因分析",
        "environment": "环境信息",
        "tracking": "属于测试解耦工作的一部分，跟踪 issue：{issue}。",
        "rules": "标签遵循测试 linter（`tools/linter/adapters/test_linter.py`）的 {rules} 规则。",
    },
}


def ab_command(facts: CommitFacts, result: ABResult | None, files: list[str]) -> str:
    """The `decouple ab` invocation that verifies this branch (checked out) against its base."""
    args = ["decouple", "ab", *files, "--base", facts.base[:12]]
    if result is not None and result.python:
        args += ["--python", result.python]
    a = result.arm("A") if result is not None else None
    for k, v in sorted((a.env_added if a else {}).items()):
        args += ["--env", f"{k}={v}"]
    for d in result.diagnostics if result is not None else []:
        name = d.name if d.based_on == "A" else f"{d.name}@{d.based_on}"
        args += ["--diag", f"{name}:" + ",".join(f"{k}={v}" for k, v in d.variables.items())]
    if any(p.moves for p in facts.files):
        args += ["--map-file", "test-map.json"]
    args += ["--test-plan", "--markdown", "ab.md", "--html", "ab.html", "--json", "ab.json"]
    return " ".join(shlex.quote(x) for x in args)


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    return lines + ["| " + " | ".join(md_cell(c) for c in row) + " |" for row in rows]


def _signature(c, f: md.MarkdownFmt) -> str:
    sig = shown_signature(c.b) or shown_signature(c.a)
    return f.code(sig if len(sig) <= MAX_SIGNATURE else sig[: MAX_SIGNATURE - 1] + "…")


def _ab_section(result: ABResult, f: md.MarkdownFmt, s: dict) -> list[str]:
    lines = [f"## {s['ab']}", "", verdict_line(result, f), ""]
    lines += md.lead(result, f) + [""]
    counts = category_counts(result)
    lines += _table([f.say("col.category"), f.say("col.count")], [[f.category(c), str(n)] for c, n in counts.items()])
    tests = interesting_tests(result)
    lines.append("")
    if tests:
        lines += _table(
            [f.say("col.test"), f.say("col.a"), f.say("col.b"), f.say("col.category"), f.say("col.signature")],
            [
                [
                    f.code(c.nodeid),
                    f.outcome(outcome_of(c.a)),
                    f.outcome(outcome_of(c.b)),
                    f.category(c.category),
                    _signature(c, f),
                ]
                for c in tests[:MAX_ROWS]
            ],
        )
        if len(tests) > MAX_ROWS:
            lines += ["", s["ab.more"].format(n=len(tests) - MAX_ROWS)]
    else:
        lines.append(s["ab.none"])
    lines += ["", f"### {s['analysis']}"]
    for kind, content in analysis(result, f):
        lines.append("")
        if kind == "h":
            lines.append(f"**{content}**")
        elif kind == "p":
            lines.append(content)  # type: ignore[arg-type]
        else:
            lines += [f"- {item}" for item in content]
    lines += ["", f"## {s['environment']}", ""]
    lines += [
        "- " + f.say("kv", k=f.strong(label), v=value) for label, value in environment_facts(result.environment, f)
    ]
    return lines


def _summary(facts: CommitFacts, f: md.MarkdownFmt, s: dict) -> list[str]:
    files = [p.path for p in facts.files]
    graduated = [p for p in facts.files if p.graduated_from]
    if facts.files and all(p.allowlist_only for p in facts.files):
        text = s["summary.allowlist"].format(files=f.codes(files), allowlist=f.code(graduated[0].graduated_from))
    else:
        loads = sum(len(p.loads) for p in facts.files)
        text = s["summary.text"].format(
            n=sum(len(p.labels) for p in facts.files),
            files=len(files),
            loads=s["summary.loads"].format(n=loads) if loads else "",
            grad=s["summary.grad"].format(n=len(graduated)) if graduated else "",
        )
    return [f"## {s['summary']}", "", text, "", s["tracking"].format(issue=TRACKING_ISSUE)] + (
        [s["rules"].format(rules=facts.rules)] if facts.rules else []
    )


def _changes(facts: CommitFacts, f: md.MarkdownFmt, s: dict) -> list[str]:
    lines = ["", f"## {s['changes']}"]
    for p in facts.files:
        lines += ["", f"### {f.code(p.path)}", ""]
        if p.labels:
            lines += _table(
                [s["col.class"], s["col.value"], s["col.evidence"]],
                [[f"{f.code(c.cls)} (L{c.line})", f.code(c.value), f.text(c.evidence)] for c in p.labels],
            )
        else:
            lines.append(s["no.labels"])
        if p.loads:
            lines += ["", s["loads"], ""]
            lines += ["- " + s["load.line"].format(line=e.line, message=f.text(e.message)) for e in p.loads]
        if p.restructured or p.moves:
            lines += ["", s["restructured"], ""]
            lines += [f"- {f.text(r)}" for r in p.restructured]
            if p.moves:
                lines += [""] + _table(
                    [s["col.test"], s["col.before"], s["col.after"]],
                    [
                        [
                            f.code(m.test),
                            f"{f.code(m.old_class)}: {', '.join(m.before)}",
                            f"{f.code(m.new_class)}: {', '.join(m.after)}",
                        ]
                        for m in p.moves
                    ],
                )
        if p.graduated_from:
            lines += ["", s["graduated"].format(allowlist=f.code(p.graduated_from))]
    return lines


def _manual(facts: CommitFacts, result: ABResult | None, f: md.MarkdownFmt, s: dict) -> list[str]:
    """What a human still has to do: the classes no label fits, and (from the A/B run) the
    files whose tests run unclassified although their source is labelled."""
    lines = ["", f"## {s['manual']}", ""]
    manual = [(p, m) for p in facts.files for m in p.manual]
    runtime = result.runtime if result is not None else []
    if not manual and not runtime:
        lines.append(s["manual.none"])
    for p, m in manual:
        item = s["manual.item"].format(where=f.code(f"{p.path}::{m.cls}"), line=m.line, reason=f.text(m.reason))
        lines.append(f"- {item}")
        if m.fits:
            lines.append("  " + s["manual.fits"].format(fits=f.text(m.fits)))
    for r in runtime:
        item = s["manual.runtime"].format(
            where=f.code(r.file), classes=f.codes(r.classes), labelled=f.codes(r.labelled)
        )
        lines.append(f"- {item}")
    return lines


def _test_plan(facts: CommitFacts, result: ABResult | None, f: md.MarkdownFmt, s: dict) -> list[str]:
    """The commands that run each file as its tree runs it (those the A/B run ran in B, with
    what they printed), then the A/B command."""
    files = [p.path for p in facts.files]
    runs = [r for r in (result.test_plan if result is not None else []) if r.file in files]
    lines = ["", f"## {s['plan']}", "", s["plan.text"], "", "```sh"]
    lines += [r.command for r in runs]
    lines += [ab_command(facts, result, files), "```", ""]
    if runs:
        lines += [s["plan.ran"], ""]
        for r in runs:
            if r.returncode is None:
                lines.append("- " + s["plan.not_run"].format(file=f.code(r.file), note=f.text(r.note)))
            else:
                summary = f.codes(r.summary.splitlines()) or f.text("(no summary line)")
                lines.append("- " + s["plan.result"].format(file=f.code(r.file), summary=summary, rc=r.returncode))
        lines.append("")
    else:
        lines += [s["plan.pending"], ""]
    mapping = result.mapping if result is not None else _plan.test_map(facts.files)
    if any(p.moves for p in facts.files) and mapping:
        lines += [s["map"], ""] + [f"- {f.code(old)} → {f.code(new)}" for old, new in mapping.items()] + [""]
    return lines


def compose(facts: CommitFacts, result: ABResult | None, lang: str = "en") -> str:
    """The PR body in `lang` ("en" or "zh"). Without an A/B result the verification section
    says how to produce one."""
    s = _S[lang]
    f = md.MarkdownFmt(lang)
    lines = _summary(facts, f, s) + _changes(facts, f, s) + _manual(facts, result, f, s)
    lines += _test_plan(facts, result, f, s)
    if result is not None:
        lines += _ab_section(result, f, s)
    else:
        lines += [f"## {s['ab']}", "", s["ab.pending"]]
    return visible_controls("\n".join(lines)).rstrip() + "\n"
