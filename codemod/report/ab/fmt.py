"""What the Markdown and HTML views share about form: the formatter interface (`Fmt`: the
escaping rules of one output format, and the small phrases built on them) and the order of
the report's sections per language.

The sentences are built through `Fmt`, so both views say exactly the same thing, each with
its own escaping: the verdict (`ab_verdict`), the analysis and causes (`ab_analysis`), the
table cells (`ab_tables`), the background (`ab_background`), the environment
(`ab_environment`) and the reproduction (`ab_repro`). Format-independent facts live in
`ab_facts`.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence

from codemod.ab.result.model import REGRESSING
from codemod.report.shared.i18n import category_label, check_lang, outcome_label, t, template, verdict_label

# How many node ids a sentence lists before "and N more".
MAX_LISTED = 5


class Fmt:
    """Escaping rules of one output format.  `say` formats a translated
    template whose own text gets escaped; its arguments must already be
    formatted (ints are fine)."""

    def __init__(self, lang: str) -> None:
        self.lang = check_lang(lang)

    def text(self, s: str) -> str:  # pragma: no cover - abstract
        raise NotImplementedError

    def code(self, s: str) -> str:  # pragma: no cover - abstract
        raise NotImplementedError

    def strong(self, s: str) -> str:  # pragma: no cover - abstract
        raise NotImplementedError

    def say(self, key: str, **args: object) -> str:
        return self.text(template(key, self.lang, args.get("n"))).format(**args)

    # Convenience built on the primitives -----------------------------------
    def sep(self) -> str:
        return self.text(t("list.comma", self.lang))

    def codes(self, items: Iterable[str]) -> str:
        return self.sep().join(self.code(i) for i in items)

    def pairs(self, mapping: dict[str, str]) -> str:
        return self.sep().join(self.code(f"{k}={v}") for k, v in mapping.items())

    def tests(self, nodeids: Sequence[str]) -> str:
        shown = [self.code(n) for n in nodeids[:MAX_LISTED]]
        if len(nodeids) > MAX_LISTED:
            shown.append(self.say("an.more", n=len(nodeids) - MAX_LISTED))
        return self.sep().join(shown)

    def outcome(self, outcome: str | None) -> str:
        if outcome is None:
            return self.say("absent")
        return self.text(outcome_label(outcome, self.lang))

    def category(self, category: str) -> str:
        if self.lang == "en":
            shown = self.text(category)
        else:
            shown = self.say("paren", a=self.text(category_label(category, self.lang)), b=self.code(category))
        return self.strong(shown) if category in REGRESSING else shown

    def verdict(self, verdict: str) -> str:
        label = verdict_label(verdict, self.lang)
        if label == verdict:
            return self.text(verdict)
        return self.text(f"{label}（{verdict}）")


class HtmlFmt(Fmt):
    def text(self, s: str) -> str:
        return html.escape(s)

    def code(self, s: str) -> str:
        return f"<code>{html.escape(s)}</code>"

    def strong(self, s: str) -> str:
        return f"<strong>{s}</strong>"


SECTION_ORDER = {
    # English: what a PR reviewer reads first; Chinese: the community report layout
    # 背景 / 环境信息 / 复现步骤 / 结果 / 原因分析.
    "en": ("background", "results", "analysis", "environment", "reproduction"),
    "zh": ("background", "environment", "reproduction", "results", "analysis"),
}
