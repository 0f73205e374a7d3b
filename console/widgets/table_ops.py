"""What every console table does with its cells, whatever draws it: sort by a column,
find a text, copy a cell, a row or the whole table as tab-separated text.

Shared by the Results screen's text tables (console/screens/results/table_cursor.py)
and the DataTables of Results and Trajectories (console/widgets/key_table.py), so a
column sorts, a search matches and a copy reads the same on every screen. Plain text
only: no lab.db, no statistics, nothing drawn.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from textual.widgets import DataTable

CURSOR_ROW = "reverse"
"""How the cursor's row is drawn (readable without colour)."""
CURSOR_CELL = "reverse bold underline"
"""How the cursor's cell is drawn."""
MATCH = "black on yellow"
"""How a search match is drawn."""
MATCH_CURRENT = "bold black on bright_green"
"""How the match `n`/`N` went to is drawn."""
ASCENDING, DESCENDING = "▲", "▼"


@dataclass(frozen=True)
class Sort:
    """A table's sort: the column (index into its header) and the direction."""

    column: int
    descending: bool = False

    def mark(self) -> str:
        """The arrow the column's header gets."""
        return DESCENDING if self.descending else ASCENDING

    def describe(self, name: str) -> str:
        """`sorted by NAME, ascending ▲` (what the notice says)."""
        return f"sorted by {name}, " + ("descending ▼" if self.descending else "ascending ▲")


def next_sort(now: Sort | None, column: int) -> Sort | None:
    """What `s` on `column` does: ascending on a new column, then descending, then back
    to the table's own order (None)."""
    if now is None or now.column != column:
        return Sort(column)
    if not now.descending:
        return Sort(column, True)
    return None


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


def order_rows(body: Sequence[Sequence[str]], sort: Sort | None, numeric: bool) -> list[int]:
    """Row indexes of `body` in the order `sort` puts them (stable); the rows' own order
    when `sort` is None.

    Args:
        body: the rows' cells as text.
        sort: the column and direction.
        numeric: whether the column holds numbers (sorted by `sort_value`, cells with no
            number last whichever the direction) rather than text (case-insensitive).

    Returns:
        The order.
    """
    order = list(range(len(body)))
    if sort is None:
        return order
    c = sort.column
    if numeric:
        values = [sort_value(row[c]) for row in body]
        known = [i for i in order if not math.isnan(values[i])]
        known.sort(key=lambda i: values[i], reverse=sort.descending)
        return known + [i for i in order if math.isnan(values[i])]
    return sorted(order, key=lambda i: body[i][c].casefold(), reverse=sort.descending)


def matches(lines: Sequence[str], query: str) -> list[tuple[int, int, int]]:
    """Every (line, start, end) where `query` occurs, case-insensitive, in order (the
    lines may be a text's lines or a table row's cells)."""
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


def tsv(rows: Sequence[Sequence[str]]) -> str:
    """Rows as tab-separated values (a tab or newline inside a cell becomes a space)."""
    def clean(cell: str) -> str:
        return " ".join(cell.replace("\t", " ").splitlines())

    return "\n".join("\t".join(clean(c) for c in row) for row in rows)


def copy_text(what: str, header: Sequence[str], rows: Sequence[Sequence[str]], row: int,
              column: int) -> tuple[str, str] | None:
    """The text `c` (a cell), `C` (a row) or `T` (the table, header first) copies, and
    the words the notice says it with; None on an empty table.

    Args:
        what: "cell", "row" or "table".
        header: the columns' names (without a sort arrow).
        rows: the rows as shown.
        row: the cursor's row.
        column: the cursor's column.

    Returns:
        (text, what was copied) or None.
    """
    if not rows:
        return None
    row = min(max(row, 0), len(rows) - 1)
    if what == "cell":
        column = min(max(column, 0), len(rows[row]) - 1)
        return rows[row][column], f"cell {header[column]}"
    if what == "row":
        return tsv([rows[row]]), f"row {row + 1} ({len(rows[row])} cells)"
    return tsv([list(header), *rows]), f"table ({len(rows)} rows + header)"


def datatable_cells(table: DataTable) -> tuple[list[list[str]], list[str]]:
    """A DataTable's cells as plain text, rows in the order shown, and its header (what
    copying a cell, a row or the table takes).

    Args:
        table: the table.

    Returns:
        (rows, header).
    """
    header = [str(c.label.plain if hasattr(c.label, "plain") else c.label)
              for c in table.ordered_columns]
    rows = [[getattr(v, "plain", str(v)) for v in table.get_row_at(i)]
            for i in range(table.row_count)]
    return rows, header
