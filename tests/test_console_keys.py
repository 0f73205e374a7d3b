"""Typing and keys: digits typed in a field stay text, the footer keeps each screen's
essential keys at 80 columns (and dims or lights a key where it sits), `?` is the screen's
cheat sheet, the palette finds Help and Pause refresh, and the header names the screen."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.css.query import DOMQuery
from textual.widget import Widget
from textual.widgets import DataTable, Input, SelectionList, Static

from console.screens import SCREENS
from console.screens.help import HelpScreen, workflow
from console.widgets.footer import LabFooter, rank_keys
from tests.helpers.console import build, console_app, copy_db, settle

ESSENTIAL = {
    "dashboard": ["r Reload", "h Check endpoints"],
    "prereg": ["n New", "e Edit", "f Freeze", "v Verify"],
    "enqueue": ["^s Queue it", "m mean6 regimes"],
    "jobs": ["P Pause", "u Resume", "x Cancel", "t Retry", "/ Filter"],
    "live": ["f Follow on/off", "o Pick episode", "/ Filter"],
    "trajectories": ["/ Search", ": Filter", "s Sort", "c Copy"],
    "results": ["/ Search", "] Next table", "s Sort", "c Copy cell"],
}
"""What each screen's footer must show at 80 columns (besides ? Help and q Quit)."""


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A lab.db with a run sim grid, built once per module."""
    return build(tmp_path_factory.mktemp("keys") / "lab.db", run=True)


@pytest.fixture
def lab_db(built: Path, tmp_path: Path) -> Path:
    """A private copy of it in the test's directory."""
    return copy_db(built, tmp_path / "lab.db")


@pytest.mark.asyncio
async def test_a_digit_typed_in_a_field_is_text_and_escape_then_digit_navigates(
        lab_db: Path) -> None:
    app = console_app(lab_db, first_screen="enqueue")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        run = app.screen.query_one("#enq-run", Input)
        run.focus()
        await pilot.pause()
        await pilot.press("end", "4", "p", "question_mark")
        await settle(pilot)
        assert app.current_mode == "enqueue" and run.value.endswith("4p?")
        assert not app.paused and not isinstance(app.screen, HelpScreen)
        assert app.check_action("show", ("jobs",)) is False  # the key is text here
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.focused, Input)
        await pilot.press("4")
        await settle(pilot)
        assert app.current_mode == "jobs"


@pytest.mark.asyncio
async def test_a_checklist_shows_its_cursor_when_focused(lab_db: Path) -> None:
    app = console_app(lab_db, first_screen="enqueue")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        models = app.screen.query_one("#enq-models", SelectionList)
        models.focus()
        await pilot.pause()
        assert models.highlighted == 0  # before any arrow key


@pytest.mark.asyncio
async def test_footer_at_80_columns_keeps_each_screens_essential_keys(
        lab_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """… and the footer's plan, asked at every change of focus and bindings, matches no
    query against the whole screen: each key's `check_action` finds its widgets by id
    (a query's truth value visits every node: 0.6 ms a key on Trajectories)."""
    walks: list[DOMQuery[Widget]] = []
    nodes = DOMQuery.nodes.fget  # type: ignore[attr-defined]

    def counted(query: DOMQuery[Widget]) -> list[Widget]:
        walks.append(query)
        return nodes(query)

    monkeypatch.setattr(DOMQuery, "nodes", property(counted))
    app = console_app(lab_db)
    async with app.run_test(size=(80, 24)) as pilot:
        for i, info in enumerate(SCREENS, start=1):
            await pilot.press(str(i))
            await settle(pilot)
            await pilot.pause()
            walks.clear()
            assert app.screen.active_bindings and not walks, (info.mode, walks)
            footer = app.screen.query_one(LabFooter)
            text = footer.text()
            for key in [*ESSENTIAL[info.mode], "? Help", "q Quit", "^p palette"]:
                assert key in text, (info.mode, text)
            # and it is what is on screen: every key lies inside the 80 columns
            assert max(k.region.right for k in footer.children) <= 80, (info.mode, text)


def test_rank_keys_cuts_the_least_useful_first() -> None:
    entries = [("reload", "r", "Reload"), ("a", "a", "Alpha"), ("b", "b", "Beta"),
               ("help", "?", "Help"), ("quit", "q", "Quit")]
    assert rank_keys(entries, ("b", "a"), 200) == [2, 1, 0, 3, 4]
    assert rank_keys(entries, ("b",), 24) == [2, 3, 4]  # b 7 + ? 7 + q 7 = 21 cells


@pytest.mark.asyncio
async def test_help_is_the_screens_cheat_sheet_workflow_first(lab_db: Path) -> None:
    app = console_app(lab_db, first_screen="jobs")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        title = str(app.screen.query_one("#help-title", Static).render())
        line = str(app.screen.query_one("#help-workflow", Static).render())
        assert "4 Jobs" in title
        assert line == workflow("jobs") and line.startswith("Runs → grids → jobs")
        table = app.screen.query_one("DataTable", DataTable)
        rows = [tuple(str(c) for c in table.get_row_at(i)) for i in range(table.row_count)]
        assert rows[0][2] == "this screen"  # the screen's keys first, then everywhere
        assert {"copy", "Copy selected text"}.isdisjoint({r[1] for r in rows})  # not Textual's
        await pilot.press("escape")
        await pilot.press("7")
        await settle(pilot)
        await pilot.press("question_mark")
        await pilot.pause()
        line = str(app.screen.query_one("#help-workflow", Static).render())
        assert line == workflow("results")


@pytest.mark.asyncio
async def test_palette_finds_help_and_pause_refresh(lab_db: Path) -> None:
    app = console_app(lab_db)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        commands = {c.title: c for c in app.get_system_commands(app.screen)}
        assert "Help" in commands and "Pause refresh" in commands
        commands["Pause refresh"].callback()
        assert app.paused
        assert "Resume refresh" in {c.title for c in app.get_system_commands(app.screen)}
        commands["Help"].callback()
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)


@pytest.mark.asyncio
async def test_header_names_the_screen(lab_db: Path) -> None:
    app = console_app(lab_db)
    async with app.run_test(size=(80, 24)) as pilot:
        for i, info in enumerate(SCREENS, start=1):
            await pilot.press(str(i))
            await settle(pilot)
            assert app.screen.title == f"lab · {i} {info.title}"
            sub_title = app.screen.sub_title
            assert sub_title is not None and sub_title.startswith("lab.db · read ")
        app.set_read_only("lab.db: read-only file")
        await pilot.pause()
        assert app.screen.title == "lab · 7 Results · READ-ONLY"


class _Toggled(App[None]):
    """A footer over a key whose state the test sets: shown, dimmed or hidden."""

    BINDINGS = [Binding("x", "x", "Ex"), Binding("y", "y", "Why")]

    def __init__(self) -> None:
        super().__init__()
        self.state: bool | None = None

    def compose(self) -> ComposeResult:
        yield LabFooter()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return self.state if action == "x" else True

    def action_x(self) -> None:
        """Nothing (a key to show)."""

    def action_y(self) -> None:
        """Nothing (a key to show)."""


@pytest.mark.asyncio
async def test_footer_dims_and_lights_a_key_in_place_and_rebuilds_for_another_key_set(
        ) -> None:
    from textual.widgets._footer import FooterKey

    app = _Toggled()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        footer = app.query_one(LabFooter)

        def keys() -> dict[str, FooterKey]:
            return {k.key: k for k in footer.query(FooterKey)}

        before = keys()
        assert before["x"].has_class("-disabled") and before["x"]._disabled
        app.state = True
        app.refresh_bindings()
        await pilot.pause()
        await pilot.pause()
        after = keys()
        assert all(after[k] is before[k] for k in before) and after.keys() == before.keys()
        assert not after["x"].has_class("-disabled") and not after["x"]._disabled
        assert "x Ex" in footer.text()
        app.state = False  # hidden: another set of keys, built again
        app.refresh_bindings()
        await pilot.pause()
        await pilot.pause()
        assert "x" not in keys() and keys()["y"] is not before["y"]


@pytest.mark.asyncio
async def test_a_footer_being_removed_plans_no_keys_while_still_attached() -> None:
    """`footer.remove()` marks the footer as being removed at once, while it is still
    attached to a live screen: a rebuild asked for before then (bindings changed) must
    not plan keys for it. A footer already removed has no screen."""
    from textual.widgets._footer import FooterKey

    app = _Toggled()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        footer = app.query_one(LabFooter)
        assert footer._live_screen() is app.screen and footer.query(FooterKey)
        removal = footer.remove()
        assert footer.is_attached and app.screen.is_attached  # the window this is about
        assert footer._live_screen() is None and footer._plan() == ()
        await footer.recompose()  # a rebuild that was asked for: nothing happens
        await removal
        assert not footer.is_attached and footer._live_screen() is None
