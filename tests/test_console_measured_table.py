"""The console's tables (console/widgets/measured_table.py): columns as wide as their
cells in the first drawing, and cells and headers shown as stored, never as markup.

Textual's DataTable measures new rows only at its next idle and caches rows drawn
before that without their widths: a Trajectories list filled before its first frame
kept header-wide columns ("sim-o", "enf") on a loaded machine. These tests draw the
table right after filling it, on the same turn of the event loop (no idle can come
between), which is what the loaded machine did by chance.
"""

from __future__ import annotations

import ast
from pathlib import Path

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


def test_every_table_in_the_console_is_a_measured_table() -> None:
    """A screen that builds Textual's DataTable itself brings both faults back (the Sets
    screen's set and sha256 columns were drawn header-wide at start on a loaded
    machine): every table is a MeasuredTable or a subclass of one."""
    root = Path(__file__).resolve().parents[1] / "console"
    found = []
    for path in sorted(root.rglob("*.py")):
        if path.name == "measured_table.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            bases = node.bases if isinstance(node, ast.ClassDef) else []
            called = [node.func] if isinstance(node, ast.Call) else []
            for name in [*bases, *called]:
                if isinstance(name, ast.Subscript):
                    name = name.value
                if isinstance(name, ast.Name) and name.id == "DataTable":
                    found.append(f"{path.relative_to(root.parent)}:{getattr(node, 'lineno', 0)}")
    assert not found, f"Textual's DataTable built directly at {found}"
