"""A job kind is one module plus one registry line; every kind runs through one pump.

A toy kind, defined here and registered for the test, is inserted on the real
ledger and run by the real worker (lease, heartbeat, settle) through `jobs.pump`.
The pump's own promises (slots, admission, batching, cancel-on-error, stop, client
closing) are checked on it directly.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from sqlite_utils import Database

from core import store
from core.conditions import Condition
from core.demo_set import ensure_demo_set
from core.models.base import EpisodeView, ModelSession
from core.models.registry import ModelSpec, load_registry
from core.regimes import parse_regime
from core.runner import CellSpec
from core.store import jobs as ledger
from jobs import kinds
from jobs.kinds.base import Errored, JobContext
from jobs.pump import Pending, Work, pump
from jobs.settings import WorkerSettings
from jobs.tasks import execute_job
from jobs.worker import run_worker
from tests.helpers.queue import job_row, write_registry

STORED: dict[tuple[int, str], int] = {}
"""What the toy kind stores: (cell, question) → how many times (a real kind uses lab.db)."""
ERRORED: set[tuple[int, str]] = set()
"""(cell, question) whose toy result errored: `lab retry` asks them again."""


class ToyWork(Work[str]):
    """Each question is one item: it sleeps a moment, then its result is kept."""

    def __init__(self, cell_id: int, questions: list[str], batch: int = 4) -> None:
        self.cell_id = cell_id
        self.items = [q for q in questions if (cell_id, q) not in STORED]
        self.pending: Pending[str] = Pending(self._write, batch)

    def _write(self, items: list[str]) -> int:
        for q in items:
            STORED[(self.cell_id, q)] = STORED.get((self.cell_id, q), 0) + 1
        return len(items)

    async def run(self, item: str) -> None:
        await asyncio.sleep(0.001)
        self.pending.keep(item)

    def flush(self) -> None:
        self.pending.flush()

    @property
    def stored(self) -> int:
        return self.pending.stored


class ToyKind:
    """The toy kind: a job's questions, each stored once."""

    name = "toy"
    unit, job_word, respec = "toy result", "toy job", False

    def plan(self, db: Any, request: tuple[int, list[str]],
             registry: Mapping[str, ModelSpec]) -> list[str]:
        cell_id, questions = request
        return [q for q in questions if (cell_id, q) not in STORED]

    def insert(self, db: Any, request: tuple[int, list[str]],
               registry: Mapping[str, ModelSpec]) -> tuple[list[str], int | None, list[int]]:
        missing = self.plan(db, request, registry)
        cell_id = request[0]
        with store.write(db):
            grid_id = ledger.create_grid(db, ledger.cell(db, cell_id)["run_id"], {"toy": 1})
            return missing, grid_id, ledger.insert_jobs(db, grid_id, cell_id, missing,
                                                        kind=self.name, params="{}")

    async def run(self, db: Any, job: Mapping[str, Any], ctx: JobContext) -> int:
        return await pump(ToyWork(job["cell_id"], job["question_ids"]), ctx.client,
                          concurrency=ctx.settings.concurrency, slots=ctx.slots,
                          should_stop=ctx.should_stop, on_admitted=ctx.on_admitted,
                          close_client=ctx.close_client)

    def errored(self, db: Any, jobs: Sequence[Mapping[str, Any]]) -> Errored:
        out: dict[tuple[int, int, int, str | None], list[str]] = {}
        for job in jobs:
            key = (job["grid_id"], job["cell_id"], job["priority"], job["params"])
            out.setdefault(key, []).extend(
                q for q in job["question_ids"] if (job["cell_id"], q) in ERRORED)
        return Errored({k: v for k, v in out.items() if v}, sum(map(len, out.values())))

    def unsettled(self, db: Any, job: Mapping[str, Any], mark: int) -> set[str]:
        return {q for q in job["question_ids"] if (job["cell_id"], q) not in STORED}


KIND = ToyKind()


@pytest.fixture
def toy(db_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
        ) -> Iterator[tuple[Database, WorkerSettings, int, list[str]]]:
    """lab.db with one sim cell, and the toy kind registered (one registry line)."""
    monkeypatch.setitem(kinds.KINDS, "toy", __name__)
    STORED.clear()
    ERRORED.clear()
    db = store.connect(db_path)
    ensure_demo_set(db)
    config = write_registry(tmp_path, latency=0)
    model = load_registry(config)["sim-slow"]
    cell = CellSpec(model, Condition(name="none"), parse_regime("clean"), "demo", 8, 0)
    run_id = store.ensure_run(db, "toy")
    cell_id = store.ensure_cell(db, run_id, cell.columns())
    settings = WorkerSettings(db_path=db_path, config_path=config, lease_s=30,
                              heartbeat_s=0.2, reconcile_s=0.5, worker_id="w1")
    questions = list(store.question_set(db, "demo")["ids"])
    yield db, settings, cell_id, questions
    STORED.clear()


def test_a_registered_toy_kind_runs_through_the_worker(
        toy: tuple[Database, WorkerSettings, int, list[str]]) -> None:
    db, settings, cell_id, questions = toy
    kind = kinds.job_kind("toy")
    missing, grid_id, jobs = kind.insert(db, (cell_id, questions), {})
    assert missing == questions and len(jobs) == 2  # 60 questions: jobs of 50 and 10
    assert {job_row(db, j)["kind"] for j in jobs} == {"toy"}
    assert execute_job(settings, jobs[0]) == "done"  # in this thread, no engine
    assert len(STORED) == 50
    run_worker(settings, until_idle=True)  # the worker's engine and Huey take the rest
    assert ledger.job_states(db) == {"done": 2}
    assert set(STORED) == {(cell_id, q) for q in questions}
    assert set(STORED.values()) == {1}  # each once
    assert kind.insert(db, (cell_id, questions), {})[0] == []  # nothing left to plan


def test_a_toy_job_left_unsettled_is_released(toy: tuple[Database, WorkerSettings, int, list[str]],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    db, settings, cell_id, questions = toy
    _, _, jobs = KIND.insert(db, (cell_id, questions[:5]), {})
    monkeypatch.setattr(ToyKind, "unsettled", lambda self, db, job, mark: {"q"})
    assert execute_job(settings, jobs[0]) == "released"
    assert job_row(db, jobs[0])["state"] == "queued"


def test_an_unknown_kind_is_one_error_line() -> None:
    with pytest.raises(Exception, match="job kind 'nope' is not one this lab runs"):
        kinds.job_kind("nope")


# --- the pump itself ----------------------------------------------------------------------


class FakeClient:
    """A client with a concurrency and an `aclose` that is counted (a `ModelClient` whose
    sessions the pump never opens: the work items run without one)."""

    name = "fake"

    def __init__(self, concurrency: int = 3) -> None:
        self.concurrency = concurrency
        self.closed = 0

    def start(self, view: EpisodeView) -> ModelSession:
        raise NotImplementedError("the pump's work runs without a session")

    async def aclose(self) -> None:
        self.closed += 1


class Probe(Work[int]):
    """Items that record how many run at once; item `fail` raises; `hold` blocks."""

    def __init__(self, n: int, fail: int | None = None, batch: int = 1000,
                 client: FakeClient | None = None) -> None:
        self.items = list(range(n))
        self.fail = fail
        self.in_flight = self.peak = 0
        self.writes: list[list[int]] = []
        self.pending: Pending[int] = Pending(self._write, batch)
        self.ended_items: list[int] = []
        self.finished = False
        self.client = client

    def _write(self, items: list[int]) -> int:
        self.writes.append(items)
        return len(items)

    async def run(self, item: int) -> None:
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        try:
            if self.fail is None or item < 2:
                await asyncio.sleep(0.001)
                self.pending.keep(item)
            elif item == self.fail:  # raise once items 0 and 1 are kept
                while len(self.pending.items) + self.pending.stored < 2:
                    await asyncio.sleep(0.001)
                raise KeyError(item)
            else:  # never ends unless cancelled
                await asyncio.Event().wait()
        finally:
            self.in_flight -= 1

    def ended(self, item: int) -> None:
        self.ended_items.append(item)

    def flush(self) -> None:
        self.pending.flush()

    @property
    def stored(self) -> int:
        return self.pending.stored

    def finish(self) -> None:
        self.finished = True

    def clients(self) -> list[Any]:
        return [self.client] if self.client is not None else []


def test_the_pump_bounds_items_by_the_model_and_the_job() -> None:
    client = FakeClient(3)
    work = Probe(12, client=client)
    admitted: list[int] = []

    async def main() -> int:
        return await pump(work, client, on_admitted=lambda: admitted.append(work.stored))

    assert asyncio.run(main()) == 12 and work.peak == 3
    assert len(admitted) == 1 and work.finished and client.closed == 1
    assert sorted(work.ended_items) == list(range(12))
    for model, job in ((8, 2), (2, 8)):
        other = FakeClient(model)
        work2 = Probe(12, client=other)
        asyncio.run(pump(work2, other, concurrency=job, close_client=False))
        assert work2.peak == 2 and other.closed == 0


def test_the_pump_batches_writes_and_flushes_the_rest_at_the_end() -> None:
    work = Probe(10, batch=4)
    assert asyncio.run(pump(work, FakeClient(10), flush_s=None)) == 10
    assert [len(w) for w in work.writes] == [4, 4, 2]


def test_an_item_that_raises_cancels_the_others_and_keeps_what_finished() -> None:
    client = FakeClient(3)  # item 6 never gets a slot: only the end admits it
    work = Probe(7, fail=2, client=client)
    admitted: list[bool] = []
    with pytest.raises(KeyError):
        asyncio.run(pump(work, client, flush_s=None, on_admitted=lambda: admitted.append(True)))
    assert work.stored == 2 and sorted(sum(work.writes, [])) == [0, 1]  # the rest cancelled
    assert not work.finished and client.closed == 1 and admitted == [True]


def test_a_stopped_job_starts_no_item_and_still_admits() -> None:
    work = Probe(5)
    admitted: list[bool] = []
    stored = asyncio.run(pump(work, FakeClient(2), should_stop=lambda: True,
                              on_admitted=lambda: admitted.append(True)))
    assert stored == 0 and work.peak == 0 and admitted == [True]
    assert sorted(work.ended_items) == list(range(5))  # each item still told it ended


def test_shared_slots_bound_items_across_pumps() -> None:
    slots_seen: list[int] = []

    async def main() -> None:
        slots = asyncio.Semaphore(2)
        a, b = Probe(6), Probe(6)
        counter = {"now": 0, "peak": 0}
        for w in (a, b):
            run = w.run

            async def counted(item: int, run: Callable[[int], Awaitable[None]] = run) -> None:
                counter["now"] += 1
                counter["peak"] = max(counter["peak"], counter["now"])
                try:
                    await run(item)
                finally:
                    counter["now"] -= 1
            w.run = counted  # type: ignore[method-assign]
        await asyncio.gather(pump(a, FakeClient(50), slots=slots),
                             pump(b, FakeClient(50), slots=slots))
        slots_seen.append(counter["peak"])

    asyncio.run(main())
    assert slots_seen == [2]


def test_an_item_waits_while_every_endpoint_is_down() -> None:
    class Down(FakeClient):
        waited = 0

        async def ready(self, give_up: Callable[[], bool]) -> None:
            Down.waited += 1
            while not give_up():
                await asyncio.sleep(0.001)

    stop = {"now": False}
    work = Probe(3)

    async def main() -> int:
        async def later() -> None:
            await asyncio.sleep(0.02)
            stop["now"] = True
        asyncio.ensure_future(later())
        return await pump(work, Down(1), should_stop=lambda: stop["now"])

    assert asyncio.run(main()) == 0 and Down.waited == 1 and work.peak == 0


def test_lab_retry_asks_a_toy_kinds_errored_work_again(
        toy: tuple[Database, WorkerSettings, int, list[str]], capsys: pytest.CaptureFixture[str]
    ) -> None:
    """`lab retry` loops over the kinds: the toy kind's errored questions get new toy
    jobs of the same grid and params, and the summary counts them in its words."""
    from click.testing import CliRunner

    from console.cli.queue import retry_cmd

    db, settings, cell_id, questions = toy
    _, grid_id, jobs = KIND.insert(db, (cell_id, questions[:5]), {})
    assert grid_id is not None
    run_worker(settings, until_idle=True)
    ERRORED.update((cell_id, q) for q in questions[1:3])
    r = CliRunner().invoke(retry_cmd, ["--grid", str(grid_id), "--errored"],
                           obj={"db": settings.db_path, "config": settings.config_path})
    assert r.exit_code == 0, r.output
    assert "0 errored episode(s) in 0 new job(s), 2 errored toy result(s) in 1 new toy " \
        "job(s)" in r.output
    (new,) = [j for j in ledger.jobs_rows(db, ledger.select_jobs(db, "grid", grid_id))
              if j["id"] not in jobs]
    assert (new["kind"], new["params"], new["question_ids"]) == ("toy", "{}", questions[1:3])
