"""The A/B runner's warnings: structured notices and the one catalogue of their texts.

A `Notice` is a code from `CATALOGUE` with its parameters, so every view renders it in
its own language: the reports in English or Chinese, the terminal in English. The runner
never writes warning prose of its own; every sentence it can say is here, in both
languages.

Template conventions (shared with the cause table, `codemod.ab.comparison.causes`):
  - a span in backticks is code: a path, an id, an option, raw error output. Its text
    stays as it is in every language, and the Markdown/HTML reports format it as code;
  - `{name}` outside backticks is a parameter shown as text (a number, or a legacy
    warning's verbatim text);
  - `{name|one|many}` (English) is a count and its noun: `1 pytest session`, `2 pytest sessions`
    (`transforms.core.words`); the other languages write `{name}` and count without a plural;
  - `{reasons}` is filled with the notice's own `reasons` (nested notices: why a warm
    interpreter was given up, for instance), joined by the language's list separator.

A result JSON from before schema 3 holds warnings as plain English strings: they read
back as notices with the code "text", shown verbatim in every language.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import KW_ONLY, dataclass, field

from transforms.core.words import noun

LANGS = ("en", "zh")

# A legacy (schema 1-2) warning: one English sentence, shown as it is.
VERBATIM = "text"

# code -> {lang -> template}.  tests/test_ab_notices.py checks that every entry has every
# language with the same placeholders, and the same ones as code.
CATALOGUE: dict[str, dict[str, str]] = {
    VERBATIM: {"en": "{text}", "zh": "{text}"},
    # ---- the arms and their environment (codemod.ab.execution.run, codemod.ab.arms.sources) ---------------
    "pythonpath-into-tree": {
        "en": "`PYTHONPATH` entry `{entry}` points into `{root}`: every arm imports from the user's tree there",
        "zh": "`PYTHONPATH` 中的条目 `{entry}` 指向 `{root}` 内部：每个组都会从用户的目录树导入该处的模块",
    },
    "arm.symlink-copied": {
        "en": "symlink `{path}` points outside the arm (`{target}`): the arm has a copy of its target, so a test "
        "writing to it changes only the arm",
        "zh": "符号链接 `{path}` 指向组目录之外（`{target}`）：该组中放的是其目标的副本，测试对它的写入只影响该组",
    },
    "arm.symlink-left-out": {
        "en": "symlink `{path}` points outside the arm (`{target}`) to nothing that can be copied (missing, or a "
        "folder holding the arm's own files): it is left out of the arm",
        "zh": "符号链接 `{path}` 指向组目录之外（`{target}`），其目标无法复制（不存在，或是包含该组自身文件的目录）："
        "该组中不包含它",
    },
    "export-attributes": {
        "en": "`.gitattributes` uses `export-ignore`/`export-subst`; the reproduction command's `git archive` "
        "applies them (the run itself read the git objects unaltered)",
        "zh": "`.gitattributes` 使用了 `export-ignore`/`export-subst`；复现命令中的 `git archive` 会应用它们"
        "（本次运行本身读取的是未经改动的 git 对象）",
    },
    "hw-classification.no-conftest-option": {
        "en": "`--hw-classification` not passed: no `conftest.py` in arm B's tree defines that option",
        "zh": "未传递 `--hw-classification`：B 组目录树中没有任何 `conftest.py` 定义该选项",
    },
    "hw-classification.no-enum": {
        "en": "`--hw-classification` not passed: the target torch has no `HardwareClassification`",
        "zh": "未传递 `--hw-classification`：目标 torch 中没有 `HardwareClassification`",
    },
    "hw-classification.not-passed": {
        "en": "`--hw-classification` not passed",
        "zh": "未传递 `--hw-classification`",
    },
    # ---- one test file in one arm (codemod.ab.execution.filerun) ----------------------------------
    "file.warm-interpreter-failed": {
        "en": "the warm interpreter failed ({reasons}); fresh processes from here on",
        "zh": "热解释器中途失败（{reasons}）；此后改用全新进程",
    },
    "file.gave-up-resuming": {
        "en": "`{file}`: gave up resuming after {processes} processes",
        "zh": "`{file}`：已启动 {processes} 个进程，放弃继续恢复运行",
    },
    "file.timeout": {
        "en": "`{file}`: `--file-timeout` {seconds}s exceeded",
        "zh": "`{file}`：超出 `--file-timeout` 限制（{seconds} 秒）",
    },
    "file.died-between-tests": {
        "en": "`{file}`: process died (`{status}`) between tests without progress",
        "zh": "`{file}`：进程在两个测试之间终止（`{status}`），且没有任何进展",
    },
    "file.died-outside-test": {
        "en": "`{file}`: process died (`{status}`) outside a test",
        "zh": "`{file}`：进程在测试之外终止（`{status}`）",
    },
    "run.temp-moved": {
        "en": "the temporary folder `{tmpdir}` lies in `{tree}`, a git work tree or a tree being compared: the arms' "
        "temporary root is in `{used}` instead (there, a test running git would find that repository, and arm B "
        "would copy itself)",
        "zh": "临时目录 `{tmpdir}` 位于 `{tree}` 之内（git 工作树或被比较的目录树）：各组的临时根目录改放在 `{used}`"
        "（否则测试在该处运行 git 会找到那个仓库，且 B 组会复制自身）",
    },
    "run.packed": {
        "en": "`--pack`: each arm's files ran in {processes|pytest session|pytest sessions} of several files each, "
        "as plain pytest runs them (the tests of one session share its process)",
        "zh": "`--pack`：每组的文件分成 {processes} 个 pytest 会话运行，每个会话包含多个文件，"
        "与直接运行 pytest 相同（同一会话中的测试共用一个进程）",
    },
    "run.packed-many": {
        "en": "{files} files: each arm's files ran in {processes|pytest session|pytest sessions} of several files "
        "each, forked from the warm interpreter, as plain pytest runs them (the tests of one session share its "
        "process; `--no-pack` runs a process per file)",
        "zh": "{files} 个文件：每组的文件分成 {processes} 个 pytest 会话运行（由热解释器 fork），每个会话包含多个文件，"
        "与直接运行 pytest 相同（同一会话中的测试共用一个进程；`--no-pack` 则每个文件一个进程）",
    },
    # ---- the warm interpreter (codemod.ab.execution.interpreter) ---------------------------------
    "warm.no-fork": {
        "en": "no warm interpreter: this platform has no `fork()`; every file ran in a fresh process",
        "zh": "未使用热解释器：此平台没有 `fork()`；每个文件都在全新进程中运行",
    },
    "warm.given-up": {
        "en": "no warm interpreter ({reasons}): every file ran in a fresh process",
        "zh": "未使用热解释器（{reasons}）：每个文件都在全新进程中运行",
    },
    "warm.no-fork-packed": {
        "en": "no warm interpreter: this platform has no `fork()`; each arm's files ran in "
        "{processes|pytest session|pytest sessions} of several files each, as plain pytest runs them (the tests of one "
        "session share its process)",
        "zh": "未使用热解释器：此平台没有 `fork()`；每组的文件分成 {processes} 个 pytest 会话运行，"
        "每个会话包含多个文件，与直接运行 pytest 相同（同一会话中的测试共用一个进程）",
    },
    "warm.given-up-packed": {
        "en": "no warm interpreter ({reasons}): each arm's files ran in {processes|pytest session|pytest sessions} of "
        "several files each, as plain pytest runs them (the tests of one session share its process)",
        "zh": "未使用热解释器（{reasons}）：每组的文件分成 {processes} 个 pytest 会话运行，每个会话包含多个文件，"
        "与直接运行 pytest 相同（同一会话中的测试共用一个进程）",
    },
    "warm.warm-up-dropped": {
        "en": "the warm-up (a first test of `{classes}` run once, before forking) was not kept ({reasons}): "
        "each file's first test imported what it needs itself",
        "zh": "未保留预热（在 fork 之前先运行一次 `{classes}` 的首个测试）（{reasons}）："
        "每个文件的首个测试自行导入所需模块",
    },
    "warm.warm-up-failed": {
        "en": "it failed: `{error}`",
        "zh": "预热失败：`{error}`",
    },
    "warm.warm-up-timeout": {
        "en": "it ran longer than {seconds} s",
        "zh": "运行超过 {seconds} 秒",
    },
    # why a warm interpreter failed (codemod.ab.execution.interpreter.ServerError)
    "warm.exited-before-ready": {
        "en": "the warm interpreter exited before it was ready (`{status}`): `{output}`",
        "zh": "热解释器在就绪之前退出（`{status}`）：`{output}`",
    },
    "warm.not-ready": {
        "en": "the warm interpreter was not ready within {seconds} s",
        "zh": "热解释器在 {seconds} 秒内未能就绪",
    },
    "warm.died": {
        "en": "the warm interpreter died",
        "zh": "热解释器已终止",
    },
    "warm.fork-failed": {
        "en": "the warm interpreter could not start a process: `{error}`",
        "zh": "热解释器无法启动进程：`{error}`",
    },
    # why forking is not safe: sent by the fork server itself (forkserver.fork_unsafe)
    "fork-unsafe.no-fork": {
        "en": "this platform has no `fork()`",
        "zh": "此平台没有 `fork()`",
    },
    "fork-unsafe.no-waitid": {
        "en": "this platform has no `waitid()`",
        "zh": "此平台没有 `waitid()`",
    },
    "fork-unsafe.backend-imported": {
        "en": "`{module}` was imported (an out-of-tree device backend initialises on import)",
        "zh": "已导入 `{module}`（树外设备后端在导入时即完成初始化）",
    },
    "fork-unsafe.backend-autoload": {
        "en": "`import torch` loads the out-of-tree device backend `{backends}` (a `torch.backends` entry point)",
        "zh": "`import torch` 会加载树外设备后端 `{backends}`（`torch.backends` 入口点）",
    },
    "fork-unsafe.device-initialised": {
        "en": "`torch.{device}` was initialised on import",
        "zh": "导入时已初始化 `torch.{device}`",
    },
    "fork-unsafe.backend-registered": {
        "en": "an out-of-tree device backend (`{backend}`) is registered",
        "zh": "已注册树外设备后端（`{backend}`）",
    },
    "fork-unsafe.thread-started": {
        "en": "an import started a thread (a forked child would inherit a half-copied process)",
        "zh": "某个导入启动了线程（`fork()` 出的子进程会继承一个只复制了一半的进程）",
    },
    "fork-unsafe.tree-module-preloaded": {
        "en": "a preloaded module imported `{modules}` from a tree under test (the arms sharing it may differ there)",
        "zh": "某个预加载模块从被测代码树中导入了 `{modules}`（共用它的各组在那里可能不同）",
    },
    # ---- ab merge (codemod.ab.comparison.merge.merge) --------------------------------------------
    "merge.normaliser-versions-differ": {
        "en": "normaliser versions differ: `{version}` vs `{other_version}`",
        "zh": "错误签名归一化器的版本不同：`{version}` 与 `{other_version}`",
    },
    "merge.environments-differ": {
        "en": "shards ran in different environments (python `{python}` / `{other_python}`, "
        "torch `{torch}` / `{other_torch}`)",
        "zh": "各分片运行于不同的环境（python `{python}` / `{other_python}`，torch `{torch}` / `{other_torch}`）",
    },
    "merge.merged-shards": {
        "en": "merged shards `{shards}`",
        "zh": "已合并分片 `{shards}`",
    },
    "merge.missing-shards": {
        "en": "missing shards: `{shards}`",
        "zh": "缺少分片：`{shards}`",
    },
}

# What frames a notice's own sentence: its arm, the --diagnose second run, and the
# separator between its reasons.
FRAMES: dict[str, dict[str, str]] = {
    "arm": {"en": "arm {arm}: {notice}", "zh": "{arm} 组：{notice}"},
    "diagnose": {"en": "diagnose: {notice}", "zh": "诊断复跑：{notice}"},
    "reasons.sep": {"en": "; ", "zh": "；"},
}

_CODE_SPAN = re.compile(r"`([^`]*)`")
_PLACEHOLDER = re.compile(r"\{(?P<name>\w+)(?:\|(?P<one>[^|{}]*)\|(?P<many>[^|{}]*))?\}")


def _as_is(s: str) -> str:
    return s


def _substitute(template: str, values: dict[str, str], escape: Callable[[str], str]) -> str:
    """`template` with its literal text escaped and its placeholders replaced by `values`
    (already formatted; a placeholder without a value shows as "?" rather than failing a
    report).  Escaping the pieces apart keeps a placeholder intact whatever the escape does
    to its characters (Markdown escapes `_`)."""
    out, at = [], 0
    for m in _PLACEHOLDER.finditer(template):
        value = values.get(m["name"], "?")
        if m["one"] is not None:  # a count and its noun; what is not a count takes the plural
            value += escape(" " + noun(int(value) if value.isdigit() else 0, m["one"], m["many"]))
        out += [escape(template[at : m.start()]), value]
        at = m.end()
    return "".join(out) + escape(template[at:])


@dataclass
class Notice:
    """One runner warning: a catalogue code and its parameters (all strings)."""

    code: str
    params: dict[str, str] = field(default_factory=dict)
    _: KW_ONLY
    arm: str = ""  # the arm it concerns ("arm A: ..."); "" = the run as a whole
    diagnose: bool = False  # reported by the second run of --diagnose
    reasons: list[Notice] = field(default_factory=list)  # what fills `{reasons}`

    @classmethod
    def verbatim(cls, text: str) -> Notice:
        """A warning recorded as plain text before schema 3."""
        return cls(VERBATIM, {"text": text})

    def text(self, lang: str = "en") -> str:
        """Plain text (the terminal summary): code spans without their backticks."""
        return self.render(lang, _as_is, _as_is)

    def __str__(self) -> str:
        return self.text("en")

    def render(self, lang: str, text: Callable[[str], str], code: Callable[[str], str]) -> str:
        """The sentence in `lang`; `text` escapes prose and `code` formats code spans
        (the report formats' escaping rules, e.g. `codemod.report.ab.fmt.Fmt`)."""
        entry = CATALOGUE.get(self.code)
        if entry is None:
            # a code this version does not know (a later version may add codes within
            # schema 3): its id and parameters still say what happened
            shown = [code(self.code)] + [code(f"{k}={v}") for k, v in self.params.items()]
            body = " ".join(shown)
        else:
            sep = text(FRAMES["reasons.sep"][lang])
            reasons = sep.join(r.render(lang, text, code) for r in self.reasons)
            body = _fill(entry[lang], self.params, reasons, text, code)
        if self.arm:
            body = _substitute(FRAMES["arm"][lang], {"arm": text(self.arm), "notice": body}, text)
        if self.diagnose:
            body = _substitute(FRAMES["diagnose"][lang], {"notice": body}, text)
        return body


def _fill(
    template: str, params: dict[str, str], reasons: str, text: Callable[[str], str], code: Callable[[str], str]
) -> str:
    """A catalogue template: code spans (raw parameters) through `code`, prose through `text`."""
    shown = {k: text(v) for k, v in params.items()}
    shown["reasons"] = reasons
    out = []
    for i, part in enumerate(_CODE_SPAN.split(template)):
        out.append(code(_substitute(part, params, _as_is)) if i % 2 else _substitute(part, shown, text))
    return "".join(out)
