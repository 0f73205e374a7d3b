"""A DataTable that keeps its rows, so it can sort them by a column, find a text in its
cells and say what a copy takes: the Trajectories screen's episode list and matched
arms (the Results screen's text tables do the same over their own layout).

The screen owns the keys (they mean other things in its other views) and calls `sort`,
`search`, `step_match`, `ends` and `copy`; the table keeps the cursor on the same row
(by key) and column when it is filled again, sorted or searched, and redraws the header's
▲/▼ and the matches. Sorting, matching and copying are console/widgets/table_ops.py's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich.cells import cell_len
from rich.text import Text
from textual.binding import Binding
from textual.widgets.data_table import ColumnKey

from console.widgets.measured_table import MeasuredTable
from console.widgets.table_ops import (
    MATCH,
    MATCH_CURRENT,
    Sort,
    copy_text,
    matches,
    next_sort,
    order_rows,
)

Cell = str | Text


@dataclass(frozen=True)
class Column:
    """A column of a KeyTable.

    Attributes:
        label: the header.
        key: the DataTable's column key.
        numeric: sorted by the numbers in its cells (else as text).
        width: a fixed width (None: as wide as its cells).
    """

    label: str
    key: str
    numeric: bool = False
    width: int | None = None


def _plain(cell: Cell) -> str:
    return cell.plain if isinstance(cell, Text) else cell


class KeyTable(MeasuredTable):
    """A cell-cursor DataTable over rows it keeps: sort, search with marks, copy, ends.

    Home / End go to the first / last row (as on the Results tables), not the first /
    last column.
    """

    BINDINGS = [
        Binding("home", "scroll_top", "First row", show=False),
        Binding("end", "scroll_bottom", "Last row", show=False),
    ]

    def __init__(self, *, id: str | None = None,  # noqa: A002 (Textual's name)
                 zebra_stripes: bool = False) -> None:
        super().__init__(id=id, cursor_type="cell", zebra_stripes=zebra_stripes)
        self._columns: list[Column] = []
        self._keys: list[str] = []
        self._cells: list[list[Cell]] = []
        self._plain: list[list[str]] = []
        self._order: list[int] = []
        self.sort_by: Sort | None = None
        """The sort shown (None: the rows' own order)."""
        self.query_text = ""
        """The search shown ("" for none)."""
        self.found: list[tuple[int, int, int, int]] = []
        """Each match as (row as shown, column, start, end), in reading order."""
        self.found_at = -1
        """The match `n`/`N` went to (-1: none yet)."""

    # ── what it shows ────────────────────────────────────────────────────────────────

    def set_columns(self, columns: Sequence[Column]) -> None:
        """Use these columns (the rows are emptied; the sort is dropped when its column
        is gone)."""
        self._columns = list(columns)
        if self.sort_by is not None and self.sort_by.column >= len(self._columns):
            self.sort_by = None
        self._keys, self._cells, self._plain, self._order = [], [], [], []
        self.clear(columns=True)
        for col in self._columns:
            self.add_column(col.label, key=col.key, width=col.width)

    def fill(self, rows: Sequence[tuple[str, Sequence[Cell]]],
             cursor_key: str | None = None) -> None:
        """Show these rows (sorted and searched as before), the cursor on `cursor_key`'s
        row when given, else on the row it was on when that is still there.

        Args:
            rows: (row key, cells) in the rows' own order.
            cursor_key: the row to put the cursor on.
        """
        keep = cursor_key if cursor_key is not None else self.cursor_key
        self._keys = [k for k, _ in rows]
        self._cells = [list(c) for _, c in rows]
        self._plain = [[_plain(c) for c in cells] for cells in self._cells]
        self._draw(keep, self.cursor_column)

    @property
    def header(self) -> list[str]:
        """The columns' names (without the sort's arrow)."""
        return [c.label for c in self._columns]

    @property
    def shown(self) -> list[list[str]]:
        """The rows as shown (sorted), as plain text."""
        return [self._plain[i] for i in self._order]

    @property
    def cursor_key(self) -> str | None:
        """The key of the row under the cursor (None: no rows)."""
        if not self._order or not 0 <= self.cursor_row < len(self._order):
            return None
        return self._keys[self._order[self.cursor_row]]

    def _draw(self, key: str | None, column: int | None) -> None:
        """Show the rows in the current order with the header's arrow and the search's
        marks; the cursor on `key`'s row (else the first) and `column`. The columns stay
        (their widths only grow: a redraw never shows them narrower for a frame)."""
        sort = self.sort_by
        numeric = sort is not None and self._columns[sort.column].numeric
        self._order = order_rows(self._plain, sort, numeric)
        self._find()
        self._header()
        marks = self._marks()
        self.clear()
        for shown, index in enumerate(self._order):
            cells = self._cells[index]
            if any((shown, c) in marks for c in range(len(cells))):
                cells = [_marked(cell, marks.get((shown, c), [])) for c, cell in
                         enumerate(cells)]
            self.add_row(*cells, key=self._keys[index])
        row = 0
        if key is not None and key in self._keys:
            row = self._order.index(self._keys.index(key))
        if self.row_count:
            self.move_cursor(row=row, column=min(column or 0, len(self._columns) - 1),
                             animate=False)

    def _header(self) -> None:
        """The sorted column's header with its arrow, the others without."""
        sort = self.sort_by
        for i, col in enumerate(self._columns):
            label = col.label + (f" {sort.mark()}" if sort is not None and sort.column == i
                                 else "")
            column = self.columns.get(ColumnKey(col.key))
            if column is not None and column.label.plain != label:
                column.label = Text(label)
                if column.auto_width:
                    column.content_width = max(column.content_width, cell_len(label))

    def _marks(self) -> dict[tuple[int, int], list[tuple[int, int, str]]]:
        """(row as shown, column) → the spans the search marks in that cell."""
        marks: dict[tuple[int, int], list[tuple[int, int, str]]] = {}
        for i, (r, c, x0, x1) in enumerate(self.found):
            marks.setdefault((r, c), []).append(
                (x0, x1, MATCH_CURRENT if i == self.found_at else MATCH))
        return marks

    def _remark(self, before: dict[tuple[int, int], list[tuple[int, int, str]]]) -> None:
        """Redraw only the cells whose marks changed (no rows added: the table does not
        move), then put the cursor on the current match."""
        after = self._marks()
        for r, c in set(before) | set(after):
            if before.get((r, c)) != after.get((r, c)) and r < len(self._order):
                index = self._order[r]
                self.update_cell(self._keys[index], self._columns[c].key,
                                 _marked(self._cells[index][c], after.get((r, c), [])))
        if 0 <= self.found_at < len(self.found):
            r, c, _, _ = self.found[self.found_at]
            self.move_cursor(row=r, column=c, animate=False)

    # ── the keys ────────────────────────────────────────────────────────────────────

    def cycle_sort(self) -> str:
        """`s`: sort by the cursor's column, ascending, then descending, then the rows'
        own order. Returns what the notice says."""
        column = self.cursor_column
        self.sort_by = next_sort(self.sort_by, column)
        self._draw(self.cursor_key, column)
        if self.sort_by is None:
            return "back in the list's own order"
        return self.sort_by.describe(self._columns[column].label)

    def search(self, query: str) -> int:
        """`/`: mark every cell text matching `query` (case-insensitive) and put the
        cursor on the first match at or below it. Returns how many matches."""
        before = self._marks()
        self.query_text = query
        self.found_at = -1
        self._find()
        if self.found:
            row = self.cursor_row
            self.found_at = next((i for i, f in enumerate(self.found) if f[0] >= row), 0)
        self._remark(before)
        return len(self.found)

    def step_match(self, step: int) -> None:
        """`n` / `N`: the next / previous match (wrapping), the cursor on its cell."""
        if self.found:
            before = self._marks()
            self.found_at = (self.found_at + step) % len(self.found)
            self._remark(before)

    def clear_search(self) -> None:
        """Escape: no search, no marks."""
        before = self._marks()
        self.query_text, self.found, self.found_at = "", [], -1
        self._remark(before)

    def _find(self) -> None:
        """The matches of the search in the rows as shown (the current one kept when it is
        still there)."""
        before = self.found[self.found_at] if 0 <= self.found_at < len(self.found) else None
        self.found = [(r, c, x0, x1) for r, i in enumerate(self._order)
                      for c, x0, x1 in matches(self._plain[i], self.query_text)]
        self.found_at = self.found.index(before) if before in self.found else (
            min(self.found_at, len(self.found) - 1))

    def ends(self, direction: int) -> None:
        """`g` / `G` (and Home / End): the first / last row, the cursor's column kept."""
        if self.row_count:
            self.move_cursor(row=0 if direction < 0 else self.row_count - 1, animate=False)

    def copy(self, what: str) -> tuple[str, str] | None:
        """(text, what it is) of `c` (the cursor's cell), `C` (its row) or `T` (the whole
        table, header first, rows as shown), as tab-separated text; None when empty."""
        return copy_text(what, self.header, self.shown, self.cursor_row, self.cursor_column)


def _marked(cell: Cell, spans: list[tuple[int, int, str]]) -> Cell:
    """The cell with its matched spans styled (a copy: the kept cell stays unmarked)."""
    if not spans:
        return cell
    text = cell.copy() if isinstance(cell, Text) else Text(cell)
    for x0, x1, style in spans:
        text.stylize(style, x0, x1)
    return text
