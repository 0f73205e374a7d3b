"""No ghost running episodes: live rows belong to a worker and its job lease.

Reconcile removes the live rows of dead, stopped or lease-less workers and of
episodes already stored, and keeps those of a live worker; `lab status`, `lab tail`
and the console's Live never show a dead worker's episode as running. Time and the
pid check are injected where the test runs the code directly; the CLI tests (in this
process: what they read is lab.db, not a process boundary) use a pid that has exited.
"""

from __future__ import annotations

import asyncio
import signal
import socket
import subprocess
import time
from pathlib import Path

from huey.consumer import ConsumerStopped
from sqlite_utils import Database

from console.screens.live import read_update
from core import store
from core.conditions import parse_condition
from core.demo_data import demo_questions
from core.demo_set import ensure_demo_set
from core.episode import Step
from core.models.registry import builtin_models, load_registry, make_client
from core.regimes import ForeignPool, parse_regime
from core.runner import CellSpec, LiveBuffer, run_one, setup_for
from core.store import jobs as ledger
from core.store import monitor
from core.store.episodes import remove_stale_live
from jobs.control import enqueue_grid, status
from jobs.grid import GridRequest
from jobs.queue import make_huey
from jobs.reconcile import reconcile
from jobs.settings import WorkerSettings
from jobs.worker import run_worker
from tests.helpers.queue import job_row, lab_here, write_registry

HOST = "labhost"
NOW = 1_000_000.0
ALIVE = {11, 12, 14}
"""Pids that run on HOST in the injected world; every other pid there has exited."""


def alive(pid: int) -> bool:
    return pid in ALIVE


def _grid(tmp_path: Path, run: str = "ghosts") -> tuple:
    """A lab.db with one sim grid of one cell (job per 50 questions); returns (db, config,
    the jobs rows)."""
    db_path = tmp_path / "lab.db"
    db = store.connect(db_path)
    ensure_demo_set(db)
    config = write_registry(tmp_path, latency=0)
    settings = WorkerSettings(db_path=db_path, config_path=config, worker_id="enqueuer")
    request = GridRequest(models=("sim-slow",), conditions=("none",), regimes=("clean",),
                          question_set="demo", seeds=(0,), run=run)
    enqueue_grid(db, settings, request, load_registry(config))
    return db, config, ledger.jobs_rows(db, ledger.select_jobs(db, "run", run))


def _hold(db: Database, job: dict, worker: str, lease_until: float) -> None:
    """`worker` (registered, running) holds `job` under a lease until `lease_until`."""
    ledger.register_worker(db, worker)
    assert ledger.acquire(db, job["id"], worker, lease_s=60) is not None
    db.conn.execute("UPDATE jobs SET lease_until = ? WHERE id = ?", (lease_until, job["id"]))


def _live(db: Database, job: dict, i: int, worker: str) -> int:
    live_id = store.live_start(db, job["cell_id"], job["question_ids"][i], "sim-slow / none",
                               worker=worker)
    store.live_step(db, live_id, _steps()[0])
    return live_id


def _steps() -> list[Step]:
    cell = CellSpec(builtin_models()["sim-own5"], parse_condition("none"),
                    parse_regime("persistent"), None, 8, 0)
    client = make_client(cell.model)
    steps: list[Step] = []
    q = demo_questions()[0]
    asyncio.run(run_one(setup_for(cell, q, ForeignPool(demo_questions()), client), client,
                        steps.append))
    return steps


def _count(db: Database, table: str = "live_episodes") -> int:
    return db.conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]


def _store(db: Database, job: dict, i: int, finished_at: str | None = None) -> None:
    """Store a sim episode of the job's i-th question (finished at `finished_at`)."""
    cell = CellSpec(builtin_models()["sim-own5"], parse_condition("none"),
                    parse_regime("persistent"), None, 8, 0)
    (q,) = store.load_questions(db, ids=[job["question_ids"][i]])
    client = make_client(cell.model)
    result = asyncio.run(run_one(setup_for(cell, q, ForeignPool(demo_questions()), client),
                                 client, None))
    if finished_at is not None:
        result.finished_at = finished_at
    store.write_episodes(db, [(job["cell_id"], result, None)])


def test_reconcile_removes_dead_expired_stopped_and_stored_rows_and_keeps_live_ones(tmp_path: Path
                                                                                   ) -> None:
    db, _, jobs = _grid(tmp_path)
    assert len(jobs) == 2  # 60 demo questions: jobs of 50 and 10
    job, other = jobs
    _hold(db, job, f"{HOST}:11", NOW + 30)           # alive, lease valid
    keep = _live(db, job, 0, f"{HOST}:11")
    # stored: the live worker's row of an episode stored since it started (another worker's
    # run of the same question, say)
    stored = _live(db, job, 1, f"{HOST}:11")
    _store(db, job, 1, finished_at="2999-01-01T00:00:00.000000+00:00")
    # dead: a worker of this host whose process has exited, its job still running
    _hold(db, other, f"{HOST}:13", NOW + 30)
    dead = _live(db, other, 2, f"{HOST}:13")
    # expired: a live process that holds no job under a lease (hung, or heartbeats failed)
    ledger.register_worker(db, f"{HOST}:12")
    expired = _live(db, job, 3, f"{HOST}:12")
    # stopped: a worker that stopped gracefully while a call hung
    ledger.register_worker(db, f"{HOST}:14")
    ledger.worker_heartbeat(db, f"{HOST}:14", "stopped")
    gone = _live(db, job, 4, f"{HOST}:14")

    rows = {r.id: r for r in monitor.live_rows(db, now=NOW, host=HOST, alive=alive)}
    assert stored not in rows  # a stored episode's row is never shown
    assert rows[keep].state == "running"
    assert {i: rows[i].state for i in (dead, expired, gone)} == dict.fromkeys(
        (dead, expired, gone), "lost")
    assert "gone" in (rows[dead].why or "") and "lease" in (rows[expired].why or "")

    removed = remove_stale_live(db, now=NOW, host=HOST, alive=alive)
    assert set(removed) == {stored, dead, expired, gone}
    assert removed[stored] == "episode stored"
    assert [r.id for r in monitor.live_rows(db, now=NOW, host=HOST, alive=alive)] == [keep]
    assert _count(db, "live_steps") == 1  # the removed rows' steps went with them
    # the same rows once the kept worker's lease has expired too
    assert set(remove_stale_live(db, now=NOW + 31, host=HOST, alive=alive)) == {keep}
    assert _count(db) == 0


def test_a_removed_row_takes_no_more_steps_and_its_episode_still_stores(tmp_path: Path) -> None:
    db, _, jobs = _grid(tmp_path)
    buf = LiveBuffer(db, jobs[0]["cell_id"], "label", worker=f"{HOST}:13")
    steps = _steps()
    token = buf.start(jobs[0]["question_ids"][0])
    buf.step(token, steps[0])
    buf.flush()
    assert _count(db) == 1
    remove_stale_live(db, now=NOW, host=HOST, alive=alive)  # judged dead: pid 13 exited
    assert _count(db) == 0
    buf.step(token, steps[1])
    buf.flush()  # the worker was alive after all: no foreign-key error, no row back
    assert _count(db) == 0 and _count(db, "live_steps") == 0


def test_reconcile_runs_the_live_cleanup_and_keeps_a_live_workers_rows(tmp_path: Path) -> None:
    db, config, jobs = _grid(tmp_path)
    me = f"{socket.gethostname()}:{_exited_pid()}"
    _hold(db, jobs[0], me, time.time() + 600)
    dead = _live(db, jobs[0], 0, me)
    mine = store.live_start(db, jobs[0]["cell_id"], "q-not-a-job", "label")  # this process
    huey, task = make_huey(WorkerSettings(db_path=tmp_path / "lab.db", config_path=config))
    reconcile(db, huey, task)
    ids = [r[0] for r in db.conn.execute("SELECT id FROM live_episodes")]
    assert dead not in ids and mine in ids
    assert job_row(db, jobs[0]["id"])["state"] == "queued"


def _exited_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def _ghost_lab(tmp_path: Path) -> tuple:
    """A lab.db where a worker of this host was killed mid-episode: its job is running,
    its live row is left. Returns (db, config, live id)."""
    db, config, jobs = _grid(tmp_path)
    worker = f"{socket.gethostname()}:{_exited_pid()}"
    _hold(db, jobs[0], worker, time.time() + 600)
    return db, config, _live(db, jobs[0], 0, worker)


def test_status_and_monitor_never_count_a_dead_workers_episode_as_running(tmp_path: Path) -> None:
    db, config, live_id = _ghost_lab(tmp_path)
    (g,) = status(db)
    assert g.running == 0
    assert monitor.newest_running(db) is None
    assert [(r.id, r.state) for r in monitor.running_episodes(db)] == [(live_id, "lost")]
    assert {w.state for w in monitor.workers(db, lease_s=600)} == {"lost"}
    out = lab_here(tmp_path / "lab.db", config, "status")
    assert out.returncode == 0, out.stderr
    assert "0 running" in out.stdout and "1 live episode of lost workers" in out.stdout
    assert "lost (process gone)" in out.stdout


def test_tail_of_a_dead_workers_episode_stops_with_one_line(tmp_path: Path) -> None:
    db, config, live_id = _ghost_lab(tmp_path)
    out = lab_here(tmp_path / "lab.db", config, "tail", str(live_id), "--follow")
    assert out.returncode == 1
    assert f"live episode {live_id} is lost: worker" in out.stdout and "is gone" in out.stdout
    # following the newest: a lost row is never picked, so nothing is running
    out = lab_here(tmp_path / "lab.db", config, "tail")
    assert out.returncode != 0 and "no running episode" in out.stderr


def test_tail_of_a_stored_episodes_leftover_row_prints_the_episode(tmp_path: Path) -> None:
    db, config, jobs = _grid(tmp_path)
    me = f"{socket.gethostname()}:1"  # pid 1 lives: only the stored episode ends the row
    _hold(db, jobs[0], me, time.time() + 600)
    live_id = _live(db, jobs[0], 0, me)
    _store(db, jobs[0], 0, finished_at="2999-01-01T00:00:00.000000+00:00")
    out = lab_here(tmp_path / "lab.db", config, "tail", str(live_id), "--follow")
    assert out.returncode == 0, out.stderr
    assert f"live episode {live_id}:" in out.stdout and "gold" in out.stdout


def test_console_live_marks_a_dead_workers_episode_lost_and_never_follows_it(tmp_path: Path
                                                                            ) -> None:
    db, _, live_id = _ghost_lab(tmp_path)
    assert read_update(db, None, 0, False, follow=True).idle  # nothing running to follow
    update = read_update(db, None, 0, False, follow=False, pick=live_id)
    assert update.lost and "is gone" in update.lost
    assert update.outcome is not None and "LOST" in update.outcome["end_reason"]
    assert [s.t for s, _ in update.steps] == [1]  # its steps so far are still shown


def test_a_graceful_stop_with_hung_calls_leaves_no_live_row(tmp_path: Path) -> None:
    """The drain times out on episodes whose calls never return: their rows go on stop."""
    db, config, _ = _grid(tmp_path)
    config.write_text(config.read_text().replace("latency_ms = 0", "latency_ms = 60000"))
    settings = WorkerSettings(db_path=tmp_path / "lab.db", config_path=config,
                              concurrency=4, lease_s=30)
    seen = []

    def tick() -> None:
        seen.append(_count(db))
        if seen[-1] >= 4 or len(seen) > 600:  # every slot hangs (or ~60 s: give up)
            raise ConsumerStopped

    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        run_worker(settings, on_tick=tick, shutdown_timeout=0.5)
    finally:
        for s, h in handlers.items():
            signal.signal(s, h)
    assert max(seen) >= 4, "no episode started"
    assert _count(db) == 0 and _count(db, "live_steps") == 0
    assert ledger.job_states(db).get("running", 0) == 0  # released, not left leased
    assert ledger.worker_state(db, settings.worker_id) == "stopped"
