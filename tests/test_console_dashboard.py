"""Dashboard (key 1) and its reads in core/store/monitor.py, on a lab.db filled by the
real queue: queue counts, workers (lost when silent past the lease), episodes/s,
spend, endpoints (checked in a worker), events; snapshots at 80×24 and 120×40."""

from __future__ import annotations

import shutil
import sqlite3
import time
from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.widgets import DataTable, Static

from core import store
from core.store import jobs as ledger
from core.store import monitor
from jobs.control import control
from jobs.settings import WorkerSettings
from tests.helpers.console import FIXED_TS, build, console_app, freeze_times, settle
from tests.helpers.snapshots import SnapCompare
from tests.helpers.waiting import PATIENCE_S, pause_until


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The console fixture lab.db (4 cells × 2 regimes of sims, run), times frozen."""
    path = build(tmp_path_factory.mktemp("dash") / "lab.db")
    freeze_times(path)
    return path


@pytest.fixture
def lab_db(built: Path, tmp_path: Path) -> Path:
    """A private copy of the fixture in the test's directory."""
    for suffix in ("", "-wal", "-shm"):
        if Path(str(built) + suffix).exists():
            shutil.copy(str(built) + suffix, str(tmp_path / "lab.db") + suffix)
    return tmp_path / "lab.db"


def _cells(table: DataTable) -> list[list[str]]:
    return [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]


def test_monitor_reads(lab_db: Path) -> None:
    db = store.connect(lab_db)
    q = monitor.queue_counts(db)
    assert q.jobs["done"] == 16 and q.jobs["queued"] == 0 and q.episodes == 480
    assert q.errored == 0
    # every fixture episode finished at FIXED_TS: 480 over the 30 s since, none a minute
    # later (`window_rate`: from the first episode of the minute, as the Jobs tree counts)
    assert monitor.queue_counts(db, now=FIXED_TS + 30).rate == pytest.approx(480 / 30)
    assert monitor.queue_counts(db, now=FIXED_TS + 61).rate == 0
    assert [s.model for s in monitor.spend(db)] == ["sim-never", "sim-own5"]
    assert sum(s.episodes for s in monitor.spend(db)) == 480
    ledger.register_worker(db, "ghost:9")  # a worker that then goes silent
    now = ledger.workers(db)[0]["heartbeat_at"]
    states = {w.id: w.state for w in monitor.workers(db, lease_s=60, now=now + 61)}
    assert states == {"ghost:9": "lost", "fixture-host:1": "stopped"}
    states = {w.id: w.state for w in monitor.workers(db, lease_s=60, now=now + 1)}
    assert states["ghost:9"] == "running"


@pytest.mark.asyncio
async def test_dashboard_shows_queue_workers_spend_events(lab_db: Path) -> None:
    db = store.connect(lab_db)
    ledger.register_worker(db, "ghost:9")
    control(db, WorkerSettings(db_path=lab_db), "pause", "run", "fixture")
    app = console_app(lab_db, clock=lambda: time.time() + 120)  # ghost silent for 2 min
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        text = str(app.screen.query_one("#queue-text", Static).render())
        assert "done 16" in text and "480 stored" in text and "0 errored" in text
        workers = _cells(app.screen.query_one("#workers", DataTable))
        assert any(r[0] == "ghost:9" and "LOST" in r[1] for r in workers)
        spend = _cells(app.screen.query_one("#spend", DataTable))
        assert [r[0] for r in spend] == ["sim-never", "sim-own5"]
        events = _cells(app.screen.query_one("#events", DataTable))
        assert [r[1] for r in events][:2] == ["pause", "enqueue"]


@pytest.mark.asyncio
async def test_dashboard_endpoint_check_in_a_worker(lab_db: Path, tmp_path: Path) -> None:
    registry = tmp_path / "lab.toml"
    registry.write_text('[models.local]\nbackend = "openai"\nmodel = "m"\n'
                        'endpoints = ["http://127.0.0.1:9/v1"]\n')
    app = console_app(lab_db, config_path=registry)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        rows = _cells(app.screen.query_one("#endpoints", DataTable))
        # the backend lab calls it by: an openai endpoint may be any server, not only vLLM
        assert rows[0][:3] == ["local", "openai", "http://127.0.0.1:9/v1"]
        assert "not checked" in rows[0][3]
        await pilot.press("h")
        await settle(pilot)
        rows = _cells(app.screen.query_one("#endpoints", DataTable))
        assert "unreachable" in rows[0][3]
        # lab.toml edited while the console runs: the endpoints follow without a key
        registry.write_text('[models.other]\nbackend = "openai"\nmodel = "m"\n'
                            'endpoints = ["http://127.0.0.1:7/v1", "http://127.0.0.1:8/v1"]\n')
        deadline = time.monotonic() + PATIENCE_S
        while time.monotonic() < deadline:
            await pilot.pause(0.05)
            await settle(pilot)
            rows = _cells(app.screen.query_one("#endpoints", DataTable))
            if rows[0][0] == "other":
                break
        assert [r[:3] for r in rows] == [["other", "openai", "http://127.0.0.1:7/v1"],
                                         ["other", "openai", "http://127.0.0.1:8/v1"]]


@pytest.mark.asyncio
async def test_dashboard_reloads_when_workers_commit(lab_db: Path) -> None:
    app = console_app(lab_db, poll_s=0.05)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        db = store.connect(lab_db)
        control(db, WorkerSettings(db_path=lab_db), "cancel", "job", 1)

        async def cancel_shown() -> bool:
            await settle(pilot)
            return "cancel" in [r[1] for r in _cells(app.screen.query_one("#events", DataTable))]

        deadline = time.monotonic() + PATIENCE_S
        while not await cancel_shown():
            assert time.monotonic() < deadline, "the cancel never reached the Dashboard"
            await pilot.pause(0.05)


@pytest.mark.asyncio
async def test_dashboard_counts_only_the_episodes_stored_since_its_last_read(
        lab_db: Path) -> None:
    """Episodes stored while the Dashboard is shown reach its queue and spend panels,
    read by its tallies: after the first read, each read counts the new episodes only
    (`core.store.tally`), so a second's read costs the same on any lab.db."""
    from core.episode import EpisodeResult

    app = console_app(lab_db, poll_s=0.05)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        screen = app.screen
        db = store.connect(lab_db)
        cell = db.conn.execute("SELECT min(id) FROM cells").fetchone()[0]
        store.write_episodes(db, [(cell, EpisodeResult(
            f"new-{i}", input_tokens=10, cost_usd=0.25, end_reason="finish",
            started_at="2026-01-01T00:00:00", finished_at="2026-01-01T00:00:01"), None)
            for i in range(4)])

        def shown() -> bool:
            text = str(screen.query_one("#queue-text", Static).render())
            episodes = sum(int(r[2].replace(",", ""))
                           for r in _cells(screen.query_one("#spend", DataTable)))
            return "484 stored" in text and episodes == 484

        await pause_until(pilot, shown, "the four new episodes on the Dashboard")
        queue, spend = screen._queue_tally, screen._spend_tally  # type: ignore[attr-defined]
        assert (queue.rows, spend.rows) == (484, 484)
        assert (queue.full_reads, spend.full_reads) == (1, 1)


LONG_MODEL = "org-with-a-long-name/a-model-with-an-even-longer-name-v2"


@pytest.mark.asyncio
async def test_spend_counts_errored_with_calls_and_keeps_dollars_visible(lab_db: Path) -> None:
    """Errored episodes are spend only where calls were made, and the title says so;
    `$` comes right after the model, whose long name is cut, so it is never off-screen."""
    conn = sqlite3.connect(lab_db)
    with conn:
        conn.execute("UPDATE cells SET model = ? WHERE model = 'sim-own5'", (LONG_MODEL,))
        ids = [r[0] for r in conn.execute("SELECT id FROM episodes ORDER BY id LIMIT 5")]
        conn.execute(f"UPDATE episodes SET error = 'timeout: no answer', input_tokens = 0, "
                     f"output_tokens = 0, cost_usd = 0 WHERE id IN ({ids[0]}, {ids[1]})")
        conn.execute(f"UPDATE episodes SET error = 'http_5xx: 502', cost_usd = 0.5 WHERE id IN "
                     f"({ids[2]}, {ids[3]}, {ids[4]})")
    conn.close()
    app = console_app(lab_db)
    async with app.run_test(size=(80, 24)) as pilot:
        for _ in range(100):
            await settle(pilot)
            if app.screen.query_one("#spend", DataTable).row_count:
                break
            await pilot.pause(0.05)
        title = str(app.screen.query_one("#spend-title", Static).render())
        assert title == ("Spend so far (complete episodes + 3 errored that made calls); "
                         "2 errored without a call are not spend")
        table = app.screen.query_one("#spend", DataTable)
        assert [str(c.label) for c in table.columns.values()][:2] == ["model", "$"]
        rows = _cells(table)
        assert sum(int(r[2].replace(",", "")) for r in rows) == 478
        model = next(r for r in rows if r[0].startswith("org-with"))
        assert len(model[0]) == 24 and model[0].endswith("…")
        assert sum(float(r[1]) for r in rows) == pytest.approx(1.5)  # errored with calls
        dollars_end = sum(c.get_render_width(table) for c in list(table.columns.values())[:2])
        assert dollars_end <= table.scrollable_content_region.width


def test_stopped_workers_older_than_an_hour_are_one_line(lab_db: Path) -> None:
    from console.screens.dashboard import read_dashboard

    db = store.connect(lab_db)
    for i in range(5):
        ledger.register_worker(db, f"old:{i}")
        ledger.worker_heartbeat(db, f"old:{i}", state="stopped")
    db.conn.close()
    now = time.time() + 2 * 3600
    data = read_dashboard(lab_db, 60.0, now)
    assert data.stopped_old == 6 and not data.workers  # the fixture's worker is old too
    data = read_dashboard(lab_db, 60.0, time.time() + 60)
    assert data.stopped_old == 1 and len(data.workers) == 5


@pytest.mark.asyncio
async def test_wide_dashboard_gives_events_a_column_and_wraps_them(lab_db: Path) -> None:
    db = store.connect(lab_db)
    detail = "a detail of many words " * 12
    with db.conn:
        db.conn.execute("INSERT INTO events (at, kind, detail) VALUES (?, 'retry', ?)",
                        ("2025-01-02T03:04:06.000000+00:00", detail.strip()))
    db.conn.close()
    app = console_app(lab_db)
    async with app.run_test(size=(200, 60)) as pilot:
        await settle(pilot)
        assert app.screen.query_one("#dash").has_class("wide")
        left, right = app.screen.query_one("#dash-left"), app.screen.query_one("#dash-right")
        assert right.region.x > left.region.x and right.region.y == left.region.y
        events = app.screen.query_one("#events", DataTable)
        assert events.virtual_size.width <= events.scrollable_content_region.width
        first = events.get_row_at(0)
        key = events._row_locations.get_key(0)
        assert key is not None
        assert str(first[2]) == detail.strip() and events.rows[key].height > 1


@pytest.mark.parametrize("size", [(80, 24), (120, 40), (200, 60)])
def test_snapshot(snap_compare: SnapCompare, lab_db: Path, size: tuple[int, int]) -> None:
    async def loaded(pilot: Pilot[None]) -> None:
        # the spend table fills in a worker of its own, which a poll can restart after
        # the others finished (CI once saw it empty under load): wait for its rows
        deadline = time.monotonic() + PATIENCE_S
        await settle(pilot)
        while not pilot.app.screen.query_one("#spend", DataTable).row_count:
            assert time.monotonic() < deadline, "the spend table never filled"
            await pilot.pause(0.05)
            await settle(pilot)
        await settle(pilot)

    assert snap_compare(console_app(lab_db), terminal_size=size, run_before=loaded)


@pytest.mark.asyncio
async def test_workers_all_stopped_long_ago_read_as_a_count_not_more(lab_db: Path) -> None:
    """Stopped over an hour ago, every worker folds into one line: "N workers" when no
    other row is above it ("N more" reads as more than the rows shown)."""
    conn = sqlite3.connect(lab_db)
    with conn:
        conn.execute("UPDATE workers SET state = 'stopped', heartbeat_at = ?", (FIXED_TS - 7200,))
    conn.close()
    app = console_app(lab_db)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        table = app.screen.query_one("#workers", DataTable)
        assert [str(c) for c in table.get_row_at(0)][:1] == ["1 worker"]


def test_a_rate_counts_from_the_first_unit_of_its_window() -> None:
    """A grid 10 s into a minute read a sixth of its pace on the Dashboard (480 over 60 s)
    and its pace on Jobs (480 over 10 s); both now read `window_rate`."""
    now = 1_000.0
    assert monitor.window_rate([now - 10] * 240 + [now] * 240, now, 60) == (48.0, 10.0)
    assert monitor.window_rate([now - 70, now - 30, now], now, 60) == (2 / 30, 30.0)
    assert monitor.window_rate([now], now, 60) == (1.0, 1.0)  # at least one second
    assert monitor.window_rate([now - 61], now, 60) == (0.0, 60.0)
    assert monitor.window_rate([], now, 60) == (0.0, 60.0)
