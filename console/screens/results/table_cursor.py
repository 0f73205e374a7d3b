"""The Results screen's tables as something to move in: where each table's rows and cells
sit in the view's text, a cursor on a cell, sorting by a column, search, and TSV to copy.

Only layout over `analysis.tables.text.table_text`: the text shown is the text `lab
results` prints (rows reordered when sorted, the sort marked in the header); no
statistics and no lab.db here.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from analysis.base.rows import Table
from analysis.tables.text import ROW_NUMBER, Cells, Fitted, table_cells, table_text

CURSOR_ROW = "reverse"
"""How the cursor's row is drawn in every block (readable without colour)."""
CURSOR_CELL = "reverse bold underline"
"""How the cursor's cell is drawn."""
MATCH = "black on yellow"
"""How a search match is drawn."""
MATCH_CURRENT = "bold black on bright_green"
"""How the match `n`/`N` went to is drawn."""
ASCENDING, DESCENDING = "▲", "▼"


@dataclass(frozen=True)
class Sort:
    """A table's sort: the column (index into its cells' header) and the direction."""

    column: int
    descending: bool = False

    def mark(self) -> str:
        """The arrow the column's header gets."""
        return DESCENDING if self.descending else ASCENDING


@dataclass(frozen=True)
class Placed:
    """One table of a view: its cells in the order shown, and where they sit.

    Attributes:
        cells: the cells (header without the sort arrow; body in the order shown).
        fitted: the fitted lines' blocks.
        offset: the index in the view's lines of the fitted table's first line.
        title: the table's title.
    """

    cells: Cells
    fitted: Fitted
    offset: int
    title: str

    def row_lines(self, row: int) -> list[int]:
        """The view's line indexes showing body row `row` (one per block)."""
        return [self.offset + b.line + 2 + row for b in self.fitted.blocks]

    def cell_place(self, row: int, column: int) -> tuple[int, int, int] | None:
        """(line, start, end) of a cell in the view, in the first block showing it."""
        for b in self.fitted.blocks:
            if column in b.columns:
                k = b.columns.index(column)
                return (self.offset + b.line + 2 + row, b.starts[k], b.starts[k] + b.widths[k])
        return None


@dataclass(frozen=True)
class Layout:
    """A view's text and its tables' places."""

    lines: list[str]
    tables: tuple[Placed, ...] = field(default_factory=tuple)

    @property
    def text(self) -> str:
        """The lines joined."""
        return "\n".join(self.lines)


_NUMBER = re.compile(r"[+\-−]?(?:\d[\d,]*\.?\d*|\.\d+|∞)")


def sort_value(text: str) -> float:
    """The number a cell sorts by: its first number (an interval's estimate), ∞ and −∞
    included; NaN for text with no number ("–")."""
    found = _NUMBER.search(text)
    if found is None:
        return math.nan
    s = found.group().replace("−", "-").replace(",", "")
    if s.lstrip("+-") == "∞":
        return -math.inf if s.startswith("-") else math.inf
    try:
        return float(s)
    except ValueError:
        return math.nan


def sorted_order(cells: Cells, sort: Sort | None) -> list[int]:
    """Body row indexes in the order `sort` puts them (stable; cells with no number last
    whichever the direction); the rows' own order when `sort` is None."""
    order = list(range(len(cells.body)))
    if sort is None:
        return order
    c = sort.column
    if c in cells.right:
        values = [sort_value(row[c]) for row in cells.body]
        known = [i for i in order if not math.isnan(values[i])]
        known.sort(key=lambda i: values[i], reverse=sort.descending)
        return known + [i for i in order if math.isnan(values[i])]
    return sorted(order, key=lambda i: cells.body[i][c].casefold(), reverse=sort.descending)


def layout(tables: Sequence[Table], note: str, width: int,
           sorts: dict[int, Sort] | None = None) -> Layout:
    """A view's text and where its tables' cells sit.

    Args:
        tables: the tables the view prints (`views.display_tables`).
        note: a line above them ("" for none).
        width: columns available.
        sorts: per table index, its sort (none: the table's order).

    Returns:
        The layout.
    """
    lines: list[str] = [note, ""] if note else []
    placed = []
    for i, table in enumerate(tables):
        if i:
            lines += [""]
        cells = table_cells(table) if table.rows else None
        sort = (sorts or {}).get(i)
        shown = cells
        if cells is not None and sort is not None and 0 <= sort.column < len(cells.header):
            order = sorted_order(cells, sort)
            header = list(cells.header)
            header[sort.column] += f" {sort.mark()}"
            cells = replace(cells, body=[cells.body[k] for k in order])
            shown = replace(cells, header=header)
        text = table_text(table, width, shown)
        if text.fitted is not None and cells is not None:
            placed.append(Placed(cells, text.fitted, len(lines) + text.grid, table.title))
        lines += text.lines
    return Layout(lines, tuple(placed))


def tsv(rows: Sequence[Sequence[str]]) -> str:
    """Rows as tab-separated values (a tab or newline inside a cell becomes a space)."""
    def clean(cell: str) -> str:
        return " ".join(cell.replace("\t", " ").splitlines())

    return "\n".join("\t".join(clean(c) for c in row) for row in rows)


def matches(lines: Sequence[str], query: str) -> list[tuple[int, int, int]]:
    """Every (line, start, end) where `query` occurs, case-insensitive, in order."""
    q = query.casefold()
    if not q:
        return []
    out = []
    for y, line in enumerate(lines):
        low, x = line.casefold(), 0
        while (x := low.find(q, x)) >= 0:
            out.append((y, x, x + len(q)))
            x += len(q)
    return out


def row_at(tables: Sequence[Placed], line: int) -> tuple[int, int] | None:
    """(table, body row) shown on a view line, or None when it is no table row."""
    for t, p in enumerate(tables):
        for b in p.fitted.blocks:
            row = line - p.offset - b.line - 2
            if 0 <= row < len(p.cells.body):
                return t, row
    return None


def columns_of(placed: Placed) -> list[int]:
    """The table's columns in the order a cursor steps through them (no row number)."""
    seen: dict[int, None] = {}
    for b in placed.fitted.blocks:
        seen.update(dict.fromkeys(c for c in b.columns if c != ROW_NUMBER))
    return list(seen)
