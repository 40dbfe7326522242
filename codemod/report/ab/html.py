"""HTML view of an A/B result: one self-contained file.

Inline CSS and vanilla JavaScript only (no network, no external fonts; a
Content-Security-Policy forbids any load).  The whole table is rendered on the
server side, so the page is complete with JavaScript disabled; the script only
adds sorting (click a column header, numeric-aware) and filtering (a text box
and a category select).

Stable hooks for tests and for users' own tooling:
  table#ab-tests, rows tr.ab-test with id "t-<sha1 of node id>",
  data-category, data-nodeid and data-search; input#ab-filter,
  select#ab-category, #ab-shown (the "N of M shown" counter),
  th[data-col] headers carrying aria-sort after a sort.
"""

from __future__ import annotations

import hashlib
import html

from codemod.ab.result.model import (
    CATEGORIES,
    CATEGORY_RANK,
    FAILING,
    REGRESSING,
    ABResult,
    Outcome,
    OutcomeValue,
    TestComparison,
)
from codemod.report.ab.analysis import analysis
from codemod.report.ab.background import background_items, change_notes, change_rows, runner_env_items, runner_warnings
from codemod.report.ab.coverage import census_lines, filter_lines, runtime_lines, totals_rows
from codemod.report.ab.environment import environment_facts, prepack_rows
from codemod.report.ab.facts import (
    arm_roots,
    category_counts,
    failure_groups,
    headline,
    ordered_tests,
    outcome_of,
    report_traceback,
    shown_signature,
    tracebacks_of,
    visible_controls,
)
from codemod.report.ab.fmt import SECTION_ORDER, HtmlFmt
from codemod.report.ab.repro import reproduction_intro, reproduction_parts
from codemod.report.ab.tables import diagnostic_statement, signature_cell, test_note
from codemod.report.ab.verdict import verdict_line
from codemod.report.shared.i18n import category_label, outcome_label, t, verdict_label
from codemod.report.shared.table import TABLE_JS, table_css

__all__ = ["render"]

_HTML_LANG = {"en": "en", "zh": "zh-CN"}

_CSS = """
:root { --fg: #1f2328; --muted: #59636e; --line: #d1d9e0; --bg: #fff; --soft: #f6f8fa;
        --bad: #cf222e; --bad-bg: #ffebe9; --good: #1a7f37; --good-bg: #dafbe1;
        --warn: #9a6700; --warn-bg: #fff8c5; }
* { box-sizing: border-box; }
body { margin: 0; padding: 0 1.5rem 3rem; color: var(--fg); background: var(--bg);
       font: 14px/1.5 system-ui, -apple-system, "Segoe UI", "Noto Sans", "PingFang SC",
             "Microsoft YaHei", sans-serif; }
code, pre, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, "Liberation Mono", monospace;
                   font-size: 12.5px; }
code { background: var(--soft); padding: 0 .25em; border-radius: 4px; overflow-wrap: anywhere; }
pre { background: var(--soft); padding: .75rem; border-radius: 6px; overflow: auto; white-space: pre; max-height: 32rem; }
h1 { font-size: 1.5rem; margin: 1.25rem 0 .5rem; }
h2 { font-size: 1.2rem; border-bottom: 1px solid var(--line); padding-bottom: .25rem; margin-top: 2rem; }
h3 { font-size: 1rem; margin-top: 1.25rem; }
header#ab-summary { border-bottom: 4px solid var(--muted); padding-bottom: .75rem; }
header.verdict-SAFE { border-color: var(--good); }
header.verdict-REGRESSION { border-color: var(--bad); }
header.verdict-INCONCLUSIVE { border-color: var(--warn); }
.badge { display: inline-block; padding: .1rem .6rem; border-radius: 999px; font-weight: 600; }
.verdict-SAFE .badge { background: var(--good-bg); color: var(--good); }
.verdict-REGRESSION .badge { background: var(--bad-bg); color: var(--bad); }
.verdict-INCONCLUSIVE .badge { background: var(--warn-bg); color: var(--warn); }
.ab-counts { list-style: none; padding: 0; display: flex; flex-wrap: wrap; gap: .4rem; }
.ab-chip { border: 1px solid var(--line); background: var(--soft); border-radius: 999px; padding: .1rem .65rem;
           font: inherit; cursor: pointer; }
.ab-chip.regressing { border-color: var(--bad); color: var(--bad); font-weight: 600; }
#ab-tests td.num { text-align: right; white-space: nowrap; }
#ab-tests td.nodeid, #ab-tests td.signature, #ab-tests td.note { overflow-wrap: anywhere; }
#ab-tests td.nodeid { min-width: 12rem; }
#ab-tests td.category { min-width: 8rem; }
#ab-tests td.outcome-a, #ab-tests td.outcome-b { min-width: 4rem; }
#ab-tests td.note { min-width: 8rem; }
/* a cell never grows past the viewport: wrapped, height-capped blocks inside it */
td pre { white-space: pre-wrap; overflow-wrap: anywhere; max-height: 30vh; }
td pre.ab-sig { max-height: 8em; }
tr.ab-test.regressing { background: var(--bad-bg); }
tr.ab-test.cat-pre-existing, tr.ab-test.cat-flaky, tr.ab-test.cat-different-failure,
tr.ab-test.cat-similar-failure, tr.ab-test.cat-no-longer-run { background: var(--warn-bg); }
tr.ab-test.cat-fixed { background: var(--good-bg); }
.muted { color: var(--muted); }
.warn { background: var(--warn-bg); border-left: 4px solid var(--warn); padding: .4rem .75rem; }
tr.warn td { background: var(--warn-bg); }
details.ab-tb summary { cursor: pointer; color: var(--muted); }
"""

# Sorting and filtering (shared.table's filterTable); reads everything from the server-rendered table.
_JS = r"""
(function () {
  "use strict";
  var table = document.getElementById("ab-tests");
  if (!table || !table.tBodies.length) { return; }
  var controls = document.getElementById("ab-controls");
  if (controls) { controls.hidden = false; }
  var select = document.getElementById("ab-category");
  filterTable(table, {
    search: document.getElementById("ab-filter"),
    selects: [{el: select, attr: "data-category"}],
    shown: document.getElementById("ab-shown"),
    chips: {selector: ".ab-chip[data-filter]", attr: "data-filter", select: select, scroll: true}
  });
  document.documentElement.setAttribute("data-ab-ready", "1");
})();
"""


def _e(s: object) -> str:
    return html.escape(str(s), quote=True)


def row_id(nodeid: str) -> str:
    """The stable element id of a test's row."""
    return "t-" + hashlib.sha1(nodeid.encode("utf-8", "surrogatepass")).hexdigest()[:12]


def _fmt_time(o: Outcome | None) -> tuple[str, str]:
    if o is None or o.outcome == OutcomeValue.NOT_RUN:
        return "", ""
    return f"{o.duration:.3f}", f"{o.duration:.3f}"


def _traceback_html(c: TestComparison, f: HtmlFmt, roots: list[str]) -> str:
    """Full signature(s) and short tracebacks (pytest's short style) of one test."""
    parts = []
    shown = tracebacks_of(c)
    if shown and c.a is not None and c.b is not None and c.a.signature == c.b.signature and c.a.outcome == c.b.outcome:
        shown = [("B", c.b)]
        heading = lambda arm, o: f.say("tb.arm_both", arm=f.text(arm), outcome=f.outcome(o.outcome))  # noqa: E731
    else:
        heading = lambda arm, o: f.say("tb.arm", arm=f.text(arm), outcome=f.outcome(o.outcome))  # noqa: E731
    for arm, o in shown:
        parts.append(f'<div class="muted">{heading(arm, o)}</div>')
        if o.signature:
            parts.append(f'<div class="muted">{f.say("tb.signature")}</div><pre class="ab-sig">{_e(o.signature)}</pre>')
        body = report_traceback(o.traceback, f.lang, roots) if o.traceback else t("tb.none", f.lang)
        parts.append(f"<pre>{_e(body)}</pre>")
    for s in c.b.subtests if c.b else []:
        if s.outcome in FAILING:
            parts.append(
                f'<div class="muted">{f.say("tb.subtest", nodeid=f.code(s.nodeid), outcome=f.outcome(s.outcome))}</div>'
            )
            body = (
                report_traceback(s.traceback, f.lang, roots) if s.traceback else (s.signature or t("tb.none", f.lang))
            )
            parts.append(f"<pre>{_e(body)}</pre>")
    if not parts:
        return ""
    return f'<details class="ab-tb"><summary>{f.say("html.traceback")}</summary>{"".join(parts)}</details>'


def _search_text(c: TestComparison, lang: str) -> str:
    bits = [c.nodeid, c.category, category_label(c.category, lang), c.note]
    for o in (c.a, c.b):
        if o is not None:
            bits += [o.outcome, outcome_label(o.outcome, lang), o.signature or "", o.exc_type or ""]
            if o.outcome in FAILING:
                bits.append(headline(o))
    return " ".join(b for b in bits if b).lower()


def _tests_table(result: ABResult, f: HtmlFmt) -> list[str]:
    lang = f.lang
    tests = ordered_tests(result)
    present = [c for c in CATEGORIES if any(x.category == c for x in tests)]
    total = len(tests)

    out = [
        f'<h3 id="ab-all-tests">{f.say("h.all_tests")}</h3>',
        f'<noscript><p class="muted">{f.say("html.nojs")}</p></noscript>',
        '<div id="ab-controls" class="ab-controls" hidden>',
        f'<label for="ab-filter">{f.say("html.filter")}</label>',
        f'<input type="search" id="ab-filter" autocomplete="off" placeholder="{_e(t("html.filter_placeholder", lang))}">',
        '<select id="ab-category">',
        f'<option value="">{f.say("html.all_categories")}</option>',
    ]
    for cat in present:
        n = sum(1 for x in tests if x.category == cat)
        out.append(f'<option value="{_e(cat)}">{_e(category_label(cat, lang))} ({_e(cat)}): {n}</option>')
    out += [
        "</select>",
        f'<span id="ab-shown" class="muted" data-template="{_e(t("html.shown", lang))}">'
        f"{f.say('html.shown', shown=total, total=total)}</span>",
        f'<span class="muted">{f.say("html.sort_hint")}</span>',
        "</div>",
    ]

    cols = [
        ("index", "col.index"),
        ("nodeid", "col.test"),
        ("category", "col.category"),
        ("a", "col.a"),
        ("b", "col.b"),
        ("a_time", "col.a_time"),
        ("b_time", "col.b_time"),
        ("signature", "col.signature"),
        ("note", "col.note"),
    ]
    out.append(f'<table id="ab-tests" data-total="{total}"><thead><tr>')
    for col, key in cols:
        out.append(f'<th data-col="{col}" scope="col"><button type="button">{f.say(key)}</button></th>')
    out.append("</tr></thead><tbody>")

    # identical failures: the first row of a group carries the details, the others point to it
    first_of: dict[str, tuple[int, str, int]] = {}
    for group in failure_groups(tests):
        lead = tests.index(group[0]) + 1
        for c in group[1:]:
            first_of[c.nodeid] = (lead, group[0].nodeid, len(group))
    roots = arm_roots(result)
    seen: dict[str, int] = {}
    for i, c in enumerate(tests, 1):
        rid = row_id(c.nodeid)
        seen[rid] = seen.get(rid, 0) + 1
        if seen[rid] > 1:
            rid = f"{rid}-{seen[rid]}"
        classes = ["ab-test", f"cat-{c.category}"]
        if c.category in REGRESSING:
            classes.append("regressing")
        rank = CATEGORY_RANK[c.category]
        a_time, a_sort = _fmt_time(c.a)
        b_time, b_sort = _fmt_time(c.b)
        sig_text = shown_signature(c.b) or shown_signature(c.a)
        sig_html = signature_cell(c, f).replace("\n", "<br>") if sig_text else ""
        if c.nodeid in first_of:
            lead, lead_id, n = first_of[c.nodeid]
            details = (
                f'<div class="muted ab-same"><a href="#{row_id(lead_id)}">'
                f"{f.say('html.same_as', row=lead, n=n)}</a></div>"
            )
        else:
            details = _traceback_html(c, f, roots)
        out.append(
            f'<tr id="{rid}" class="{" ".join(classes)}" data-category="{_e(c.category)}" '
            f'data-nodeid="{_e(c.nodeid)}" data-a="{_e(outcome_of(c.a) or "")}" data-b="{_e(outcome_of(c.b) or "")}" '
            f'data-search="{_e(_search_text(c, lang))}">'
            f'<td class="num" data-sort="{i}">{i}</td>'
            f'<td class="nodeid mono">{_e(c.nodeid)}</td>'
            f'<td class="category" data-sort="{rank:02d}">{f.category(c.category)}</td>'
            f'<td class="outcome-a" data-sort="{_e(outcome_of(c.a) or "")}">{f.outcome(outcome_of(c.a))}</td>'
            f'<td class="outcome-b" data-sort="{_e(outcome_of(c.b) or "")}">{f.outcome(outcome_of(c.b))}</td>'
            f'<td class="num" data-sort="{a_sort}">{a_time}</td>'
            f'<td class="num" data-sort="{b_sort}">{b_time}</td>'
            f'<td class="signature" data-sort="{_e(sig_text)}">{sig_html}{details}</td>'
            f'<td class="note">{test_note(c, f)}</td>'
            "</tr>"
        )
    out.append("</tbody></table>")
    return out


def _section_results(result: ABResult, f: HtmlFmt) -> list[str]:
    out = [f'<section id="ab-results"><h2>{f.say("h.results")}</h2>']
    counts = category_counts(result)
    out.append(f"<h3>{f.say('h.counts')}</h3>")
    out.append(
        f'<table id="ab-counts"><thead><tr><th>{f.say("col.category")}</th><th>{f.say("col.count")}</th>'
        "</tr></thead><tbody>"
    )
    for cat, n in counts.items():
        out.append(f'<tr data-count-category="{_e(cat)}"><td>{f.category(cat)}</td><td class="num">{n}</td></tr>')
    out.append(
        f'<tr><td>{f.strong(f.say("total"))}</td><td class="num">{f.strong(str(sum(counts.values())))}</td></tr>'
    )
    out.append("</tbody></table>")

    if result.diagnostics:
        out.append(f'<h3 id="ab-diagnostics">{f.say("h.diagnostics")}</h3><ul>')
        for d in result.diagnostics:
            variables = f.pairs(d.variables) if d.variables else f.say("diag.no_vars")
            out.append(
                f'<li class="ab-diagnostic" data-name="{_e(d.name)}">'
                + f.say("diag.intro", name=f.strong(f.text(d.name)), base=f.code(d.based_on), vars=variables)
                + f.say("sentence.sep")
                + diagnostic_statement(result, d, f)
                + "</li>"
            )
        out.append("</ul>")
        changed = [(d, nid, v) for d in result.diagnostics for nid, v in sorted(d.changed.items())]
        if changed:
            out.append(
                f'<table class="ab-diag-changes"><thead><tr><th>{f.say("col.diag_name")}</th>'
                f"<th>{f.say('col.test')}</th><th>{f.say('col.base')}</th><th>{f.say('col.diag')}</th>"
                "</tr></thead><tbody>"
            )
            for d, nid, v in changed:
                out.append(
                    f"<tr><td>{f.text(d.name)}</td><td>{f.code(nid)}</td>"
                    f"<td>{f.outcome(v[0] if v else None)}</td>"
                    f"<td>{f.outcome(v[1] if len(v) > 1 else None)}</td></tr>"
                )
            out.append("</tbody></table>")

    warnings = runner_warnings(result, f)
    if warnings:
        out.append(f'<h3 id="ab-warnings">{f.say("h.warnings")}</h3><ul class="ab-warnings">')
        out += [f'<li class="warn">⚠️ {w}</li>' for w in warnings]
        out.append("</ul>")

    coll = [(arm, path, o) for arm in result.arms for path, o in sorted(arm.collection_errors.items())]
    crashes = [arm for arm in result.arms if arm.crashes]
    if coll or crashes:
        out.append(f"<h3>{f.say('h.collection_errors')}</h3><ul>")
        for arm, path, o in coll:
            item = f.say(
                "collection.error",
                arm=f.text(arm.name),
                file=f.code(path),
                sig=f.code(shown_signature(o) or headline(o)),
            )
            tb = (
                (
                    f'<details class="ab-tb"><summary>{f.say("html.traceback")}</summary><pre>{_e(report_traceback(o.traceback, f.lang, arm_roots(result)))}</pre>'
                    "</details>"
                )
                if o.traceback
                else ""
            )
            out.append(f"<li>{item}{tb}</li>")
        for arm in crashes:
            out.append(f"<li>{f.say('crashes', arm=f.text(arm.name), tests=f.tests(arm.crashes))}</li>")
        out.append("</ul>")

    out += _tests_table(result, f)
    out.append("</section>")
    return out


def _section_background(result: ABResult, f: HtmlFmt) -> list[str]:
    out = [f'<section id="ab-background"><h2>{f.say("h.background")}</h2><ul>']
    out += [f"<li>{item}</li>" for item in background_items(result, f)]
    out.append("</ul>")
    if result.changes is not None:
        out.append(f'<h3 id="ab-changes">{f.say("h.changes")}</h3>')
        if result.changes.stat:
            out.append(
                f"<p>{f.say('changes.stat', ref=f.code(result.changes.ref))}</p><pre>{_e(result.changes.stat)}</pre>"
            )
        rows = change_rows(result, f)
        if rows:
            out.append(
                f'<table class="ab-changes"><thead><tr><th>{f.say("col.file")}</th><th>{f.say("col.class")}'
                f"</th><th>{f.say('col.label')}</th><th>{f.say('col.torch_load')}</th></tr></thead><tbody>"
            )
            out += ["<tr>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>" for row in rows]
            out.append("</tbody></table>")
        out += [f"<p>{note}</p>" for note in change_notes(result, f)]
    out.append(f'<h3 id="ab-runner-env">{f.say("h.runner_env")}</h3><ul>')
    out += [f"<li>{item}</li>" for item in runner_env_items(result, f)]
    out.append("</ul></section>")
    return out


def _section_environment(result: ABResult, f: HtmlFmt) -> list[str]:
    env = result.environment
    out = [f'<section id="ab-environment"><h2>{f.say("h.environment")}</h2>', '<table class="ab-env"><tbody>']
    for label, value in environment_facts(env, f):
        out.append(f'<tr><th scope="row">{label}</th><td>{value}</td></tr>')
    out.append("</tbody></table>")
    rows = prepack_rows(env, f)
    if rows:
        out.append(f"<h3>{f.say('env.prepack')}</h3>")
        for engine, _listed, _shown, warn in rows:
            if warn:
                out.append(
                    f'<p class="warn prepack-warning">⚠️ {f.strong(f.say("env.prepack_warn", engine=engine))}</p>'
                )
        out.append(
            f'<table class="ab-prepack"><thead><tr><th>{f.say("col.engine")}</th><th>{f.say("col.listed")}</th>'
            f"<th>{f.say('col.prepack')}</th></tr></thead><tbody>"
        )
        for engine, listed, shown, warn in rows:
            cls = ' class="warn"' if warn else ""
            out.append(f"<tr{cls}><td>{engine}</td><td>{listed}</td><td>{shown}</td></tr>")
        out.append("</tbody></table>")
    out.append(f"<h3>{f.say('env.variables')}</h3>")
    if env.variables:
        out.append(
            f'<table class="ab-vars"><thead><tr><th>{f.say("col.variable")}</th><th>{f.say("col.value")}</th>'
            "</tr></thead><tbody>"
        )
        for k, v in sorted(env.variables.items()):
            out.append(f"<tr><td>{f.code(k)}</td><td>{f.code(v) if v else ''}</td></tr>")
        out.append("</tbody></table>")
    else:
        out.append(f'<p class="muted">{f.say("env.none_set")}</p>')
    out.append("</section>")
    return out


def _section_reproduction(result: ABResult, f: HtmlFmt) -> list[str]:
    out = [
        f'<section id="ab-reproduction"><h2>{f.say("h.reproduction")}</h2>',
        f"<p>{reproduction_intro(result, f)}</p>",
    ]
    for arm, heading, notes, warning, command in reproduction_parts(result, f):
        out.append(f'<div class="ab-arm" data-arm="{_e(arm.name)}"><h3>{heading}</h3>')
        out.extend(f"<p>{note}</p>" for note in notes)
        if warning:
            out.append(f'<p class="warn">{warning}</p>')
        if command:
            out.append(f'<pre class="ab-command"><code>{_e(command)}</code></pre>')
        out.append("</div>")
    out.append("</section>")
    return out


def _section_analysis(result: ABResult, f: HtmlFmt) -> list[str]:
    out = [f'<section id="ab-analysis"><h2>{f.say("h.analysis")}</h2>']
    for kind, content in analysis(result, f):
        if kind == "h":
            out.append(f"<h3>{content}</h3>")
        elif kind == "p":
            out.append(f"<p>{content}</p>")
        else:
            out.append("<ul>" + "".join(f'<li class="ab-group">{item}</li>' for item in content) + "</ul>")
    out.append("</section>")
    return out


_SECTIONS = {
    "background": _section_background,
    "environment": _section_environment,
    "reproduction": _section_reproduction,
    "results": _section_results,
    "analysis": _section_analysis,
}


def _header(result: ABResult, f: HtmlFmt) -> list[str]:
    counts = category_counts(result)
    badge = '<span class="badge">' + f.verdict(result.verdict) + "</span>"
    out = [
        f'<header id="ab-summary" class="verdict-{result.verdict}" data-verdict="{_e(result.verdict)}">',
        f"<h1>{f.say('title', verdict=badge)}</h1>",
        f'<p class="ab-verdict">{verdict_line(result, f)}</p>',
        '<ul class="ab-counts">',
    ]
    for cat, n in counts.items():
        cls = "ab-chip regressing" if cat in REGRESSING else "ab-chip"
        out.append(
            f'<li><button type="button" class="{cls}" data-filter="{_e(cat)}">'
            f"{f.text(category_label(cat, f.lang))}: <strong>{n}</strong></button></li>"
        )
    out.append(f'<li class="muted">{f.say("kv", k=f.say("total"), v=str(sum(counts.values())))}</li>')
    out += ["</ul>", *_lead(result, f), "</header>"]
    return out


def _lead(result: ABResult, f: HtmlFmt) -> list[str]:
    """The counts of A and B side by side, the census, its findings, the label filter."""
    out = [
        f'<table id="ab-totals"><caption>{f.say("h.totals")}</caption><thead><tr><th>{f.say("col.totals")}</th>'
        f"<th>{f.say('col.a')}</th><th>{f.say('col.b')}</th><th>{f.say('col.delta')}</th></tr></thead><tbody>"
    ]
    for name, a, b, delta in totals_rows(result):
        cls = ' class="warn"' if delta not in ("", "0") else ""
        out.append(
            f'<tr{cls} data-field="{_e(name)}"><td>{f.say("tot." + name)}</td><td class="num">{"" if a is None else a}'
            f'</td><td class="num">{"" if b is None else b}</td><td class="num">{_e(delta)}</td></tr>'
        )
    out.append("</tbody></table>")
    census = census_lines(result, f)
    if census:
        out += [
            f'<p class="muted">{f.say("census.intro", attr=f.code("hw_classification"))}</p>',
            '<ul id="ab-census">',
        ]
        out += [f"<li>{line}</li>" for line in census] + ["</ul>"]
    out += [f'<p class="warn ab-runtime">{line}</p>' for line in runtime_lines(result, f)]
    filtered = filter_lines(result, f)
    if filtered:
        out += [f"<p>{filtered[0]}</p>", '<ul id="ab-filter">'] + [f"<li>{x}</li>" for x in filtered[1:]] + ["</ul>"]
    return out


def render(result: ABResult, lang: str = "en") -> str:
    """The A/B report as one self-contained HTML document in `lang` ("en" or "zh")."""
    f = HtmlFmt(lang)
    title = t("title", lang, verdict=verdict_label_text(result, lang))
    parts = [
        "<!DOCTYPE html>",
        f'<html lang="{_HTML_LANG[lang]}">',
        "<head>",
        '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">",
        '<meta name="referrer" content="no-referrer">',
        f"<title>{_e(title)}</title>",
        f"<style>{table_css('ab-tests', 'ab-controls')}{_CSS}</style>",
        "</head>",
        "<body>",
    ]
    parts += _header(result, f)
    parts.append("<main>")
    for name in SECTION_ORDER[lang]:
        parts += _SECTIONS[name](result, f)
    parts.append("</main>")
    parts.append(f"<script>{TABLE_JS}{_JS}</script>")
    parts += ["</body>", "</html>"]
    return visible_controls("\n".join(parts)) + "\n"


def verdict_label_text(result: ABResult, lang: str) -> str:
    """Plain-text verdict for the <title>."""
    label = verdict_label(result.verdict, lang)
    return label if label == result.verdict else f"{label}（{result.verdict}）"
