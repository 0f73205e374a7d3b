"""A small, deterministic lab.db for the console's Pilot and snapshot tests.

Built through the real pipeline (demo set, a frozen demo amendment, `enqueue_grid`,
an in-process worker until idle), then every time column is rewritten to fixed
values so that snapshots never depend on when the test ran.
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING, cast

from textual.app import App
from textual.pilot import Pilot

from core import prereg, store
from core.data import ids_hash
from core.demo_set import ensure_demo_set
from core.models.registry import load_registry
from core.store import prereg as prereg_rows
from jobs.control import enqueue_grid
from jobs.grid import GridRequest
from jobs.settings import WorkerSettings
from jobs.worker import run_worker

if TYPE_CHECKING:  # the console is imported where a test opens it
    from console.app import LabApp
    from console.screens.prereg import PreregScreen

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


def build_small(db_path: Path, n: int, regimes: tuple[str, ...], run: str) -> list[str]:
    """A lab.db whose set "small" holds the first `n` demo questions, run through the
    real pipeline as one sim-never grid (condition none) over `regimes`; its question ids.
    """
    db = store.connect(db_path)
    ensure_demo_set(db)
    ids = store.question_set(db, "demo")["ids"][:n]
    store.save_question_set(db, "small", "demo", ids, 0, [], False, ids_hash(ids))
    db.conn.close()
    build(db_path, GridRequest(models=("sim-never",), conditions=("none",), regimes=regimes,
                               question_set="small", run=run))
    return list(ids)


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


def console_app(db: Path, **config: object) -> LabApp:
    """The console on `db`, named relative to the test's directory (the header shows it),
    with the clock frozen at FIXED_TS, no endpoint checks and 200 resamples (Results,
    Pre-registration outcomes) and no warm-up (`console.warmup`) unless asked."""
    from console.app import ConsoleConfig, make_app

    rel = Path(db.name) if db.parent == Path.cwd() else db
    settings = {"clock": lambda: FIXED_TS, "check_endpoints": False, "n_boot": 200,
                "hazard_boot": 200, "outcome_resamples": 200, "warm_up": False, **config}
    return make_app(rel, ConsoleConfig(db_path=rel, **settings))  # type: ignore[arg-type]


async def wait_workers(app: App[None]) -> None:
    """Wait until no worker runs; an exclusive worker cancelled by a newer one is fine."""
    from textual.worker import WorkerCancelled

    for _ in range(20):
        try:
            await app.workers.wait_for_complete()
            return
        except WorkerCancelled:
            continue


def busy(app: App[None]) -> bool:
    """Whether a worker of the app is pending or running."""
    from textual.worker import WorkerState

    return any(w.state in (WorkerState.PENDING, WorkerState.RUNNING) for w in app.workers)


async def settle(pilot: Pilot[None], rounds: int = 4) -> None:
    """Wait for every worker, then let the screen refresh; again while that refresh
    started workers (a read's result starts the next read), `rounds` times at most."""
    for _ in range(rounds):
        await wait_workers(pilot.app)
        await pilot.pause()
        if not busy(pilot.app):
            return


# ---- the Pre-registration screen's lab.db (test_console_prereg*.py) ------------------

PREREG_SCOPE = {"models": ["sim-never", "sim-own5"], "conditions": ["none", "enforced_rule"],
                "regimes": ["clean", "persistent"], "question_sets": ["test20"],
                "budgets": [8]}
PREREG_TESTS = [{"id": "H1", "kind": "paired_diff", "metric": "success",
                 "regime": "persistent", "a": "enforced_rule", "b": "none",
                 "models": ["sim-never"]},
                {"id": "H2", "kind": "delta_bound", "condition": "none", "bound": "upper",
                 "threshold": 0.06}]
DRAFT_SCOPE = {"models": ["sim-own5"], "conditions": ["none", "enforced_rule:k=7"],
               "regimes": ["clean"], "question_sets": ["dev10"], "budgets": [8]}


def build_prereg_lab(path: Path) -> Path:
    """Question sets, A1 frozen and run (sim grid through the queue), a deviation, draft A2."""
    db = store.connect(path)
    ensure_demo_set(db)
    ids = store.question_set(db, "demo")["ids"]
    store.save_question_set(db, "dev10", "demo", ids[:10], 1, [], False, ids_hash(ids[:10]))
    store.save_question_set(db, "test20", "demo", ids[10:30], 2, [], True, ids_hash(ids[10:30]))
    models = load_registry(None)
    a1 = prereg.create(db, "Enforced rule beats none on test20",
                       "We predict **H1**: the enforced rule answers more often.\n\n"
                       "- H2: the clock-free sims show no time-matched contrast.",
                       PREREG_TESTS, PREREG_SCOPE)
    prereg.freeze(db, a1, models)
    settings = WorkerSettings(db_path=path, heartbeat_s=0.2)
    request = GridRequest(models=("sim-never", "sim-own5"), conditions=("none", "enforced_rule"),
                          regimes=("clean", "persistent"), question_set="test20",
                          run="confirm", amendment=a1)
    enqueue_grid(db, settings, request, models)
    run_worker(settings, until_idle=True)
    prereg_rows.add_deviation(db, a1, "system.txt reworded after a typo; same meaning")
    prereg.create(db, "Knob variant: k=7", "A draft: **not** frozen yet.", [], DRAFT_SCOPE)
    db.conn.close()
    return path


def copy_db(built: Path, target: Path) -> Path:
    """A private copy of a lab.db built once (SQLite's backup: its WAL included)."""
    src, dst = sqlite3.connect(built), sqlite3.connect(target)
    src.backup(dst)
    src.close()
    dst.close()
    return target


def prereg_app(db: Path) -> LabApp:
    """The console opened on the Pre-registration screen, with few resamples (no warm-up)."""
    from console.app import ConsoleConfig, make_app

    return make_app(db, ConsoleConfig(db_path=db, first_screen="prereg",
                                      outcome_resamples=200, warm_up=False,
                                      clock=lambda: FIXED_TS))  # the header's read time


async def settle_prereg(pilot: Pilot[None]) -> None:
    """Let workers (and the ones their results start) finish."""
    await pilot.pause()
    await settle(pilot)


def amendment(db: Path, amendment_id: str) -> dict:
    """The amendment's row as stored now."""
    conn = store.connect(db)
    try:
        return prereg_rows.amendment(conn, amendment_id)
    finally:
        conn.conn.close()


async def select_amendment(pilot: Pilot[None], amendment_id: str) -> None:
    """Move the Pre-registration list's cursor to an amendment."""
    from textual.widgets import OptionList

    listing = pilot.app.screen.query_one("#prereg-list", OptionList)
    listing.highlighted = listing.get_option_index(amendment_id)
    await settle_prereg(pilot)


async def open_editor(pilot: Pilot[None], amendment_id: str) -> PreregScreen:
    """Select an amendment and open it in the editor (`e`); returns the screen."""
    await select_amendment(pilot, amendment_id)
    await pilot.press("e")
    await settle_prereg(pilot)
    return cast("PreregScreen", pilot.app.screen)
