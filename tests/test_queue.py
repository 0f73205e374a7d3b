"""The queue in one process: grids, resume, leases, control, status, tail."""

from __future__ import annotations

import threading
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from sqlite_utils import Database

from core import store
from core.demo_set import ensure_demo_set
from core.errors import ConfigError, LabError
from core.models.base import Generation
from core.models.registry import ModelSpec, load_registry
from core.store import jobs as ledger
from core.store import monitor
from jobs.control import control, enqueue_grid, status
from jobs.grid import GridRequest, plan
from jobs.settings import WorkerSettings, queue_path
from jobs.tasks import execute_job
from jobs.worker import run_worker
from tests.helpers.queue import job_row, write_registry
from tests.helpers.waiting import wait_until


@pytest.fixture
def lab(db_path: Path, tmp_path: Path
        ) -> tuple[Database, WorkerSettings, dict[str, ModelSpec]]:
    db = store.connect(db_path)
    ensure_demo_set(db)
    config = write_registry(tmp_path, latency=0)
    settings = WorkerSettings(db_path=db_path, config_path=config, lease_s=30, heartbeat_s=0.2,
                              reconcile_s=0.5, worker_id="w1")
    return db, settings, load_registry(config)


def request(**kw: Any) -> GridRequest:
    base: dict[str, Any] = dict(
        models=("sim-own5", "sim-clock6"), conditions=("none", "enforced_rule"),
        regimes=("clean", "persistent", "recover_after_2"), question_set="demo", seeds=(0,),
        run="t")
    base.update(kw)
    return GridRequest(**base)


def test_queue_file_is_beside_lab_db_not_inside(db_path: Path) -> None:
    assert queue_path(db_path) == db_path.with_name("lab.queue.db")


def test_dry_run_counts_match_what_a_run_stores(
        lab: tuple[Database, WorkerSettings, dict[str, ModelSpec]]) -> None:
    db, settings, models = lab
    req = request(models=("sim-own5",), seeds=(0, 1))  # one model: the counts multiply alike
    dry = plan(db, req, models).summary()
    assert dry["cells"] == 1 * 2 * 3 * 2 and dry["new_episodes"] == 12 * 60
    assert dry["jobs"] == 12 * 2  # 60 questions → jobs of 50 and 10
    assert store.count(db, "cells") == 0  # a dry run writes nothing
    _, grid, njobs = enqueue_grid(db, settings, req, models)
    assert njobs == dry["jobs"]
    run_worker(settings, workers=2, until_idle=True)
    assert store.count(db, "episodes") == dry["new_episodes"]
    assert store.count(db, "cells") == dry["cells"]
    assert ledger.job_states(db) == {"done": dry["jobs"]}
    (g,) = status(db)
    assert (g.expected, g.stored, g.errored) == (720, 720, 0)


def test_enqueueing_existing_cells_resumes_only_missing(
        lab: tuple[Database, WorkerSettings, dict[str, ModelSpec]]) -> None:
    db, settings, models = lab
    req = request(models=("sim-own5",), conditions=("none",), regimes=("clean",))
    _, _, jobs = enqueue_grid(db, settings, req, models)
    first = ledger.select_jobs(db, "run", "t")[0]
    assert execute_job(settings, first) == "done"  # 50 of 60 stored
    again = plan(db, req, models).summary()
    assert again["new_episodes"] == 0  # the other 10 are still queued
    control(db, settings, "cancel", "run", "t")
    resumed = plan(db, req, models).summary()
    assert resumed["new_episodes"] == 10 and resumed["already_stored_or_queued"] == 50
    _, grid, _ = enqueue_grid(db, settings, req, models)
    run_worker(settings, until_idle=True)
    assert store.count(db, "episodes") == 60
    assert enqueue_grid(db, settings, req, models)[1] is None  # nothing left: no new grid


def test_bad_grid_input_writes_nothing(lab: tuple[Database, WorkerSettings, dict[str, ModelSpec]]
                                      ) -> None:
    db, settings, models = lab
    for bad in (request(models=("nope",)), request(regimes=("rain",)),
                request(conditions=("random_rule",)), request(question_set="missing")):
        with pytest.raises(LabError):
            enqueue_grid(db, settings, bad, models)
    assert store.count(db, "cells") == 0 and store.count(db, "jobs") == 0
    assert store.count(db, "runs") == 0


def test_expired_lease_while_first_worker_runs_duplicates_nothing(
        lab: tuple[Database, WorkerSettings, dict[str, ModelSpec]], tmp_path: Path) -> None:
    db, settings, models = lab
    slow = write_registry(tmp_path, latency=100)
    models = load_registry(slow)
    req = request(models=("sim-slow",), conditions=("none",), regimes=("persistent",))
    enqueue_grid(db, settings, req, models)
    job_id = ledger.select_jobs(db, "run", "t")[0]
    # worker A's lease expires almost at once and it never renews it in time
    a = WorkerSettings(db_path=settings.db_path, config_path=slow, lease_s=0.3,
                       heartbeat_s=30, worker_id="A")
    b = WorkerSettings(db_path=settings.db_path, config_path=slow, lease_s=30,
                       heartbeat_s=0.2, worker_id="B")
    results: dict[str, str] = {}
    ta = threading.Thread(target=lambda: results.__setitem__("A", execute_job(a, job_id)))
    ta.start()
    held = wait_until(lambda: (j := job_row(db, job_id))["worker"] == "A" and j,
                      "worker A to take the lease")
    # what any worker's reconcile does once A's lease has run out (the clock injected:
    # A's 50 slow episodes are still running, however loaded the machine)
    assert ledger.expired(db, now=held["lease_until"] + 1) == [job_id]
    results["B"] = execute_job(b, job_id)
    ta.join()
    assert results["B"] == "done" and results["A"] == "lost"
    census = db.conn.execute("SELECT count(*), count(DISTINCT question_id) FROM episodes "
                             "WHERE cell_id = (SELECT cell_id FROM jobs WHERE id = ?)",
                             (job_id,)).fetchone()
    assert census == (50, 50)
    assert job_row(db, job_id)["state"] == "done"


def test_pause_resume_and_cancel(lab: tuple[Database, WorkerSettings, dict[str, ModelSpec]]
                                ) -> None:
    db, settings, models = lab
    enqueue_grid(db, settings, request(models=("sim-own5",), run="p"), models)
    paused = control(db, settings, "pause", "run", "p")
    assert paused and ledger.job_states(db) == {"paused": len(paused)}
    run_worker(settings, until_idle=True)  # paused jobs are not work: returns at once
    assert store.count(db, "episodes") == 0
    control(db, settings, "resume", "run", "p")
    run_worker(settings, until_idle=True)
    assert store.count(db, "episodes") == 6 * 60
    with pytest.raises(LabError, match="no jobs for run 'zzz'"):
        control(db, settings, "cancel", "run", "zzz")


def test_cancel_stops_a_running_job_and_retry_finishes_it(
        lab: tuple[Database, WorkerSettings, dict[str, ModelSpec]], tmp_path: Path) -> None:
    db, settings, _ = lab
    slow = write_registry(tmp_path, latency=30)
    models = load_registry(slow)
    s = WorkerSettings(db_path=settings.db_path, config_path=slow, concurrency=2,
                       heartbeat_s=0.1, worker_id="w")
    enqueue_grid(db, s, request(models=("sim-slow",), conditions=("none",),
                                regimes=("persistent",), run="c"), models)
    job_id = ledger.select_jobs(db, "run", "c")[0]
    out: dict[str, str] = {}
    t = threading.Thread(target=lambda: out.__setitem__("r", execute_job(s, job_id)))
    t.start()
    wait_until(lambda: store.count(db, "episodes"), "the job's first stored episode")
    control(db, s, "cancel", "job", job_id)
    t.join(timeout=60)
    assert out["r"] == "cancelled"
    stored = store.count(db, "episodes")
    assert 0 < stored < 50
    control(db, s, "retry", "job", job_id)
    assert execute_job(replace(s, concurrency=50), job_id) == "done"  # the rest at once
    assert store.count(db, "episodes") == 50


def test_model_changed_in_registry_fails_the_job_clearly(
        lab: tuple[Database, WorkerSettings, dict[str, ModelSpec]], tmp_path: Path) -> None:
    db, settings, models = lab
    enqueue_grid(db, settings, request(models=("sim-slow",), conditions=("none",),
                                       regimes=("clean",), run="m"), models)
    path = tmp_path / "lab.toml"  # same name, a different policy parameter
    path.write_text(path.read_text().replace("k = 5", "k = 4"))
    job_id = ledger.select_jobs(db, "run", "m")[0]
    s = WorkerSettings(db_path=settings.db_path, config_path=settings.config_path,
                       max_attempts=1, worker_id="w")
    assert execute_job(s, job_id) == "failed"
    assert "changed in the registry" in job_row(db, job_id)["last_error"]


def test_tail_prints_steps_of_a_running_episode(
        lab: tuple[Database, WorkerSettings, dict[str, ModelSpec]], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    from console.cli import main

    db, settings, _ = lab
    slow = write_registry(tmp_path, latency=1)
    (tmp_path / "lab.toml").write_text((tmp_path / "lab.toml").read_text() + """
[models.sim-live]
backend = "sim"
policy = "never"
latency_ms = 60
""")
    models = load_registry(slow)
    # sim models write live steps only when asked; the task does so for non-sim backends,
    # so drive one live episode directly through the runner here
    import asyncio

    from core.conditions import parse_condition
    from core.models.registry import make_client
    from core.regimes import ForeignPool, parse_regime
    from core.runner import CellSpec
    from jobs.kinds.episodes import run_questions

    cell = CellSpec(models["sim-live"], parse_condition("none"), parse_regime("persistent"),
                    "demo", 8, 0)
    run_id = store.ensure_run(db, "live")
    cell_id = store.ensure_cell(db, run_id, cell.columns())
    questions = store.load_questions(db, ids=["demo-001"])
    pool = ForeignPool(store.load_questions(db, dataset="demo"))
    worker_db = store.connect(settings.db_path)
    t = threading.Thread(target=lambda: asyncio.run(run_questions(
        worker_db, cell_id, cell, questions, pool, make_client(cell.model), live=True)))
    t.start()
    wait_until(lambda: monitor.newest_running(db), "the live episode")
    code = main(["--db", str(settings.db_path), "tail", "--timeout", "60"])
    t.join()
    out = capsys.readouterr().out
    assert code == 0
    assert "live episode" in out and "── step 1" in out and "── step 8" in out
    assert "unanswered (budget)" in out


def test_random_rule_defaults_to_the_models_dev_set_useless_rate(
        lab: tuple[Database, WorkerSettings, dict[str, ModelSpec]]) -> None:
    db, settings, models = lab
    enqueue_grid(db, settings, request(models=("sim-own5",), conditions=("none",),
                                       regimes=("persistent", "clean"), run="dev"), models)
    run_worker(settings, until_idle=True)
    rate, n = store.useless_rate(db, "sim-own5")
    assert rate is not None
    per_regime = db.conn.execute(
        "SELECT c.regime, sum(s.judgment = 'USELESS'), count(s.judgment) FROM steps s "
        "JOIN episodes e ON e.id = s.episode_id JOIN cells c ON c.id = e.cell_id "
        "GROUP BY c.regime").fetchall()
    assert len(per_regime) == 2
    assert n == sum(r[2] for r in per_regime)
    # equal regime weights (the paper's A1), not the pooled share
    assert rate == pytest.approx(sum(r[1] / r[2] for r in per_regime) / 2)
    # persistent episodes run longer, so they hold more judgments: pooling would weigh
    # that regime more and give a different rate
    pooled = sum(r[1] for r in per_regime) / n
    assert abs(pooled - rate) > 0.02
    assert 0.6 < rate < 0.95  # persistent ≈ 0.99, clean ≈ 0.45
    grid = plan(db, request(models=("sim-own5",), conditions=("random_rule",),
                            regimes=("clean",), run="rr"), models)
    (cell,) = [c.cell for c in grid.cells]
    assert cell.condition.rate == round(rate, 4)
    with pytest.raises(ConfigError, match="no side-channel judgments of sim-clock6"):
        plan(db, request(models=("sim-clock6",), conditions=("random_rule",),
                         regimes=("clean",), run="rr"), models)


def test_random_rule_without_a_rate_is_an_error_where_it_is_used(
        lab: tuple[Database, WorkerSettings, dict[str, ModelSpec]]) -> None:
    """Never a silent 0.5: an unresolved rate stops the episode before any model call."""
    import asyncio

    from core.conditions import parse_condition
    from core.models.base import EpisodeView
    from core.models.registry import make_client
    from core.react import EpisodeSetup, run_episode
    from core.regimes import ForeignPool, parse_regime

    db, _, models = lab
    (q,) = store.load_questions(db, ids=["demo-001"])
    setup = EpisodeSetup(question=q, condition=parse_condition("random_rule"),
                         regime=parse_regime("clean"), budget=4, seed=0,
                         pool=ForeignPool([q]))
    client = make_client(models["sim-own5"])
    calls = []
    session = client.start(EpisodeView(question=q, seed=0, budget=4))
    generate = session.generate

    async def counted(*args: Any, **kw: Any) -> Generation:
        calls.append(kw.get("kind"))
        return await generate(*args, **kw)

    session.generate = counted  # type: ignore[method-assign]
    with pytest.raises(ConfigError, match="random_rule: no rate"):
        asyncio.run(run_episode(setup, session))
    assert calls == []


def test_logged_events_count_one_job_in_the_singular(
        lab: tuple[Database, WorkerSettings, dict[str, ModelSpec]]) -> None:
    """The events log (the Dashboard's list) says `1 job`, never `1 jobs`."""
    db, settings, models = lab
    _, _, njobs = enqueue_grid(db, settings, request(models=("sim-own5",), conditions=("none",),
                                                     regimes=("clean",), run="one"), models)
    job_id = db.conn.execute("SELECT max(id) FROM jobs").fetchone()[0]
    control(db, settings, "pause", "job", job_id)
    details = [r[0] for r in db.conn.execute("SELECT detail FROM events ORDER BY id")]
    assert details[-2].endswith(f"run one: {njobs} jobs, 60 episodes")
    assert details[-1] == f"job {job_id}: 1 job"


def test_a_worker_thread_opens_lab_db_once_for_all_its_jobs(
        lab: tuple[Database, WorkerSettings, dict[str, ModelSpec]], monkeypatch: pytest.MonkeyPatch
    ) -> None:
    # a Huey worker thread takes job after job; it keeps one connection instead of
    # opening lab.db (pragmas, schema and layout checks) for each
    db, settings, models = lab
    _, _, njobs = enqueue_grid(db, settings, request(models=("sim-own5",),
                                                     conditions=("none",)), models)
    ids = [r[0] for r in db.conn.execute("SELECT id FROM jobs ORDER BY id")]
    assert len(ids) == njobs >= 4
    opened: list[Path] = []
    connect = store.connect

    def counted(path: Path, **kw: Any) -> Database:
        opened.append(path)
        return connect(path, **kw)

    monkeypatch.setattr(store, "connect", counted)

    class Engine:  # takes each job as a worker's engine would, and hands it back
        def submit(self, job: dict) -> str:
            return "handed off"

    def take(jobs: list[int], out: list[str]) -> None:
        out += [execute_job(settings, j, engine=Engine()) for j in jobs]  # type: ignore[arg-type]

    one: list[str] = []
    other: list[str] = []
    for jobs, out in ((ids[:2], one), (ids[2:4], other)):
        t = threading.Thread(target=take, args=(jobs, out))
        t.start()
        t.join(60)
    assert one == other == ["handed off"] * 2
    assert len(opened) == 2  # one per thread, not one per job
    assert ledger.job_states(db)["running"] == 4
