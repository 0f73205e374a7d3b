""""Now" is true: ages, worker states, rates and ETAs move with the clock, not with reads.

The console's clock is injected (a list the test moves on). A worker "killed" in the
middle of a grid (its row still says running, its heartbeat stops) turns LOST on the
Dashboard once its heartbeat is older than the lease, and the episodes/s (the Jobs
tree's rate: from the first episode stored in the last minute) falls as the stored
episodes age out of the minute, without a key and without another read of
lab.db (the read is counted); the Jobs tree's rate falls the same way. A finished run
with errors says `done with errors` and never shows an ETA.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import cast

import pytest
from textual.app import App
from textual.pilot import Pilot
from textual.widgets import DataTable, Static, Tree

import console.screens.dashboard as dashboard
import console.screens.jobs as jobs_screen
from console.app import LabApp
from console.pacing import Pacer
from console.screens.jobs import JobsScreen, grid_detail, grid_label, run_label
from core import store
from core.store import jobs as ledger
from jobs.control import GridStatus, rate_and_eta
from tests.helpers.console import FIXED_TS, build, console_app, copy_db, freeze_times, settle
from tests.helpers.waiting import pause_until

WORKER = "fixture-host:1"
"""The fixture's worker: of another host, so only its lease can tell it is gone."""


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The console fixture, run and frozen; then a worker that was killed mid-grid: it
    still says running with its last heartbeat 5 s before FIXED_TS, holds one running
    job, and half the episodes finished 40 s before the others (FIXED_TS)."""
    path = build(tmp_path_factory.mktemp("live-time") / "lab.db")
    freeze_times(path)
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("UPDATE workers SET state = 'running'")
        conn.execute("UPDATE jobs SET state = 'running', worker = ? WHERE id = "
                     "(SELECT min(id) FROM jobs)", (WORKER,))
        conn.execute("UPDATE episodes SET finished_at = '2025-01-02T03:03:25.000000+00:00' "
                     "WHERE id % 2 = 0")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return path


@pytest.fixture
def lab_db(built: Path, tmp_path: Path) -> Path:
    """A private copy."""
    copy_db(built, tmp_path / "lab.db")
    return tmp_path / "lab.db"


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The clock of every read the Dashboard and Jobs make of lab.db."""
    seen: list[float] = []
    read_dashboard, read_jobs = dashboard.read_dashboard, jobs_screen.read_jobs

    def counted_dashboard(db_path: Path, lease_s: float, now: float,
                          tally: object = None) -> object:
        seen.append(now)
        return read_dashboard(db_path, lease_s, now, tally)  # type: ignore[arg-type]

    def counted_jobs(db_path: Path, expanded: set[int] | None, now: float,
                     lease_s: float = 60.0) -> object:
        seen.append(now)
        return read_jobs(db_path, expanded, now, lease_s)

    monkeypatch.setattr(dashboard, "read_dashboard", counted_dashboard)
    monkeypatch.setattr(jobs_screen, "read_jobs", counted_jobs)
    return seen


async def _first_poll(pilot: Pilot[None], reads: list[float]) -> None:
    """Wait for the data-version poll's first answer, which always says "changed" and
    re-reads the screen shown; from then on lab.db does not change, so nothing re-reads."""
    app = cast(LabApp, pilot.app)
    await pause_until(pilot, lambda: app._version._last is not None, "the first poll")
    await settle(pilot)
    read = len(reads)
    await settle(pilot)
    assert len(reads) == read


def _worker_row(app: App[None]) -> list[str]:
    table = app.screen.query_one("#workers", DataTable)
    return [str(c) for c in table.get_row_at(0)]


def _queue(app: App[None]) -> str:
    return str(app.screen.query_one("#queue-text", Static).render())


@pytest.mark.asyncio
async def test_a_killed_worker_turns_lost_and_the_rate_falls_without_a_key(
        lab_db: Path, reads: list[float]) -> None:
    now = [FIXED_TS]
    app = console_app(lab_db, clock=lambda: now[0], lease_s=60.0)
    async with app.run_test(size=(100, 30)) as pilot:
        await _first_poll(pilot, reads)
        assert _worker_row(app)[:3] == [WORKER, "● running", "5s ago"]
        # 480 in the last minute, the first half 40 s ago: the Jobs tree's 12.0/s
        assert "12.0 episodes/s over the last 40 s" in _queue(app)
        read = len(reads)

        now[0] = FIXED_TS + 30  # the half stored at FIXED_TS - 40 left the minute
        await pause_until(pilot, lambda: "8.0 episodes/s over the last 30 s" in _queue(app),
                          "the rate at +30 s")
        assert _worker_row(app)[1:3] == ["● running", "35s ago"]  # within its lease

        now[0] = FIXED_TS + 56  # heartbeat 61 s old: past the 60 s lease
        await pause_until(pilot, lambda: _worker_row(app)[1] == "✗ LOST", "LOST")
        assert _worker_row(app)[2] == "61s ago"

        now[0] = FIXED_TS + 61
        await pause_until(pilot, lambda: "0.0 episodes/s over the last 60 s" in _queue(app),
                          "the rate at +61 s")
        assert len(reads) == read  # all of it from the one read: nothing pressed, nothing read


@pytest.mark.asyncio
async def test_jobs_rates_fall_without_a_read(lab_db: Path, reads: list[float]) -> None:
    now = [FIXED_TS]
    app = console_app(lab_db, clock=lambda: now[0])
    async with app.run_test(size=(120, 30)) as pilot:
        await pilot.press("4")
        await _first_poll(pilot, reads)
        tree = app.screen.query_one(Tree)
        label = lambda: str(tree.root.children[0].label)  # noqa: E731 - the run's line
        # 480 stored, the first 40 s before the second half: 480 over 40 s
        assert "12.0/s" in label()
        read = len(reads)
        now[0] = FIXED_TS + 30  # 240 left in the window, over 30 s
        await pause_until(pilot, lambda: "8.0/s" in label(), "the run's rate at +30 s")
        now[0] = FIXED_TS + 61  # the killed worker's job still says running: 0.0/s
        await pause_until(pilot, lambda: "0.0/s" in label(), "the run's rate at +61 s")
        assert len(reads) == read


@pytest.mark.asyncio
async def test_jobs_rates_stand_while_a_read_is_put_off(lab_db: Path, reads: list[float]
                                                        ) -> None:
    """A change seen while the Jobs view's pacer puts its read off (`console.pacing`):
    episodes are being stored, only not read yet, so the rate stands as of the last
    read instead of falling with the clock; once read, it moves with the clock again."""
    now = [FIXED_TS]
    app = console_app(lab_db, clock=lambda: now[0], poll_s=0.05)
    async with app.run_test(size=(120, 30)) as pilot:
        await pilot.press("4")
        await _first_poll(pilot, reads)
        screen = cast(JobsScreen, app.screen)
        tree = screen.query_one(Tree)
        label = lambda: str(tree.root.children[0].label)  # noqa: E731 - the run's line
        assert "12.0/s" in label()
        screen.pacer = Pacer(clock=lambda: 0.0, began=0.0, took=10.0)  # next read in 100 s
        seen = app.changes
        ledger.register_worker(store.connect(lab_db), "elsewhere:7")
        await pause_until(pilot, lambda: screen._paced is not None, "the read put off")
        assert app.changes > seen
        now[0] = FIXED_TS + 30
        screen._tick()
        assert "12.0/s" in label()
        screen.pacer = None
        await pilot.press("r")  # read: the rate moves with the clock from this read on
        await pause_until(pilot, lambda: "8.0/s" in label(), "the run's rate at +30 s")


def _grid(jobs: dict[str, int], errored: int, recent: tuple[float, ...], left: int,
          now: float) -> GridStatus:
    active = bool(jobs.get("queued") or jobs.get("running"))
    rate, eta = rate_and_eta(recent, left, active, False, now)
    return GridStatus(1, "pilot", 2, 100, 100 - left - errored, errored, 0, jobs, rate, eta,
                      recent=recent, left=left)


def test_a_finished_run_with_errors_says_so_and_has_no_eta() -> None:
    recent = tuple(FIXED_TS - i for i in range(30))
    done = _grid({"done": 3, "failed": 1}, 4, recent, 6, FIXED_TS)
    for at in (FIXED_TS, FIXED_TS + 20, FIXED_TS + 50):  # its rate decays as time passes
        g = done.at(at)
        assert g.done_with_errors and g.eta_s is None
        for text in (grid_label(g).plain, run_label("pilot", [g]).plain):
            assert "done with errors" in text and "ETA" not in text and "complete" not in text
    clean = _grid({"done": 4}, 0, recent, 0, FIXED_TS)
    assert "complete" in run_label("pilot", [clean.at(FIXED_TS + 50)]).plain
    running = _grid({"done": 3, "running": 1}, 0, recent, 60, FIXED_TS)
    assert running.eta_s == pytest.approx(60 / (30 / 29))
    assert "ETA" in run_label("pilot", [running]).plain
    assert running.at(FIXED_TS + 100).eta_s is None  # nothing stored lately: no honest ETA


def test_a_runs_when_reads_its_grids_together() -> None:
    """`jobs.control.run_when`: a run's ETA is its active grids' units left at all its
    grids' summed rate; a finished grid beside a paused one leaves the run paused; a
    stale grid leaves no honest ETA; two finished grids are complete."""
    from dataclasses import replace

    from jobs.control import run_when

    recent = tuple(FIXED_TS - i for i in range(30))
    running = _grid({"done": 3, "running": 1}, 0, recent, 60, FIXED_TS)
    finished = _grid({"done": 4}, 0, recent, 0, FIXED_TS)
    paused = _grid({"done": 2, "paused": 2}, 0, recent, 40, FIXED_TS)
    rate = 2 * 30 / 29  # both grids stored 30 units in the last 29 s
    assert run_when([running, finished]) == f"ETA {60 / rate:.0f}s"
    assert run_when([finished, paused]) == "paused, no ETA"
    assert run_when([running, replace(finished, stale=1)]) == "ETA -"
    assert run_when([finished, finished]) == "complete"


def test_a_grid_and_its_run_count_in_thousands_as_the_other_screens_do() -> None:
    """The Jobs tree read '7200/7200' where Trajectories read '200 of 7,200 episodes'."""
    from dataclasses import replace

    big = replace(_grid({"done": 240}, 0, (), 0, FIXED_TS), expected=7200, stored=7200)
    assert "7,200/7,200" in grid_label(big).plain
    assert "7,200/7,200" in run_label("demo", [big]).plain


def _big_grid() -> GridStatus:
    """A grid of a study's size: every count it shows past a thousand."""
    from dataclasses import replace

    return replace(_grid({"queued": 1200, "running": 1100, "done": 3300}, 1234, (), 2000,
                         FIXED_TS), expected=198000, stored=150000, running=1500, rerun=2345,
                   stale=1001)


def test_every_count_of_a_grid_groups_thousands_on_the_jobs_screen() -> None:
    """Errored, to run again, running and the job states, in the tree and the detail."""
    g = _big_grid()
    label = grid_label(g).plain
    for part in ("150,000/198,000", "✗ 1,234 errored", "↻ 2,345 to run again",
                 "1,500 running", "queued 1,200 running 1,100 done 3,300"):
        assert part in label, (part, label)
    assert "✗ 1,234 errored" in run_label("study", [g]).plain
    detail = grid_detail(g).plain
    for part in ("1,200 queued, 1,100 running, 3,300 done", "✗ 1,234 errored",
                 "↻ 2,345 errored, queued"):
        assert part in detail, (part, detail)


def test_lab_status_groups_thousands_in_every_count(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    import console.cli.queue as queue_cli
    from console.cli import main

    path = tmp_path / "lab.db"
    assert main(["--db", str(path), "init"]) == 0
    monkeypatch.setattr(queue_cli, "status", lambda db: [_big_grid()])
    capsys.readouterr()
    assert main(["--db", str(path), "status"]) == 0
    out = capsys.readouterr().out
    for part in ("150,000/198,000 episodes", "1,234 errored, 2,345 queued to run again",
                 "1,500 running", "queued 1,200 running 1,100 done 3,300 (1,001 stale"):
        assert part in out, (part, out)


def test_a_rate_is_shown_while_its_grid_runs_or_stored_lately() -> None:
    """'0.0/s  complete' (and '0.0/s  paused, no ETA') said nothing: a grid nothing is
    queued or running for shows its rate only while it stored something in the last
    minute; a running grid shows 0.0/s, which says its workers store nothing."""
    from jobs.control import rate_text

    recent = tuple(FIXED_TS - i for i in range(30))
    finished = _grid({"done": 4}, 0, recent, 0, FIXED_TS)
    assert "/s" in grid_label(finished).plain  # stored lately: its pace
    later = finished.at(FIXED_TS + 61)
    assert "/s" not in grid_label(later).plain and "/s" not in run_label("p", [later]).plain
    paused = _grid({"done": 2, "paused": 2}, 0, recent, 40, FIXED_TS).at(FIXED_TS + 61)
    assert "/s" not in grid_label(paused).plain
    stuck = _grid({"done": 3, "running": 1}, 0, recent, 60, FIXED_TS).at(FIXED_TS + 61)
    assert "0.0/s" in grid_label(stuck).plain and "0.0/s" in run_label("p", [stuck]).plain
    assert (rate_text(0.04, False), rate_text(0.05, False), rate_text(0.0, True)) == \
        ("", "0.1/s", "0.0/s")


def test_lab_status_shows_no_rate_for_a_grid_done_a_minute_ago(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    import console.cli.queue as queue_cli
    from console.cli import main

    recent = tuple(FIXED_TS - i for i in range(30))
    done = _grid({"done": 4}, 0, recent, 0, FIXED_TS)
    path = tmp_path / "lab.db"
    assert main(["--db", str(path), "init"]) == 0
    for grid, shown in ((done, "100/100 episodes, 1.0/s, complete"),
                        (done.at(FIXED_TS + 61), "100/100 episodes, complete")):
        monkeypatch.setattr(queue_cli, "status", lambda db, g=grid: [g])
        capsys.readouterr()
        assert main(["--db", str(path), "status"]) == 0
        out = capsys.readouterr().out
        assert shown in out, out
