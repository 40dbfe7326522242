"""The sortable table both HTML reports are built around (the A/B report's tests, the survey's
files): its style and the script that sorts it.

A click on a header sorts by that column, then the other way: numeric-aware (a cell's
``data-sort`` when it has one, else its text), numbers before text, blank cells last, ties in
the page's order. The sorted header carries ``aria-sort``, the table ``data-sorted-by`` (the
header's ``data-col``). Each page adds its own filters on the rows `sortableRows` returns.
"""

from __future__ import annotations


def table_css(table_id: str) -> str:
    """The tables' style, and the sortable one's (`table_id`): a sticky header of buttons."""
    t = f"#{table_id}"
    return f"""
table {{ border-collapse: collapse; margin: .5rem 0; }}
th, td {{ border: 1px solid var(--line); padding: .3rem .5rem; text-align: left; vertical-align: top; }}
th {{ background: var(--soft); }}
{t} {{ width: 100%; }}
{t} thead th {{ position: sticky; top: 0; z-index: 1; }}
{t} th button {{ all: unset; cursor: pointer; font-weight: 600; }}
{t} th[aria-sort="ascending"] button::after {{ content: " \\25B2"; }}
{t} th[aria-sort="descending"] button::after {{ content: " \\25BC"; }}
"""


# Defines sortableRows(table): makes the table sortable and returns its rows in page order.
SORT_JS = r"""
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
"""
