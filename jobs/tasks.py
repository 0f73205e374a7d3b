"""Executing one job: lease, run the cell's missing episodes, heartbeat, finish."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sqlite3
import threading
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlite_utils import Database

import prompts
from core import store
from core.conditions import Condition
from core.errors import ConfigError, LabError
from core.models.base import ModelClient
from core.models.registry import ModelSpec, make_client, registry_now, resolve_model
from core.models.retry import CALL_STOP, CallStop
from core.models.serving import with_endpoints
from core.regimes import parse_regime
from core.runner import CallGate, CellSpec
from core.store import jobs as ledger
from core.store import prompt_packs
from core.store.disk import PROBE_S, is_disk_full
from core.store.servers import running_endpoints
from jobs.kinds import job_kind
from jobs.kinds.base import JobContext
from jobs.sets import PoolCache
from jobs.settings import WorkerSettings

if TYPE_CHECKING:
    from jobs.engine import Engine

log = logging.getLogger("lab.jobs")


@dataclass
class _Stop:
    """Why a running job stopped early (None: it ran to the end)."""

    reason: str | None = None


def cell_spec(db: Database, cell_id: int, settings: WorkerSettings) -> CellSpec:
    """Rebuild a cell's spec from lab.db and the registry.

    The model is served at its registry endpoints and at those `lab serve` started for
    it and has not seen stop (`core.store.servers.running_endpoints`), so replicas
    started with `--replicas` share its episodes without an edit of lab.toml.

    Raises:
        ConfigError: the registry's model no longer matches what the cell recorded.
    """
    row = ledger.cell(db, cell_id)
    model = resolve_model(registry_now(settings.config_path), row["model"])
    if model.to_json() != row["model_spec"]:
        raise ConfigError(f"model '{row['model']}' changed in the registry since cell {cell_id} "
                          f"was enqueued; restore it or enqueue a new run")
    return cell_from_row(row, with_endpoints(model, running_endpoints(db, model.name)))


def cell_from_row(row: Mapping[str, Any], model: ModelSpec) -> CellSpec:
    """The CellSpec of a cells row, with `model` as its model."""
    condition = Condition(**json.loads(row["condition_spec"]))
    return CellSpec(model, condition, parse_regime(row["regime"]), row["question_set"],
                    row["budget"], row["seed"], row["replicate"],
                    prompt_pack=row.get("prompt_pack"))


async def _heartbeat(db: Database, job_id: int, settings: WorkerSettings, stop: _Stop,
                     res: Resources) -> None:
    while stop.reason is None:
        await asyncio.sleep(settings.heartbeat_s)
        if res.stopping:
            stop.reason = "worker stopping"
            break
        try:
            state = ledger.heartbeat(db, job_id, settings.worker_id, settings.lease_s)
        except sqlite3.OperationalError as exc:
            if not is_disk_full(exc):
                raise
            continue  # a full disk: the job is paused (jobs.pump), not lost
        if state is None:
            stop.reason = "lease lost"
        elif state != "running":
            stop.reason = state
        elif ledger.worker_state(db, settings.worker_id) == "stopping":
            stop.reason = "worker stopping"


class Resources:
    """What the jobs of one worker process share: pools, and with an engine, clients and slots.

    This plain version gives each job a fresh client and its own episode semaphore
    (a job run by itself: tests, `execute_job` without an engine); `jobs.engine`
    shares them across the jobs of a process.
    """

    def __init__(self, pools: PoolCache | None = None) -> None:
        self.pools = pools
        self.stop = CallStop()
        """The worker process's stop: once requested no job starts another episode
        and no model call or retry starts; its cut ends the calls in flight."""

    @property
    def stopping(self) -> bool:
        """Whether the worker process is stopping."""
        return self.stop.requested

    def client(self, model: ModelSpec) -> tuple[ModelClient, bool]:
        """(client for the model, whether it is shared and must stay open)."""
        return make_client(model), False

    def episode_slots(self, model: ModelSpec, client: ModelClient,
                      settings: WorkerSettings) -> asyncio.Semaphore | None:
        """Episode slots shared across jobs (None: the job bounds its own episodes)."""
        return None

    def gate(self, model: ModelSpec, client: ModelClient) -> CallGate | None:
        """The host-wide cap on the model's calls in flight (None: no cap beyond the job)."""
        return None


async def _run(db: Database, job: dict[str, Any], settings: WorkerSettings, res: Resources,
               on_admitted: Callable[[], None] | None) -> _Stop:
    kind = job_kind(job.get("kind") or "episodes")
    cell = cell_spec(db, job["cell_id"], settings)
    # the wording the cell was enqueued with, read once per job and set for this task's
    # context (before the client: a simulated agent reads its markers from the pieces);
    # the job's items, tasks created below, inherit it
    prompts.set_pack(prompt_packs.pack(db, cell.prompt_pack).pieces if cell.prompt_pack
                     else None)
    client, shared = res.client(cell.model)
    stop = _Stop()
    CALL_STOP.set(res.stop)  # this task's context: every call of the job sees the stop
    beat = asyncio.create_task(_heartbeat(db, job["id"], settings, stop, res))
    ctx = JobContext(cell=cell, client=client, close_client=not shared, settings=settings,
                     slots=res.episode_slots(cell.model, client, settings),
                     gate=res.gate(cell.model, client),
                     should_stop=lambda: stop.reason is not None or res.stopping,
                     on_admitted=on_admitted, client_for=lambda m: res.client(m)[0],
                     pools=res.pools)
    try:
        await kind.run(db, job, ctx)
    finally:
        if stop.reason is None:
            stop.reason = ""
        beat.cancel()
    return stop


HARNESS_ERROR = "harness_error: "
"""How `last_error` of a job failed by a bug in lab's own code begins."""
ENVIRONMENT_ERRORS: tuple[type[BaseException], ...] = (LabError, OSError, sqlite3.Error,
                                                       TimeoutError, MemoryError)
"""What a job may raise without it being a bug in lab: an error a researcher can act
on, or the machine (disk, database lock, memory). Model errors never get here: an
episode records them."""


def is_harness_bug(exc: BaseException) -> bool:
    """Whether an exception out of a job is a bug in lab's code (TypeError, KeyError, …)."""
    return isinstance(exc, Exception) and not isinstance(exc, ENVIRONMENT_ERRORS)


def failure_text(exc: BaseException, limit: int = 8000) -> str:
    """`last_error` for an exception: one line, or a bug's marked traceback.

    A harness bug's text starts with HARNESS_ERROR and its exception line and then
    carries the traceback (its innermost frames when it is longer than `limit`).
    """
    line = "".join(traceback.format_exception_only(type(exc), exc)).strip()
    if not is_harness_bug(exc):
        return line[:2000]
    head = f"{HARNESS_ERROR}{line}\n"
    tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    room = max(0, limit - len(head))
    return head + (tb if len(tb) <= room else "…" + tb[-(room - 1):])


def execute_job(settings: WorkerSettings, job_id: int, pools: PoolCache | None = None,
                engine: Engine | None = None) -> str:
    """Run one job if this worker can take its lease; returns what happened.

    With `engine` (a worker process), the job runs on the engine's event loop and
    this returns "handed off" once all its questions have started; the engine
    settles the job when its last episode ends. Without, it runs here to its end.

    Returns one of: "skipped" (not queued, or another worker holds a live lease),
    "done", "released" (stopped early: worker stopping), "cancelled"/"paused"
    (stopped early by the user), "lost" (the lease expired and another worker took
    over), "requeued" or "failed" (an exception; failed after max_attempts, or at
    once when it is a bug in lab's code: `last_error` then starts with HARNESS_ERROR
    and holds the traceback).
    """
    db = store.connect(settings.db_path) if engine is None else _thread_db(settings)
    try:
        try:
            job = ledger.acquire(db, job_id, settings.worker_id, settings.lease_s)
        except sqlite3.OperationalError as exc:
            if not is_disk_full(exc):
                raise
            return "skipped"  # still queued: reconcile sends it again once there is space
        if job is None:
            return "skipped"
        if engine is not None:
            return engine.submit(job)
        return asyncio.run(run_job(db, job, settings, Resources(pools)))
    finally:
        if engine is None:
            db.conn.close()


_THREAD_DB = threading.local()


def _thread_db(settings: WorkerSettings) -> Database:
    """This Huey worker thread's lab.db connection, opened at its first job and kept.

    A worker's thread takes job after job; opening lab.db for each (its pragmas,
    schema and layout checks) cost a few ms of the worker's CPU per job, part of it
    holding the GIL the event loop waits for. One per thread (a connection is used
    by one thread at a time) and per process (a `--type process` child opens its own).
    """
    key = (settings.db_path, os.getpid())
    held = getattr(_THREAD_DB, "held", None)
    if held is None or held[0] != key:
        held = _THREAD_DB.held = (key, store.connect(settings.db_path))
    return held[1]


async def run_job(db: Database, job: dict, settings: WorkerSettings, res: Resources,
                  on_admitted: Callable[[], None] | None = None) -> str:
    """Run a job whose lease this worker holds and settle it in the ledger.

    Args:
        db: lab.db.
        job: the jobs row (from `ledger.acquire`).
        settings: the worker's settings.
        res: clients, pools and slots (shared by a worker's engine).
        on_admitted: called once all the job's questions have started (or none will).

    Returns:
        What happened, as `execute_job` says.
    """
    job_id = job["id"]
    mark = ledger.last_episode_id(db)
    try:
        stop = await _run(db, job, settings, res, on_admitted)
    except BaseException as exc:  # release the lease on interrupts too, then re-raise them
        if on_admitted is not None:
            on_admitted()
        fatal = is_harness_bug(exc) or (
            isinstance(exc, Exception) and job["attempts"] >= settings.max_attempts)
        state = "failed" if fatal else "queued"
        reason = failure_text(exc)
        try:
            ledger.finish(db, job_id, settings.worker_id, state, error=reason)
        except sqlite3.OperationalError as write_failed:  # a full disk: its lease runs out
            if not is_disk_full(write_failed):
                raise
        if not isinstance(exc, Exception):
            raise
        log.warning("job %s %s: %s", job_id, "failed" if fatal else "will retry",
                    reason.splitlines()[0])
        return "failed" if fatal else "requeued"
    if stop.reason in ("cancelled", "paused"):
        return stop.reason
    if stop.reason == "lease lost":
        return "lost"
    missing = job_kind(job.get("kind") or "episodes").unsettled(db, job, mark)
    if stop.reason == "worker stopping" or res.stopping or missing:
        # a stop's interrupted episodes are errored records: the released job re-runs them
        released = await _settle(db, job_id, settings, "queued", res)
        return "released" if released else "lost"
    return "done" if await _settle(db, job_id, settings, "done", res) else "lost"


async def _settle(db: Database, job_id: int, settings: WorkerSettings, state: str,
                  res: Resources) -> bool:
    """`ledger.finish`, waiting while lab.db's disk is full (a stopping worker gives up:
    the job's lease runs out and the next worker takes it)."""
    while True:
        try:
            return ledger.finish(db, job_id, settings.worker_id, state)
        except sqlite3.OperationalError as exc:
            if not is_disk_full(exc):
                raise
            if res.stopping:
                return False
        await asyncio.sleep(PROBE_S)
