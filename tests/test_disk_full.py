"""A full disk under a running worker: it pauses its jobs, says so, and resumes.

The error is injected at the store layer: every write transaction of lab.db (its
`write`, wherever a module imported it) fails as SQLite fails on a full disk,
`database or disk is full`, after its body ran, so the transaction is rolled back
whole. A real `lab worker --until-idle` runs in this process on a slow sim model; a
helper thread makes the disk "full" once episodes are being stored and gives the
space back after the worker has had 25 writes refused; the paused worker tries its writes
again every 0.05 s instead of every second (`PROBE_S`: the 25 refusals, counted, decide
when the space returns, not a clock). Then: no episode started
while the worker knew the disk was full, every question ran exactly once (nothing
that finished was dropped and run again), all 120 episodes are stored whole, every
job is done, and the worker said it paused and resumed, without a traceback.
"""

from __future__ import annotations

import contextlib
import logging
import sqlite3
import sys
import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlite_utils import Database

from core.data import Question
from core.store import base
from core.store.disk import DISK
from jobs import pump, tasks
from jobs.kinds import episodes as episode_kind
from tests.helpers.queue import episode_census, lab_here, write_registry


@pytest.mark.timeout(300)
def test_a_worker_pauses_on_a_full_disk_and_resumes_when_space_returns(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    db, config = tmp_path / "lab.db", write_registry(tmp_path, 5.0)
    assert lab_here(db, config, "demo-set").returncode == 0
    out = lab_here(db, config, "enqueue", "--models", "sim-slow", "--conditions", "none",
                   "--regimes", "clean,persistent", "--set", "demo", "--budget", "4",
                   "--run", "r")
    assert out.returncode == 0, out.stderr

    full = threading.Event()
    real_write = base.write

    @contextlib.contextmanager
    def write(conn_db: Database) -> Iterator[Database]:
        with real_write(conn_db):
            yield conn_db
            if full.is_set() and threading.current_thread().name != "disk-test":
                raise sqlite3.OperationalError("database or disk is full")

    for module in (pump, tasks):  # the paused worker's retry interval, shortened
        monkeypatch.setattr(module, "PROBE_S", 0.05)
    for module in list(sys.modules.values()):
        if getattr(module, "write", None) is real_write:
            monkeypatch.setattr(module, "write", write)

    runs: Counter[tuple[int, str]] = Counter()
    started_while_full = []
    real_run = episode_kind.EpisodeWork.run

    async def run(self: episode_kind.EpisodeWork, item: Question) -> None:
        runs[self.cell_id, item.id] += 1
        if DISK.full:
            started_while_full.append(item.id)
        await real_run(self, item)

    monkeypatch.setattr(episode_kind.EpisodeWork, "run", run)
    failures_before = DISK.failures

    def disk() -> None:
        while sum(runs.values()) < 20:  # episodes are being run and stored
            threading.Event().wait(0.01)
        full.set()
        while DISK.failures - failures_before < 25:
            threading.Event().wait(0.01)
        full.clear()

    helper = threading.Thread(target=disk, name="disk-test", daemon=True)
    helper.start()
    with caplog.at_level(logging.WARNING):
        out = lab_here(db, config, "worker", "--until-idle", "--lease", "600",
                       "--concurrency", "2")  # episodes start all along: some must wait
    helper.join(10)
    assert out.returncode == 0, out.stderr[-3000:]
    assert not helper.is_alive() and not full.is_set()
    assert not started_while_full, started_while_full
    assert set(runs.values()) == {1} and len(runs) == 120, runs  # nothing ran twice
    census = episode_census(db)
    assert census["episodes"] == census["distinct"] == 120 and census["broken"] == 0
    assert census["jobs"] == {"done": census["jobs"].get("done", 0)}
    said = caplog.text + out.stderr
    assert "disk is full" in said and "resumes its jobs" in said and "Traceback" not in said
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT count(*) FROM live_episodes").fetchone() == (0,)
    conn.close()


def test_status_says_when_the_disk_under_lab_db_is_full(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil

    db, config = tmp_path / "lab.db", write_registry(tmp_path)
    assert lab_here(db, config, "demo-set").returncode == 0
    assert "disk is full" not in lab_here(db, config, "status").stdout
    usage = shutil.disk_usage(tmp_path)
    monkeypatch.setattr(shutil, "disk_usage", lambda p: usage._replace(free=4096))
    out = lab_here(db, config, "status")
    assert out.returncode == 0 and "disk is full (0.0 MB free): workers pause" in out.stdout


def test_huey_logs_a_full_disk_in_one_line(caplog: pytest.LogCaptureFixture) -> None:
    from jobs.worker import quiet_huey_disk_full

    quiet_huey_disk_full()
    with caplog.at_level(logging.ERROR):
        try:
            raise sqlite3.OperationalError("database or disk is full")
        except sqlite3.OperationalError:
            logging.getLogger("huey.consumer.Worker").exception("Error reading from queue")
    assert "Error reading from queue: the disk is full" in caplog.text
    assert "Traceback" not in caplog.text
