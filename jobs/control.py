"""Enqueue, cancel, pause, resume, retry and status: what the CLI and console call."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from types import MappingProxyType
from typing import Any

from sqlite_utils import Database

from core.errors import LabError
from core.models.registry import ModelSpec
from core.store import jobs as ledger
from core.store import progress
from jobs.grid import GridPlan, GridRequest, enqueue
from jobs.queue import enqueue_job, make_huey
from jobs.retry import retry
from jobs.settings import WorkerSettings

RATE_WINDOW_S = 60.0


def enqueue_grid(db: Database, settings: WorkerSettings, request: GridRequest,
                 models: Mapping[str, ModelSpec]) -> tuple[GridPlan, int | None, int]:
    """Store a grid's cells and jobs, then put its jobs on the queue.

    Returns:
        (plan, grid id, number of jobs queued).
    """
    grid_plan, grid_id, jobs = enqueue(db, request, models)
    if grid_id is None:
        return grid_plan, None, 0
    huey, task = make_huey(settings)
    for job_id in jobs:
        enqueue_job(huey, task, job_id, request.priority)
    ledger.log_event(db, "enqueue", f"grid {grid_id} run {request.run}: {len(jobs)} jobs, "
                     f"{grid_plan.episodes} episodes")
    return grid_plan, grid_id, len(jobs)


TRANSITIONS = MappingProxyType({
    "cancel": (("queued", "running", "paused"), "cancelled"),
    "pause": (("queued", "running"), "paused"),
    "resume": (("paused",), "queued"),
    "retry": (("failed", "cancelled"), "queued"),
})


def control(db: Database, settings: WorkerSettings, action: str, target: str,
            value: str | int) -> list[int]:
    """Apply cancel/pause/resume/retry to a run, grid or job; returns the jobs changed.

    A running job being cancelled stops starting episodes at its next heartbeat
    (the ones in flight are stored). Resumed jobs are queued again; retry queues
    failed and cancelled jobs and the errored questions (see `jobs.retry.retry`).

    Raises:
        LabError: no such run, grid or job.
    """
    if action not in TRANSITIONS:
        raise LabError(f"unknown action '{action}'; one of: {', '.join(TRANSITIONS)}")
    if action == "retry":
        return retry(db, settings, target, value).jobs
    ids = ledger.select_jobs(db, target, value)
    if not ids:
        raise LabError(f"no jobs for {target} {value!r}")
    from_states, to_state = TRANSITIONS[action]
    moved = ledger.transition(db, ids, from_states, to_state)
    if to_state == "queued" and moved:
        huey, task = make_huey(settings)
        for job_id in moved:
            enqueue_job(huey, task, job_id)
    ledger.log_event(db, action, f"{target} {value}: {len(moved)} jobs")
    return moved


@dataclass(frozen=True)
class GridStatus:
    """Progress of one grid."""

    grid: int
    run: str
    cells: int
    expected: int
    stored: int
    errored: int
    running: int
    jobs: dict[str, int]
    rate: float
    eta_s: float | None
    retry: str | None = None
    """The command that re-runs the grid's errored episodes (None when there are none)."""
    stale: int = 0
    """Running jobs whose heartbeat is older than `core.store.progress.STALE_AFTER_S`
    (worker lost?)."""
    unit: str = "episodes"
    """What expected/stored/errored/rate count: "episodes", or "probes" for a grid of
    `lab replay`/`lab repair` jobs."""
    kind: str | None = None
    """A probes grid's probe kind (judgment, belief, answer_now, repair)."""
    truncated: int = 0
    """Stored episodes that ended with a generation cut at max_tokens (complete, counted
    as not answering: `core.end_reasons`)."""
    refused: int = 0
    """Stored episodes that ended with the model's refusal (`core.end_reasons`)."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return dict(self.__dict__)


def status(db: Database, now: float | None = None) -> list[GridStatus]:
    """Per grid: episodes expected/stored/errored/running, job states, rate and ETA.

    stored: pairs with a complete episode; errored: pairs whose episodes all errored
    (with `retry`, the command that re-runs them). A replay grid counts its probes
    instead (unit "probes"): stored, errored and the rate and ETA of its probes.
    """
    now = time.time() if now is None else now
    out = []
    for g in progress.grid_progress(db, now):
        recent = [f for f in g["finished"]
                  if now - datetime.fromisoformat(f).timestamp() <= RATE_WINDOW_S]
        span = RATE_WINDOW_S
        if recent:
            first = datetime.fromisoformat(recent[0]).timestamp()
            span = max(now - first, 1.0)
        rate = len(recent) / span if recent else 0.0
        left = g["expected"] - g["stored"] - g["errored"]  # errored pairs wait for a retry
        if not left and any(g["jobs"][s] for s in ("queued", "running")):
            left = g["errored"]  # … which is queued: they are what remains
        eta = left / rate if rate > 0 and left > 0 else (0.0 if left == 0 else None)
        if g["stale"]:
            eta = None  # a lost worker's jobs wait for recovery: no honest ETA
        out.append(GridStatus(g["grid"], g["run"], g["cells"], g["expected"], g["stored"],
                              g["errored"], g["running"], g["jobs"], rate, eta,
                              f"lab retry --grid {g['grid']} --errored" if g["errored"]
                              else None, g["stale"], g["unit"], g["kind"],
                              g.get("truncated", 0), g.get("refused", 0)))
    return out
