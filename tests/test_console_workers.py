"""Workers in the console: `w` starts `lab worker` processes (how many, their concurrency,
whether they outlive the console, then `y`), `L` shows their logs, and a banner says when
jobs are queued with no live worker. On a queued demo grid a worker started from the
console runs every job (waited for on lab.db, generously), and quitting the console stops
it: no worker process is left and its row says stopped. `Z` pauses and resumes the
console's workers and `S` stops them, each after a question, and only a worker started
to outlive the console is left running when it quits.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import cast

import pytest
from textual.app import App
from textual.widgets import Input, Static

from console.app import LabApp
from console.widgets.confirm import Confirm
from console.widgets.workers import StartForm, WorkerLogs, no_worker_banner, parse_start
from console.workers import LocalWorker, LocalWorkers
from core import store
from core.errors import ConfigError
from core.store import jobs as ledger
from tests.helpers.console import build, console_app, settle
from tests.helpers.waiting import pause_until


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat", "rb") as f:  # a zombie is no worker
        return f.read().rpartition(b")")[2].split()[0] != b"Z"


def _states(path: Path) -> dict[str, int]:
    db = store.connect(path)
    try:
        return ledger.job_states(db)
    finally:
        db.conn.close()


def _queue(app: App[None]) -> str:
    return str(app.screen.query_one("#queue-text", Static).render())


@pytest.mark.asyncio
async def test_start_a_worker_from_the_console_and_quit(tmp_path: Path) -> None:
    path = build(tmp_path / "lab.db", run=False)  # 16 jobs queued, no worker yet
    app = console_app(path.resolve(), clock=__import__("time").time)
    pids: list[int] = []
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        assert "16 jobs queued, no worker: press w to start one" in _queue(app)
        await pilot.press("w")
        await pause_until(pilot, lambda: isinstance(app.screen, StartForm), "the form")
        app.screen.query_one("#w-concurrency", Input).value = "8"
        await pilot.press("ctrl+s")
        await pause_until(pilot, lambda: isinstance(app.screen, Confirm), "the question")
        text = cast(Confirm, app.screen).text
        assert text.startswith(f"Start 1 worker process on {app.config.db_path}?")
        assert "--concurrency 8" in text and "stop when the console quits" in text
        await pilot.press("y")
        await pause_until(pilot, lambda: app.local_workers.running(), "a started worker")
        pids = [w.pid for w in app.local_workers.started]
        await pause_until(pilot, lambda: _states(path).get("done") == 16,
                          "every job done by the console's worker", timeout=180)
        await pause_until(pilot, lambda: "no worker" not in _queue(app), "the banner gone")
        await pilot.press("L")
        await pause_until(pilot, lambda: isinstance(app.screen, WorkerLogs), "the logs")
        logs = str(app.screen.query_one(Static).render())
        assert f"worker-1.log  (pid {pids[0]})" in logs and "worker(s) on" in logs
        await pilot.press("escape")
        await pilot.press("q")
    assert pids and not any(_alive(pid) for pid in pids)
    conn = sqlite3.connect(path)
    states = dict(conn.execute("SELECT id, state FROM workers").fetchall())
    conn.close()
    assert [s for w, s in states.items() if w.endswith(f":{pids[0]}")] == ["stopped"]


def test_the_start_form_checks_its_fields() -> None:
    assert parse_start(" 2 ", "64", True).processes == 2
    # left empty (as the form opens): lab worker's default, each model's own concurrency
    assert parse_start("1", " ", False).concurrency is None
    with pytest.raises(ConfigError, match="worker processes: 'two' is not a whole number"):
        parse_start("two", "64", False)
    with pytest.raises(ConfigError, match=r"concurrency: 0 is out of range \(1 to "):
        parse_start("1", "0", False)


def test_a_worker_started_with_the_default_gets_no_smaller_cap(tmp_path: Path) -> None:
    workers = LocalWorkers(tmp_path / "lab.db", tmp_path / "lab.toml", lambda: tmp_path)
    assert "--concurrency" not in workers.command(None, tmp_path / "w.log")
    line = workers.command(64, tmp_path / "w.log")
    assert line[line.index("--concurrency") + 1] == "64"


def test_the_banner_shows_only_while_jobs_wait_for_no_worker() -> None:
    assert no_worker_banner(0, 0) is None and no_worker_banner(5, 1) is None
    banner = no_worker_banner(1, 0)
    assert banner is not None and banner.plain == "⚠ 1 job queued, no worker: press w to start one"


def _sleeper(app: LabApp, keep: bool = False) -> LocalWorker:
    """A stand-in for a started `lab worker`: a process in a group of its own that only
    sleeps (pausing, resuming and stopping are signals to its group, whatever it runs)."""
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"],
                               start_new_session=True)
    worker = LocalWorker(process, app.log_dir() / f"worker-{process.pid}.log", None, keep)
    app.local_workers.started.append(worker)
    return worker


def _kill(workers: list[LocalWorker]) -> None:
    """Kill what a test's workers left running."""
    for w in workers:
        if w.alive():
            w.process.kill()
            w.process.wait()


def _state(pid: int) -> str:
    """The process's state letter in /proc (T: stopped by a signal)."""
    with open(f"/proc/{pid}/stat", "rb") as f:
        return f.read().rpartition(b")")[2].split()[0].decode()


@pytest.mark.asyncio
async def test_z_pauses_and_resumes_and_s_stops_the_consoles_workers(tmp_path: Path) -> None:
    path = build(tmp_path / "lab.db", run=False)
    app = console_app(path.resolve())
    workers: list[LocalWorker] = []
    try:
        async with app.run_test(size=(100, 30)) as pilot:
            await settle(pilot)
            await pilot.press("Z")  # none started yet: said, nothing asked
            assert not isinstance(app.screen, Confirm)
            workers = [_sleeper(app), _sleeper(app)]
            for verb, letter in (("Pause", "T"), ("Resume", "S")):
                await pilot.press("Z")
                await pause_until(pilot, lambda: isinstance(app.screen, Confirm), "the question")
                question = cast(Confirm, app.screen).text
                assert question.startswith(f"{verb} 2 worker(s) started here?")
                await pilot.press("y")
                await pause_until(pilot, lambda want=letter: all(  # type: ignore[misc]
                    _state(w.pid) == want for w in workers), f"both workers {verb.lower()}d")
                assert all(w.paused == (verb == "Pause") for w in workers)
            await pilot.press("S")
            await pause_until(pilot, lambda: isinstance(app.screen, Confirm), "the question")
            assert cast(Confirm, app.screen).text.startswith("Stop 2 worker(s) started here?")
            await pilot.press("n")  # no: they go on
            await pilot.pause()
            assert all(w.alive() for w in workers)
            await pilot.press("S")
            await pause_until(pilot, lambda: isinstance(app.screen, Confirm), "the question")
            await pilot.press("y")
            await pause_until(pilot, lambda: not any(w.alive() for w in workers),
                              "both workers stopped")
    finally:
        _kill(workers)


@pytest.mark.asyncio
async def test_only_a_worker_started_to_outlive_the_console_survives_its_quit(
        tmp_path: Path) -> None:
    path = build(tmp_path / "lab.db", run=False)
    app = console_app(path.resolve())
    workers: list[LocalWorker] = []
    try:
        async with app.run_test(size=(100, 30)) as pilot:
            await settle(pilot)
            workers = [_sleeper(app), _sleeper(app, keep=True)]
            await pilot.press("q")
        assert not workers[0].alive() and workers[1].alive()
    finally:
        _kill(workers)
