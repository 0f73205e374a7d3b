"""Live (key 5): follow a running episode of a slow sim while a worker thread runs it,
pick one from the list, toggle follow; instant sims show in the live tables too;
snapshots of a live episode (rows written by the store's own live functions)."""

from __future__ import annotations

import sqlite3
import subprocess
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import cast

import pytest
from textual.app import App
from textual.pilot import Pilot
from textual.widgets import DataTable, RichLog, Static

from console.screens.live import LiveScreen
from core import store
from core.data import ids_hash
from core.demo_data import demo_questions
from core.models.registry import load_registry
from jobs.control import enqueue_grid
from jobs.grid import GridRequest
from jobs.settings import WorkerSettings
from jobs.worker import run_worker
from tests.helpers import reads
from tests.helpers.console import FIXED_ISO, build, console_app, copy_db, freeze_times, settle
from tests.helpers.queue import start_lab, write_registry
from tests.helpers.snapshots import SnapCompare
from tests.helpers.waiting import PATIENCE_S, pause_until


def _slow_grid(tmp_path: Path, latency: float) -> tuple[Path, WorkerSettings]:
    db_path = tmp_path / "lab.db"
    db = store.connect(db_path)
    questions = demo_questions()
    store.insert_questions(db, questions)
    ids = [q.id for q in questions][:2]
    store.save_question_set(db, "tiny", "demo", ids, 0, [], False, ids_hash(ids))
    config = write_registry(tmp_path, latency=latency)
    settings = WorkerSettings(db_path=db_path, config_path=config, concurrency=1)
    enqueue_grid(db, settings, GridRequest(models=("sim-slow",), conditions=("none",),
                                           regimes=("persistent",), question_set="tiny",
                                           run="slow"), load_registry(config))
    db.conn.close()
    return db_path, settings


def _worker(db_path: Path, settings: WorkerSettings) -> subprocess.Popen:
    """`lab worker --until-idle` in its own process, as a researcher would start it."""
    assert settings.config_path is not None
    return start_lab(db_path, settings.config_path, "worker", "--until-idle",
                     "--concurrency", "1", log=db_path.with_suffix(".worker.log"))


def _log_text(app: App[None]) -> str:
    return "\n".join(line.text for line in app.screen.query_one("#live-log", RichLog).lines)


@pytest.mark.asyncio
async def test_follow_a_slow_sim_while_a_worker_runs_it(tmp_path: Path) -> None:
    # 300 ms a step: the screen's 0.2 s poll sees several steps of each episode even
    # when a loaded machine slows it down a few times over
    db_path, settings = _slow_grid(tmp_path, latency=300)
    app = console_app(db_path, config_path=settings.config_path, first_screen="live")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert "no episode running now" in str(app.screen.query_one("#live-head", Static)
                                                 .render())
        worker = _worker(db_path, settings)
        screen = cast(LiveScreen, app.screen)
        seen: list[tuple[str | None, int]] = []
        deadline = time.monotonic() + PATIENCE_S
        while time.monotonic() < deadline:  # steps arrive one by one as the worker commits
            await pilot.pause(0.05)
            state = (screen.episode.question_id if screen.episode else None, screen.seen_t)
            if not seen or seen[-1] != state:
                seen.append(state)
            if len({s[0] for s in seen if s[0]}) >= 2 and screen.finished:
                break
        worker.wait(timeout=PATIENCE_S)
        await settle(pilot)
        assert max(t for _, t in seen) >= 2
        # more than one intermediate state: the steps were shown while the episode ran
        assert len([s for s in seen if s[0] is not None]) >= 3
        text = _log_text(app)
        assert "step 1" in text and "search[" in text
        assert "FAILED" in text  # persistent regime: failed observations marked with source
        assert "useless streak" in text and "tokens" in text
        assert "══ " in text  # the stored outcome once the episode is written
        assert len({s[0] for s in seen if s[0]}) == 2, seen  # followed on to the second episode


@pytest.mark.asyncio
async def test_pick_an_episode_and_toggle_follow(tmp_path: Path) -> None:
    db_path, settings = _slow_grid(tmp_path, latency=400)
    worker = _worker(db_path, settings)
    app = console_app(db_path, config_path=settings.config_path, first_screen="live")
    try:
        async with app.run_test(size=(80, 24)) as pilot:
            await pause_until(pilot, lambda: cast(LiveScreen, app.screen).episode is not None,
                              "the worker's first live episode")
            await pilot.press("o")
            await settle(pilot)
            table = app.screen.query_one("#live-pick", DataTable)
            assert table.row_count == 1 and "sim-slow / none / persistent" in str(
                table.get_row_at(0)[1])
            await pilot.press("enter")
            await settle(pilot)
            assert cast(LiveScreen, app.screen).follow is False
            assert "PINNED" in str(app.screen.query_one("#live-head", Static).render())
            await pilot.press("f")
            assert cast(LiveScreen, app.screen).follow is True
            assert "FOLLOWING" in str(app.screen.query_one("#live-head", Static).render())
    finally:
        db = store.connect(db_path)
        from jobs.control import control

        control(db, settings, "cancel", "run", "slow")
        worker.wait(timeout=PATIENCE_S)


def test_instant_sims_leave_one_tailable_episode_per_job(tmp_path: Path) -> None:
    """Each job of an instant sim puts its first episode in the live tables (all its steps),
    which the batch write then removes: seen by a reader while the job runs."""
    db_path = tmp_path / "lab.db"
    db = store.connect(db_path)
    store.insert_questions(db, demo_questions())
    ids = [q.id for q in demo_questions()]
    store.save_question_set(db, "demo", "demo", ids, 0, [], False, ids_hash(ids))
    seen: set[tuple[int, int]] = set()
    reader = sqlite3.connect(db_path, check_same_thread=False)
    stop = threading.Event()

    def watch() -> None:
        while not stop.is_set():
            seen.update(reader.execute("SELECT l.id, count(s.t) FROM live_episodes l JOIN "
                                       "live_steps s ON s.live_id = l.id GROUP BY l.id"))

    settings = WorkerSettings(db_path=db_path)
    enqueue_grid(db, settings, GridRequest(models=("sim-never",), conditions=("none",),
                                           regimes=("persistent", "clean"), question_set="demo",
                                           run="instant"), load_registry(None))
    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    run_worker(settings, until_idle=True)
    stop.set()
    watcher.join()
    assert store.count(db, "episodes") == 120
    assert store.count(db, "live_episodes") == 0  # removed with their batch
    assert seen and all(n >= 1 for _, n in seen)  # whole episodes, steps included
    assert len({i for i, _ in seen}) <= 4  # at most one per job (4 jobs)


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The console fixture lab.db plus one live episode replaying a stored one's steps."""
    path = build(tmp_path_factory.mktemp("live") / "lab.db")
    db = store.connect(path)
    row = db.conn.execute("SELECT e.id, e.cell_id, e.question_id FROM episodes e JOIN cells c "
                          "ON c.id = e.cell_id WHERE c.regime = 'persistent' AND "
                          "c.model = 'sim-never' ORDER BY e.id LIMIT 1").fetchone()
    steps = store.episode_steps(db, row[0])
    live = store.live_start(db, row[1], row[2], "sim-never / none / persistent",
                            worker="fixture-host:1")
    for step in steps[:3]:
        store.live_step(db, live, step)
    db.conn.close()
    freeze_times(path)
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("UPDATE live_episodes SET started_at = ?", (FIXED_ISO,))
        # the episode runs: its worker is up and holds the job of its question under a
        # lease that outlives the test (a stopped worker's row would be lost)
        conn.execute("UPDATE workers SET state = 'running' WHERE id = 'fixture-host:1'")
        conn.execute("UPDATE jobs SET state = 'running', worker = 'fixture-host:1', "
                     "lease_until = 4102444800 WHERE id = (SELECT j.id FROM jobs j, "
                     "json_each(j.question_ids) q WHERE j.cell_id = ? AND q.value = ? "
                     "LIMIT 1)", (row[1], row[2]))
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return path


@pytest.mark.asyncio
async def test_wrapped_lines_lose_nothing_and_keep_their_indent(built: Path,
                                                                tmp_path: Path) -> None:
    """At 80 columns every letter of a wrapped thought or page is on screen (RichLog's
    default 78-column minimum once cut one or two at each wrap), and a wrapped line
    hangs under its text column, as on Trajectories: a thought under its first word
    after `thought: `, a page under its first letter, never at column 1."""
    copy_db(built, tmp_path / "lab.db")
    db = store.connect(tmp_path / "lab.db")
    (live,) = db.conn.execute("SELECT id FROM live_episodes").fetchone()
    last = store.live_steps(db, live, after_t=0)[-1]
    page = ("Lerrstead: Lerrstead is a town in the province of Faessmarch. It lies on the "
            "banks of the Nerra River. Lerrstead has a population of 16,800. It was first "
            "recorded in 1079. A weekly market is held in its old square.")
    thought = ("The last result is not relevant: it does not mention what I need. I will "
               "search for Drilell Ensemble, whose founder is the person I am after.")
    store.live_step(db, live, replace(last, t=last.t + 1, thought=thought, shown=page,
                                      obs_index=(last.obs_index or 0) + 1))
    db.conn.close()
    app = console_app(tmp_path / "lab.db", first_screen="live")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.pause(0.3)
        await settle(pilot)
        log = app.screen.query_one("#live-log", RichLog)
        width = log.scrollable_content_region.width
        lines = [strip.text.rstrip() for strip in log.lines]
        assert lines and max(len(line) for line in lines) <= width < 78
        assert log.virtual_size.width <= width  # nothing hidden to the right
        words = " ".join(" ".join(lines).split())
        assert f"thought: {thought}" in words and page in words
        hung = {"  thought: ": 0, "    Lerrstead: ": 0}
        for n, line in enumerate(lines):
            for label in hung:
                if line.startswith(label):  # its continuations, up to the next part
                    for more in lines[n + 1:]:
                        if not more.startswith(" " * (len(label) + 1)) and \
                                more.startswith(" " * len(label)) and more.strip():
                            hung[label] += 1
                        else:
                            break
        assert hung["  thought: "] >= 2 and hung["    Lerrstead: "] >= 2, hung


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
def test_snapshot(snap_compare: SnapCompare, built: Path, tmp_path: Path, size: tuple[int, int]
                 ) -> None:
    copy_db(built, tmp_path / "lab.db")

    async def opened(pilot: Pilot[None]) -> None:
        await pilot.press("5")
        await settle(pilot)
        await pilot.pause(0.3)
        await settle(pilot)

    assert snap_compare(console_app(tmp_path / "lab.db"), terminal_size=size,
                        run_before=opened)


def test_newest_live_is_followed(tmp_path: Path, built: Path) -> None:
    copy_db(built, tmp_path / "lab.db")
    db = store.connect(tmp_path / "lab.db")
    assert reads.newest_live(db) is not None


async def _live_showing_steps(pilot: Pilot[None]) -> LiveScreen:
    """Open Live (5) on the `built` lab.db and wait until its episode's three steps show."""
    await pilot.press("5")
    screen = pilot.app.screen
    assert isinstance(screen, LiveScreen)
    await pause_until(pilot, lambda: getattr(screen, "seen_t", 0) >= 3,
                      "the live episode's steps")
    return screen


@pytest.mark.asyncio
async def test_only_the_app_thread_changes_the_screen(built: Path, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Polls run in worker threads, yet every attribute of the screen is set on the app's
    thread (a pick was once taken off the screen by the worker); a poll's steps show, and
    an update read for an episode no longer shown is dropped."""
    from console.screens.live import Episode, LiveScreen, Update

    copy_db(built, tmp_path / "lab.db")
    ui = threading.get_ident()  # run_test runs the app on the test's thread
    off_thread: list[str] = []

    def recording(self: LiveScreen, name: str, value: object) -> None:
        if threading.get_ident() != ui:
            off_thread.append(f"{name} in {threading.current_thread().name}")
        super(LiveScreen, self).__setattr__(name, value)

    monkeypatch.setattr(LiveScreen, "__setattr__", recording)
    app = console_app(tmp_path / "lab.db")
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await _live_showing_steps(pilot)
        await pilot.press("o")
        await settle(pilot)
        await pilot.press("enter")  # pick it: follow goes off, the worker reads the pick
        await settle(pilot)
        assert screen.follow is False and screen.episode is not None
        seen = screen.seen_t
        db = store.connect(tmp_path / "lab.db")
        live = screen.episode.live_id
        last = store.live_steps(db, live, after_t=0)[-1]
        store.live_step(db, live, replace(last, t=last.t + 1))
        db.conn.close()
        await pause_until(pilot, lambda: screen.seen_t == seen + 1, "the new step")
        other = Episode(live + 1, None, "q-other", "other", "", None)
        screen.post_message(LiveScreen.Polled(Update(steps=[(replace(last, t=99), "")]),
                                              other, False, asked=10**6))
        await settle(pilot)
        assert screen.seen_t == seen + 1  # read for another episode: not shown
    assert not off_thread, off_thread


@pytest.mark.asyncio
async def test_a_poll_older_than_one_shown_is_dropped(built: Path, tmp_path: Path) -> None:
    """Polls run in exclusive thread workers, and a cancelled poll's thread still runs to
    its end: a poll asked before one already shown (it read an older snapshot) must not
    switch the screen back to the episode that was newest then; a newer one does."""
    from console.screens.live import Episode, LiveScreen, Update

    copy_db(built, tmp_path / "lab.db")
    app = console_app(tmp_path / "lab.db")
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await _live_showing_steps(pilot)
        shown = screen.episode
        assert shown is not None and screen.follow
        older = Episode(shown.live_id + 1, None, "q-older", "older", "", None)
        # asked before the first poll (they count from 1; at least one is shown by now)
        screen.post_message(LiveScreen.Polled(Update(older, switched=True), None, False,
                                              asked=0))
        await settle(pilot)
        assert screen.episode == shown  # older than the polls shown since: dropped
        newer = Episode(shown.live_id + 2, None, "q-newer", "newer", "", None)
        screen.post_message(LiveScreen.Polled(Update(newer, switched=True), None, False,
                                              asked=10**6))
        await settle(pilot)
        assert screen.episode == newer
