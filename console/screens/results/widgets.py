"""The Results screen's two tables whose Enter the footer lists."""

from __future__ import annotations

from textual.binding import Binding
from textual.containers import VerticalScroll

from console.widgets.measured_table import MeasuredTable


class GridTable(MeasuredTable):
    """The Δ grid, whose Enter is listed in the footer."""

    BINDINGS = [Binding("enter", "select_cursor", "Decisions")]


class DrillTable(MeasuredTable):
    """The decision list, whose Enter is listed in the footer."""

    BINDINGS = [Binding("enter", "select_cursor", "Open trajectory")]


class TableScroll(VerticalScroll):
    """The text view: the arrows, Home and End move the screen's table cursor when the
    view shows a table (its `table_move` says whether it did), else they scroll."""

    def _move(self, rows: int, cols: int, fallback: str) -> None:
        move = getattr(self.screen, "table_move", None)
        if move is None or not move(rows, cols):
            getattr(super(), f"action_{fallback}")()

    def action_scroll_up(self) -> None:
        """Cursor up a row (or scroll)."""
        self._move(-1, 0, "scroll_up")

    def action_scroll_down(self) -> None:
        """Cursor down a row (or scroll)."""
        self._move(1, 0, "scroll_down")

    def action_scroll_left(self) -> None:
        """Cursor left a column (or scroll)."""
        self._move(0, -1, "scroll_left")

    def action_scroll_right(self) -> None:
        """Cursor right a column (or scroll)."""
        self._move(0, 1, "scroll_right")

    def action_scroll_home(self) -> None:
        """Cursor to the first row, view to the top."""
        self._move(-(10**9), 0, "scroll_home")
        self.scroll_home(animate=False)

    def action_scroll_end(self) -> None:
        """Cursor to the last row, view to the bottom."""
        self._move(10**9, 0, "scroll_end")
        self.scroll_end(animate=False)

