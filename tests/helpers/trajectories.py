"""The Trajectories and Results screens' lab.db: two sim policies under `none` and
`enforced_rule:k=2` in three regimes on six demo questions, through the real queue.

With k=2 the rule forces an answer at action 3 after two useless results, so the
matched arms diverge there under `persistent`.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from core import store
from core.data import ids_hash
from core.demo_data import demo_questions
from core.models.registry import load_registry
from jobs.control import enqueue_grid
from jobs.grid import GridRequest
from jobs.settings import WorkerSettings
from jobs.worker import run_worker
from tests.helpers.console import FIXED_ISO

GRID = GridRequest(models=("sim-never", "sim-own5"), conditions=("none", "enforced_rule:k=2"),
                   regimes=("persistent", "recover_after_2", "clean"), question_set="traj6",
                   run="traj")


def build_trajectories_db(path: Path) -> Path:
    """A small lab.db filled through the real queue, every timestamp frozen."""
    db = store.connect(path)
    questions = demo_questions()
    store.insert_questions(db, questions)
    ids = [q.id for q in questions][:6]
    store.save_question_set(db, "traj6", "demo", ids, 0, [], False, ids_hash(ids))
    settings = WorkerSettings(db_path=path, worker_id="fixture-host:1")
    enqueue_grid(db, settings, GRID, load_registry(None))
    run_worker(settings, until_idle=True)
    db.conn.close()
    conn = sqlite3.connect(path)
    with conn:
        for table, cols in (("questions", ("imported_at",)), ("question_sets", ("created_at",)),
                            ("runs", ("created_at",)), ("cells", ("created_at",)),
                            ("grids", ("created_at",)), ("jobs", ("created_at", "updated_at")),
                            ("events", ("at",)), ("episodes", ("started_at", "finished_at"))):
            conn.execute(f"UPDATE {table} SET " + ", ".join(f"{c} = ?" for c in cols),
                         (FIXED_ISO,) * len(cols))
        conn.execute("UPDATE episodes SET wall_ms = 1.0")
        conn.execute("UPDATE steps SET latency_ms = 0")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return path
