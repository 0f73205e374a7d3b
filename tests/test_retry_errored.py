"""Nothing is lost to a transient error: errored episodes keep their record
but not their (cell, question) key, `lab retry --errored` re-runs exactly them, and a bug
in lab fails its job with the traceback instead of passing for a model fault."""

from __future__ import annotations

import asyncio
import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlite_utils import Database

import prompts
from console.cli import main
from console.screens.jobs import grid_label
from core import prereg, store
from core.data import ids_hash
from core.demo_set import ensure_demo_set
from core.errors import ConfigError, ModelError
from core.models.registry import load_registry
from core.models.retry import MalformedResponse, RetryPolicy, call_with_retries
from core.react import EpisodeSetup
from core.store import jobs as ledger
from jobs.control import enqueue_grid, status
from jobs.grid import GridRequest
from jobs.retry import retry
from jobs.settings import WorkerSettings
from jobs.tasks import HARNESS_ERROR, execute_job
from jobs.worker import run_worker
from tests.helpers.queue import job_row
from tests.servers import Fault, LoopbackServer, OpenAIApp

REGISTRY = """
[models.vllm-loop]
backend = "openai"
model = "loopback-model"
endpoints = ["{url}/v1"]
max_context = {max_context}
concurrency = 4
timeout_s = 30
max_retries = 1
backoff_s = 0.01
backoff_max_s = 0.02
"""
N_QUESTIONS = 8


@pytest.fixture
def lab(db_path: Path, tmp_path: Path) -> Database:
    db = store.connect(db_path)
    ensure_demo_set(db)
    ids = store.question_set(db, "demo")["ids"][:N_QUESTIONS]
    store.save_question_set(db, "small", "demo", ids, 0, [], False, ids_hash(ids))
    return db


@pytest.fixture
def server() -> Iterator[tuple[OpenAIApp, LoopbackServer]]:
    app = OpenAIApp()
    with LoopbackServer(app, hang_s=5) as srv:
        yield app, srv


def registry(tmp_path: Path, url: str, max_context: int = 4096) -> Path:
    path = tmp_path / "lab.toml"
    path.write_text(REGISTRY.format(url=url, max_context=max_context))
    return path


def settings_for(db_path: Path, config: Path) -> WorkerSettings:
    return WorkerSettings(db_path=db_path, config_path=config, lease_s=30, heartbeat_s=0.2,
                          reconcile_s=0.5, worker_id="w1")


def grid(run: str = "r", amendment: str | None = None) -> GridRequest:
    """Two cells (none, enforced_rule) of the loopback model on the small set."""
    return GridRequest(models=("vllm-loop",), conditions=("none", "enforced_rule"),
                       regimes=("clean",), question_set="small", budgets=(4,), run=run,
                       amendment=amendment)


def census(db: Database) -> dict[str, int]:
    """Pairs with a complete episode, most complete episodes of one pair, errored rows."""
    complete = db.conn.execute(
        "SELECT count(*), coalesce(max(n), 0) FROM (SELECT count(*) AS n FROM episodes "
        "WHERE error IS NULL GROUP BY cell_id, question_id)").fetchone()
    errored = db.conn.execute("SELECT count(*) FROM episodes WHERE error IS NOT NULL"
                              ).fetchone()[0]
    return {"pairs": complete[0], "max_per_pair": complete[1], "errored_rows": errored}


def cli(db_path: Path, config: Path, *args: str) -> int:
    return main(["--db", str(db_path), "--config", str(config), *args])


@pytest.mark.timeout(60)
def test_outage_for_the_first_half_then_retry_errored_completes_every_pair(
        lab: Database, server: tuple[OpenAIApp, LoopbackServer], db_path: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    app, srv = server
    config = registry(tmp_path, srv.url)
    settings = settings_for(db_path, config)
    expected = 2 * N_QUESTIONS
    calls_when_all_answer = N_QUESTIONS * 2 + N_QUESTIONS * 3  # none: act, act; rule: + judge
    app.script.push(Fault("reset"), calls_when_all_answer // 2)  # connections dropped, then up
    enqueue_grid(lab, settings, grid(), load_registry(config))
    run_worker(settings, until_idle=True)

    (g,) = status(lab)
    before = census(lab)
    assert 0 < g.errored and g.stored + g.errored == expected
    assert before["errored_rows"] == g.errored and before["pairs"] == g.stored
    assert ledger.job_states(lab) == {"done": 2}  # an errored episode is not a failed job
    assert g.retry == f"lab retry --grid {g.grid} --errored"
    assert cli(db_path, config, "status") == 0
    out = capsys.readouterr().out
    assert f"{g.errored} errored" in out and g.retry in out
    assert max(len(line) for line in out.splitlines()) <= 80

    assert cli(db_path, config, "retry", "--run", "r", "--errored") == 0
    cells = lab.conn.execute("SELECT count(DISTINCT cell_id) FROM episodes WHERE error IS NOT "
                             "NULL").fetchone()[0]
    assert f"{g.errored} errored episode(s) in {cells} new job(s)" in capsys.readouterr().out
    # queued again, they are no longer errored work waiting for a retry
    (queued,) = status(lab)
    assert (queued.errored, queued.rerun, queued.retry, queued.left) == (0, g.errored, None,
                                                                         g.errored)
    assert cli(db_path, config, "status") == 0
    out = capsys.readouterr().out
    assert f"0 errored, {g.errored} queued to run again after an error" in out
    assert "retry errored" not in out
    assert f"↻ {g.errored} to run again" in grid_label(queued).plain
    assert retry(lab, settings, "run", "r", errored_only=True).jobs == []
    # while a job runs them they are errored still, and a retry has nothing to queue
    held = [r["id"] for r in lab.query("SELECT id FROM jobs WHERE state = 'queued'")]
    ledger.transition(lab, held, ("queued",), "running")
    (running,) = status(lab)
    assert (running.errored, running.rerun, running.retry) == (g.errored, 0, None)
    ledger.transition(lab, held, ("running",), "queued")
    run_worker(settings, until_idle=True)

    after = census(lab)
    assert after == {"pairs": expected, "max_per_pair": 1, "errored_rows": g.errored}
    (g2,) = status(lab)
    assert (g2.stored, g2.errored, g2.retry) == (expected, 0, None)
    assert all(r["error"].startswith("connection: ") for r in
               lab.query("SELECT error FROM episodes WHERE error IS NOT NULL"))
    attempts = dict(lab.conn.execute("SELECT error IS NULL, max(attempt) FROM episodes "
                                     "GROUP BY error IS NULL").fetchall())
    assert attempts[1] == 2  # the retried pairs' complete episode is their second attempt
    kinds = [r[0] for r in lab.conn.execute("SELECT kind FROM events ORDER BY id")]
    assert "retry" in kinds
    assert cli(db_path, config, "status", "--json") == 0
    (row,) = json.loads(capsys.readouterr().out)["grids"]
    assert (row["stored"], row["errored"], row["retry"]) == (expected, 0, None)
    # a second retry finds nothing left to run
    assert retry(lab, settings, "run", "r", errored_only=True).jobs == []


def _errored(db: Database, cell_id: int, qids: list[str]) -> None:
    """Store an errored episode for each question (what a worker does after an outage)."""
    from core.episode import EpisodeResult, utc_now

    now = utc_now()
    store.write_episodes(db, [(cell_id, EpisodeResult(
        question_id=q, end_reason="error", error="server_error: HTTP 503 (gave up after 2 "
        "attempts)", started_at=now, finished_at=now), None) for q in qids])


def test_retry_targets_exactly_the_errored_pairs_of_a_job_grid_or_run(lab: Database, db_path: Path,
                                                                      tmp_path: Path) -> None:
    config = registry(tmp_path, "http://127.0.0.1:9")
    settings = settings_for(db_path, config)
    _, grid_id, _ = enqueue_grid(lab, settings, grid(), load_registry(config))
    assert grid_id is not None
    job_a, job_b = ledger.select_jobs(lab, "run", "r")
    a, b = job_row(lab, job_a), job_row(lab, job_b)
    ledger.transition(lab, [job_a, job_b], ("queued",), "done")
    _errored(lab, a["cell_id"], a["question_ids"][:3])
    _errored(lab, a["cell_id"], a["question_ids"][:1])  # a second failed try of one pair
    _errored(lab, b["cell_id"], b["question_ids"][-2:])

    one = retry(lab, settings, "job", job_a, errored_only=True)
    (new,) = one.created
    assert one.errored == 3 and one.reopened == ()
    assert job_row(lab, new)["question_ids"] == a["question_ids"][:3]
    assert job_row(lab, new)["grid_id"] == grid_id
    # pairs already queued again are not queued twice
    rest = retry(lab, settings, "grid", grid_id, errored_only=True)
    assert rest.errored == 2
    assert job_row(lab, rest.created[0])["question_ids"] == b["question_ids"][-2:]
    assert retry(lab, settings, "run", "r", errored_only=True).jobs == []


def test_plain_retry_reopens_failed_jobs_and_errored_pairs_once(lab: Database, db_path: Path,
                                                                tmp_path: Path) -> None:
    config = registry(tmp_path, "http://127.0.0.1:9")
    settings = settings_for(db_path, config)
    enqueue_grid(lab, settings, grid(), load_registry(config))
    job_a, job_b = ledger.select_jobs(lab, "run", "r")
    a = job_row(lab, job_a)
    ledger.transition(lab, [job_a], ("queued",), "failed")
    ledger.transition(lab, [job_b], ("queued",), "done")
    _errored(lab, a["cell_id"], a["question_ids"][:2])  # inside the failed job: reopened
    b = job_row(lab, job_b)
    _errored(lab, b["cell_id"], b["question_ids"][:1])
    errored_only = retry(lab, settings, "run", "r", errored_only=True)
    assert errored_only.reopened == () and errored_only.errored == 3
    assert job_row(lab, job_a)["state"] == "failed"  # --errored leaves failed jobs
    for job_id in errored_only.created:
        ledger.transition(lab, [job_id], ("queued",), "done")
    both = retry(lab, settings, "run", "r")
    assert both.reopened == (job_a,)
    assert both.errored == 1  # job_a's errored pairs ride with job_a itself
    assert job_row(lab, job_a)["state"] == "queued" and job_row(lab, job_a)["attempts"] == 0


@pytest.fixture
def own_prompts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A private copy of prompts/ (freezing pins every prompt file)."""
    copy = tmp_path / "prompts"
    shutil.copytree(prompts.PROMPT_DIR, copy, ignore=shutil.ignore_patterns("*.py", "__*"))
    monkeypatch.setattr(prompts, "PROMPT_DIR", copy)


@pytest.mark.timeout(60)
def test_context_overflow_retried_with_a_larger_max_context_logs_a_deviation(
        lab: Database, server: tuple[OpenAIApp, LoopbackServer], db_path: Path, tmp_path: Path,
        own_prompts: None, capsys: pytest.CaptureFixture[str]) -> None:
    app, srv = server
    config = registry(tmp_path, srv.url, max_context=4096)
    models = load_registry(config)
    settings = settings_for(db_path, config)
    amendment = prereg.create(lab, "overflow", scope={
        "models": ["vllm-loop"], "conditions": ["none", "enforced_rule"],
        "regimes": ["clean"], "question_sets": ["small"], "budgets": [4]})
    prereg.freeze(lab, amendment, models)
    app.script.always = Fault("context")
    enqueue_grid(lab, settings, grid(amendment=amendment), models)
    run_worker(settings, until_idle=True)
    (g,) = status(lab)
    assert g.errored == 2 * N_QUESTIONS and app.calls == 2 * N_QUESTIONS  # never retried
    app.script.always = None

    registry(tmp_path, srv.url, max_context=16384)  # the fix: a larger context window
    assert cli(db_path, config, "retry", "--run", "r", "--errored") == 0
    out = capsys.readouterr().out
    assert out.count("cell re-specced:") == 2 and "max_context 4096 → 16384" in out
    assert out.count(f"logged on {amendment}") == 2
    (dev,) = lab.query("SELECT text FROM deviations WHERE amendment_id = ? LIMIT 1",
                       [amendment])
    assert "context_overflow" in dev["text"] and "16384" in dev["text"]
    run_worker(settings, until_idle=True)
    assert census(lab) == {"pairs": 2 * N_QUESTIONS, "max_per_pair": 1,
                           "errored_rows": 2 * N_QUESTIONS}
    specs = {json.loads(r[0])["max_context"] for r in
             lab.conn.execute("SELECT model_spec FROM cells")}
    assert specs == {16384}
    # the cell is found again by its new spec: nothing left to enqueue
    assert enqueue_grid(lab, settings, grid(amendment=amendment), load_registry(config)
                        )[1] is None


def test_retry_refuses_a_model_changed_in_more_than_max_context(lab: Database, db_path: Path,
                                                                tmp_path: Path) -> None:
    config = registry(tmp_path, "http://127.0.0.1:9")
    settings = settings_for(db_path, config)
    enqueue_grid(lab, settings, grid(), load_registry(config))
    job_a, _ = ledger.select_jobs(lab, "run", "r")
    a = job_row(lab, job_a)
    ledger.transition(lab, [job_a], ("queued",), "done")
    _errored(lab, a["cell_id"], a["question_ids"][:2])
    config.write_text(config.read_text().replace('model = "loopback-model"',
                                                 'model = "another-model"'))
    events = store.count(lab, "events")
    jobs = store.count(lab, "jobs")
    with pytest.raises(ConfigError, match=r"changed in the registry .*\(model\)"):
        retry(lab, settings, "job", job_a, errored_only=True)
    assert store.count(lab, "jobs") == jobs and store.count(lab, "events") == events


def test_a_bug_in_lab_fails_the_job_with_its_traceback_at_once(lab: Database, db_path: Path,
                                                               tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch
                                                              ) -> None:
    from tests.helpers.queue import write_registry

    config = write_registry(tmp_path, latency=2)  # slow sims write live rows
    settings = settings_for(db_path, config)
    enqueue_grid(lab, settings, GridRequest(models=("sim-slow",), conditions=("none",),
                                            regimes=("clean",), question_set="small", run="b"),
                 load_registry(config))
    (job_id,) = ledger.select_jobs(lab, "run", "b")

    def broken(setup: EpisodeSetup, observation: str, t: int) -> str:
        if setup.question.id == job_row(lab, job_id)["question_ids"][-1]:
            raise KeyError("observation_template")
        return real(setup, observation, t)

    from core.react import observation_message as real

    monkeypatch.setattr("core.react.observation_message", broken)
    assert execute_job(settings, job_id) == "failed"
    job = job_row(lab, job_id)
    assert job["state"] == "failed" and job["attempts"] == 1  # not retried as a model fault
    assert job["last_error"].startswith(f"{HARNESS_ERROR}KeyError: 'observation_template'")
    assert "Traceback (most recent call last)" in job["last_error"]
    assert "in broken" in job["last_error"]
    assert lab.conn.execute("SELECT count(*) FROM episodes WHERE error IS NOT NULL"
                            ).fetchone()[0] == 0  # never recorded as a model error
    assert store.count(lab, "live_episodes") == 0  # no episode left looking "running"


def test_malformed_replies_are_model_faults_but_bugs_are_not() -> None:
    policy = RetryPolicy(timeout_s=1, max_retries=2, backoff_s=0.001, backoff_max_s=0.001)
    calls = []

    async def malformed() -> None:
        calls.append(1)
        raise MalformedResponse("KeyError: 'choices'")

    with pytest.raises(ModelError) as info:
        asyncio.run(call_with_retries(malformed, policy, "here", ()))
    assert info.value.reason == "bad_response" and len(calls) == 3

    async def bug() -> None:
        calls.append(1)
        raise TypeError("unsupported operand")

    calls.clear()
    with pytest.raises(TypeError):
        asyncio.run(call_with_retries(bug, policy, "here", ()))
    assert len(calls) == 1
