"""Results tables as HTML: each table first as the terminal prints it (`lab results`: the
wide paper layout, one line per group and a column per measure or regime, or the long
layout), then, collapsed under it, a `<table class="sortable">` with one `<tr>` per JSON
row in `lab results --format json` order.

Every numeric cell shows a rounded number and carries the exact JSON value in
``data-v`` (Python's ``repr`` of the float, "" for undefined, "inf"/"-inf"), so a reader
sorts on exact values and a test compares them with `lab results --format json`; each
column's header names its field in ``data-f``. Fields that are the same on every row of a table (the
dataset, set, runs, seeds, replicates, regimes) are given once above it instead of in
every row, so the file grows with the number of groups, not episodes.
"""

from __future__ import annotations

from dataclasses import replace
from html import escape
from typing import Any

from analysis.base.rows import Table
from analysis.figures.study import RowDict
from analysis.report.summary import EXPLORATORY_BADGE, is_exploratory
from analysis.tables.text import header_lines, long_cells, wide_cells

COLUMNS = ("model", "arm", "budget", "dataset", "question_set", "runs", "seeds",
           "replicates", "regimes", "measure", "scope", "estimate", "ci_low", "ci_high", "n",
           "unit", "p", "p_holm", "holm_m", "judgments", "errored", "truncated", "refused",
           "detail")
"""Columns a table can show, in order; the row's remaining fields (condition, its hash,
amendment, version, provenance) are in the report's covers."""
OPTIONAL = ("dataset", "question_set", "runs", "seeds", "replicates", "regimes", "p",
            "p_holm", "holm_m", "judgments", "truncated", "refused", "detail")
"""Shown only when they vary (or, for p, judgments and detail, when any row has one)."""
NUMERIC = ("budget", "estimate", "ci_low", "ci_high", "n", "p", "p_holm", "holm_m", "errored",
           "truncated", "refused")
HEADERS = {"question_set": "set", "ci_low": "95% low", "ci_high": "95% high",
           "p_holm": "p (Holm)", "holm_m": "Holm m"}
NUM_CLASS = ' class="num"'
EXACT = ("estimate", "ci_low", "ci_high", "p", "p_holm")
"""Cells whose display is rounded: their exact value is in data-v."""


LEFT_OUT = {"policies": ("success", "calls", "utility")}
"""Per table, measures whose rows the report leaves out (saying how many and where they
are): the policies table's success, calls and utility of every simple policy, about 400
rows per group, which would make a large study's page tens of megabytes; its best
policy, regret and stop_paid rows stay."""


def report_rows(name: str, rows: list[RowDict]) -> tuple[list[RowDict], int]:
    """The rows of table `name` the report shows, and how many it leaves out."""
    left_out = LEFT_OUT.get(name, ())
    kept = [r for r in rows if r["measure"] not in left_out]
    return kept, len(rows) - len(kept)


def fmt(value: Any, field: str) -> str:
    """A cell's display text: 3 decimals for estimates, 4 for p, "n.a." for undefined,
    lists with a space after each comma."""
    if value is None:
        return "n.a."
    if value in ("inf", "-inf"):
        return "∞" if value == "inf" else "−∞"
    if field in ("regimes", "runs", "seeds", "replicates") and isinstance(value, str):
        return value.replace(",", ", ")  # lets a long list wrap
    if isinstance(value, float):
        return f"{value:.4f}" if field in ("p", "p_holm") else f"{value:.3f}"
    return str(value)


def exact(value: Any) -> str:
    """The exact JSON value as text: repr of a float, "" for None."""
    if value is None:
        return ""
    return repr(value) if isinstance(value, float) else str(value)


def shown_columns(rows: list[RowDict]) -> tuple[list[str], dict[str, Any]]:
    """(columns shown per row, fields constant over the table with their value)."""
    cols, constant = [], {}
    for c in COLUMNS:
        values = {exact(r.get(c)) for r in rows}
        if c in OPTIONAL and len(values) <= 1:
            if values and next(iter(values)) not in ("", "0"):
                constant[c] = rows[0].get(c)
            continue
        cols.append(c)
    return cols, constant


def numeric_css(name: str, rows: list[RowDict]) -> str:
    """CSS right-aligning table `name`'s numeric columns (one rule per table in the
    page's head, instead of a class on each of its thousands of cells)."""
    rows, _ = report_rows(name, rows)
    if not rows:
        return ""
    cols, _ = shown_columns(rows)
    cells = [f'table[data-table="{name}"] td:nth-child({i + 1})'
             for i, c in enumerate(cols) if c in NUMERIC]
    cells.append(f'table[data-paper="{name}"] td.num')
    rule = " { text-align: right; white-space: nowrap; font-variant-numeric: tabular-nums; }"
    return ",\n".join(cells) + rule if cells else ""


COLLAPSE_LINES = 40
"""A terminal table longer than this many lines is collapsed under its summary line."""


def paper_html(table: Table) -> str:
    """`table` as the terminal prints it: the wide layout (one line per group) or the long
    one, its covers and pooled lines above it, the exploratory badge on every line whose
    rows cover an exploratory run; collapsed when longer than `COLLAPSE_LINES`."""
    if table.layout == "wide":
        wide = wide_cells(table)
        header, body, n_text = wide.header, wide.body, wide.n_text
        marks = [any(is_exploratory(r.as_dict()) for r in rows) for rows in wide.lines]
        right = set(range(n_text, len(header)))
    else:
        long = long_cells(table)
        header, body, right = long.header, long.body, set(long.right)
        marks = [is_exploratory(r.as_dict()) for r in table.rows]
    head = "".join(f'<th scope="col"{NUM_CLASS if i in right else ""}>{escape(h)}</th>'
                   for i, h in enumerate(header))
    lines = []
    for cells, mark in zip(body, marks):
        tds = [f"<td{NUM_CLASS if i in right else ''}>{escape(c)}"
               + (f" {EXPLORATORY_BADGE}" if mark and i == 1 else "") + "</td>"
               for i, c in enumerate(cells)]
        tr = '<tr class="exploratory">' if mark else "<tr>"
        lines.append(tr + "".join(tds) + "</tr>")
    covers = "".join(f'<p class="note">{escape(line)}</p>' for line in header_lines(table))
    grid = (f'<div class="scroll"><table class="paper" data-paper="{escape(table.name)}">'
            f"<thead><tr>{head}</tr></thead><tbody>" + "\n".join(lines)
            + "</tbody></table></div>")
    if len(body) > COLLAPSE_LINES:
        grid = (f"<details><summary>{len(body):,} lines (as <code>lab results "
                f"{escape(table.name)}</code> prints them)</summary>{grid}</details>")
    return covers + grid


def table_html(table: Table, rows: list[RowDict]) -> str:
    """One results table: its title, notes, constant fields and the sortable table
    (numeric columns are right-aligned by `numeric_css`; `LEFT_OUT` rows are counted,
    not shown)."""
    rows, left_out = report_rows(table.name, rows)
    shown = tuple(r for r in table.rows if r.measure not in LEFT_OUT.get(table.name, ()))
    out = [f'<section class="results" id="table-{escape(table.name)}">',
           f"<h3>{escape(table.name)}: {escape(table.title)}</h3>"]
    if shown:
        out.append(paper_html(replace(table, rows=shown)))
    if left_out:
        out.append(f'<p class="note">{left_out:,} rows ({", ".join(LEFT_OUT[table.name])} '
                   "of every simple policy) are left out of this page: "
                   f"<code>lab results {escape(table.name)}</code> and <code>lab export</code> "
                   "have them.</p>")
    if not rows:
        out.append('<p class="note">No rows in this selection.</p></section>')
        return "\n".join(out)
    cols, constant = shown_columns(rows)
    if constant:
        out.append('<p class="note">Every row: ' + "; ".join(
            f"{escape(HEADERS.get(k, k))} {escape(fmt(v, k))}" for k, v in constant.items())
            + ".</p>")
    head = "".join(f'<th scope="col" data-f="{c}"{NUM_CLASS if c in NUMERIC else ""}>'
                   f"{escape(HEADERS.get(c, c))}</th>" for c in cols)
    out.append(f"<details><summary>All {len(rows):,} rows with exact values (those of "
               f"<code>lab results {escape(table.name)} --format json</code>)</summary>")
    out.append(f'<div class="scroll"><table class="sortable" data-table="{escape(table.name)}">'
               f"<thead><tr>{head}</tr></thead><tbody>")
    body = []
    for r in rows:
        cells = []
        for c in cols:
            v = r.get(c)
            data = f' data-v="{escape(exact(v))}"' if c in EXACT else ""
            cells.append(f"<td{data}>{escape(fmt(v, c))}</td>")
        mark = ' class="exploratory"' if is_exploratory(r) else ""
        body.append(f"<tr{mark}>" + "".join(cells) + "</tr>")
    out.append("\n".join(body))
    out.append("</tbody></table></div></details>")
    out += [f'<p class="note">{escape(n)}</p>' for n in table.notes]
    out.append("</section>")
    return "\n".join(out)
