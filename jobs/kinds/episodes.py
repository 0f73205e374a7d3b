"""Episode jobs: run a cell's missing episodes for a job's questions and store them.

Planned and inserted by `lab enqueue` (`jobs.grid`); retried by `lab retry`. Each
question is one item of the pump (`jobs.pump`): a whole episode, every model call of
it inside the host-wide call cap.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any

from sqlite_utils import Database

from core import store
from core.data import Question
from core.episode import EpisodeResult, Step
from core.models.base import ModelClient
from core.regimes import ForeignPool
from core.runner import CallGate, CellSpec, LiveBuffer, run_one, setup_for
from core.store import jobs as ledger
from core.store.episodes import write_live_steps
from jobs import grid
from jobs.kinds.base import Errored, JobContext
from jobs.pump import FLUSH_S, Pending, Work, pump
from jobs.sets import job_questions, loaded_set


class EpisodeWork(Work[Question]):
    """A cell's missing episodes for some questions (`run_questions` says how)."""

    def __init__(self, db: Database, cell_id: int, cell: CellSpec, questions: Sequence[Question],
                 pool: ForeignPool, client: ModelClient, live: bool, batch: int,
                 live_first: int, gate: CallGate | None, worker: str | None) -> None:
        self.db, self.cell_id, self.cell, self.pool = db, cell_id, cell, pool
        self.client, self.gate, self.worker = client, gate, worker
        done = store.complete_questions(db, cell_id, [q.id for q in questions])
        self.items = [q for q in questions if q.id not in done]
        self.label = f"{cell.model.name} / {cell.condition.label()} / {cell.regime.name}"
        self.buffer = LiveBuffer(db, cell_id, self.label, worker) if live else None
        self.pending: Pending[tuple[int, EpisodeResult, int | None]] = Pending(self._write, batch)
        self.live_first = live_first
        self.started = 0
        self.live_stored = 0

    def _write(self, items: list[tuple[int, EpisodeResult, int | None]]) -> int:
        return sum(i is not None for i in store.write_episodes(self.db, items))

    async def run(self, item: Question) -> None:
        buffer = self.buffer
        # a sampled instant episode commits its live rows in one transaction at its end
        sampled: list[Step] | None = ([] if buffer is None and self.started < self.live_first
                                      else None)
        self.started += 1
        token = buffer.start(item.id) if buffer is not None else 0
        on_step = partial(buffer.step, token) if buffer is not None else None
        try:
            result = await run_one(setup_for(self.cell, item, self.pool, self.client),
                                   self.client,
                                   sampled.append if sampled is not None else on_step, self.gate)
        except BaseException:  # a bug in lab, or cancelled: no stale "running" row
            if buffer is not None:
                buffer.drop(token)
            raise
        if buffer is not None:
            buffer.finish(token, result)
            return
        live_id = None
        if sampled is not None:
            with store.write(self.db):
                live_id = store.live_start(self.db, self.cell_id, item.id, self.label,
                                           self.worker)
                write_live_steps(self.db, [(live_id, step) for step in sampled])
        self.pending.keep((self.cell_id, result, live_id))

    def flush(self) -> None:
        if self.buffer is not None:
            self.live_stored += self.buffer.flush()
        self.pending.flush()

    @property
    def stored(self) -> int:
        return self.live_stored + self.pending.stored

    def clients(self) -> list[ModelClient]:
        return [self.client]


async def run_questions(db: Database, cell_id: int, cell: CellSpec,
                        questions: Sequence[Question], pool: ForeignPool, client: ModelClient,
                        live: bool = False, batch: int = 64, concurrency: int | None = None,
                        should_stop: Callable[[], bool] | None = None,
                        live_first: int = 0, slots: asyncio.Semaphore | None = None,
                        gate: CallGate | None = None,
                        on_admitted: Callable[[], None] | None = None,
                        close_client: bool = True, flush_s: float = FLUSH_S,
                        worker: str | None = None) -> int:
    """Run a cell's missing episodes for `questions` and store them.

    Episodes run concurrently up to the model's concurrency (or hold one of `slots`,
    shared with other jobs of the same worker). Finished episodes are stored in
    batches of up to `batch`, each episode with all its steps and never twice (the
    (cell, question) key).

    Args:
        live: also put each running episode and its steps in the live tables; they,
            and the finished episodes, are committed together every `flush_s`
            (`LiveBuffer`).
        batch: without `live`, finished episodes per write transaction.
        concurrency: a further bound on concurrent episodes (besides the model's).
        should_stop: checked before each episode starts; when it returns True no
            new episode starts, and the ones running finish and are stored.
        live_first: without `live`, still put the first this many episodes started in
            the live tables, all steps in one transaction when the episode ends, until
            their batch is stored (instant sims: one per job keeps them visible in
            `lab tail` and the console at the cost of one transaction per job).
        slots: episode slots shared across jobs (replaces the per-call semaphore of
            `concurrency`): a worker keeps its model's batch full across jobs.
        gate: a cap on the model's calls in flight shared by every worker on the
            host (each call holds one of its slots).
        on_admitted: called once every question has started or been passed over
            (stop requested, or an error): the caller may then queue the next job
            while this one's stragglers finish.
        close_client: close the client's connections at the end (False when the
            client is shared by later jobs).
        flush_s: with `live`, how often the live tables and finished episodes are
            committed (the live tail shows a step at most this late).
        worker: the worker (host:pid) that owns the live rows, whose job lease they
            live under (None: this process).

    Returns:
        Number of episodes stored.
    """
    work = EpisodeWork(db, cell_id, cell, questions, pool, client, live, batch, live_first,
                       gate, worker)
    return await pump(work, client, concurrency=concurrency, slots=slots,
                      should_stop=should_stop, on_admitted=on_admitted,
                      flush_s=flush_s if live else None, close_client=close_client)


class EpisodesKind:
    """Episode jobs (`jobs.kind` "episodes")."""

    name = "episodes"
    unit, job_word, respec = "episode", "job", True

    plan = staticmethod(grid.plan)
    insert = staticmethod(grid.enqueue)

    async def run(self, db: Database, job: Mapping[str, Any], ctx: JobContext) -> int:
        cell = ctx.cell
        # instant sims finish an episode in a millisecond: live rows for every one would
        # slow them down, so only the first episode of each job is tailed (lab tail, Live)
        live = not cell.model.config.instant
        loaded = loaded_set(db, cell, ctx.pools)
        questions = job_questions(db, job, loaded)
        pool = loaded.pool if loaded is not None else ForeignPool(
            store.load_questions(db, dataset=questions[0].dataset))
        return await run_questions(
            db, job["cell_id"], cell, questions, pool, ctx.client, live=live,
            batch=1 if live else 64, concurrency=ctx.settings.concurrency,
            should_stop=ctx.should_stop, live_first=0 if live else 1, slots=ctx.slots,
            gate=ctx.gate, on_admitted=ctx.on_admitted, close_client=ctx.close_client,
            worker=ctx.settings.worker_id)

    def errored(self, db: Database, jobs: Sequence[Mapping[str, Any]]) -> Errored:
        # pairs (cell, question) whose every episode ended in a model error
        errored: dict[int, dict[str, str]] = {}
        pending: dict[int, set[str]] = {}
        out: dict[tuple[int, int, int, str | None], list[str]] = {}
        taken: set[tuple[int, str]] = set()
        for job in jobs:
            cell_id = job["cell_id"]
            if cell_id not in errored:
                errored[cell_id] = ledger.errored_questions(db, cell_id)
                pending[cell_id] = ledger.pending_questions(db, cell_id)
            for q in job["question_ids"]:
                if (q in errored[cell_id] and q not in pending[cell_id]
                        and (cell_id, q) not in taken):
                    taken.add((cell_id, q))
                    out.setdefault((job["grid_id"], cell_id, job["priority"], None),
                                   []).append(q)
        return Errored(out, sum(len(q) for q in out.values()))

    def unsettled(self, db: Database, job: Mapping[str, Any], mark: int) -> set[str]:
        # errored episodes stay for `lab retry --errored`: only questions with no new
        # record (complete or errored) keep the job open
        return ledger.unsettled_questions(db, job["cell_id"], job["question_ids"], mark)


KIND = EpisodesKind()
