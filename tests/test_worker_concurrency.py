"""The model's concurrency through real `lab worker` processes against a counting server.

- two worker processes never have more calls in flight to a model than its
  `concurrency`, together (the host-wide slots of jobs.slots), and use all of it;
- a worker keeps its batch full across jobs: a job's straggler does not stop the next
  job's questions from starting.
"""

from __future__ import annotations

import asyncio
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from core.demo_data import demo_questions
from jobs.slots import CallSlots
from tests.helpers.gates import FillGate
from tests.helpers.queue import ROOT, lab_here, start_lab
from tests.helpers.waiting import async_until
from tests.servers import LoopbackServer, OpenAIApp, react_responder
from tests.servers.faults import Fault
from tests.servers.http import Reply

REGISTRY = """
[models.loop]
backend = "openai"
model = "loopback-model"
endpoints = ["{url}/v1"]
concurrency = {concurrency}
timeout_s = 30
max_retries = 0
sampling = {{ temperature = 0.0 }}
"""


def _lab(tmp_path: Path, url: str, concurrency: int) -> tuple[Path, Path]:
    db, config = tmp_path / "lab.db", tmp_path / "lab.toml"
    config.write_text(REGISTRY.format(url=url, concurrency=concurrency))
    assert lab_here(db, config, "demo-set").returncode == 0
    return db, config


def _enqueue(db: Path, config: Path, *extra: str) -> None:
    out = lab_here(db, config, "enqueue", "--models", "loop", "--conditions", "none",
                  "--regimes", "clean", "--set", "demo", "--budget", "4", *extra)
    assert out.returncode == 0, out.stderr


def test_two_worker_processes_never_exceed_the_models_concurrency(tmp_path: Path) -> None:
    app = FillGate(6, delay_s=0.05, responder=react_responder(2), record=False)
    with LoopbackServer(app) as server:
        db, config = _lab(tmp_path, server.url, concurrency=6)
        _enqueue(db, config, "--seeds", "0,1")  # 120 episodes, 4 jobs, ~360 calls
        log = tmp_path / "worker.log"
        workers = [start_lab(db, config, "worker", "--until-idle", "--workers", "2",
                             "--type", kind, log=log) for kind in ("thread", "process")]
        for w in workers:
            assert w.wait(timeout=240) == 0, log.read_text()[-2000:]
    conn = sqlite3.connect(db)
    n, distinct, errors = conn.execute("SELECT count(*), count(DISTINCT cell_id || question_id), "
                                       "sum(error IS NOT NULL) FROM episodes").fetchone()
    assert (n, distinct, errors) == (120, 120, 0)
    assert app.calls >= 120 * 3
    assert app.peak == 6  # the cap was reached and never passed, by both workers together


def test_a_jobs_straggler_does_not_hold_back_the_next_job(tmp_path: Path) -> None:
    slow_question = "demo-007"  # in the first job (questions 1–50); the second has 51–60
    (text,) = [q.question for q in demo_questions() if q.id == slow_question]

    second_job = [f"demo-{i:03d}" for i in range(51, 61)]

    def second_job_stored() -> bool:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)
        try:
            return conn.execute("SELECT count(*) FROM episodes WHERE question_id IN "
                                f"({','.join('?' * 10)})", second_job).fetchone()[0] == 10
        finally:
            conn.close()

    class Straggler(OpenAIApp):
        """The straggler's calls answer once the next job is stored; a worker that held
        that job back would leave them waiting 60 s, and the order below would fail."""

        async def _answer(self, body: dict[str, Any], fault: Fault | None) -> Reply:
            if any(text in str(m.get("content")) for m in body["messages"][:2]):
                try:
                    await async_until(second_job_stored, "the second job", timeout=60,
                                      poll_s=0.05)
                except AssertionError:
                    pass
            return await super()._answer(body, fault)

    app = Straggler(delay_s=0.01, responder=react_responder(1), record=False)
    with LoopbackServer(app) as server:
        db, config = _lab(tmp_path, server.url, concurrency=16)
        _enqueue(db, config)  # 60 questions: jobs of 50 and 10
        out = lab_here(db, config, "worker", "--until-idle", "--workers", "1")
        assert out.returncode == 0, out.stderr[-2000:]
    conn = sqlite3.connect(db)
    rows = dict(conn.execute("SELECT question_id, finished_at FROM episodes"))
    assert len(rows) == 60
    assert app.calls >= 60 * 2
    # every question of the second job ended while the first job's straggler still ran
    assert max(rows[q] for q in second_job) < rows[slow_question]
    assert conn.execute("SELECT count(*) FROM jobs WHERE state = 'done'").fetchone()[0] == 2


HOLDER = """
import asyncio, sys, time
from pathlib import Path
from core.demo_data import demo_questions
from jobs.slots import CallSlots

async def main():
    slots = CallSlots(Path(sys.argv[1]), 3)
    held = [await slots.acquire() for _ in range(3)]
    print("held", flush=True)
    await asyncio.sleep(30)

asyncio.run(main())
"""


def test_call_slots_are_shared_by_processes_and_freed_when_one_dies(tmp_path: Path) -> None:
    path = tmp_path / "calls.lock"
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(path)], cwd=ROOT,
                              stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None
    try:
        assert holder.stdout.readline().strip() == "held"

        async def take() -> int:
            slots = CallSlots(path, 3, poll_s=0.01)
            with pytest.raises(TimeoutError):  # all three are held by the other process
                async with asyncio.timeout(0.3):
                    await slots.acquire()
            holder.kill()  # kill -9: the kernel drops its locks
            async with asyncio.timeout(60):
                got = [await slots.acquire() for _ in range(3)]
            slots.close()
            return len(set(got))

        assert asyncio.run(take()) == 3
    finally:
        holder.kill()
        holder.wait()


def test_try_acquire_takes_a_free_slot_at_once_and_never_one_a_waiting_call_is_owed(tmp_path: Path
                                                                                   ) -> None:
    # a model call takes its slot with try_acquire and enters the cut-able wait only
    # when none is free; it must not overtake a call already waiting for one
    async def main() -> None:
        slots = CallSlots(tmp_path / "calls.lock", 2)
        first, second = slots.try_acquire(), slots.try_acquire()
        assert {first, second} == {0, 1} and slots.in_flight == 2
        assert slots.try_acquire() is None  # all held: the caller must wait
        waiting = asyncio.ensure_future(slots.acquire())
        await asyncio.sleep(0)  # it queues as a waiter
        assert second is not None
        slots.release(second)  # handed straight to the waiting call
        assert await waiting == second
        slots.close()
        other = CallSlots(tmp_path / "calls2.lock", 1)
        held = other.try_acquire()
        queued = asyncio.ensure_future(other.acquire())
        await asyncio.sleep(0)
        assert held is not None
        other._give_back(held)  # freed to the host while a call here still waits
        assert other.try_acquire() is None  # owed to the waiting call, not taken
        assert await asyncio.wait_for(queued, 60) == held
        other.close()

    asyncio.run(main())
