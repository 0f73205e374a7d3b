"""Stored text is never read as markup in the console: a notice quoting a stored name,
and Enqueue's lists of amendments, sets and models show it as stored. Textual reads a
`str` as markup (and a screen's `notify` asks it to): a name or title like `[/]` raised
in the markup parser while the widget drew, and `[@click=app.quit]` turned stored text
into a clickable action. (The tables: tests/test_console_measured_table.py; every screen
with such names: tests/test_inert_console.py.) Every text widget is built with
`markup=False`, so a later update handed a str cannot bring markup back."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from textual.widgets import Select
from textual.widgets._toast import Toast

from core import prereg, store
from tests.helpers.console import console_app, settle

STORED = "no run named '[/]' · [@click=app.quit]quit[/] · [red]x[/red]"


@pytest.mark.asyncio
async def test_a_notice_shows_stored_text_as_it_is(tmp_path: Path) -> None:
    db = tmp_path / "lab.db"
    store.connect(db).conn.close()
    app = console_app(db)
    async with app.run_test(size=(120, 30), notifications=True) as pilot:
        await settle(pilot)
        app.screen.notify(STORED, title="[/]", severity="error", timeout=60)
        for _ in range(200):  # the toast rack mounts its toast on a later turn
            await pilot.pause(0.02)
            if app.screen.query(Toast):
                break
        text = "\n".join(s.text for s in app.screen._compositor.render_strips())
        assert app.is_running
        toast = " ".join(line.partition("▌")[2].strip() for line in text.splitlines()
                         if "▌" in line).split()  # its lines, wrapped at spaces
        assert " ".join(toast) == f"[/] {STORED}", text


@pytest.mark.asyncio
async def test_enqueues_amendment_list_shows_a_stored_title_as_it_is(tmp_path: Path) -> None:
    db = tmp_path / "lab.db"
    conn = store.connect(db)
    prereg.create(conn, STORED, "Its body.")
    conn.conn.close()
    app = console_app(db, first_screen="enqueue")
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        select = app.screen.query_one("#enq-amendment", Select)
        select.focus()
        await pilot.press("enter")  # open the list: its options are drawn
        await settle(pilot)
        text = "\n".join(s.text for s in app.screen._compositor.render_strips())
        assert app.is_running
        for part in ("A1 ✎ draft  no run named '[/]'", "[@click=app.quit]quit[/]",
                     "[red]x[/red]"):  # the title wraps in the list
            assert part in text, text


CONSOLE = Path(__file__).resolve().parent.parent / "console"
MARKUP_WIDGETS = ("Static", "Label", "RichLog")
"""Widgets that read a `str` as markup unless built with `markup=False`."""


def _calls(name: str) -> list[tuple[str, int, ast.Call]]:
    """(file, line, call) of every call of `name` (a bare name or an attribute) in console/."""
    found = []
    for path in sorted(CONSOLE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_bytes())):
            if isinstance(node, ast.Call):
                f = node.func
                called = f.id if isinstance(f, ast.Name) else getattr(f, "attr", None)
                if called == name:
                    found.append((str(path.relative_to(CONSOLE.parent)), node.lineno, node))
    return found


def test_every_text_widget_is_built_without_markup() -> None:
    """A Static, Label or RichLog later updated with text read from lab.db (a name, a
    title, an error quoting either) would parse it as markup; each is built with
    `markup=False`, its styles carried by `Text`, so none depends on every update
    remembering to pass `Text`. Tables are `MeasuredTable`s (plain str cells)."""
    plain = []
    for name in MARKUP_WIDGETS:
        for path, line, call in _calls(name):
            markup = {k.arg: k.value for k in call.keywords}.get("markup")
            if not (isinstance(markup, ast.Constant) and markup.value is False):
                plain.append(f"{path}:{line} {name}")
    assert not plain, plain
    assert not _calls("DataTable"), "a DataTable reads str cells as markup: use MeasuredTable"
