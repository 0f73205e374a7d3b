"""Crash safety with real subprocesses: kill -9, SIGTERM, concurrent workers and readers.

Each grid has several hundred episodes of slow sims (every model call sleeps), so
workers are killed while jobs are in flight. After a restart the grid must end
with exactly the expected episodes, each complete, none duplicated.
"""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from jobs.queue import make_huey, pending_job_ids
from jobs.settings import WorkerSettings
from tests.helpers.queue import (
    ROOT,
    episode_census,
    lab_here,
    start_lab,
    write_registry,
)
from tests.helpers.waiting import wait_until

GRID = ["enqueue", "--models", "sim-slow,sim-slow-clock", "--conditions", "none,enforced_rule",
        "--regimes", "clean,persistent,recover_after_2", "--set", "demo", "--run", "crash"]
EXPECTED = 2 * 2 * 3 * 60  # 720 episodes


@pytest.fixture
def grid(tmp_path: Path) -> tuple[Path, Path, Path]:
    db = tmp_path / "lab.db"
    config = write_registry(tmp_path, latency=10)
    assert lab_here(db, config, "demo-set").returncode == 0
    out = lab_here(db, config, *GRID)
    assert out.returncode == 0, out.stderr
    return db, config, tmp_path / "worker.log"


def _stop(proc: subprocess.Popen[bytes], sig: signal.Signals = signal.SIGKILL) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, sig) if sig == signal.SIGKILL else proc.send_signal(sig)
    proc.wait(timeout=60)


def _wait_for_episodes(db: Path) -> None:
    wait_until(lambda: episode_census(db)["episodes"], "the worker to store an episode")


def _finish(db: Path, config: Path) -> None:
    """Complete the grid. What the killed or stopped workers left is in lab.db and its
    queue file, whatever their type: a thread worker in this process takes it up (no
    signal reaches it, and a `lab` process costs 1.5-2 s to start)."""
    out = lab_here(db, config, "worker", "--until-idle", "--lease", "2", "--workers", "2")
    assert out.returncode == 0, out.stderr[-2000:]


def _group_gone(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return True
    return False


def _live_rows(db: Path) -> int:
    conn = sqlite3.connect(db)
    try:
        return conn.execute("SELECT count(*) FROM live_episodes").fetchone()[0]
    finally:
        conn.close()


def _assert_complete(db: Path, log: Path) -> None:
    assert _live_rows(db) == 0  # no ghost "running" episode once the grid is done
    census = episode_census(db)
    assert census["episodes"] == EXPECTED, census
    assert census["distinct"] == EXPECTED and census["broken"] == 0, census
    assert census["jobs"] == {"done": census["jobs"].get("done", 0)}, census
    text = log.read_text(errors="replace") if log.exists() else ""
    assert "database is locked" not in text


@pytest.mark.parametrize("worker_type", ["thread", "process"])
def test_kill_9_at_random_moments_then_restart(grid: tuple[Path, Path, Path], worker_type: str
                                              ) -> None:
    db, config, log = grid
    rng = random.Random(worker_type)
    for _ in range(3):
        proc = start_lab(db, config, "worker", "--workers", "2", "--type", worker_type,
                         "--lease", "2", "--concurrency", "10", log=log)
        time.sleep(rng.uniform(0.8, 2.5))
        os.kill(proc.pid, signal.SIGKILL)  # the consumer only: process children are orphaned
        proc.wait(timeout=30)
        deadline = time.monotonic() + 1.7  # orphans notice their parent died and exit
        while not _group_gone(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.02)
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # the ones still there
        except ProcessLookupError:
            pass
    partial = episode_census(db)
    assert partial["broken"] == 0 and partial["episodes"] == partial["distinct"]
    assert partial["episodes"] < EXPECTED  # the kills really interrupted the grid
    # the killed workers' live rows are left, but nothing reads them as running
    status = lab_here(db, config, "status", "--json")
    assert status.returncode == 0, status.stderr
    assert all(g["running"] == 0 for g in json.loads(status.stdout)["grids"])
    assert all(r["state"] == "lost" for r in json.loads(status.stdout)["live"])
    _finish(db, config)
    _assert_complete(db, log)


def test_sigterm_releases_jobs_then_restart_completes(grid: tuple[Path, Path, Path]) -> None:
    db, config, log = grid
    proc = start_lab(db, config, "worker", "--workers", "2", "--lease", "30", log=log)
    _wait_for_episodes(db)  # the worker is up and mid-grid
    started = time.monotonic()
    _stop(proc, signal.SIGTERM)
    assert proc.returncode == 0
    assert time.monotonic() - started < 20
    census = episode_census(db)
    assert "running" not in census["jobs"], census  # released, not left under a lease
    assert _live_rows(db) == 0  # a graceful stop leaves no live row
    assert census["episodes"] < EXPECTED and census["broken"] == 0
    # the released jobs are back on the queue (not left for a reconcile's grace)
    queued = {int(i) for (i,) in sqlite3.connect(db).execute(
        "SELECT id FROM jobs WHERE state = 'queued'")}
    assert queued and queued <= pending_job_ids(make_huey(WorkerSettings(db_path=db))[0])
    _finish(db, config)  # lease 30 s would block a retake: released jobs need none
    _assert_complete(db, log)


READER = """
import sys, time
from core import store
from jobs.control import status
db = store.connect(sys.argv[1])
expected = int(sys.argv[2])
reads, moving = 0, set()
while True:
    status(db)
    store.episodes_frame(db)
    reads += 1
    n = db.conn.execute("SELECT count(*) FROM episodes").fetchone()[0]
    if 0 < n < expected:
        moving.add(n)
    if n >= expected and reads >= 50:
        break
    time.sleep(0.02)
print(reads, len(moving))
"""


def test_two_workers_and_a_reader_share_lab_db(grid: tuple[Path, Path, Path]) -> None:
    db, config, log = grid
    workers = [start_lab(db, config, "worker", "--workers", "2", "--until-idle",
                         "--lease", "10", "--concurrency", "4", log=log) for _ in range(2)]
    reader = subprocess.run([sys.executable, "-c", READER, str(db), str(EXPECTED)],
                            capture_output=True, text=True, timeout=240, cwd=ROOT)
    for w in workers:
        w.wait(timeout=120)
    assert reader.returncode == 0, reader.stderr[-2000:]
    assert all(w.returncode == 0 for w in workers)
    reads, moving = map(int, reader.stdout.split())
    # a sustained run: the reader read 50 times at least (on after the grid is done when
    # the workers outpace it: how many reads fit in the run is the machine's speed, not a
    # property of lab) and saw the grid move while it read
    assert reads >= 50 and moving >= 2, (reads, moving)
    _assert_complete(db, log)


def test_pause_cancel_and_resume_through_the_cli(grid: tuple[Path, Path, Path]) -> None:
    db, config, log = grid
    assert lab_here(db, config, "pause", "--run", "crash").returncode == 0
    out = lab_here(db, config, "worker", "--until-idle")
    assert out.returncode == 0 and episode_census(db)["episodes"] == 0
    assert lab_here(db, config, "resume", "--run", "crash").returncode == 0
    proc = start_lab(db, config, "worker", "--workers", "2", log=log)
    _wait_for_episodes(db)
    assert lab_here(db, config, "cancel", "--run", "crash").returncode == 0
    assert "running" not in episode_census(db)["jobs"]  # cancelled at once, mid-grid
    wait_until(lambda: _live_rows(db) == 0, "the worker to let go of the cancelled episodes")
    _stop(proc, signal.SIGTERM)
    census = episode_census(db)
    assert set(census["jobs"]) <= {"cancelled", "done"} and census["broken"] == 0
    assert lab_here(db, config, "retry", "--run", "crash").returncode == 0
    _finish(db, config)
    _assert_complete(db, log)
