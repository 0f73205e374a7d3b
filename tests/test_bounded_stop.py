"""A stop that ends in bounded time, with calls that never answer.

A loopback OpenAI-compatible server holds every chat call open (`timeout_s = 60`). A
real `lab worker` subprocess (thread and process type) is stopped with SIGTERM, or
with SIGINT to its process group, once the server has seen every call slot in
flight. It must exit within grace + 3 s (plus room for a loaded machine), start no
call after the signal (counted by the server), store the cut episodes errored with
reason "interrupted", leave no live row and no running job, and a later
`lab worker --until-idle` must complete the grid. The same holds for every job kind
(episodes, replay probes, trace states). In-process tests pin the retry
loop's part: no retry after the stop, and the cut ends an attempt in flight.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from core.errors import ModelError
from core.models.retry import CALL_STOP, CallStop, RetryPolicy, call_with_retries
from tests.helpers.queue import age_queued_jobs, lab_here, start_lab
from tests.servers import Fault, LoopbackServer, OpenAIApp, Reply, Request, react_responder

GRACE_S = 0.5
"""The calls hang forever: the grace only delays the cut, so a short one shows the same."""
LIMIT_S = 20.0  # grace + 3 s, and generous room for a loaded machine: unfixed, it took 60 s+
SLOTS = 4

REGISTRY = """
[models.loop]
backend = "openai"
model = "loopback-model"
endpoints = ["{url}/v1"]
concurrency = {slots}
timeout_s = 60
max_retries = 4
backoff_s = 0.05
sampling = {{ temperature = 0.0 }}
"""


class ChatLog:
    """An app wrapper that notes when each chat call arrived (server side)."""

    def __init__(self, app: OpenAIApp) -> None:
        self.app = app
        self.arrivals: list[float] = []
        self._lock = threading.Lock()

    async def __call__(self, req: Request) -> Reply:
        if req.path.endswith("/chat/completions"):
            with self._lock:
                self.arrivals.append(time.monotonic())
        return await self.app(req)

    def calls(self) -> int:
        with self._lock:
            return len(self.arrivals)

    def after(self, moment: float) -> int:
        with self._lock:
            return sum(t > moment for t in self.arrivals)


def _wait(cond: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


def _query(db: Path, sql: str) -> list[tuple]:
    conn = sqlite3.connect(db)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def _queue(db: Path, config: Path, kind: str, app: OpenAIApp) -> None:
    """Queue jobs of `kind` for the loopback model, then make every chat call hang.

    A replay job probes recorded episodes: they are run first, while the model answers.
    """
    assert lab_here(db, config, "demo-set").returncode == 0
    if kind == "traces":
        out = lab_here(db, config, "traces", "collect", "--set", "demo", "--models", "loop")
        assert out.returncode == 0, out.stderr
        app.script.always = Fault("hang")
        return
    out = lab_here(db, config, "enqueue", "--models", "loop", "--conditions", "none",
                   "--regimes", "clean", "--set", "demo", "--budget", "4", "--run", "r")
    assert out.returncode == 0, out.stderr
    if kind == "replay":
        assert lab_here(db, config, "worker", "--until-idle").returncode == 0
        out = lab_here(db, config, "replay", "answer-now", "--run", "r")
        assert out.returncode == 0 and "queued" in out.stdout, out.stdout + out.stderr
    app.script.always = Fault("hang")


@pytest.mark.parametrize("kind,worker_type,how", [
    ("episodes", "thread", "term"), ("episodes", "process", "term"),
    ("episodes", "process", "int-group"), ("replay", "thread", "term"),
    ("traces", "process", "term")])
def test_a_stop_with_hung_calls_ends_in_bounded_time(tmp_path: Path, kind: str, worker_type: str,
                                                     how: str) -> None:
    app = OpenAIApp(responder=react_responder(1), record=False)
    chat = ChatLog(app)
    with LoopbackServer(chat) as server:
        db, config = tmp_path / "lab.db", tmp_path / "lab.toml"
        config.write_text(REGISTRY.format(url=server.url, slots=SLOTS))
        _queue(db, config, kind, app)
        before = chat.calls()
        log = tmp_path / "worker.log"
        proc = start_lab(db, config, "worker", "--type", worker_type, "--lease", "30",
                         "--grace", str(GRACE_S), log=log)
        try:
            _wait(lambda: chat.calls() - before >= SLOTS, 60,
                  "the worker never filled its call slots")
            time.sleep(0.3)  # nothing more may come: every slot hangs
            assert chat.calls() - before == SLOTS
            signalled = time.monotonic()
            if how == "term":
                proc.send_signal(signal.SIGTERM)
            else:  # Ctrl-C in a terminal: the whole process group gets SIGINT
                os.killpg(proc.pid, signal.SIGINT)
            code = proc.wait(timeout=60)
            took = time.monotonic() - signalled
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(10)
        print(f"{worker_type}/{how}: exited {code} after {took:.2f} s")  # noqa: T201
        assert took < LIMIT_S, log.read_text(errors="replace")[-3000:]
        assert code == 0, log.read_text(errors="replace")[-3000:]
        assert "Traceback" not in log.read_text(errors="replace")
        assert chat.after(signalled) == 0  # no call and no retry started after the signal
        if kind == "episodes":
            errors = [e for (e,) in _query(db, "SELECT error FROM episodes")]
            assert len(errors) == SLOTS and all(e.startswith("interrupted:") for e in errors), \
                errors
        assert _query(db, "SELECT count(*) FROM live_episodes") == [(0,)]
        assert _query(db, "SELECT count(*) FROM jobs WHERE state = 'running'") == [(0,)]
        if worker_type == "process":  # no child outlives the consumer
            assert not _group_alive(proc.pid)

        app.script.always = None  # the model answers again: the next worker completes the grid
        # what the stopped worker left is in lab.db and its queue file, whatever its type: a
        # thread worker in this process completes the grid (no signal reaches it)
        age_queued_jobs(db)  # the released jobs: re-sent at the worker's start
        out = lab_here(db, config, "worker", "--until-idle")
        assert out.returncode == 0, out.stderr[-2000:]
    assert {state for (state, _) in _query(db, "SELECT state, count(*) FROM jobs GROUP BY "
                                               "state")} == {"done"}
    if kind != "episodes":
        return
    complete = _query(db, "SELECT count(DISTINCT question_id) FROM episodes WHERE error IS NULL")
    assert complete == [(60,)]
    left = _query(db, "SELECT count(*) FROM episodes e WHERE e.error IS NOT NULL AND NOT EXISTS "
                      "(SELECT 1 FROM episodes c WHERE c.question_id = e.question_id AND "
                      "c.cell_id = e.cell_id AND c.error IS NULL)")
    assert left == [(0,)]  # no errored pair left: `lab retry --errored` has nothing to do
    assert _query(db, "SELECT state, count(*) FROM jobs GROUP BY state") == [("done", 2)]


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


# -- the retry loop's part, in process ---------------------------------------------------


class _Flaky(Exception):
    pass


def test_no_retry_starts_after_the_stop() -> None:
    stop = CallStop()
    attempts = 0

    async def call() -> str:
        nonlocal attempts
        attempts += 1
        stop.request()  # the signal comes while the first attempt is in flight
        raise ModelError("boom", "server_error", retryable=True)

    async def main() -> None:
        CALL_STOP.set(stop)
        await call_with_retries(call, RetryPolicy(max_retries=4, backoff_s=0.01), "m",
                                (_Flaky,))

    with pytest.raises(ModelError) as err:
        asyncio.run(main())
    assert attempts == 1 and err.value.reason == "interrupted"
    assert "server_error" in str(err.value)


def test_no_call_starts_after_the_stop() -> None:
    stop = CallStop()
    stop.request()
    attempts = 0

    async def call() -> str:
        nonlocal attempts
        attempts += 1
        return "answer"

    async def main() -> str:
        CALL_STOP.set(stop)
        return await call_with_retries(call, RetryPolicy(), "m", ())

    with pytest.raises(ModelError) as err:
        asyncio.run(main())
    assert attempts == 0 and err.value.reason == "interrupted"


def test_the_cut_ends_an_attempt_in_flight_and_a_backoff() -> None:
    async def main(hang_in: str) -> tuple[str, float]:
        stop = CallStop()
        CALL_STOP.set(stop)
        attempts = 0
        in_flight = asyncio.Event()  # set once the attempt hangs or the backoff begins

        async def call() -> str:
            nonlocal attempts
            attempts += 1
            in_flight.set()
            if hang_in == "backoff" and attempts == 1:
                raise ModelError("busy", "rate_limited", retryable=True)
            await asyncio.sleep(3600)
            return "never"

        policy = RetryPolicy(timeout_s=60, max_retries=4, backoff_s=3600, backoff_max_s=3600)
        task = asyncio.ensure_future(call_with_retries(call, policy, "m", ()))
        await in_flight.wait()  # the call task runs on to its hang or backoff first
        started = time.monotonic()
        stop.cut()
        try:
            await task
        except ModelError as exc:
            return exc.reason, time.monotonic() - started
        return "answered", 0.0

    for where in ("attempt", "backoff"):
        reason, took = asyncio.run(main(where))
        # uncut, it would wait an hour; 10 s is far above any load
        assert reason == "interrupted" and took < 10.0, (where, reason, took)


def test_without_a_stop_calls_retry_as_before() -> None:
    attempts = 0

    async def call() -> str:
        nonlocal attempts
        attempts += 1
        if attempts < 3:
            raise ModelError("busy", "server_error", retryable=True)
        return "answer"

    out = asyncio.run(call_with_retries(call, RetryPolicy(backoff_s=0.001), "m", ()))
    assert out == "answer" and attempts == 3
