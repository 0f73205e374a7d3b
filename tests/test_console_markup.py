"""Stored text is never read as markup in the console: a notice quoting a stored name,
and Enqueue's lists of amendments, sets and models show it as stored. Textual reads a
`str` as markup (and a screen's `notify` asks it to): a name or title like `[/]` raised
in the markup parser while the widget drew, and `[@click=app.quit]` turned stored text
into a clickable action. (The tables: tests/test_console_measured_table.py.)"""

from __future__ import annotations

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
