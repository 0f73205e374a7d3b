"""The Results screen's tables as something to move in: where each table's rows and cells
sit in the view's text, for a cursor on a cell, sorting by a column, search and copy
(what sorting, searching and copying do to cells is console/widgets/table_ops.py's,
shared with the console's other tables).

Only layout over `analysis.tables.text.table_text`: the text shown is the text `lab
results` prints (rows reordered when sorted, the sort marked in the header); no
statistics and no lab.db here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from analysis.base.rows import Table
from analysis.tables.text import ROW_NUMBER, Cells, Fitted, table_cells, table_text
from console.widgets.table_ops import Sort, order_rows


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


def sorted_order(cells: Cells, sort: Sort | None) -> list[int]:
    """Body row indexes in the order `sort` puts them (stable; a number column by its
    numbers, cells with no number last whichever the direction); the rows' own order
    when `sort` is None."""
    return order_rows(cells.body, sort, sort is not None and sort.column in cells.right)


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
