"""HTML dashboard of a survey: one self-contained file.

Inline CSS, inline SVG charts (survey_charts) and vanilla JavaScript only; a
Content-Security-Policy forbids any load. The whole file table is rendered on the server side,
so the page is complete without JavaScript; the script adds sorting (click a column header,
numeric-aware) and filtering (a text box, a status and an owner select, the status chips, a
click on a folder's bar).

Stable hooks: table#sv-files, rows tr.sv-file with data-path, data-status, data-owners and
data-search; input#sv-filter, select#sv-status, select#sv-owner, #sv-shown ("N of M files
shown"); th[data-col] headers carrying aria-sort after a sort; table#sv-batches.
"""

from __future__ import annotations

import html

from codemod.engine.discovery import stale_entries
from codemod.report.shared.table import TABLE_JS, table_css
from codemod.report.survey.charts import COLOURS, burndown, folder_bars, legend
from codemod.report.survey.text import MEANING, batch_plan, percent, rules_line, what, widening_note
from codemod.survey.model import NO_OWNER, STATUSES, FileSurvey, Survey
from transforms.core.words import plural

_CSS = """
:root { --fg: #1f2328; --muted: #59636e; --line: #d1d9e0; --soft: #f6f8fa; }
* { box-sizing: border-box; }
body { margin: 0; padding: 0 1.5rem 3rem; color: var(--fg); background: #fff;
       font: 14px/1.5 system-ui, -apple-system, "Segoe UI", "Noto Sans", sans-serif; }
code { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, "Liberation Mono", monospace; font-size: 12.5px;
       background: var(--soft); padding: 0 .25em; border-radius: 4px; overflow-wrap: anywhere; }
h1 { font-size: 1.5rem; margin: 1.25rem 0 .25rem; }
h2 { font-size: 1.2rem; border-bottom: 1px solid var(--line); padding-bottom: .25rem; margin-top: 2rem; }
.muted { color: var(--muted); }
.sv-counts { list-style: none; padding: 0; display: flex; flex-wrap: wrap; gap: .4rem; }
.sv-chip { border: 1px solid var(--line); background: var(--soft); border-radius: 999px; padding: .1rem .65rem;
           font: inherit; cursor: pointer; }
.sv-chip .sv-swatch, .sv-legend .sv-swatch { display: inline-block; width: .8em; height: .8em; border-radius: 2px;
           margin-right: .35em; vertical-align: -1px; }
.sv-legend { list-style: none; padding: 0; display: flex; gap: 1rem; margin: .25rem 0; }
.sv-chart { overflow-x: auto; max-width: 100%; }
#sv-folders .sv-label, #sv-folders .sv-total, #sv-burndown text { font: 12px ui-monospace, Menlo, Consolas, monospace;
           fill: var(--fg); }
#sv-folders .sv-folder { cursor: pointer; }
#sv-folders .sv-folder:hover .sv-label { font-weight: 700; }
td.num { text-align: right; white-space: nowrap; }
td.path, td.reason { overflow-wrap: anywhere; }
td.path { min-width: 14rem; }
td.reason ul { margin: .2rem 0 0; padding-left: 1.1rem; }
tr.st-ready td.status { color: #1a7f37; font-weight: 600; }
tr.st-restructure td.status { color: #0969da; font-weight: 600; }
tr.st-manual td.status { color: #9a6700; font-weight: 600; }
tr.st-error td.status { color: #cf222e; font-weight: 600; }
"""

_JS = r"""
(function () {
  "use strict";
  var table = document.getElementById("sv-files");
  if (!table || !table.tBodies.length) { return; }
  var filter = document.getElementById("sv-filter");
  var status = document.getElementById("sv-status");
  document.getElementById("sv-controls").hidden = false;
  var apply = filterTable(table, {
    search: filter,
    selects: [{el: status, attr: "data-status"},
              {el: document.getElementById("sv-owner"), attr: "data-owners", multi: true}],
    shown: document.getElementById("sv-shown"),
    chips: {selector: ".sv-chip[data-status]", attr: "data-status", select: status}
  });
  Array.prototype.slice.call(document.querySelectorAll("#sv-folders .sv-folder")).forEach(function (bar) {
    bar.addEventListener("click", function (event) {
      var seg = event.target.closest ? event.target.closest(".sv-seg") : null;
      filter.value = bar.getAttribute("data-folder") + "/";
      status.value = seg ? seg.getAttribute("data-status") : "";
      apply();
      table.scrollIntoView();
    });
  });
  document.documentElement.setAttribute("data-sv-ready", "1");
})();
"""


def _e(s: object) -> str:
    return html.escape(str(s), quote=True)


def _reason(f: FileSurvey) -> str:
    text = _e(f.reason) + (f' <span class="muted">({_e(widening_note(f))})</span>' if f.could_widen else "")
    if not f.manual:
        return text
    items = []
    for m in f.manual:
        where = "" if m.cls in ("(file)", "torch.load") else f"<code>{_e(m.cls)}</code> (line {m.line}): "
        fits = f' <span class="muted">fits: {_e(m.fits)}</span>' if m.fits else ""
        items.append(f"<li>{where}{_e(m.reason)}{fits}</li>")
    return f"{text}<ul>{''.join(items)}</ul>"


def _search(f: FileSurvey) -> str:
    words = [f.path, f.status, f.reason, *f.owners, *f.transforms, *(m.reason for m in f.manual), widening_note(f)]
    words += [c.name for c in f.classes] + [str(c.value) for c in f.classes if c.value]
    return " ".join(words).lower()


def _row(f: FileSurvey) -> str:
    values = ", ".join(f"{n} {v}" for v, n in f.values().items())
    torch = f.torch_load.calls
    torch_text = f"{torch}" + (" (discovery)" if f.torch_load.needs_discovery else "") if torch else ""
    cells = [
        f'<td class="path"><code>{_e(f.path)}</code></td>',
        f'<td class="status" data-sort="{STATUSES.index(f.status)}">{_e(f.status)}</td>',
        f'<td class="owners">{_e(", ".join(f.owners))}</td>',
        f'<td class="num" data-sort="{len(f.classes)}">{len(f.classes)}</td>',
        f"<td>{_e(values)}</td>",
        f'<td class="num" data-sort="{torch}">{_e(torch_text)}</td>',
        f'<td class="reason">{_reason(f)}</td>',
    ]
    return (
        f'<tr class="sv-file st-{f.status}" data-path="{_e(f.path)}" data-status="{f.status}" '
        f'data-owners="{_e(chr(10).join(f.owners or (NO_OWNER,)))}" data-search="{_e(_search(f))}">'
        + "".join(cells)
        + "</tr>"
    )


def _files_section(survey: Survey) -> list[str]:
    owners = sorted(survey.by_owner())
    out = [
        "<section>",
        "<h2>Files</h2>",
        '<div id="sv-controls" class="sv-controls" hidden>',
        '<input type="search" id="sv-filter" placeholder="filter: path, class, owner, reason" aria-label="filter">',
        '<select id="sv-status" aria-label="status"><option value="">every status</option>'
        + "".join(f'<option value="{s}">{s}</option>' for s in STATUSES)
        + "</select>",
        '<select id="sv-owner" aria-label="owner"><option value="">every owner</option>'
        + "".join(f'<option value="{_e(o)}">{_e(o)}</option>' for o in owners)
        + "</select>",
        f'<span id="sv-shown" class="muted" data-template="{{shown}} of {{total}} files shown">'
        f"{len(survey.files)} of {len(survey.files)} files shown</span>",
        "</div>",
        '<table id="sv-files"><thead><tr>',
    ]
    columns = (
        ("path", "file"),
        ("status", "status"),
        ("owners", "owners"),
        ("classes", "classes"),
        ("values", "values"),
        ("torch_load", "torch.load"),
        ("reason", "reason"),
    )
    out += [f'<th data-col="{c}"><button type="button">{_e(label)}</button></th>' for c, label in columns]
    out.append("</tr></thead><tbody>")
    out += [_row(f) for f in survey.files]
    out += ["</tbody></table>", "</section>"]
    return out


OPEN_BATCHES = 12  # more than this many batches start folded


def _batches_section(survey: Survey) -> list[str]:
    out = ["<section>", f"<h2>Suggested batches (up to {survey.group_size} files each)</h2>"]
    if not survey.batches:
        return out + ["<p>No ready or restructure file needs a PR.</p>", "</section>"]
    opened = " open" if len(survey.batches) <= OPEN_BATCHES else ""
    count = f"{len(survey.batches)} suggested batch{'es' if len(survey.batches) != 1 else ''}"
    out.append(f'<details id="sv-batches-box"{opened}><summary>{count}</summary>')
    allowlist = f" --from-allowlist {survey.allowlist}" if survey.allowlist else ""
    out.append(
        "<p>The ready files' batches (labels) first, then the restructure files' (with --restructure auto); "
        "largest first; one owner per batch, files of one folder together. To make the first N as "
        f"branches: <code>decouple refactor{_e(allowlist)} --batches survey.json --limit N</code></p>"
    )
    out.append(
        '<table id="sv-batches"><thead><tr><th>#</th><th>plan</th><th>files</th><th>owners</th><th>folder</th>'
        "</tr></thead><tbody>"
    )
    for b in survey.batches:
        files = "<br>".join(f"<code>{_e(p)}</code>" for p in b.files)
        out.append(
            f'<tr data-batch="{b.number}" data-plan="{b.plan}"><td class="num">{b.number}</td>'
            f"<td>{_e(batch_plan(b.plan))}</td><td>{files}</td>"
            f"<td>{_e(', '.join(b.owners))}</td><td><code>{_e(b.directory)}</code></td></tr>"
        )
    return out + ["</tbody></table>", "</details>", "</section>"]


def _left_out(survey: Survey) -> list[str]:
    """The allowlisted files not surveyed: excluded by a pattern, or gone."""
    if not survey.excluded and not survey.stale:
        return []
    out = ["<section>", "<h2>Not surveyed</h2>"]
    if survey.excluded:
        items = "".join(f"<li><code>{_e(e.path)}</code> ({_e(e.pattern)})</li>" for e in survey.excluded)
        out.append(
            f"<details><summary>{len(survey.excluded)} excluded by a pattern</summary><ul>{items}</ul></details>"
        )
    if survey.stale:
        items = "".join(f"<li><code>{_e(p)}</code></li>" for p in survey.stale)
        out.append(f"<details><summary>{stale_entries(len(survey.stale))}</summary><ul>{items}</ul></details>")
    return out + ["</section>"]


def _header(survey: Survey) -> list[str]:
    totals = survey.totals()
    total = totals["files"]
    out = [
        '<header id="sv-summary">',
        "<h1>decouple survey</h1>",
        f"<p>Surveyed {_e(what(survey))}: <strong>{total}</strong> {'file' if total == 1 else 'files'}.</p>",
        '<ul class="sv-counts">',
    ]
    for s in STATUSES:
        out.append(
            f'<li><button type="button" class="sv-chip" data-status="{s}" title="{_e(MEANING[s])}">'
            f'<span class="sv-swatch" style="background:{COLOURS[s]}"></span>{s}: <strong>{totals[s]}</strong> '
            f'<span class="muted">({percent(totals[s], total)})</span></button></li>'
        )
    out.append("</ul>")
    notes = []
    if totals["graduate_only"]:
        notes.append(f"{totals['graduate_only']} of the ready are graduate only")
    if totals["could_widen"]:
        notes.append(f"{totals['could_widen']} could be widened apart from their plan")
    if totals["excluded"]:
        notes.append(f"{totals['excluded']} excluded by a pattern")
    if totals["stale"]:
        notes.append(stale_entries(totals["stale"]))
    if totals["torch_load_files"]:
        notes.append(
            f"{plural(totals['torch_load_files'], 'file calls', 'files call')} torch.load, "
            f"{totals['needs_discovery']} need discover-globals"
        )
    if notes:
        out.append(f'<p class="muted">{_e("; ".join(notes))}.</p>')
    if survey.generation is not None:
        rules = "Rules: " + rules_line(survey).removeprefix("rules: ")
        out.append(f'<p class="muted" id="sv-rules">{_e(rules)}.</p>')
    return out + ["</header>"]


def render(survey: Survey) -> str:
    totals = survey.totals()
    title = f"decouple survey: {totals['files']} files, {totals['ready']} ready"
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "style-src 'unsafe-inline'; script-src 'unsafe-inline'\">",
        '<meta name="referrer" content="no-referrer">',
        f"<title>{_e(title)}</title>",
        f"<style>{table_css('sv-files', 'sv-controls')}{_CSS}</style>",
        "</head>",
        "<body>",
    ]
    parts += _header(survey)
    parts += ["<main>", "<section>", "<h2>Status by folder</h2>", legend()]
    parts.append(f'<div class="sv-chart">{folder_bars(survey.by_directory())}</div>')
    parts.append("</section>")
    if survey.history is not None:
        parts += ["<section>", "<h2>Allowlist burndown</h2>", f'<div class="sv-chart">{burndown(survey.history)}</div>']
        parts.append("</section>")
    parts += _batches_section(survey) + _files_section(survey) + _left_out(survey)
    if survey.warnings:
        parts += ["<section>", "<h2>Warnings</h2>", "<ul>"] + [f"<li>{_e(w)}</li>" for w in survey.warnings]
        parts += ["</ul>", "</section>"]
    parts += ["</main>", f"<script>{TABLE_JS}{_JS}</script>", "</body>", "</html>"]
    return "\n".join(parts) + "\n"
