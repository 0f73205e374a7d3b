"""The Trajectories screen's tables take the Results screen's keys: a cell cursor, `s`
sorts the loaded episodes by the cursor's column (▲, ▼, then newest first again), `/`
searches what is shown (the list's cells, an episode's steps, the matched arms' cells)
with every match marked and n/N going from one to the next, `c`/`C`/`T` copy a cell, a
row or the whole table (an episode: the step shown or the whole trajectory) to the
clipboard with a notice, `g`/`G` and Home/End go to the first and last row or step;
`:` filters lab.db and `]` loads older episodes.

On the trajectories fixture (tests/helpers/trajectories.py: 72 episodes) at 80×24.
"""

from __future__ import annotations

import sqlite3
from dataclasses import replace
from pathlib import Path
from typing import cast

import pytest
from rich.text import Text
from textual.app import App
from textual.content import Content
from textual.coordinate import Coordinate

from console.app import ConsoleConfig, LabApp, make_app
from console.screens.trajectories import TrajectoriesScreen
from console.widgets.key_table import KeyTable
from console.widgets.table_ops import MATCH, MATCH_CURRENT
from tests.helpers.console import FIXED_TS, copy_db, settle
from tests.helpers.notices import said


@pytest.fixture
def lab_db(trajectories_db: Path, tmp_path: Path) -> Path:
    """A private copy of the fixture lab.db."""
    target = tmp_path / "lab.db"
    copy_db(trajectories_db, target)
    return target


def _app(db: Path) -> LabApp:
    return make_app(db, ConsoleConfig(warm_up=False, db_path=db, first_screen="trajectories",
                                      clock=lambda: FIXED_TS))


def _episode(db_path: Path, **where: str) -> int:
    conn = sqlite3.connect(db_path)
    sql = ("SELECT e.id FROM episodes e JOIN cells c ON c.id = e.cell_id WHERE "
           + " AND ".join(f"{k} = ?" for k in where) + " ORDER BY e.id")
    (eid,) = conn.execute(sql, tuple(where.values())).fetchone()
    conn.close()
    return int(eid)


def _notes(app: App[None]) -> list[str]:
    return [str(n.message) for n in said(app)]


def _styles(cell: object) -> set[str]:
    """The styles of a cell's marked spans."""
    return {str(s.style) for s in cell.spans} if isinstance(cell, Text) else set()


def _marked(content: object, style: str) -> list[str]:
    """The parts of a widget's rendered text drawn in `style` (a search's mark)."""
    mark = Text("x")
    mark.stylize(style, 0, 1)
    want = Content.from_rich_text(mark).spans[0].style
    text = str(content)
    return [text[s.start:s.end] for s in content.spans if s.style == want]  # type: ignore[attr-defined]


def _column(table: KeyTable, name: str) -> list[str]:
    return [row[table.header.index(name)] for row in table.shown]


@pytest.mark.asyncio
async def test_list_sort_copy_ends_and_open(lab_db: Path) -> None:
    app = _app(lab_db)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, TrajectoriesScreen)
        table = screen.query_one("#traj-list", KeyTable)
        ids = [int(i) for i in _column(table, "id")]
        assert ids == sorted(ids, reverse=True) and len(ids) == 72  # newest first
        # copy the cursor's cell, its row, the whole list
        await pilot.press("c")
        assert app.clipboard == str(ids[0])
        await pilot.press("j", "l")
        await pilot.press("c")
        assert app.clipboard == screen._rows[1].model
        await pilot.press("C")
        r = screen._rows[1]
        assert app.clipboard.split("\t")[:6] == [str(r.id), r.model, r.arm, "clean",
                                                  str(r.seed), r.question_id]
        await pilot.press("T")
        lines = app.clipboard.splitlines()
        assert lines[0].split("\t") == ["id", "model", "arm", "regime", "seed", "question",
                                        "outcome", "act", "run"]
        assert len(lines) == 73
        assert any(n.startswith("copied table (72 rows") for n in _notes(app))
        # sort by id: numbers, not text (1, 2, … 10, not 1, 10, 11 …), then descending,
        # then the list's own order again
        await pilot.press("h", "s")
        await pilot.pause()
        assert [int(i) for i in _column(table, "id")] == sorted(ids)
        assert "id ▲" in str(table.ordered_columns[0].label)
        assert "by id ▲" in str(screen.query_one("#traj-status").render())
        await pilot.press("s")
        await pilot.pause()
        assert [int(i) for i in _column(table, "id")] == sorted(ids, reverse=True)
        assert "id ▼" in str(table.ordered_columns[0].label)
        await pilot.press("s")
        await pilot.pause()
        assert "▲" not in str(table.ordered_columns[0].label)
        assert "back in the list's own order" in _notes(app)
        # sort by model (text): the copy follows the sort, without the arrow
        await pilot.press("l", "s")
        await pilot.pause()
        models = _column(table, "model")
        assert models == sorted(models) and models != [r.model for r in screen._rows]
        await pilot.press("T")
        assert [row.split("\t")[1] for row in app.clipboard.splitlines()[1:]] == models
        assert app.clipboard.splitlines()[0].split("\t")[1] == "model"
        # G / g and End / Home: the last and first row, the column kept
        await pilot.press("G")
        assert table.cursor_row == 71 and table.cursor_column == 1
        await pilot.press("g")
        assert table.cursor_row == 0
        await pilot.press("end")
        assert table.cursor_row == 71
        await pilot.press("home")
        assert table.cursor_row == 0 and table.cursor_column == 1
        # Enter opens the episode under the cursor, wherever the sort put it
        await pilot.press("G")
        want = table.cursor_key
        assert want != str(screen._rows[-1].id)  # sorted: not the last one read
        await pilot.press("enter")
        await settle(pilot)
        detail = screen._detail
        assert screen.view == "traj-episode" and detail is not None
        assert str(detail.row.id) == want


@pytest.mark.asyncio
async def test_list_search_marks_and_steps(lab_db: Path) -> None:
    app = _app(lab_db)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await settle(pilot)
        screen = cast(TrajectoriesScreen, app.screen)
        table = screen.query_one("#traj-list", KeyTable)
        hits = [k for k, r in enumerate(screen._rows) if r.question_id == "demo-003"]
        await pilot.press("slash", *"demo-003", "enter")
        await pilot.pause()
        assert len(table.found) == len(hits) == 12
        marked = [(r, c) for r in range(table.row_count)
                  for c in range(len(table.columns))
                  if _styles(table.get_cell_at(Coordinate(r, c))) & {MATCH, MATCH_CURRENT}]
        assert [r for r, _ in marked] == hits  # every match marked, nothing else
        current = [r for r, c in marked
                   if MATCH_CURRENT in _styles(table.get_cell_at(Coordinate(r, c)))]
        assert current == [hits[0]] and table.cursor_row == hits[0]
        await pilot.press("c")
        assert app.clipboard == "demo-003"  # the cursor went to the matched cell
        await pilot.press("n")
        await pilot.pause()
        assert table.cursor_row == hits[1]
        assert MATCH_CURRENT in _styles(table.get_cell_at(Coordinate(hits[1], 5)))
        assert MATCH_CURRENT not in _styles(table.get_cell_at(Coordinate(hits[0], 5)))
        await pilot.press("N", "N")
        await pilot.pause()
        assert table.cursor_row == hits[-1]  # wraps
        await pilot.press("escape")
        await pilot.pause()
        assert not table.found and not any(
            _styles(table.get_cell_at(Coordinate(r, 5))) for r in range(table.row_count))
        assert screen.view == "traj-list"
        await pilot.press("slash", *"no-such-thing", "enter")
        await pilot.pause()
        assert "no match for 'no-such-thing' in this table" in _notes(app)


@pytest.mark.asyncio
async def test_colon_filters_and_bracket_loads_older(lab_db: Path) -> None:
    app = _app(lab_db)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await settle(pilot)
        screen = cast(TrajectoriesScreen, app.screen)
        screen.filter = replace(screen.filter, limit=30)
        await pilot.press("r")
        await settle(pilot)
        status = screen.query_one("#traj-status")
        assert "30 of 72 episodes" in str(status.render())
        assert ": filters; ] older" in str(status.render())
        await pilot.press("right_square_bracket")
        await settle(pilot)
        assert len(screen._rows) == 60 and "60 of 72" in str(status.render())
        await pilot.press("r")  # a re-read (r, or lab.db changed) keeps the older page
        await settle(pilot)
        assert len(screen._rows) == 60 and "60 of 72" in str(status.render())
        await pilot.press("colon", *"outcome=wrong", "enter")
        await settle(pilot)
        assert screen._rows and all(r.outcome == "wrong" for r in screen._rows)


@pytest.mark.asyncio
async def test_episode_search_copy_and_ends(lab_db: Path) -> None:
    # sim-never under recover_after_2: actions 1 and 2 fail, 3 on are real
    eid = _episode(lab_db, model="sim-never", condition="none", regime="recover_after_2",
                   question_id="demo-001")
    app = _app(lab_db)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await settle(pilot)
        screen = cast(TrajectoriesScreen, app.screen)
        screen.open_episode(eid, 3, back_to=None)
        await settle(pilot)
        assert screen._detail is not None
        steps = screen._detail.steps
        body = screen.query_one("#traj-step")
        assert f"action 3 of {len(steps)}" in str(body.render())
        await pilot.press("slash", *"failed", "enter")
        await pilot.pause()
        assert screen._step_hits == [0, 1]  # the legend of the signs is not searched
        text = body.render()
        assert "action 1 of" in str(text)  # the first match at or after action 3: wraps
        assert [m.casefold() for m in _marked(text, MATCH)] == ["failed"]
        await pilot.press("n")
        assert "action 2 of" in str(body.render())
        await pilot.press("n")
        assert "action 1 of" in str(body.render())
        await pilot.press("N")
        assert "action 2 of" in str(body.render())
        # copy the step shown, then the whole trajectory
        await pilot.press("c")
        assert app.clipboard.startswith(f"episode {eid}\naction 2 of {len(steps)}")
        assert "✓ real obs" not in app.clipboard  # no legend
        await pilot.press("T")
        for t in range(1, len(steps) + 1):
            assert f"action {t} of {len(steps)}" in app.clipboard
        assert app.clipboard.startswith(f"episode {eid} · sim-never")
        assert f"copied episode {eid} ({len(steps)} steps) to the clipboard" in _notes(app)
        # g / G and Home / End: the first and last step
        await pilot.press("G")
        assert f"action {len(steps)} of" in str(body.render())
        await pilot.press("g")
        assert "action 1 of" in str(body.render())
        await pilot.press("end")
        assert f"action {len(steps)} of" in str(body.render())
        await pilot.press("home")
        assert "action 1 of" in str(body.render())
        # escape clears the search first, then goes back to the list
        await pilot.press("escape")
        assert not screen._step_hits and screen.view == "traj-episode"
        assert not _marked(body.render(), MATCH)
        await pilot.press("escape")
        assert screen.view == "traj-list"


@pytest.mark.asyncio
async def test_matched_arms_search_and_copy(lab_db: Path) -> None:
    eid = _episode(lab_db, model="sim-never", condition="none", regime="persistent",
                   question_id="demo-003")
    app = _app(lab_db)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await settle(pilot)
        screen = cast(TrajectoriesScreen, app.screen)
        screen.open_episode(eid, None, back_to=None)
        await settle(pilot)
        await pilot.press("m")
        await settle(pilot)
        table = screen.query_one("#traj-m-table", KeyTable)
        assert screen.view == "traj-matched" and table.cursor_row == 2  # the divergence
        assert not screen.check_action("sort", ())  # aligned by action: no sort
        await pilot.press("l", "l", "c")  # the enforced arm's action 3, in full
        assert app.clipboard.startswith("── enforced_rule:k=2 (episode ")
        assert "action 3 of 3" in app.clipboard and "FORCED turn" in app.clipboard
        assert "── none" not in app.clipboard
        await pilot.press("C")  # every arm at action 3
        assert "── none" in app.clipboard and "── enforced_rule:k=2" in app.clipboard
        await pilot.press("T")
        rows = app.clipboard.splitlines()
        assert rows[0].split("\t") == ["t", "none", "enforced_rule:k=2"]
        assert rows[-1].split("\t")[0] == "="
        await pilot.press("slash", *"finish", "enter")
        await pilot.pause()
        assert table.found and table.cursor_row == table.found[0][0]
        await pilot.press("g")
        assert table.cursor_row == 0
        await pilot.press("G")
        assert table.cursor_row == table.row_count - 1

