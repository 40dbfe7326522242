"""English and Chinese strings of what makes a verdict fail closed: an arm's session whose own
pytest account disagrees with the events (`acc.*`, one per `AccountIssue`), a device set B
narrows (`narrowed.*`), the shards a merge lacks.  Merged into `i18n.STRINGS`.

The runner's own English sentences (the result's `verdict_reason`) are
`codemod.ab.comparison.accounting.describe` and `compare.narrowed_text`; these say the same in
each report language.
"""

from __future__ import annotations

STRINGS: dict[str, dict[str, str | dict[str, str]]] = {
    # ---- pytest's own account of a session (codemod.ab.comparison.accounting) ----------------------
    "acc.stopped": {
        "en": "arm {arm}: pytest's session of {files} was ended early by {by} (exit status {status})",
        "zh": "{arm} 组：pytest 对 {files} 的会话被 {by} 提前结束（退出状态 {status}）",
    },
    "acc.stopped_tests": {
        "en": {"one": ": {n} test incomplete", "other": ": {n} tests incomplete"},
        "zh": "：{n} 个测试未完成",
    },
    "acc.no-test-ran": {
        "en": "arm {arm}: pytest reports 0 tests run of the {n} it collected in {files}",
        "zh": "{arm} 组：pytest 在 {files} 中收集了 {n} 个测试，报告运行了 0 个",
    },
    "acc.outcomes-differ": {"en": "arm {arm}: {counts} ({files})", "zh": "{arm} 组：{counts}（{files}）"},
    "acc.count": {
        "en": "pytest reports {p} {name}, the events {e}",
        "zh": "pytest 报告 {name} {p} 个，事件记录为 {e} 个",
    },
    "acc.collected-differs": {
        "en": "arm {arm}: pytest collected {p} tests in {files}, the events {e}",
        "zh": "{arm} 组：pytest 在 {files} 中收集了 {p} 个测试，事件记录为 {e} 个",
    },
    "acc.failures-unseen": {
        "en": "arm {arm}: pytest counted {p} failures in {files}, the events none",
        "zh": "{arm} 组：pytest 在 {files} 中计有 {p} 个失败，事件记录中没有",
    },
    "acc.no-account": {
        "en": "arm {arm}: no account of pytest's session of {files} ({why})",
        "zh": "{arm} 组：pytest 对 {files} 的会话没有留下自身的统计（{why}）",
    },
    "acc.unreadable": {"en": "it could not be read", "zh": "无法读取"},
    "acc.no-reporter": {
        "en": "arm {arm}: pytest ran {files} without its terminal reporter ({option}): its counts were not compared",
        "zh": "{arm} 组：pytest 运行 {files} 时未加载终端报告插件（{option}），无法比对其统计",
    },
    "acc.exited-after-end": {
        "en": "arm {arm}: the process of {files} ended with {status} after pytest's session ended with exit status "
        "{session}",
        "zh": "{arm} 组：pytest 对 {files} 的会话以退出状态 {session} 结束后，进程以 {status} 结束",
    },
    "acc.more": {
        "en": {"one": " (and {n} more session)", "other": " (and {n} more sessions)"},
        "zh": "（另有 {n} 个会话）",
    },
    "acc.files_more": {"en": "{files} and {n} more", "zh": "{files} 等（另有 {n} 个）"},
    # ---- a device set B narrows (codemod.ab.arms.structure) -------------------------------------------
    "reason.narrowed": {"en": "coverage lost on other machines: {what}", "zh": "其他机器上的覆盖丢失：{what}"},
    "narrowed.instantiation": {
        "en": "{what} ({file}) no longer instantiated for: {devices}",
        "zh": "{what}（{file}）不再为以下设备实例化：{devices}",
    },
    "narrowed.decorator": {
        "en": "{what} ({file}) no longer run for: {devices}",
        "zh": "{what}（{file}）不再在以下设备上运行：{devices}",
    },
    "narrowed.label": {
        "en": "{what} ({file}) no longer labelled for: {devices}",
        "zh": "{what}（{file}）的标签不再涵盖以下设备：{devices}",
    },
    "changes.narrowed": {
        "en": "{what} in {file} runs on fewer devices in B ({before} in A, {after} in B): no longer on {devices}",
        "zh": "{file} 中的 {what} 在 B 组中运行的设备变少（A 组：{before}，B 组：{after}）：不再在 {devices} 上运行",
    },
    "changes.narrowed_mapped": {
        "en": "; {option} says where they went: {entry}",
        "zh": "；{option} 指明了去向：{entry}",
    },
    # ---- ab merge (codemod.ab.comparison.merge) ------------------------------------------------------
    "reason.missing_shards": {"en": "shards missing: {shards}", "zh": "缺少分片：{shards}"},
}
