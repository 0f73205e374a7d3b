"""A checkbox reads as ticked only when it is: Textual's draws X either way, told apart by
colour alone (so with NO_COLOR the NEI box of the import form read as ticked when off)."""

from __future__ import annotations

import pytest
from textual.app import App, ComposeResult

from console.widgets.tick_box import TickBox


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
