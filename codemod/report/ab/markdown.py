"""Markdown view of an A/B result, ready to paste into a pull request.

`render(result, lang)` is the entry point. The sentences are shared with the
HTML view (`ab_verdict`, `ab_tables`, `ab_analysis`, `ab_background`, `ab_environment`,
`ab_repro`, each built through the `ab_fmt` formatter); this module only lays them out as
Markdown.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from codemod.ab.result.model import ABResult, TestComparison
from codemod.report.ab.analysis import analysis
from codemod.report.ab.background import background_items, change_notes, change_rows, runner_env_items, runner_warnings
from codemod.report.ab.coverage import census_lines, filter_lines, runtime_lines, totals_rows
from codemod.report.ab.environment import environment_facts, prepack_rows
from codemod.report.ab.facts import (
    FAILING,
    arm_roots,
    category_counts,
    compact_signature,
    failure_groups,
    headline,
    interesting_tests,
    outcome_of,
    report_traceback,
    shown_signature,
    tracebacks_of,
    visible_controls,
)
from codemod.report.ab.fmt import SECTION_ORDER, Fmt, HtmlFmt
from codemod.report.ab.repro import reproduction_intro, reproduction_parts
from codemod.report.ab.tables import diagnostic_changes, diagnostic_statement, signature_cell, test_note, tests_cell
from codemod.report.ab.verdict import verdict_line
from codemod.report.shared.i18n import t
from codemod.report.shared.markdown import md_cell, md_code, md_fence, one_line


class MarkdownFmt(Fmt):
    # Markdown's own marks, a `<` that could open an HTML tag or an autolink, an `&` that
    # could start an entity, a `>` that would open a quote: escaped with a backslash, so
    # the raw Markdown reads as the text does (no `&gt;` in it).
    _SPECIAL = re.compile(r"[\\`*_\[\]]|<(?=[A-Za-z/!?])|&(?=#?\w+;)|^>")

    def text(self, s: str) -> str:
        return self._SPECIAL.sub(lambda m: "\\" + m.group(), one_line(s))

    def code(self, s: str) -> str:
        return md_code(s)

    def strong(self, s: str) -> str:
        return f"**{s}**"


def _table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(md_cell(h) for h in header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(md_cell(cell) for cell in row) + " |" for row in rows]
    return lines


def _section_background(result: ABResult, f: Fmt) -> list[str]:
    lines = [f"### {f.say('h.background')}", ""]
    lines += [f"- {item}" for item in background_items(result, f)]
    if result.changes is not None:
        lines += ["", f"**{f.say('h.changes')}**", ""]
        if result.changes.stat:
            lines += [
                f.say("changes.stat", ref=f.code(result.changes.ref)),
                "",
                md_fence(result.changes.stat, "text"),
                "",
            ]
        rows = change_rows(result, f)
        if rows:
            lines += _table(
                [f.say("col.file"), f.say("col.class"), f.say("col.label"), f.say("col.torch_load")], rows
            ) + [""]
        lines += [f"- {note}" for note in change_notes(result, f)]
        if lines[-1] == "":
            lines.pop()
    lines += ["", f"**{f.say('h.runner_env')}**", ""]
    lines += [f"- {item}" for item in runner_env_items(result, f)]
    return lines


def _section_environment(result: ABResult, f: Fmt) -> list[str]:
    env = result.environment
    lines = [f"### {f.say('h.environment')}", ""]
    lines += ["- " + f.say("kv", k=f.strong(label), v=value) for label, value in environment_facts(env, f)]
    rows = prepack_rows(env, f)
    if rows:
        lines += ["", f"**{f.say('env.prepack')}**", ""]
        for engine, _listed, _shown, warn in rows:
            if warn:
                lines += [f"> ⚠️ **{f.say('env.prepack_warn', engine=engine)}**", ""]
        lines += _table(
            [f.say("col.engine"), f.say("col.listed"), f.say("col.prepack")],
            [(("⚠️ " if warn else "") + engine, listed, shown) for engine, listed, shown, warn in rows],
        )
    lines += ["", f"**{f.say('env.variables')}**", ""]
    if env.variables:
        lines += _table(
            [f.say("col.variable"), f.say("col.value")],
            [(f.code(k), f.code(v) if v else "") for k, v in sorted(env.variables.items())],
        )
    else:
        lines.append(f"- {f.say('env.none_set')}")
    return lines


def _section_reproduction(result: ABResult, f: Fmt) -> list[str]:
    lines = [f"### {f.say('h.reproduction')}", "", reproduction_intro(result, f)]
    for _arm, heading, notes, warning, command in reproduction_parts(result, f):
        lines += ["", f"#### {heading}"]
        if notes:
            lines += [""] + [f"- {note}" for note in notes]
        if warning:
            lines += ["", f"**{warning}**"]
        if command:
            lines += ["", md_fence(command, "sh")]
    return lines


def _group_details(members: list[TestComparison], f: Fmt, h: HtmlFmt, roots: list[str]) -> list[str]:
    """One collapsible block per group of identical failures: the tests, the full
    signature(s) and one short traceback per arm (pytest's short style)."""
    first = members[0]
    shown = tracebacks_of(first)
    subtests = [s for s in (first.b.subtests if first.b else []) if s.outcome in FAILING]
    if not shown and not subtests:
        return []
    if len(members) == 1:
        summary = h.say(
            "tb.summary",
            nodeid=h.code(first.nodeid),
            a=h.outcome(outcome_of(first.a)),
            b=h.outcome(outcome_of(first.b)),
        )
    else:
        summary = h.say(
            "tb.group_of",
            n=len(members),
            sig=h.code(compact_signature(first.b or first.a, 100)),
            a=h.outcome(outcome_of(first.a)),
            b=h.outcome(outcome_of(first.b)),
        )
    lines = [f"<details><summary>{summary}</summary>", ""]
    if len(members) > 1:
        lines += [f"- {f.code(c.nodeid)}" for c in members] + [""]
        lines += [f.say("tb.first_of", n=len(members), nodeid=f.code(first.nodeid)), ""]
    identical = (
        first.a is not None
        and first.b is not None
        and first.a.signature == first.b.signature
        and first.a.outcome == first.b.outcome
    )
    if identical:
        assert first.b is not None
        shown = [("B", first.b)]
    for name, o in shown:
        key = "tb.arm_both" if identical else "tb.arm"
        lines += [f.say(key, arm=f.text(name), outcome=f.outcome(o.outcome)), ""]
        if o.signature:
            lines += [f.say("tb.signature"), "", md_fence(o.signature, "text"), ""]
        body = report_traceback(o.traceback, f.lang, roots) if o.traceback else t("tb.none", f.lang)
        lines += [md_fence(body, "text"), ""]
    for s in subtests:
        lines += [f.say("tb.subtest", nodeid=f.code(s.nodeid), outcome=f.outcome(s.outcome)), ""]
        body = report_traceback(s.traceback, f.lang, roots) if s.traceback else (s.signature or t("tb.none", f.lang))
        lines += [md_fence(body, "text"), ""]
    lines.append("</details>")
    return lines


def _section_results(result: ABResult, f: Fmt) -> list[str]:
    h = HtmlFmt(f.lang)
    counts = category_counts(result)
    lines = [f"### {f.say('h.results')}", ""]
    lines += [f"#### {f.say('h.counts')}", ""]
    rows = [(f.category(c), str(n)) for c, n in counts.items()]
    rows.append((f.strong(f.say("total")), f.strong(str(sum(counts.values())))))
    lines += _table([f.say("col.category"), f.say("col.count")], rows)

    lines += ["", f"#### {f.say('h.tests')}", ""]
    groups = failure_groups(interesting_tests(result))
    if groups:
        lines += _table(
            [
                f.say("col.test"),
                f.say("col.a"),
                f.say("col.b"),
                f.say("col.category"),
                f.say("col.signature"),
                f.say("col.note"),
            ],
            [
                (
                    tests_cell([c.nodeid for c in g], f),
                    f.outcome(outcome_of(g[0].a)),
                    f.outcome(outcome_of(g[0].b)),
                    f.category(g[0].category),
                    signature_cell(g[0], f),
                    test_note(g[0], f),
                )
                for g in groups
            ],
        )
        blocks = [b for b in (_group_details(g, f, h, arm_roots(result)) for g in groups) if b]
        if blocks:
            lines += ["", f"**{f.say('h.tracebacks')}**"]
            for block in blocks:
                lines += [""] + block
    else:
        lines.append(f.say("no_differences"))

    warnings = runner_warnings(result, f)
    if warnings:
        lines += ["", f"#### {f.say('h.warnings')}", ""]
        lines += [f"- ⚠️ {w}" for w in warnings]

    coll = [(arm, path, o) for arm in result.arms for path, o in sorted(arm.collection_errors.items())]
    crashes = [arm for arm in result.arms if arm.crashes]
    if coll or crashes:
        lines += ["", f"#### {f.say('h.collection_errors')}", ""]
        for arm, path, o in coll:
            lines.append(
                "- "
                + f.say(
                    "collection.error",
                    arm=f.text(arm.name),
                    file=f.code(path),
                    sig=f.code(shown_signature(o) or headline(o)),
                )
            )
        for arm in crashes:
            lines.append("- " + f.say("crashes", arm=f.text(arm.name), tests=f.tests(arm.crashes)))
        for arm, path, o in coll:
            if o.traceback:
                summary = h.say(
                    "collection.error",
                    arm=h.text(arm.name),
                    file=h.code(path),
                    sig=h.code(shown_signature(o) or headline(o)),
                )
                lines += [
                    "",
                    f"<details><summary>{summary}</summary>",
                    "",
                    md_fence(report_traceback(o.traceback, f.lang, arm_roots(result)), "text"),
                    "",
                    "</details>",
                ]

    if result.diagnostics:
        lines += ["", f"#### {f.say('h.diagnostics')}", ""]
        for d in result.diagnostics:
            variables = f.pairs(d.variables) if d.variables else f.say("diag.no_vars")
            lines.append(
                "- "
                + f.say("diag.intro", name=f.strong(f.text(d.name)), base=f.code(d.based_on), vars=variables)
                + f.say("sentence.sep")
                + diagnostic_statement(result, d, f)
            )
        changed = diagnostic_changes(result)
        if changed:
            lines.append("")
            lines += _table(
                [f.say("col.diag_name"), f.say("col.test"), f.say("col.base"), f.say("col.diag")],
                [
                    (f.text(d.name), tests_cell(nids, f), f.outcome(before), f.outcome(after))
                    for d, before, after, nids in changed
                ],
            )
    return lines


def _section_analysis(result: ABResult, f: Fmt) -> list[str]:
    lines = [f"### {f.say('h.analysis')}"]
    for kind, content in analysis(result, f):
        lines.append("")
        if isinstance(content, list):  # "ul"
            lines += [f"- {item}" for item in content]
        else:
            lines.append(f"**{content}**" if kind == "h" else content)
    return lines


def lead(result: ABResult, f: Fmt) -> list[str]:
    """What the report leads with, after the verdict: the counts of A and B side by side,
    the census, what it found, B under the label filter (the PR body leads with it too)."""
    rows = totals_rows(result)
    lines = [f"**{f.say('h.totals')}**", ""]
    lines += _table(
        [f.say("col.totals"), f.say("col.a"), f.say("col.b"), f.say("col.delta")],
        [(f.say(f"tot.{name}"), "" if a is None else str(a), "" if b is None else str(b), d) for name, a, b, d in rows],
    )
    census = census_lines(result, f)
    if census:
        lines += ["", f.say("census.intro", attr=f.code("hw_classification")), ""] + [f"- {line}" for line in census]
    for line in runtime_lines(result, f):  # each a paragraph of its own (not an item of the census list)
        lines += ["", line]
    filtered = filter_lines(result, f)
    if filtered:
        lines += ["", filtered[0], ""] + [f"- {line}" for line in filtered[1:]]
    return lines


_SECTIONS = {
    "background": _section_background,
    "environment": _section_environment,
    "reproduction": _section_reproduction,
    "results": _section_results,
    "analysis": _section_analysis,
}


def render(result: ABResult, lang: str = "en") -> str:
    """The A/B report as GitHub-flavoured Markdown in `lang` ("en" or "zh")."""
    f = MarkdownFmt(lang)
    lines = [f"## {f.say('title', verdict=f.verdict(result.verdict))}", "", verdict_line(result, f), ""]
    lines += lead(result, f)
    for name in SECTION_ORDER[lang]:
        lines += [""] + _SECTIONS[name](result, f)
    return visible_controls("\n".join(lines)).rstrip() + "\n"
