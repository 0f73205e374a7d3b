"""Every job kind survives kill -9 and a lost lease: nothing lost, nothing stored twice.

One test each, run against every kind in `jobs.kinds` (episodes, replay probes,
trace states), since all of them run through the same worker and pump.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import threading
import time
from pathlib import Path

import pytest

from core import store
from core.store import jobs as ledger
from jobs.settings import WorkerSettings
from jobs.tasks import execute_job
from tests.helpers.kinds import KINDS, kind_registry, queue_kind, units
from tests.helpers.queue import job_row, lab_here, start_lab
from tests.helpers.waiting import wait_until


def _expire_leases(db: Path) -> None:
    conn = sqlite3.connect(db)
    with conn:  # the dead worker's lease: expire it now instead of waiting
        conn.execute("UPDATE jobs SET lease_until = 0 WHERE state = 'running'")
    conn.close()


def _job_states(db: Path) -> dict[str, int]:
    conn = sqlite3.connect(db)
    try:
        return dict(conn.execute("SELECT state, count(*) FROM jobs GROUP BY state").fetchall())
    finally:
        conn.close()


@pytest.mark.parametrize("kind", KINDS)
def test_kill_9_mid_job_loses_nothing_and_stores_nothing_twice(tmp_path: Path, kind: str) -> None:
    db, config = tmp_path / "lab.db", kind_registry(tmp_path, latency=50)
    planned = queue_kind(db, config, kind)
    worker = start_lab(db, config, "worker", "--concurrency", "2", log=tmp_path / "w.log")
    deadline = time.monotonic() + 60
    while units(db, kind)[0] == 0 and time.monotonic() < deadline:
        time.sleep(0.02)
    os.killpg(worker.pid, signal.SIGKILL)
    worker.wait()
    mid = units(db, kind)[0]
    assert 0 < mid < planned  # the kill really interrupted the job
    _expire_leases(db)
    done = lab_here(db, config, "worker", "--until-idle", "--concurrency", "64")  # no kill
    assert done.returncode == 0, done.stderr[-2000:]
    assert units(db, kind) == (planned, planned)
    assert set(_job_states(db)) == {"done"}


@pytest.mark.parametrize("kind", KINDS)
def test_a_lease_lost_while_the_first_worker_runs_duplicates_nothing(tmp_path: Path, kind: str
                                                                    ) -> None:
    db_path, config = tmp_path / "lab.db", kind_registry(tmp_path, latency=50)
    planned = queue_kind(db_path, config, kind)
    db = store.connect(db_path)
    (job_id,) = [j for j in ledger.select_jobs(db, "run", "k")
                 if job_row(db, j)["kind"] == kind and job_row(db, j)["state"] == "queued"]
    # worker A never renews its lease in time; B takes the job over while A still runs
    a = WorkerSettings(db_path=db_path, config_path=config, lease_s=3600, heartbeat_s=3600,
                       worker_id="A", concurrency=2)
    b = WorkerSettings(db_path=db_path, config_path=config, lease_s=30, heartbeat_s=0.2,
                       worker_id="B")
    results: dict[str, str] = {}
    ta = threading.Thread(target=lambda: results.__setitem__("A", execute_job(a, job_id)))
    ta.start()
    wait_until(lambda: units(db_path, kind)[0] > 0, "worker A to store its first unit")
    _expire_leases(db_path)  # what reconcile sees once A's lease has run out
    results["B"] = execute_job(b, job_id)
    ta.join()
    assert results == {"A": "lost", "B": "done"}
    assert units(db_path, kind) == (planned, planned)
    assert job_row(db, job_id)["state"] == "done"
