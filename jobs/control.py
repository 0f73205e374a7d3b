"""Enqueue, cancel, pause, resume, retry and status: what the CLI and console call."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from types import MappingProxyType
from typing import Any

from sqlite_utils import Database

from core.errors import LabError
from core.models.registry import ModelSpec
from core.store import jobs as ledger
from core.store import progress
from core.store.monitor import window_rate
from core.wording import plural
from jobs.grid import GridPlan, GridRequest
from jobs.kinds import job_kind
from jobs.queue import put_on_queue
from jobs.retry import retry
from jobs.settings import WorkerSettings

RATE_WINDOW_S = 60.0


def enqueue_request(db: Database, settings: WorkerSettings, kind: str, request: Any,
                    models: Mapping[str, ModelSpec], priority: int, event: str,
                    summary: Callable[[Any, int], str]) -> tuple[Any, int | None, list[int]]:
    """Store a request's jobs (its kind's `insert`, one transaction), put them on the
    queue and log the event: what `lab enqueue`, `lab replay`, `lab traces collect`,
    the demo and the console's Enqueue screen each do.

    Args:
        kind: the job kind (`jobs.kinds.KINDS`).
        request: the kind's request.
        models: the model registry.
        priority: the jobs' queue priority.
        event: the event's kind in the log.
        summary: (plan, jobs queued) → the event's text after "grid G: ".

    Returns:
        (plan, grid id or None when nothing was missing, job ids).
    """
    plan, grid_id, jobs = job_kind(kind).insert(db, request, models)
    if jobs:
        put_on_queue(settings, ((job_id, priority) for job_id in jobs))
        ledger.log_event(db, event, f"grid {grid_id} {summary(plan, len(jobs))}")
    return plan, grid_id, jobs


def enqueue_grid(db: Database, settings: WorkerSettings, request: GridRequest,
                 models: Mapping[str, ModelSpec]) -> tuple[GridPlan, int | None, int]:
    """Store a grid's cells and jobs, then put its jobs on the queue.

    Returns:
        (plan, grid id, number of jobs queued).
    """
    grid_plan, grid_id, jobs = enqueue_request(
        db, settings, "episodes", request, models, request.priority, "enqueue",
        lambda plan, n: (f"run {request.run}: {plural(n, 'job')}, "
                         f"{plural(plan.episodes, 'episode')}"))
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
        put_on_queue(settings, ((job_id, 0) for job_id in moved))
    ledger.log_event(db, action, f"{target} {value}: {plural(len(moved), 'job')}")
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
    recent: tuple[float, ...] = ()
    """When each unit stored within `RATE_WINDOW_S` before the read was stored (seconds
    since the epoch): what `at` recounts, so rate and ETA move without another read."""
    left: int = 0
    """Units still to store at the read (errored ones count only while queued again)."""
    rerun: int = 0
    """Errored episodes a queued or paused job of the grid runs again when it starts (a
    stopped worker's interrupted ones, those `lab retry` queued): not in `errored`."""

    @property
    def active(self) -> bool:
        """Whether any of its jobs is queued or running."""
        return bool(self.jobs.get("queued") or self.jobs.get("running"))

    @property
    def done_with_errors(self) -> bool:
        """Nothing queued, running or paused, and some units errored or jobs failed: no
        ETA will come (`lab retry` queues them again)."""
        return (not self.active and not self.jobs.get("paused")
                and bool(self.errored or self.jobs.get("failed")))

    @property
    def when(self) -> str:
        """When it will be done, in words (`lab status`, the console's Jobs): "complete",
        "ETA 4m", "ETA -" (unknown), "done with errors" or "paused, no ETA"."""
        if self.done_with_errors:
            return "done with errors"
        if self.jobs.get("paused") and not self.active:
            return "paused, no ETA"
        return eta_text(self.eta_s)

    def at(self, now: float) -> GridStatus:
        """This grid's rate and ETA at `now`, from what the read saw (no read of lab.db)."""
        rate, eta = rate_and_eta(self.recent, self.left, self.active, bool(self.stale), now)
        return replace(self, rate=rate, eta_s=eta)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (without the timestamps `at` recounts)."""
        return {k: v for k, v in self.__dict__.items() if k != "recent"}


def run_when(grids: Sequence[GridStatus]) -> str:
    """When a run (its grids together) will be done, in words, as `GridStatus.when`
    says it of one grid: its ETA only while one of them is queued or running, at their
    summed rate (none while one is stale); else "done with errors" when one finished
    so, "paused, no ETA" when one is paused, "complete" when every unit is stored."""
    if any(g.active for g in grids):
        rate = sum(g.rate for g in grids)
        left = sum(g.left for g in grids if g.active)
        eta = left / rate if rate > 0 and left > 0 else None
        return eta_text(None if any(g.stale for g in grids) else eta)
    if any(g.done_with_errors for g in grids):
        return "done with errors"
    if any(g.jobs.get("paused") for g in grids):
        return "paused, no ETA"
    stored, expected = sum(g.stored for g in grids), sum(g.expected for g in grids)
    return eta_text(0.0 if stored >= expected else None)


def rate_text(rate: float, active: bool) -> str:
    """A grid's (or run's) rate as its line shows it, "12.5/s"; "" for one that nothing
    is queued or running for and that stored nothing lately, whose "0.0/s" beside
    "complete" or "paused" said nothing.

    Args:
        rate: units per second (`rate_and_eta`).
        active: a job of it is queued or running.
    """
    shown = f"{rate:.1f}/s"
    return shown if active or shown != "0.0/s" else ""


def eta_text(seconds: float | None) -> str:
    """ETA in s / m / h; "complete" when nothing is left; "ETA -" when unknown (nothing
    finished lately)."""
    if seconds == 0:
        return "complete"
    if seconds is None:
        return "ETA -"
    if seconds < 120:
        return f"ETA {seconds:.0f}s"
    if seconds < 7200:
        return f"ETA {seconds / 60:.0f}m"
    return f"ETA {seconds / 3600:.1f}h"


def rate_and_eta(recent: tuple[float, ...], left: int, active: bool, stale: bool,
                 now: float) -> tuple[float, float | None]:
    """Units per second since the first of `recent` within `RATE_WINDOW_S` of `now` (at
    least one second; `core.store.monitor.window_rate`, the Dashboard's rate too), and
    the seconds until `left` are stored at that rate.

    The ETA is 0.0 when nothing is left, None when it cannot be told: nothing stored
    lately, a lost worker's jobs waiting for their lease (`stale`), or nothing queued or
    running (a finished grid with errors, a paused one), so a finished grid's ETA never
    grows as its rate decays.
    """
    rate, _ = window_rate(recent, now, RATE_WINDOW_S)
    if left == 0:
        return rate, 0.0
    if not active or stale or rate <= 0:
        return rate, None
    return rate, left / rate


def status(db: Database, now: float | None = None) -> list[GridStatus]:
    """Per grid: episodes expected/stored/errored/running, job states, rate and ETA.

    stored: pairs with a complete episode; errored: pairs whose episodes all errored,
    and rerun those of them a queued or paused job runs again (with `retry`, the command
    that re-runs the errored pairs no job holds, while there are some). A replay grid
    counts its probes instead (unit "probes"): stored, errored and the rate and ETA of
    its probes.
    """
    now = time.time() if now is None else now
    out = []
    # the finish times from a second before the window's start on, as lab.db's text
    # compares; each is then tested here as a time
    for g in progress.grid_progress(db, now, since=now - RATE_WINDOW_S - 1.0):
        recent = tuple(ts for ts in (datetime.fromisoformat(f).timestamp()
                                     for f in g["finished"]) if now - ts <= RATE_WINDOW_S)
        active = any(g["jobs"][s] for s in ("queued", "running"))
        left = g["expected"] - g["stored"] - g["errored"]  # errored pairs wait for a retry
        if not left and active:
            left = g["errored"]  # … which is queued: they are what remains
        rate, eta = rate_and_eta(recent, left, active, bool(g["stale"]), now)
        out.append(GridStatus(g["grid"], g["run"], g["cells"], g["expected"], g["stored"],
                              g["errored"], g["running"], g["jobs"], rate, eta,
                              f"lab retry --grid {g['grid']} --errored" if g["retryable"]
                              else None, g["stale"], g["unit"], g["kind"],
                              g.get("truncated", 0), g.get("refused", 0), recent, left,
                              g["rerun"]))
    return out
