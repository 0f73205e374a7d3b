"""A small, deterministic lab.db for the console's Pilot and snapshot tests.

Built through the real pipeline (demo set, a frozen demo amendment, `enqueue_grid`,
an in-process worker until idle), then every time column is rewritten to fixed
values so that snapshots never depend on when the test ran.
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

from core import store
from core.demo_set import ensure_demo_set
from core.models.registry import load_registry
from jobs.control import enqueue_grid
from jobs.grid import GridRequest
from jobs.settings import WorkerSettings
from jobs.worker import run_worker

FIXED_ISO = "2025-01-02T03:04:05.000000+00:00"
FIXED_TS = 1735787045.0
"""FIXED_ISO as seconds since the epoch: the clock the snapshot tests inject."""

SMALL_GRID = GridRequest(models=("sim-never", "sim-own5"), conditions=("none", "enforced_rule"),
                         regimes=("clean", "persistent"), question_set="demo", run="fixture")


def build(db_path: Path, request: GridRequest = SMALL_GRID, run: bool = True) -> Path:
    """Fill `db_path` through the real pipeline: enqueue `request`, run it until idle."""
    db = store.connect(db_path)
    ensure_demo_set(db)
    settings = WorkerSettings(db_path=db_path, worker_id="fixture-host:1")
    enqueue_grid(db, settings, request, load_registry(None))
    if run:
        run_worker(settings, until_idle=True)
    db.conn.close()
    return db_path


def freeze_times(db_path: Path) -> None:
    """Rewrite every timestamp to FIXED_ISO / FIXED_TS (deterministic snapshots)."""
    conn = sqlite3.connect(db_path)
    with conn:
        for table, cols in (("questions", ("imported_at",)), ("question_sets", ("created_at",)),
                            ("runs", ("created_at",)), ("cells", ("created_at",)),
                            ("grids", ("created_at",)), ("jobs", ("created_at", "updated_at")),
                            ("workers", ("started_at",)), ("events", ("at",)),
                            ("episodes", ("started_at", "finished_at")),
                            ("live_episodes", ("started_at",))):
            conn.execute(f"UPDATE {table} SET " + ", ".join(f"{c} = ?" for c in cols),
                         (FIXED_ISO,) * len(cols))
        conn.execute("UPDATE amendments SET created_at = ?, frozen_at = CASE WHEN frozen_at "
                     "IS NULL THEN NULL ELSE ? END", (FIXED_ISO, FIXED_ISO))
        conn.execute("UPDATE workers SET heartbeat_at = ?", (FIXED_TS - 5,))
        conn.execute("UPDATE jobs SET heartbeat_at = CASE WHEN heartbeat_at IS NULL THEN NULL "
                     "ELSE ? END", (FIXED_TS - 5,))
        conn.execute("UPDATE episodes SET wall_ms = 1.0")
    conn.close()


def cached_fixture(cache: Path, target: Path) -> Path:
    """Copy a frozen fixture DB built once into `cache` to `target` (returns target)."""
    if not cache.exists():
        tmp = cache.with_suffix(".building")
        for p in tmp.parent.glob(tmp.name + "*"):
            p.unlink()
        build(tmp)
        freeze_times(tmp)
        conn = sqlite3.connect(tmp)
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.close()
        tmp.rename(cache)
    shutil.copy(cache, target)
    return target


def console_app(db: Path, **config: object):
    """The console on `db`, named relative to the test's directory (the header shows it),
    with the clock frozen at FIXED_TS, no endpoint checks and 200 resamples (Results,
    Pre-registration outcomes) unless asked."""
    from console.app import ConsoleConfig, make_app

    rel = Path(db.name) if db.parent == Path.cwd() else db
    settings = {"clock": lambda: FIXED_TS, "check_endpoints": False, "n_boot": 200,
                "hazard_boot": 200, "outcome_resamples": 200, **config}
    return make_app(rel, ConsoleConfig(db_path=rel, **settings))  # type: ignore[arg-type]


async def wait_workers(app) -> None:
    """Wait until no worker runs; an exclusive worker cancelled by a newer one is fine."""
    from textual.worker import WorkerCancelled

    for _ in range(20):
        try:
            await app.workers.wait_for_complete()
            return
        except WorkerCancelled:
            continue


async def settle(pilot) -> None:
    """Wait for every worker, then let the screen refresh (twice: results start workers)."""
    for _ in range(2):
        await wait_workers(pilot.app)
        await pilot.pause()
