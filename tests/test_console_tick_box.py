"""A checkbox reads as ticked only when it is: Textual's draws X either way, told apart by
colour alone (so with NO_COLOR the NEI box of the import form read as ticked when off).
The real forms' boxes are checked too: a form going back to Textual's Checkbox fails."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.app import App, ComposeResult
from textual.widgets import Checkbox, Select

from console.screens.sets import SetsScreen
from console.widgets.sets_forms import ImportForm
from console.widgets.tick_box import TickBox
from console.widgets.workers import StartForm
from core import store
from core.demo_set import ensure_demo_set
from tests.helpers.console import console_app, settle
from tests.helpers.waiting import pause_until


class _Box(App[None]):
    def compose(self) -> ComposeResult:
        yield TickBox("keep NOT ENOUGH INFO claims (fever)", False, id="box")


@pytest.mark.asyncio
async def test_the_box_is_empty_when_off_and_x_when_on() -> None:
    app = _Box()
    async with app.run_test(size=(60, 5)) as pilot:
        box = app.query_one(TickBox)
        assert str(box.render()).startswith("▐ ▌ keep NOT ENOUGH INFO")
        box.focus()
        await pilot.press("space")
        await pilot.pause()
        assert box.value is True
        assert str(box.render()).startswith("▐X▌ keep NOT ENOUGH INFO")


@pytest.mark.asyncio
async def test_the_forms_boxes_read_empty_when_off(tmp_path: Path) -> None:
    """The boxes a researcher meets: the import form's NEI (FEVER picked, so it can be
    ticked) and the worker form's keep-running box, both off as the forms open."""
    path = tmp_path / "lab.db"
    db = store.connect(path)
    ensure_demo_set(db)
    db.conn.close()
    app = console_app(path, first_screen="enqueue", preview_debounce_s=0.01)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("escape", "s")
        await pause_until(pilot, lambda: isinstance(app.screen, SetsScreen), "the Sets view")
        await settle(pilot)
        await pilot.press("i")
        await pause_until(pilot, lambda: isinstance(app.screen, ImportForm), "the import form")
        app.screen.query_one("#imp-kind", Select).value = "fever"
        await pilot.pause()
        nei = app.screen.query_one("#imp-nei", Checkbox)
        assert not nei.disabled and nei.value is False
        assert str(nei.render()).startswith("▐ ▌ keep NOT ENOUGH INFO")
        await pilot.press("escape", "escape", "1")
        await settle(pilot)
        await pilot.press("w")
        await pause_until(pilot, lambda: isinstance(app.screen, StartForm), "the worker form")
        keep = app.screen.query_one("#w-keep", Checkbox)
        assert keep.value is False and str(keep.render()).startswith("▐ ▌ keep running")
        await pilot.press("escape")
