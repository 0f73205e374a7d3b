"""The Results screen's two tables whose Enter the footer lists."""

from __future__ import annotations

from textual.binding import Binding
from textual.widgets import DataTable


class GridTable(DataTable):
    """The Δ grid, whose Enter is listed in the footer."""

    BINDINGS = [Binding("enter", "select_cursor", "Decisions")]


class DrillTable(DataTable):
    """The decision list, whose Enter is listed in the footer."""

    BINDINGS = [Binding("enter", "select_cursor", "Open trajectory")]
