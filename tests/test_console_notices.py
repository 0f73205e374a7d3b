"""The console's notices are plain text: an error quoting a stored name shows it as
stored. Textual reads a notice as markup unless told not to, and a screen's `notify`
tells it to: a run named `[/]` raised in the markup parser while the notice drew, and
`[@click=app.quit]` turned stored text into a clickable action."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets._toast import Toast

from core import store
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
