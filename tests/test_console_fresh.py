"""A screen never shows old data as if it were current.

A screen shown again re-reads when lab.db changed since its last read: a commit by
another process (seen by the poll's `PRAGMA data_version`) or a write by the console
itself on another screen. The header says when the screen last read. The poll timer
is set to an hour so that only the calls made here move anything.
"""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path
from typing import Any, cast

import pytest
from textual.app import App
from textual.pilot import Pilot
from textual.widgets import Select, Static, Tree

from console.app import LabApp
from console.screens.enqueue import EnqueueScreen
from console.screens.prereg import PreregScreen
from console.screens.results import ResultsScreen
from core import prereg, store
from core.demo_set import ensure_demo_set
from core.models.registry import load_registry
from core.store import prereg as rows
from jobs.control import enqueue_grid
from jobs.grid import GridRequest
from jobs.settings import WorkerSettings
from jobs.worker import run_worker
from tests.helpers.console import FIXED_TS, SMALL_GRID, build, console_app, copy_db, settle

NO_POLL = 3600.0
SCOPE = {"models": ["sim-never"], "conditions": ["none"], "regimes": ["clean"],
         "question_sets": ["demo"], "budgets": [8]}
MORE = GridRequest(models=("sim-own5",), conditions=("none",), regimes=("clean",),
                   question_set="demo", run="more")


@pytest.fixture(scope="module")
def empty(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A lab.db with the demo set, a draft amendment with a scope, and nothing queued."""
    path = tmp_path_factory.mktemp("fresh") / "lab.db"
    db = store.connect(path)
    ensure_demo_set(db)
    prereg.create(db, "A draft", "body", [], SCOPE)
    db.conn.close()
    return path


@pytest.fixture
def lab_db(empty: Path, tmp_path: Path) -> Path:
    """A private copy of the empty lab.db."""
    copy_db(empty, tmp_path / "lab.db")
    return tmp_path / "lab.db"


def _enqueue_elsewhere(path: Path, request: GridRequest = SMALL_GRID) -> None:
    """What `lab enqueue` in another shell does: its own connection, one commit."""
    db = store.connect(path)
    try:
        enqueue_grid(db, WorkerSettings(db_path=path), request, load_registry(None))
    finally:
        db.conn.close()


async def _poll(pilot: Pilot[Any]) -> None:
    """One tick of the app's change poll (the timer is off in these tests)."""
    cast(LabApp, pilot.app)._check_version()
    await settle(pilot)


def _queue_text(app: App[Any]) -> str:
    return str(app.screen.query_one("#queue-text", Static).render())


def _jobs_hint(app: App[Any]) -> str:
    return str(app.screen.query_one("#jobs-hint", Static).render())


async def _show(pilot: Pilot[Any], key: str) -> None:
    await pilot.press(key)
    await settle(pilot)


def _sub_title(app: LabApp) -> str:
    """The shown screen's sub-title (the header's second line), which it always has."""
    sub_title = app.screen.sub_title
    assert sub_title is not None
    return sub_title


@pytest.mark.asyncio
async def test_another_process_enqueues_then_switching_shows_it_without_r(lab_db: Path) -> None:
    """Visit 1, 4, 6; stay on 6; enqueue from another shell; press 1: queued 16."""
    app = console_app(lab_db, poll_s=NO_POLL)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert "queued 0" in _queue_text(app)
        await _show(pilot, "4")
        assert "nothing queued yet" in _jobs_hint(app)
        await _show(pilot, "6")
        _enqueue_elsewhere(lab_db)
        await _poll(pilot)
        await _show(pilot, "1")
        assert "queued 16" in _queue_text(app)
        await _show(pilot, "4")
        assert "nothing queued yet" not in _jobs_hint(app)
        runs = app.screen.query_one("Tree", Tree).root.children
        assert any("run fixture" in str(n.label) for n in runs)


@pytest.mark.asyncio
async def test_what_others_committed_while_the_console_watched_is_in_lab_db_after_it_quits(
        lab_db: Path) -> None:
    """The console's poll holds a read-only connection that closes last, and SQLite
    leaves the write-ahead log beside lab.db when the last connection to close is
    read-only: a copy of lab.db alone missed every commit made while the console was
    open. Quitting folds the log into lab.db and removes it."""
    wal = lab_db.with_name("lab.db-wal")
    app = console_app(lab_db, poll_s=NO_POLL)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        _enqueue_elsewhere(lab_db)
        await _poll(pilot)
        assert wal.exists() and wal.stat().st_size > 0  # the commit is in the log
    assert not wal.exists() or wal.stat().st_size == 0
    alone = sqlite3.connect(f"file:{lab_db}?immutable=1", uri=True)  # ignores any log
    try:
        assert alone.execute("SELECT count(*) FROM jobs").fetchone()[0] == 16
    finally:
        alone.close()


@pytest.mark.asyncio
async def test_the_polls_first_look_is_no_change_when_nothing_committed(lab_db: Path) -> None:
    """The version is taken before the first screen reads, so the first poll after an
    unchanged start reports nothing (it used to, and every screen read twice at start);
    a commit after start is still seen."""
    app = console_app(lab_db, poll_s=NO_POLL)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        seen = app.changes
        await _poll(pilot)
        assert app.changes == seen
        _enqueue_elsewhere(lab_db)
        await _poll(pilot)
        assert app.changes == seen + 1


@pytest.mark.asyncio
async def test_the_consoles_own_write_refreshes_the_other_screens(lab_db: Path) -> None:
    """ctrl+s on Enqueue: Jobs and the Dashboard show the grid when shown (no poll at all)."""
    app = console_app(lab_db, poll_s=NO_POLL)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert "queued 0" in _queue_text(app)
        await _show(pilot, "4")
        assert "nothing queued yet" in _jobs_hint(app)
        await _show(pilot, "3")
        # what ctrl+s starts once the preview is ready
        cast(EnqueueScreen, app.screen)._queue(SMALL_GRID)
        await settle(pilot)
        await _show(pilot, "4")
        assert "nothing queued yet" not in _jobs_hint(app)
        await _show(pilot, "1")
        assert "queued 16" in _queue_text(app)


@pytest.mark.asyncio
async def test_an_amendment_frozen_on_2_is_frozen_in_the_list_on_3(lab_db: Path) -> None:
    app = console_app(lab_db, poll_s=NO_POLL)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await _show(pilot, "3")
        options = app.screen.query_one("#enq-amendment", Select)._options
        assert any("✎ draft" in str(label) for label, _ in options)
        await _show(pilot, "2")
        (draft,) = [a["id"] for a in rows.amendments(store.connect(lab_db))]
        cast(PreregScreen, app.screen)._freeze(draft)  # what y on the freeze confirmation starts
        await settle(pilot)
        await _show(pilot, "3")
        options = app.screen.query_one("#enq-amendment", Select)._options
        assert any(f"{draft} ■ frozen" in str(label) for label, _ in options)


@pytest.mark.asyncio
async def test_header_says_when_the_screen_read_and_unchanged_screens_keep_their_read(
        lab_db: Path) -> None:
    now = [FIXED_TS]
    app = console_app(lab_db, poll_s=NO_POLL, clock=lambda: now[0])
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await _poll(pilot)
        assert _sub_title(app).endswith("lab.db · read 03:04:05 UTC")
        now[0] += 60
        await _show(pilot, "4")
        assert _sub_title(app).endswith("read 03:05:05 UTC")
        now[0] += 60
        await _show(pilot, "1")  # nothing changed: no re-read, the old time stays
        assert _sub_title(app).endswith("read 03:04:05 UTC")
        _enqueue_elsewhere(lab_db)
        await _poll(pilot)  # the screen on show re-reads at once
        assert _sub_title(app).endswith("read 03:06:05 UTC")
        await _show(pilot, "4")  # and Jobs when shown again
        assert _sub_title(app).endswith("read 03:06:05 UTC")
        await pilot.press("p")
        await pilot.pause()
        assert _sub_title(app).endswith("read 03:06:05 UTC  ‖ PAUSED (p resumes)")


@pytest.mark.asyncio
async def test_results_shown_again_after_new_episodes_says_stale_and_keeps_its_numbers(
        tmp_path: Path) -> None:
    path = build(tmp_path / "lab.db")
    app = console_app(path, poll_s=NO_POLL)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await _poll(pilot)
        await _show(pilot, "7")
        screen = app.screen
        assert isinstance(screen, ResultsScreen)
        assert "success" in screen._computed
        read = screen.sub_title
        await _show(pilot, "1")
        _enqueue_elsewhere(path, MORE)
        run_worker(WorkerSettings(db_path=path, worker_id="other:1"), until_idle=True)
        await _poll(pilot)
        await _show(pilot, "7")
        assert re.search(r"⟳ [1-9][0-9]* new episodes? since computed: r recomputes", str(
            screen.query_one("#results-prov", Static).render()))
        assert "success" in screen._computed  # not thrown away behind the reader's back
        assert screen.sub_title == read
