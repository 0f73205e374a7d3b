"""A toast never covers the text field being typed in, at 80×24: Enqueue's fields, the
Sets form's and the amendment editor's title (toasts go to the half of the screen away
from the focused field)."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pytest
from textual.app import App
from textual.geometry import Region
from textual.pilot import Pilot
from textual.widget import Widget
from textual.widgets import Input
from textual.widgets._toast import Toast

from console.toast_place import RACK, TOP
from console.widgets.sets_forms import SetForm
from core import prereg, store
from tests.helpers.console import build, console_app, copy_db, settle
from tests.helpers.waiting import pause_until

MESSAGE = ("a notice long enough to wrap over two lines of a toast, as the console's "
           "errors and copies often are")


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A lab.db with a run sim grid and a draft amendment A1."""
    path = build(tmp_path_factory.mktemp("toasts") / "lab.db", run=True)
    db = store.connect(path)
    prereg.create(db, "A draft", "Its body.")
    db.conn.close()
    return path


@pytest.fixture
def lab_db(built: Path, tmp_path: Path) -> Path:
    return copy_db(built, tmp_path / "lab.db")


async def toast_regions(app: App[None], pilot: Pilot[None], field: Input) -> list[Region]:
    """Focus `field`, raise a toast, and return where the toasts are drawn."""
    app.clear_notifications()
    field.focus()
    await pilot.pause()
    await pilot.pause()
    app.notify(MESSAGE, timeout=30)
    for _ in range(5):
        await pilot.pause()
    return [toast.region for toast in app.screen.query(Toast)]


def assert_uncovered(field: Input, toasts: list[Region]) -> None:
    assert toasts and all(t.height for t in toasts), toasts
    assert field.region.height, field.id
    for toast in toasts:
        assert not toast.overlaps(field.region), (field.id, field.region, toast)


@pytest.mark.asyncio
async def test_toasts_leave_enqueues_fields_uncovered(lab_db: Path) -> None:
    app = console_app(lab_db, first_screen="enqueue")
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await settle(pilot)
        for field_id in ("enq-knobs", "enq-budget", "enq-seeds", "enq-run"):
            field = app.screen.query_one(f"#{field_id}", Input)
            assert_uncovered(field, await toast_regions(app, pilot, field))


@pytest.mark.asyncio
async def test_toasts_leave_the_sets_form_uncovered(lab_db: Path) -> None:
    app = console_app(lab_db, first_screen="enqueue")
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await settle(pilot)
        await pilot.press("escape", "s")
        await settle(pilot)
        await pilot.press("c")
        await settle(pilot)
        assert isinstance(app.screen, SetForm)
        for field_id in ("set-name", "set-n", "set-seed", "set-exclude"):
            field = app.screen.query_one(f"#{field_id}", Input)
            assert_uncovered(field, await toast_regions(app, pilot, field))


@pytest.mark.asyncio
async def test_toasts_leave_the_editors_title_uncovered(lab_db: Path) -> None:
    app = console_app(lab_db, first_screen="prereg")
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await settle(pilot)
        await pilot.press("e")
        await settle(pilot)
        field = app.screen.query_one("#editor-title", Input)
        assert_uncovered(field, await toast_regions(app, pilot, field))


@pytest.mark.asyncio
async def test_moving_the_toasts_restyles_the_rack_not_the_screen(lab_db: Path) -> None:
    """Focus going back and forth between a field in the upper half and one in the lower
    moves the rack each time, and restyles the rack, not the screen (whose restyle is
    every widget of the form)."""
    app = console_app(lab_db, first_screen="enqueue")
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await settle(pilot)
        rack = app.screen.get_child_by_id(RACK)
        real = app.stylesheet.apply
        restyled: list[object] = []

        def apply(node: object, *args: object, **kwargs: object) -> None:
            restyled.append(node)
            real(node, *args, **kwargs)  # type: ignore[arg-type]

        def placed(field: Widget, top: bool) -> bool:
            return app.focused is field and rack.has_class(TOP) == top

        app.stylesheet.apply = apply  # type: ignore[method-assign]
        for field_id, top in (("enq-knobs", True), ("enq-models", False),
                              ("enq-knobs", True)):
            field = app.screen.query_one(f"#{field_id}")
            field.focus()
            await pause_until(pilot, partial(placed, field, top), f"the rack with {field_id}")
        app.stylesheet.apply = real  # type: ignore[method-assign]
        assert rack in restyled
        assert app.screen not in restyled, f"{len(restyled)} nodes restyled"
