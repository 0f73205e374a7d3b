"""The new step fields in the console: a discarded turn (stated-judgment rule), the
source of a two-source tool call and thinking-mode reasoning, on the Trajectories
screen (pilot) and in the Live screen's step text."""

from __future__ import annotations

import sqlite3
from dataclasses import replace
from pathlib import Path
from typing import cast

import pytest
from textual.pilot import Pilot

from console.app import ConsoleConfig, make_app
from console.screens.live import joined, step_parts
from console.screens.trajectories import TrajectoriesScreen
from console.widgets import traj_render
from core import store
from core.data import ids_hash
from core.demo_data import demo_questions
from core.episode import Step
from core.models.registry import load_registry
from core.store.episodes import episode_steps
from jobs.control import enqueue_grid
from jobs.grid import GridRequest
from jobs.settings import WorkerSettings
from jobs.worker import run_worker
from tests.helpers.console import wait_workers

GRIDS = (GridRequest(models=("sim-stated",), conditions=("stated_judgment_rule:k=2",),
                     regimes=("persistent",), question_set="s3", run="stated"),
         GridRequest(models=("sim-backup-own3",), conditions=("two_source",),
                     regimes=("persistent",), question_set="s3", run="backup"))


@pytest.fixture(scope="module")
def lab_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A lab.db with a stated-judgment run and a two-source run (three questions each)."""
    path = tmp_path_factory.mktemp("newsteps") / "lab.db"
    db = store.connect(path)
    questions = demo_questions()
    store.insert_questions(db, questions)
    ids = [q.id for q in questions][:3]
    store.save_question_set(db, "s3", "demo", ids, 0, [], False, ids_hash(ids))
    settings = WorkerSettings(db_path=path)
    for grid in GRIDS:
        enqueue_grid(db, settings, grid, load_registry(None))
    run_worker(settings, until_idle=True)
    db.conn.close()
    return path


def _first(db_path: Path, where: str) -> tuple[int, int]:
    """(episode id, t) of the first step matching `where`."""
    conn = sqlite3.connect(db_path)
    row = conn.execute(f"SELECT episode_id, t FROM steps WHERE {where} "
                       "ORDER BY episode_id, t").fetchone()
    conn.close()
    assert row is not None, where
    return int(row[0]), int(row[1])


async def _settle(pilot: Pilot[None]) -> None:
    await pilot.pause()
    await wait_workers(pilot.app)
    await pilot.pause()


async def _body(db_path: Path, episode_id: int, t: int) -> tuple[str, str, Step]:
    """The step body and step strip the Trajectories screen shows at action t."""
    app = make_app(db_path, ConsoleConfig(db_path=db_path, first_screen="trajectories",
                                          warm_up=False))
    async with app.run_test(size=(120, 40)) as pilot:
        await _settle(pilot)
        cast(TrajectoriesScreen, app.screen).open_episode(episode_id, t)
        await _settle(pilot)
        screen = cast(TrajectoriesScreen, app.screen)
        assert screen._detail is not None
        step = screen._detail.steps[screen._step]
        return (str(screen.query_one("#traj-step").render()),
                str(screen.query_one("#traj-strip").render()), step)


@pytest.mark.asyncio
async def test_trajectories_marks_a_discarded_turn(lab_db: Path) -> None:
    eid, t = _first(lab_db, "discarded = 1")
    body, strip, step = await _body(lab_db, eid, t)
    assert step.discarded and step.t == t
    assert "DISCARDED: re-asked with the finish instruction" in body
    assert f"[{t}↺]" in strip
    # the re-asked turn at the same action follows it and is a forced finish
    conn = sqlite3.connect(lab_db)
    rows = conn.execute("SELECT discarded, action FROM steps WHERE episode_id = ? AND t = ? "
                        "ORDER BY discarded DESC", (eid, t)).fetchall()
    conn.close()
    assert rows == [(1, "search"), (0, "finish")]


@pytest.mark.asyncio
async def test_trajectories_shows_a_backup_observation(lab_db: Path) -> None:
    eid, t = _first(lab_db, "tool_source = 'backup'")
    body, _, step = await _body(lab_db, eid, t)
    assert step.action == "backup_search" and not step.obs_failed
    assert "(backup source)" in body and "✓ real" in body
    eid, t = _first(lab_db, "tool_source = 'primary'")
    body, _, _ = await _body(lab_db, eid, t)
    assert "(primary source)" in body and "✗ FAILED" in body


def test_reasoning_is_a_dim_line_and_live_marks_the_new_fields(lab_db: Path) -> None:
    eid, t = _first(lab_db, "discarded = 1")
    db = store.connect(lab_db)
    discarded = next(s for s in episode_steps(db, eid) if s.t == t and s.discarded)
    eid, t = _first(lab_db, "tool_source = 'backup'")
    backup = next(s for s in episode_steps(db, eid) if s.t == t)
    db.conn.close()
    thinking = replace(backup, reasoning="The primary keeps failing, so try the copy.",
                       reasoning_tokens=12)
    body = traj_render.step_body(thinking, None, "", 8)
    line = "reasoning (12 tokens): The primary keeps failing, so try the copy."
    assert line in body.plain
    assert any(span.style == "dim" and body.plain[span.start:span.end].startswith("reasoning")
               for span in body.spans)
    assert "reasoning" not in traj_render.step_body(backup, None, "", 8).plain
    live = joined(step_parts(thinking, ""))
    assert "backup_search[" in live.plain and "(backup)" in live.plain and line in live.plain
    assert "DISCARDED (re-asked)" in joined(step_parts(discarded, "")).plain
    assert "DISCARDED" not in live.plain
