"""The console's DataTable: its cells and headers are plain text, and its columns take
their rows' widths when the rows are added.

Two things Textual's own DataTable does that the console cannot have:

- A `str` cell or header is read as Rich markup: a run or question id such as `[/]`
  from imported data raises while the table draws, and `[red]` changes how it looks.
  Here every `str` becomes a plain `Text` (what was stored is what is shown).
- An auto-width column measures new rows only at the table's next idle, but the rows
  can be drawn before that idle, and the drawn rows are cached without their widths:
  a list filled before its first frame kept header-wide columns (`sim-o` for
  `sim-oracle`, `enf` for `enforced_rule`) until something cleared the cache. Here a
  column is widened to its cells as each row is added, so the first drawing already
  has the widths the idle measures (they only grow, as Textual's do).
"""

from __future__ import annotations

from typing import Any

from rich.cells import cell_len
from rich.text import Text
from textual.widgets import DataTable
from textual.widgets.data_table import ColumnKey, RowKey


def plain_cell(cell: Any) -> Any:
    """A `str` as plain `Text` (no markup read from it); anything else as it is."""
    return Text(cell, end="") if isinstance(cell, str) else cell


def cell_width(cell: Any) -> int:
    """The cells a value takes on one line: its widest line (0 for a non-text)."""
    if isinstance(cell, Text):
        return max((cell_len(line) for line in cell.plain.split("\n")), default=0)
    if isinstance(cell, str):
        return max((cell_len(line) for line in cell.split("\n")), default=0)
    if isinstance(cell, float):
        return len(f"{cell:.2f}")  # as Textual shows a float
    if isinstance(cell, int):
        return len(str(cell))
    return 0


class MeasuredTable(DataTable[Any]):
    """A DataTable of plain-text cells whose auto-width columns are as wide as their
    cells from the moment the cells are added (see the module's docstring)."""

    def add_column(self, label: Any, *, width: int | None = None,
                   key: str | None = None, default: Any = None) -> ColumnKey:
        """Add a column; a `str` label is shown as it is (no markup)."""
        return super().add_column(plain_cell(label), width=width, key=key,
                                  default=default)

    def add_row(self, *cells: Any, height: int | None = 1, key: str | None = None,
                label: Any = None) -> RowKey:
        """Add a row of plain-text cells and widen the auto-width columns to them."""
        shown = [plain_cell(c) for c in cells]
        row_key = super().add_row(*shown, height=height, key=key,
                                  label=plain_cell(label))
        for column, cell in zip(self.ordered_columns, shown):
            if column.auto_width:
                column.content_width = max(column.content_width, cell_width(cell))
        return row_key

    def update_cell(self, row_key: RowKey | str, column_key: ColumnKey | str,
                    value: Any, *, update_width: bool = False) -> None:
        """Change a cell (a `str` shown as it is)."""
        super().update_cell(row_key, column_key, plain_cell(value),
                            update_width=update_width)

