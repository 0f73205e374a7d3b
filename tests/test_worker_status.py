"""A lost worker: `lab status` marks its jobs stale at once; a worker retakes them early."""

from __future__ import annotations

import socket
import subprocess
import time
from pathlib import Path

from sqlite_utils import Database

from core import store
from core.demo_set import ensure_demo_set
from core.models.registry import load_registry
from core.store import jobs as ledger
from jobs.control import enqueue_grid, status
from jobs.grid import GridRequest
from jobs.queue import make_huey
from jobs.reconcile import dead_workers, reconcile
from jobs.settings import WorkerSettings
from tests.helpers.queue import job_row, run_lab, write_registry


def _dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def _lab_with_a_lost_job(tmp_path: Path, worker: str, heartbeat_age: float
                         ) -> tuple[Database, Path, WorkerSettings, int]:
    db_path = tmp_path / "lab.db"
    db = store.connect(db_path)
    ensure_demo_set(db)
    config = write_registry(tmp_path, latency=0)
    settings = WorkerSettings(db_path=db_path, config_path=config, worker_id="enqueuer")
    request = GridRequest(models=("sim-slow",), conditions=("none",), regimes=("clean",),
                          question_set="demo", seeds=(0,), run="lost")
    enqueue_grid(db, settings, request, load_registry(config))
    job_id = ledger.select_jobs(db, "run", "lost")[0]
    assert ledger.acquire(db, job_id, worker, lease_s=600) is not None  # a 10-minute lease
    db.conn.execute("UPDATE jobs SET heartbeat_at = ? WHERE id = ?",
                    (time.time() - heartbeat_age, job_id))
    return db, config, settings, job_id


def test_status_shows_a_job_without_heartbeat_as_stale_with_no_eta(tmp_path: Path) -> None:
    worker = f"{socket.gethostname()}:{_dead_pid()}"
    db, config, _, _ = _lab_with_a_lost_job(tmp_path, worker, heartbeat_age=5)
    (g,) = status(db)
    assert g.stale == 1 and g.eta_s is None and g.jobs["running"] == 1
    out = run_lab(tmp_path / "lab.db", config, "status")
    assert out.returncode == 0, out.stderr
    assert "stale (worker lost?)" in out.stdout and "ETA -" in out.stdout


def test_a_fresh_heartbeat_is_not_stale(tmp_path: Path) -> None:
    db, _, _, _ = _lab_with_a_lost_job(tmp_path, "elsewhere:1", heartbeat_age=0.5)
    (g,) = status(db)
    assert g.stale == 0


def test_a_dead_local_workers_job_is_retaken_before_its_lease_ends(tmp_path: Path) -> None:
    worker = f"{socket.gethostname()}:{_dead_pid()}"
    db, _, settings, job_id = _lab_with_a_lost_job(tmp_path, worker, heartbeat_age=5)
    assert dead_workers({worker, "otherhost:1", "w1"}) == [worker]
    huey, task = make_huey(settings)
    reconcile(db, huey, task)
    job = job_row(db, job_id)
    assert job["state"] == "queued" and job["worker"] is None
    assert "died" in job["last_error"]
    assert ledger.workers(db) == [] or all(w["id"] != worker for w in ledger.workers(db))


def test_a_job_of_another_host_waits_for_its_lease(tmp_path: Path) -> None:
    db, _, settings, job_id = _lab_with_a_lost_job(tmp_path, "otherhost:1", heartbeat_age=5)
    huey, task = make_huey(settings)
    reconcile(db, huey, task)
    assert job_row(db, job_id)["state"] == "running"
