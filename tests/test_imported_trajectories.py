"""Imported episodes have no text: `lab tail` and the Trajectories screen say so and show
their actions, design labels and judgments instead of breaking or printing None."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import cast

import pytest
from textual.widgets import DataTable

from console.app import ConsoleConfig, make_app
from console.screens.trajectories import TrajectoriesScreen
from console.widgets import traj_render as render
from core import store
from core.store import trajectories as traj
from core.store.imports import NO_TEXT
from tests.helpers.cli import lab, one_error
from tests.helpers.console import FIXED_TS, wait_workers
from tests.helpers.released import HAND, write_released


@pytest.fixture
def imported_db(tmp_path: Path, db_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """HAND imported twice into run s1: as enforced_rule and as unaided (`none`), so each
    episode has a matched arm."""
    for condition in ("enforced_rule", "unaided"):
        records = [dict(r, condition=condition) for r in HAND]
        path = write_released(tmp_path / f"{condition}.jsonl", records)
        code, _, err = lab(capsys, "--db", db_path, "data", "import", "episodes", path)
        assert code == 0, err
    return db_path


def _episode(db_path: Path, condition: str, regime: str, question: str) -> int:
    conn = sqlite3.connect(db_path)
    (eid,) = conn.execute(
        "SELECT e.id FROM episodes e JOIN cells c ON c.id = e.cell_id WHERE c.condition = ? "
        "AND c.regime = ? AND e.question_id = ?", (condition, regime, question)).fetchone()
    conn.close()
    return int(eid)


def test_tail_of_an_imported_episode_says_it_has_no_text(imported_db: Path,
                                                         capsys: pytest.CaptureFixture[str]
                                                        ) -> None:
    eid = _episode(imported_db, "enforced_rule", "persistent", "q2")
    code, out, err = lab(capsys, "--db", imported_db, "tail", eid)
    assert code == 0, err
    assert f"{NO_TEXT}: its actions, judgments and success only" in out
    assert "action: invalid" in out and "observation 2 [after an invalid turn;" in out
    assert "observation 1 [failed; imported: no text]" in out
    assert "unanswered (budget)" in out and "invalid turns 1" in out
    assert "None" not in out and "[]" not in out


def test_the_detail_and_its_rendering_carry_no_made_up_text(imported_db: Path) -> None:
    db = store.connect(imported_db)
    eid = _episode(imported_db, "enforced_rule", "recover_after_1", "q1")
    d = traj.episode_detail(db, eid)
    assert d.imported and d.question == "(question not in lab.db)"
    assert d.observations == (NO_TEXT,) * 5 + (None,)
    head = str(render.episode_head(d, 120))
    assert NO_TEXT in head and "answered at action 6" in head and "None" not in head
    body = str(render.step_body(d.steps[0], d.observations[0], d.titles[0], len(d.steps)))
    assert "action: search\n" in body and f"✗ failed · {NO_TEXT}" in body
    # the released files count no tokens: none shown, not zeros
    for text in (head, body):
        assert "tokens – (none recorded)" in text and "0 in" not in text
    assert "None" not in body
    matched = traj.matched_episodes(db, eid)
    assert [m.arm for m in matched] == ["enforced_rule", "none"]
    assert render.matched_cell(d.steps[1], 30) == "✓ search U1"


@pytest.mark.asyncio
async def test_the_trajectories_screen_opens_an_imported_episode_and_its_match(imported_db: Path
                                                                              ) -> None:
    eid = _episode(imported_db, "enforced_rule", "persistent", "q2")
    rel = imported_db
    app = make_app(rel, ConsoleConfig(db_path=rel, first_screen="trajectories",
                                      clock=lambda: FIXED_TS))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        await wait_workers(pilot.app)
        cast(TrajectoriesScreen, app.screen).open_episode(eid, 2)
        await pilot.pause()
        await wait_workers(pilot.app)
        body = str(app.screen.query_one("#traj-step").render())
        assert "action 2 of 8" in body and "action: invalid" in body
        assert f"after an invalid turn · {NO_TEXT}" in body
        await pilot.press("m")
        await pilot.pause()
        await wait_workers(pilot.app)
        await asyncio.sleep(0)
        screen = cast(TrajectoriesScreen, app.screen)
        assert screen.view == "traj-matched"
        table = screen.query_one("#traj-m-table", DataTable)
        assert [str(c.label) for c in table.columns.values()] == ["t", "enforced_rule", "none"]
        assert [str(c) for c in table.get_row("2")][1:] == ["? invalid", "? invalid"]


@pytest.mark.parametrize("what", ["judgments", "beliefs", "answer-now"])
def test_probes_refuse_an_imported_run_in_one_line(what: str, imported_db: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = lab(capsys, "--db", imported_db, "replay", what, "--run", "s1", "--dry-run")
    one_error(code, err, "s1", NO_TEXT)
    code, _, err = lab(capsys, "--db", imported_db, "repair", "--run", "s1", "--dry-run")
    one_error(code, err, "s1", NO_TEXT)
