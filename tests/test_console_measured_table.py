"""The console's tables (console/widgets/measured_table.py): columns as wide as their
cells in the first drawing, and cells and headers shown as stored, never as markup.

Textual's DataTable measures new rows only at its next idle and caches rows drawn
before that without their widths: a Trajectories list filled before its first frame
kept header-wide columns ("sim-o", "enf") on a loaded machine. These tests draw the
table right after filling it, on the same turn of the event loop (no idle can come
between), which is what the loaded machine did by chance.
"""

from __future__ import annotations

import pytest
from textual.app import App, ComposeResult

from console.widgets.key_table import Column, KeyTable
from console.widgets.measured_table import MeasuredTable

COLUMNS = (Column("id", "id", numeric=True), Column("model", "model"),
           Column("arm", "arm"))
ROWS = [(str(i), [str(480 - i), "sim-oracle", "enforced_rule"]) for i in range(3)]


class _Tables(App[None]):
    def compose(self) -> ComposeResult:
        yield KeyTable(id="keyed")
        yield MeasuredTable(id="plain")


def _lines(table: MeasuredTable, n: int) -> list[str]:
    return [table.render_line(y).text.rstrip() for y in range(n)]


@pytest.mark.asyncio
async def test_a_list_drawn_before_its_idle_has_its_cells_widths() -> None:
    app = _Tables()
    async with app.run_test(size=(80, 12)) as pilot:
        table = app.query_one("#keyed", KeyTable)
        table.set_columns(COLUMNS)
        table.fill(ROWS)
        drawn = _lines(table, 3)  # before the table's idle
        await pilot.pause()
        assert drawn == _lines(table, 3)
        assert drawn[1].split() == ["480", "sim-oracle", "enforced_rule"]


@pytest.mark.asyncio
async def test_cells_and_headers_are_shown_as_stored_not_as_markup() -> None:
    """A run or question id like `[/]` raised in Rich's markup parser while the table
    drew; `[red]x[/red]` lost its brackets."""
    app = _Tables()
    async with app.run_test(size=(80, 12)) as pilot:
        table = app.query_one("#plain", MeasuredTable)
        table.add_columns("[/]", "run [b]")
        table.add_row("[/]", "[red]x[/red]")
        await pilot.pause()
        header, row = _lines(table, 2)
        assert header.split() == ["[/]", "run", "[b]"]
        assert row.split() == ["[/]", "[red]x[/red]"]
        keyed = app.query_one("#keyed", KeyTable)
        keyed.set_columns([Column("arm ([/])", "arm")])
        keyed.fill([("1", ["[link=http://x]y[/link]"])])
        await pilot.pause()
        assert _lines(keyed, 2)[1].strip() == "[link=http://x]y[/link]"
