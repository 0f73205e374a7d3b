"""The report's inline style sheet (screen, one column under 600 px, print) and its
optional script that sorts tables and zooms figures (kept as text here so the report
needs no file next to it and no network)."""

from __future__ import annotations

CSS = """
:root { --ink: #1a1a1a; --muted: #5a5a5a; --rule: #d0d0d0; --band: #f4f6f8;
        --accent: #0072B2; }
* { box-sizing: border-box; }
body { font: 15px/1.45 "DejaVu Sans", "Helvetica Neue", Arial, sans-serif; color: var(--ink);
       margin: 0 auto; max-width: 1180px; padding: 1.2rem 1.5rem 4rem; }
h1 { font-size: 1.6rem; margin: 0 0 .3rem; }
h2 { font-size: 1.25rem; margin: 2.2rem 0 .6rem; border-bottom: 2px solid var(--accent);
     padding-bottom: .2rem; }
h3 { font-size: 1.05rem; margin: 1.6rem 0 .3rem; }
p.meta, .note, figcaption, .muted { color: var(--muted); font-size: .9rem; }
nav ol { columns: 2; font-size: .9rem; }
nav ol ol { columns: 1; }
nav ol.inline { display: flex; flex-wrap: wrap; gap: 0 .8rem; padding-left: 1rem; }
nav ol.inline li { list-style: none; }
header { border-bottom: 2px solid var(--accent); padding-bottom: .4rem; }
ul.runs { margin: .3rem 0; padding-left: 1.2rem; font-size: .9rem; }
.summary { background: var(--band); border: 1px solid var(--rule);
           border-left: 4px solid var(--accent); padding: .2rem 1rem .6rem; margin: 1rem 0; }
.summary h2 { margin-top: .6rem; border: 0; }
.summary ul { margin: .2rem 0; padding-left: 1.2rem; }
.badge { display: inline-block; font-size: .7rem; font-weight: bold; letter-spacing: .03em;
         text-transform: uppercase; color: #7a4a00; background: #fff4e0;
         border: 1px solid #E69F00; border-radius: 3px; padding: 0 .3rem; }
table[data-table] tr.exploratory td:first-child::after { content: "exploratory";
  margin-left: .3rem; font-size: .65rem; font-weight: bold; text-transform: uppercase;
  color: #7a4a00; background: #fff4e0; border: 1px solid #E69F00; border-radius: 3px;
  padding: 0 .2rem; }
details > summary { cursor: pointer; color: var(--accent); margin: .3rem 0; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; }
a, code, .hash { overflow-wrap: anywhere; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: .15rem 1rem;
           margin: .4rem 0; }
dl.facts dt { font-weight: bold; }
dl.facts dd { margin: 0; overflow-wrap: anywhere; }
code, .hash { font-family: "DejaVu Sans Mono", Menlo, Consolas, monospace; font-size: .85em; }
.scroll { overflow-x: auto; margin: .4rem 0 1rem; border: 1px solid var(--rule); }
table { border-collapse: collapse; font-size: .8rem; width: 100%; }
th, td { padding: .2rem .45rem; border-bottom: 1px solid var(--rule); text-align: left;
         vertical-align: top; }
th { white-space: nowrap; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
thead th { background: var(--band); position: sticky; top: 0; }
tbody tr:nth-child(even) { background: #fafbfc; }
th[aria-sort] { cursor: pointer; }
th[aria-sort="ascending"]::after { content: " \\25B2"; }
th[aria-sort="descending"]::after { content: " \\25BC"; }
figure { margin: 1rem 0 2rem; }
figure svg { width: 100%; max-width: 36rem; height: auto; display: block; }
figure.zoomable svg { cursor: zoom-in; }
figure.zoomed { position: fixed; inset: 0; z-index: 10; margin: 0; padding: 1rem;
                background: #fff; overflow: auto; cursor: zoom-out; }
figure.zoomed svg { max-width: none; cursor: zoom-out; }
figure svg * { stroke-linejoin: round; stroke-linecap: butt; }
.verdict-supported { color: #00663c; font-weight: bold; }
.verdict-not { color: #a33c00; font-weight: bold; }
.warn { background: #fff4e0; border-left: 4px solid #E69F00; padding: .4rem .7rem; }
@media (max-width: 600px) {
  body { font-size: 14px; padding: .6rem .7rem 3rem; }
  h1 { font-size: 1.3rem; }
  nav ol { columns: 1; }
  dl.facts { grid-template-columns: 1fr; }
  dl.facts dd { margin-bottom: .3rem; }
  .summary { padding: .1rem .6rem .5rem; }
}
@page { margin: 12mm; }
@media print {
  body { max-width: none; padding: 0; font-size: 9pt; }
  nav, details { display: none; }
  .scroll { overflow: visible; border: 0; }
  table { font-size: 6.5pt; table-layout: auto; width: 100%; }
  th { white-space: normal; }
  th, td { padding: .05rem .2rem; overflow-wrap: anywhere; }
  thead th { position: static; }
  thead { display: table-header-group; }
  tr, figure { break-inside: avoid; }
  figure svg { max-width: 100%; }
  h2, h3 { break-after: avoid; }
}
"""

SORT_JS = """
(function () {
  function key(cell) {
    var v = cell.getAttribute("data-v");
    if (v === null) { v = cell.textContent; }
    var n = parseFloat(v);
    return isNaN(n) || v === "" ? [1, v.toLowerCase()] : [0, n];
  }
  function cmp(a, b) {
    if (a[0] !== b[0]) { return a[0] - b[0]; }
    return a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0;
  }
  document.querySelectorAll("table.sortable").forEach(function (table) {
    var heads = table.tHead.rows[0].cells;
    Array.prototype.forEach.call(heads, function (th, col) {
      th.setAttribute("aria-sort", "none");
      th.title = "Sort by this column";
      th.addEventListener("click", function () {
        var dir = th.getAttribute("aria-sort") === "ascending" ? -1 : 1;
        Array.prototype.forEach.call(heads, function (h) { h.setAttribute("aria-sort", "none"); });
        th.setAttribute("aria-sort", dir === 1 ? "ascending" : "descending");
        var body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        rows.sort(function (a, b) { return dir * cmp(key(a.cells[col]), key(b.cells[col])); });
        rows.forEach(function (r) { body.appendChild(r); });
      });
    });
  });
  document.querySelectorAll("figure.zoomable").forEach(function (fig) {
    fig.addEventListener("click", function () { fig.classList.toggle("zoomed"); });
  });
  document.addEventListener("keydown", function (e) {
    if (e.key === "Escape") {
      document.querySelectorAll("figure.zoomed").forEach(function (f) {
        f.classList.remove("zoomed");
      });
    }
  });
})();
"""
