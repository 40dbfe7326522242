"""The sortable, filterable table both HTML reports are built around (the A/B report's tests, the
survey's files): its style, its controls' style, and the one script that sorts and filters it.

A click on a header sorts by that column, then the other way: numeric-aware (a cell's
``data-sort`` when it has one, else its text), numbers before text, blank cells last, ties in
the page's order. The sorted header carries ``aria-sort``, the table ``data-sorted-by`` (the
header's ``data-col``). ``filterTable`` keeps the rows whose ``data-search`` holds every word of
the search box and whose attribute matches each select's value (a select over a multi-valued
attribute, newline-separated, matches any of them), shows "N of M" through the counter's
``data-template`` (``{shown}``, ``{total}``), and makes chips toggle a select's value.
"""

from __future__ import annotations


def table_css(table_id: str, controls_class: str) -> str:
    """The tables' style, the sortable one's (`table_id`: a sticky header of buttons) and its
    controls' (`controls_class`: the search box and the selects)."""
    t, c = f"#{table_id}", f".{controls_class}"
    return f"""
{c} {{ display: flex; flex-wrap: wrap; gap: .75rem; align-items: center; margin: .5rem 0; }}
{c} input[type=search] {{ min-width: 22rem; padding: .25rem .4rem; font: inherit; }}
{c} select {{ padding: .25rem; font: inherit; }}
[hidden] {{ display: none !important; }}
table {{ border-collapse: collapse; margin: .5rem 0; }}
th, td {{ border: 1px solid var(--line); padding: .3rem .5rem; text-align: left; vertical-align: top; }}
th {{ background: var(--soft); }}
{t} {{ width: 100%; }}
{t} thead th {{ position: sticky; top: 0; z-index: 1; }}
{t} th button {{ all: unset; cursor: pointer; font-weight: 600; }}
{t} th[aria-sort="ascending"] button::after {{ content: " \\25B2"; }}
{t} th[aria-sort="descending"] button::after {{ content: " \\25BC"; }}
"""


# Defines sortableRows(table), which makes the table sortable and returns its rows in page order,
# and filterTable(table, controls), which also filters them; it returns its apply().
TABLE_JS = r"""
function sortableRows(table) {
  "use strict";
  var tbody = table.tBodies[0];
  var rows = Array.prototype.slice.call(tbody.rows);
  rows.forEach(function (row, i) { row.setAttribute("data-order", String(i)); });
  var NUMBER = /^-?\d+(\.\d+)?(e-?\d+)?$/i;
  var collator = (typeof Intl !== "undefined" && Intl.Collator)
    ? new Intl.Collator(undefined, { numeric: true, sensitivity: "base" }) : null;
  function key(cell) {
    var v = cell.getAttribute("data-sort");
    return (v !== null ? v : cell.textContent).trim();
  }
  function compare(a, b) {
    var an = NUMBER.test(a), bn = NUMBER.test(b);
    if (an && bn) { return parseFloat(a) - parseFloat(b); }
    if (an !== bn) { return an ? -1 : 1; }
    if (a === "" || b === "") { return a === "" ? (b === "" ? 0 : 1) : -1; }
    return collator ? collator.compare(a, b) : (a < b ? -1 : a > b ? 1 : 0);
  }
  var headers = Array.prototype.slice.call(table.tHead.rows[0].cells);
  function sortBy(index) {
    var th = headers[index];
    var dir = th.getAttribute("aria-sort") === "ascending" ? "descending" : "ascending";
    headers.forEach(function (h) { h.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", dir);
    var sign = dir === "ascending" ? 1 : -1;
    rows.slice().sort(function (r1, r2) {
      var c = compare(key(r1.cells[index]), key(r2.cells[index]));
      return c !== 0 ? sign * c : +r1.getAttribute("data-order") - +r2.getAttribute("data-order");
    }).forEach(function (row) { tbody.appendChild(row); });
    table.setAttribute("data-sorted-by", th.getAttribute("data-col") || String(index));
  }
  headers.forEach(function (th, i) { th.addEventListener("click", function () { sortBy(i); }); });
  return rows;
}
// controls: {search: input, selects: [{el: select, attr: "data-x", multi: bool}], shown: element,
//            chips: {selector: "...", attr: "data-x", select: select}}; any may be missing.
function filterTable(table, controls) {
  "use strict";
  var rows = sortableRows(table);
  var search = controls.search, shown = controls.shown;
  var selects = (controls.selects || []).filter(function (s) { return s.el; });
  var template = shown ? shown.getAttribute("data-template") || "" : "";
  function matches(row, s) {
    if (!s.el.value) { return true; }
    var value = row.getAttribute(s.attr) || "";
    return s.multi ? value.split("\n").indexOf(s.el.value) !== -1 : value === s.el.value;
  }
  function apply() {
    var words = (search ? search.value : "").toLowerCase().split(/\s+/).filter(Boolean);
    var n = 0;
    rows.forEach(function (row) {
      var text = row.getAttribute("data-search") || "";
      var ok = selects.every(function (s) { return matches(row, s); }) &&
               words.every(function (w) { return text.indexOf(w) !== -1; });
      row.hidden = !ok;
      if (ok) { n += 1; }
    });
    if (shown) {
      shown.textContent = template.replace("{shown}", String(n)).replace("{total}", String(rows.length));
    }
  }
  if (search) { search.addEventListener("input", apply); }
  selects.forEach(function (s) { s.el.addEventListener("change", apply); });
  var chips = controls.chips;
  if (chips && chips.select) {
    Array.prototype.slice.call(document.querySelectorAll(chips.selector)).forEach(function (chip) {
      chip.addEventListener("click", function () {
        var value = chip.getAttribute(chips.attr);
        chips.select.value = chips.select.value === value ? "" : value;
        apply();
        if (chips.scroll) { table.scrollIntoView(); }
      });
    });
  }
  apply();
  return apply;
}
"""
