"""English and Chinese strings of what the A/B reports lead with and what the diff between
the arms says: coverage (coverage-lost, not-run-here, deselected), the counts side by
side, the runtime census, the label filter, the devices not exercised, the structure of
the diff.  Merged into `i18n.STRINGS` (one table, one lookup)."""

from __future__ import annotations

STRINGS: dict[str, dict[str, str | dict[str, str]]] = {
    # ---- categories and outcomes ----------------------------------------------------
    "cat.incomplete": {"en": "incomplete in B", "zh": "B 组中未完成"},
    "cat.coverage-lost": {"en": "coverage lost", "zh": "覆盖丢失"},
    "cat.not-run-here": {"en": "not run here (device missing)", "zh": "本机未运行（缺少设备）"},
    "out.deselected": {"en": "deselected", "zh": "未选中"},
    "out.incomplete": {"en": "incomplete", "zh": "未完成"},
    # ---- the counts side by side ------------------------------------------------------
    "h.totals": {"en": "Counts, A and B side by side", "zh": "A、B 两组数量对比"},
    "col.totals": {"en": "Tests", "zh": "测试"},
    "col.delta": {"en": "B − A", "zh": "B − A"},
    "tot.collected": {"en": "collected", "zh": "收集"},
    "tot.run": {"en": "run", "zh": "运行"},
    "tot.passed": {"en": "passed", "zh": "通过"},
    "tot.failed": {"en": "failed", "zh": "失败"},
    "tot.errors": {"en": "errors", "zh": "错误"},
    "tot.skipped": {"en": "skipped", "zh": "跳过"},
    "tot.xfailed": {"en": "xfailed", "zh": "预期失败"},
    "tot.xpassed": {"en": "xpassed", "zh": "意外通过"},
    "tot.deselected": {"en": "deselected", "zh": "未选中"},
    "tot.not_run": {"en": "not run", "zh": "未运行"},
    "tot.incomplete": {"en": "incomplete", "zh": "未完成"},
    # ---- the census --------------------------------------------------------------------
    "census.intro": {
        "en": "The {attr} each test's class carries when it runs (the census):",
        "zh": "每个测试所属类在运行时的 {attr}（运行时普查）：",
    },
    "census.arm": {
        "en": {"one": "{arm}: {n} test, {parts}", "other": "{arm}: {n} tests, {parts}"},
        "zh": "{arm} 组：{n} 个测试，{parts}",
    },
    "census.part": {"en": "{label} {n}", "zh": "{label} {n}"},
    "census.unclassified": {"en": "unclassified", "zh": "未分类"},
    "census.invalid": {"en": "not a member", "zh": "非法取值"},
    "runtime.line": {
        "en": {
            "one": "⚠️ {file}: {n} test of {classes} carries no {attr} when it runs (the source labels "
            "{labelled}): PyTorch's {option} filter drops it.",
            "other": "⚠️ {file}: {n} tests of {classes} carry no {attr} when they run (the source labels "
            "{labelled}): PyTorch's {option} filter drops them.",
        },
        "zh": "⚠️ {file}：{classes} 中的 {n} 个测试在运行时没有 {attr}（源码中带标签的是 {labelled}）："
        "PyTorch 的 {option} 过滤会丢弃它们。",
    },
    # ---- the label filter ----------------------------------------------------------------
    "filter.intro": {
        "en": "B's labelled files under PyTorch's own label filter ({option}, offered by the tree's conftest.py):",
        "zh": "B 组中带标签的文件在 PyTorch 自带的标签过滤（{option}，由目录树中的 conftest.py 提供）下的运行结果：",
    },
    "filter.line": {
        "en": "{file} with {values}: {selected} of {total} tests selected, {passed} passed, "
        "{unclassified} unclassified, {mismatched} mismatched",
        "zh": "{file}（{values}）：{total} 个测试中选中 {selected} 个，通过 {passed} 个，未分类 {unclassified} 个，"
        "不匹配 {mismatched} 个",
    },
    "filter.error": {
        "en": "{file} with {values}: the filtered run failed: {error}",
        "zh": "{file}（{values}）：过滤运行失败：{error}",
    },
    # ---- what the run did not show -----------------------------------------------------
    "reason.not_exercised": {"en": "not exercised on this machine: {devices}", "zh": "本机未覆盖的设备：{devices}"},
    "reason.runtime": {
        "en": {"one": "{n} test runs unclassified", "other": "{n} tests run unclassified"},
        "zh": "{n} 个测试在运行时未分类",
    },
    "reason.not_run_here": {
        "en": {
            "one": "{n} test that ran in A moved to a device this machine lacks ({devices})",
            "other": "{n} tests that ran in A moved to a device this machine lacks ({devices})",
        },
        "zh": "A 组中运行过的 {n} 个测试被移到了本机没有的设备（{devices}）上",
    },
    "an.safe_here": {
        "en": {
            "one": "On this machine's devices the change is safe: no test that passed in A fails, crashes, times out "
            "or disappears in B ({total} test compared).",
            "other": "On this machine's devices the change is safe: no test that passed in A fails, crashes, times "
            "out or disappears in B ({total} tests compared).",
        },
        "zh": "在本机的设备上改动是安全的：A 组中通过的测试在 B 组中没有出现新增失败、崩溃、超时或缺失"
        "（共比较 {total} 个测试）。",
    },
    "an.not_exercised": {
        "en": "Not exercised on this machine: {devices}. The device set of {classes} widened in B; this run shows "
        "nothing about those devices.",
        "zh": "本机未覆盖的设备：{devices}。B 组中 {classes} 的设备集合被扩大，本次运行无法证明这些设备上的结果。",
    },
    "an.not_run_here": {
        "en": {
            "one": "{n} test that ran in A moved to a device this machine lacks ({devices}); run it where the device "
            "is: {tests}.",
            "other": "{n} tests that ran in A moved to a device this machine lacks ({devices}); run them where the "
            "device is: {tests}.",
        },
        "zh": "A 组中运行过的 {n} 个测试被移到了本机没有的设备（{devices}）上，请在有该设备的机器上运行：{tests}。",
    },
    "an.coverage_lost": {
        "en": {
            "one": "{n} test that ran in A does not run in B (skipped, deselected or no longer collected): {tests}.",
            "other": "{n} tests that ran in A do not run in B (skipped, deselected or no longer collected): {tests}.",
        },
        "zh": "A 组中运行过的 {n} 个测试在 B 组中不再运行（被跳过、未选中或不再被收集）：{tests}。",
    },
    # ---- the structure of the diff -----------------------------------------------------------
    "changes.inst": {
        "en": "{cls} in {file}: instantiated with {before} in A, {after} in B; devices {was} → {now}",
        "zh": "{file} 中的 {cls}：A 组以 {before} 实例化，B 组以 {after} 实例化；设备 {was} → {now}",
    },
    "changes.inst_widened": {"en": " (widened: {devices})", "zh": "（扩大：{devices}）"},
    "changes.inst_added": {
        "en": "{cls} in {file}: instantiated in B only, with {after}; devices {now}",
        "zh": "{file} 中的 {cls}：仅在 B 组中实例化，参数 {after}；设备 {now}",
    },
    "changes.inst_removed": {
        "en": "{cls} in {file}: no longer instantiated in B (A: {before}; devices {was})",
        "zh": "{file} 中的 {cls}：B 组中不再实例化（A 组：{before}；设备 {was}）",
    },
    "changes.devices_unknown": {"en": "unknown", "zh": "未知"},
    "changes.moved": {"en": "Tests moved in {file}: {moves}", "zh": "{file} 中移动的测试：{moves}"},
    "changes.move": {"en": "{test}: {old} → {new}", "zh": "{test}：{old} → {new}"},
    "changes.imports_extended": {"en": "Imports extended: {imports}", "zh": "扩展的导入：{imports}"},
}
