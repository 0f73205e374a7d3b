"""What a job kind implements, and what a worker hands it to run one job.

A kind is the work a job of the ledger does with its questions (`jobs.kind`):
episodes, replay probes, trace states. Each kind module defines `KIND`, an object
with the four parts below; `jobs.kinds.KINDS` names the modules. A worker leases,
heartbeats and settles every kind's jobs the same way (`jobs.tasks`), and every kind
runs its items through the one loop of `jobs.pump`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from sqlite_utils import Database

from core.models.base import ModelClient
from core.models.registry import ModelSpec
from core.runner import CallGate, CellSpec
from jobs.sets import PoolCache
from jobs.settings import WorkerSettings


@dataclass(frozen=True)
class JobContext:
    """What the worker gives a kind's `run`: the job's model client and shared state.

    Attributes:
        cell: the job's cell, rebuilt from lab.db and checked against the registry.
        client: the cell's model client.
        close_client: close the clients at the end (False: the worker shares them).
        settings: the worker's settings (concurrency, worker id, registry path).
        slots: the worker's slots for the model, shared with its other jobs (None: the
            job bounds its own items by `settings.concurrency`).
        gate: the host-wide cap on the model's calls in flight (None: no cap).
        should_stop: True once the job or the worker stops: start no more items.
        on_admitted: called once every item has taken a slot or been passed over.
        client_for: a client for another model (a judge), shared like `client`.
        pools: question sets loaded once per worker process.
    """

    cell: CellSpec
    client: ModelClient
    close_client: bool
    settings: WorkerSettings
    slots: asyncio.Semaphore | None
    gate: CallGate | None
    should_stop: Callable[[], bool]
    on_admitted: Callable[[], None] | None
    client_for: Callable[[ModelSpec], ModelClient]
    pools: PoolCache | None = None


@dataclass(frozen=True)
class Errored:
    """A kind's errored work that `lab retry` asks again (`JobKind.errored`).

    Attributes:
        groups: question ids by (grid id, cell id, priority, params): each group becomes
            new jobs of the kind with those params, in the same grid.
        units: the errored results those questions hold (episodes, probes, states).
    """

    groups: dict[tuple[int, int, int, str | None], list[str]]
    units: int


class JobKind(Protocol):
    """A kind of job: how its jobs are planned, inserted, run and settled.

    `plan` and `insert` take the kind's own request (`GridRequest`, `ReplayRequest`,
    `TraceRequest`, …) and the model registry; `insert` stores the jobs with
    `core.store.jobs.insert_jobs(…, kind=name, params=…)` in one transaction and
    returns (plan, grid id or None when nothing is missing, job ids).
    """

    name: str
    """The `jobs.kind` value."""
    unit: str
    """One result of the kind, as `lab retry` counts them ("episode", "probe", …)."""
    job_word: str
    """One job of the kind, as `lab retry` counts them ("job", "replay job", …)."""
    respec: bool
    """Whether `lab retry` gives the kind's cells a model spec whose only change is a
    larger max_context (`jobs.retry.respec`)."""

    def plan(self, db: Database, request: Any, registry: Mapping[str, ModelSpec]) -> Any:
        """What the request would queue, without writing anything."""
        ...

    def insert(self, db: Database, request: Any, registry: Mapping[str, ModelSpec]
               ) -> tuple[Any, int | None, list[int]]:
        """Store the request's jobs; returns (plan, grid id, job ids)."""
        ...

    async def run(self, db: Database, job: Mapping[str, Any], ctx: JobContext) -> int:
        """Run a leased job's missing items through `jobs.pump`; returns results stored."""
        ...

    def errored(self, db: Database, jobs: Sequence[Mapping[str, Any]]) -> Errored:
        """The questions of `jobs` (this kind's rows, question ids decoded) whose results
        errored, each once and not already held by an active job (`lab retry`)."""
        ...

    def unsettled(self, db: Database, job: Mapping[str, Any], mark: int) -> set[str]:
        """Questions of the job still without a result (complete or errored) after a run.

        `mark` is the largest episode id when the job started. A job that ran to its
        end leaves none; one that leaves some is released (queued) for another run.
        """
        ...
