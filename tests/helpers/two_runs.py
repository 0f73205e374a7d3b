"""A lab.db whose rows differ only by run and seed: one model under one arm and its
baseline `none`, the six mean6 regimes, two runs × two seeds, through the real queue.

At 80 columns its wide tables split into blocks, and only the run and seed columns
tell a block's rows apart, so a block that drops them shows look-alike rows.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from core import store
from core.data import ids_hash
from core.demo_data import demo_questions
from core.models.registry import load_registry
from core.regimes import MEAN6
from jobs.control import enqueue_grid
from jobs.grid import GridRequest
from jobs.settings import WorkerSettings
from jobs.worker import run_worker

MODEL, ARM = "sim-hazard-own", "random_rule:k=3,rate=0.5"
RUNS = ("pilot-a", "pilot-b")
SEEDS = (0, 1)


def build_two_runs_db(path: Path) -> Path:
    """Fill `path` with the two runs (six demo questions each) and return it."""
    db = store.connect(path)
    questions = demo_questions()
    store.insert_questions(db, questions)
    ids = [q.id for q in questions][:6]
    store.save_question_set(db, "two6", "demo", ids, 0, [], False, ids_hash(ids))
    settings = WorkerSettings(db_path=path, worker_id="fixture-host:1")
    for run in RUNS:
        enqueue_grid(db, settings, GridRequest(models=(MODEL,), conditions=("none", ARM),
                                               regimes=MEAN6, question_set="two6",
                                               seeds=SEEDS, run=run), load_registry(None))
    run_worker(settings, until_idle=True)
    db.conn.close()
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return path
