"""Text from outside is inert in the console: a model answer, an imported question's
text, a model name and a set name holding an OSC title set (ESC ] 0 ; … BEL) and a
screen clear (ESC [ 2 J) are shown escaped (`\\x1b`) on the Trajectories screen, in
Results and in the Sets view, and no raw ESC or BEL is in what the app draws. Whatever
a widget shows without `inert`, the app's last line filter deletes the control
characters left (`console.inert_filter`)."""

from __future__ import annotations

import html
import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from textual.app import App, ComposeResult
from textual.widgets import DataTable, Static

from console.app import INERT_LINES
from console.screens.results.screen import ResultsScreen
from console.screens.sets import SetsScreen
from console.screens.trajectories import TrajectoriesScreen
from core.inert import inert_fields
from tests.helpers.console import console_app, settle
from tests.helpers.hostile import NAME, NAME_SHOWN, hostile_lab

SHOWN = "\\x1b]0;pwned\\x07"


@pytest.fixture()
def hostile_db(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Iterator[tuple[Path, Path]]:
    """A lab.db whose answers, question text, model and set names hold escapes."""
    with hostile_lab(tmp_path, capsys) as paths:
        yield paths


def _raw_free(drawn: str) -> None:
    assert "\x1b" not in drawn and "\x07" not in drawn


def _visible(svg: str) -> str:
    """The text of a screenshot, its pieces joined (a style change splits a line)."""
    return html.unescape("".join(re.findall(r"<text[^>]*>([^<]*)</text>", svg)))


def _cells(table: DataTable) -> list[str]:
    """Every cell of a table as the text it draws."""
    return [str(c) for i in range(table.row_count) for c in table.get_row_at(i)]


def _first_episode(db: Path) -> int:
    conn = sqlite3.connect(db)
    (episode,) = conn.execute("SELECT min(id) FROM episodes").fetchone()
    conn.close()
    return int(episode)


@pytest.mark.asyncio
async def test_trajectories_show_the_answer_and_question_escaped(hostile_db) -> None:
    db, config = hostile_db
    app = console_app(db, config_path=config, first_screen="trajectories")
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, TrajectoriesScreen)
        _raw_free(app.export_screenshot())
        assert NAME_SHOWN in _cells(screen.query_one("#traj-list", DataTable))
        screen.open_episode(_first_episode(db))
        await settle(pilot)
        drawn = app.export_screenshot()
        _raw_free(drawn)
        head = str(screen.query_one("#traj-head", Static).render())
        step = str(screen.query_one("#traj-step", Static).render())
        assert "Which\\x1b]0;pwned\\x07 [/]city\\x1b[2J?" in head
        assert SHOWN in step and "\\x1b[2J" in step, step


@pytest.mark.asyncio
async def test_results_show_the_model_name_escaped(hostile_db) -> None:
    db, config = hostile_db
    app = console_app(db, config_path=config, first_screen="results")
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, ResultsScreen)
        assert INERT_LINES in app.get_line_filters()  # the console draws through it
        drawn = app.export_screenshot()
        _raw_free(drawn)
        assert NAME_SHOWN in _visible(drawn), _visible(drawn)


@pytest.mark.asyncio
async def test_sets_view_shows_the_set_name_escaped(hostile_db) -> None:
    db, config = hostile_db
    app = console_app(db, config_path=config, first_screen="enqueue")
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(pilot)
        await pilot.press("escape", "s")  # out of any field, then the Sets view
        await settle(pilot)
        assert isinstance(app.screen, SetsScreen)
        drawn = app.export_screenshot()
        _raw_free(drawn)
        assert "s\\x" in _visible(drawn)  # as wide as the column is drawn yet
        assert "s\\x1b]0;pwned\\x07et[/]" in _cells(app.screen.query_one("#sets-sets", DataTable))


class _Bare(App[None]):
    """A widget showing a control sequence it never passed through `inert`."""

    def __init__(self, filtered: bool) -> None:
        super().__init__()
        self.filtered = filtered

    def compose(self) -> ComposeResult:
        yield Static("left\x1b[2Jright\x1b]0;pwned|end", markup=False)

    def get_line_filters(self):  # noqa: ANN201 (Textual's signature)
        return [*super().get_line_filters(), *([INERT_LINES] if self.filtered else [])]


@pytest.mark.parametrize("filtered", [False, True])
@pytest.mark.asyncio
async def test_the_last_line_filter_deletes_what_a_widget_left(filtered: bool) -> None:
    async with _Bare(filtered).run_test(size=(60, 5)) as pilot:
        await pilot.pause()
        drawn = pilot.app.export_screenshot()
    if filtered:
        _raw_free(drawn)
        assert "left[2Jright]0;pwned|end" in _visible(drawn)  # the rest of the line stays in place
    else:
        assert "\x1b" in drawn  # without it the escape is drawn: the test can see one


def test_inert_fields_reach_every_string_of_a_record() -> None:
    from dataclasses import dataclass

    @dataclass(frozen=True)
    class Row:
        name: str
        steps: tuple[str, ...]
        extra: dict[str, object]
        n: int = 1

    row = inert_fields(Row(NAME, ("a\x1b", "b"), {"k\x07": ["x\x1b[2J"], "n": 3}))
    assert row == Row(NAME_SHOWN, ("a\\x1b", "b"), {"k\\x07": ["x\\x1b[2J"], "n": 3})
