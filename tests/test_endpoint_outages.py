"""An endpoint that stops answering pauses its model: calls and new episodes wait, a probe
asks the server every `probe_s`, work resumes when it answers, and only an outage longer
than `outage_wait_s` errors episodes (reason endpoint_down, retryable).

Counts come from the servers' side (calls they saw) and from lab.db; every wait for
another thread or process polls with a generous deadline (tests/helpers/waiting.py).
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import threading
from pathlib import Path

import pytest

from core.errors import ModelError
from core.models.health import ENDPOINT_DOWN, HEALTH, Change, Clock, Health
from core.models.retry import RetryPolicy
from core.store.endpoints import endpoints_down
from tests.helpers.backends import openai_spec
from tests.helpers.queue import lab_here, start_lab
from tests.helpers.waiting import wait_until
from tests.servers import LoopbackServer, OpenAIApp
from tests.servers.drive import drive
from tests.servers.http import Reply, Request

QUICK = {"probe_s": 0.05, "max_retries": 2, "backoff_s": 0.01}


class FakeClock(Clock):
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now

    def wall(self) -> float:
        return 1_700_000_000.0 + self.now

    async def sleep(self, seconds: float) -> None:
        self.now += seconds
        await asyncio.sleep(0)


class StormApp(OpenAIApp):
    """An OpenAI-compatible server that can answer every route with 503 (a failed engine:
    its health fails too), and counts what it refused."""

    def __init__(self, **kw: object) -> None:
        super().__init__(**kw)  # type: ignore[arg-type]
        self.storm = False
        self.refused = 0

    async def __call__(self, req: Request) -> Reply:
        if self.storm:
            self.refused += 1
            return Reply(503, {"object": "error", "message": "engine dead", "code": 503})
        return await super().__call__(req)


def _conn_error() -> ModelError:
    return ModelError("x: connection failed (ConnectError)", "connection", retryable=True)


def test_breaker_counts_probes_and_bounds_with_an_injected_clock() -> None:
    clock = FakeClock()
    health = Health(clock)
    changes: list[Change] = []
    health.listen(changes.append)
    answers = [False, True]  # the polls once down: the second one answers
    asked: list[float] = []

    async def prober() -> bool:
        asked.append(clock.now)
        return answers.pop(0)

    policy = RetryPolicy(down_after=3, outage_wait_s=900.0, probe_s=2.0)
    b = health.breaker("http://h:1/v1", "m")  # no probe yet: the confirmation finds none

    async def main() -> None:
        timeout = ModelError("slow", "timeout", retryable=True)
        assert not await b.failed(timeout, policy)  # a slow server is no outage
        assert not await b.failed(_conn_error(), policy)
        assert not await b.failed(_conn_error(), policy)
        assert b.failures == 2 and not b.down
        assert await b.failed(_conn_error(), policy)  # third in a row: down
        assert b.down and b.down_since == 1_700_000_000.0 + 1000.0
        clock.now += 899.0
        assert not b.expired(policy) and b.remaining(policy) == pytest.approx(1.0)
        assert b.expired(policy, since=clock.now - 901.0)  # a call waiting since earlier
        clock.now += 1.0
        assert b.expired(policy)
        health.breaker("http://h:1/v1", "m2", prober)  # a client brings its probe
        b.ensure_probe()  # polls every probe_s on the fake clock: the second poll answers
        await asyncio.wait_for(asyncio.shield(b.waiter()), 5)
        assert not b.down and asked == [1902.0, 1904.0] and b.failures == 0

    asyncio.run(main())
    assert [(c.state, c.models) for c in changes] == [("down", ("m",)), ("up", ("m", "m2"))]
    assert "connection failed" in changes[0].error


def test_failures_while_health_answers_are_not_an_outage() -> None:
    health = Health(FakeClock())
    changes: list[Change] = []
    health.listen(changes.append)
    asked: list[int] = []

    async def alive() -> bool:
        asked.append(1)
        return True

    b = health.breaker("http://h:2/v1", "m", alive)
    err = ModelError("x: HTTP 500", "server_error", retryable=True)
    policy = RetryPolicy(down_after=2)

    async def main() -> None:
        for _ in range(5):
            assert not await b.failed(err, policy)

    asyncio.run(main())
    assert not b.down and not changes  # never marked down, not even for a moment
    assert len(asked) == 2  # probed at the 2nd and the 4th failure in a row


@pytest.mark.timeout(120)
def test_outage_past_outage_wait_s_errors_episodes_as_endpoint_down_and_they_rerun(db_path: Path
                                                                                  ) -> None:
    app = OpenAIApp()
    with LoopbackServer(app) as srv:
        port, url = srv.port, srv.url
    spec = openai_spec(url, outage_wait_s=1.0, concurrency=4, **QUICK)
    stored, rows = drive(spec, db_path, n=6)
    assert stored == 6 and all(r["error"].startswith(f"{ENDPOINT_DOWN}: ") for r in rows), \
        [r["error"] for r in rows]
    assert HEALTH.breaker(f"{url}/v1").down
    with LoopbackServer(app, port=port):  # back on the same port: the errored pairs run again
        stored, rows = drive(spec, db_path, n=6)
    assert stored == 6 and sum(r["error"] is None for r in rows) == 6
    assert not HEALTH.breaker(f"{url}/v1").down


@pytest.mark.timeout(120)
def test_5xx_storm_marks_down_waits_and_recovers(db_path: Path) -> None:
    app = StormApp(delay_s=0.01)
    app.storm = True
    changes: list[Change] = []
    HEALTH.listen(changes.append)
    with LoopbackServer(app) as srv:
        url = f"{srv.url}/v1"

        def end_storm() -> None:  # once the endpoint is down and calls wait on it
            wait_until(lambda: HEALTH.breaker(url).down, "the endpoint marked down")
            wait_until(lambda: app.refused >= 12, "a few probes refused during the storm")
            app.storm = False

        ender = threading.Thread(target=end_storm, daemon=True)
        ender.start()
        # one episode at a time: the failure that marks the endpoint down is its last
        # retry, so only the wait (not the retry count) keeps it from erroring
        stored, rows = drive(openai_spec(srv.url, concurrency=1, **QUICK), db_path, n=8)
        ender.join(10)
    assert stored == 8 and all(r["error"] is None for r in rows), [r["error"] for r in rows]
    assert [c.state for c in changes] == ["down", "up"] and "HTTP 503" in changes[0].error
    assert app.calls >= 8  # every episode was served once the storm ended


@pytest.mark.timeout(120)
def test_two_endpoints_one_down_work_goes_to_the_other(db_path: Path) -> None:
    dead, live = StormApp(), OpenAIApp()
    dead.storm = True
    with LoopbackServer(dead) as a, LoopbackServer(live) as b:
        stored, rows = drive(openai_spec(a.url, b.url, concurrency=4, **QUICK), db_path, n=8)
        assert HEALTH.breaker(f"{a.url}/v1").down and not HEALTH.breaker(f"{b.url}/v1").down
    assert stored == 8 and all(r["error"] is None for r in rows), [r["error"] for r in rows]
    assert {r["server"] for r in rows} == {f"{b.url}/v1"}
    assert len({m["messages"][1]["content"] for m in live.requests}) == 8


REGISTRY = """
[models.vllm-loop]
backend = "openai"
model = "loopback-model"
endpoints = ["{url}/v1"]
sampling = {{ temperature = 0.7, top_p = 0.8 }}
concurrency = 8
timeout_s = 30
max_retries = 2
backoff_s = 0.01
probe_s = 0.1
"""
OUTAGE_S = 3.0
"""How long the port refuses connections: 30 probe periods, and a hundred times what a
call's retries take (2 x 0.01 s backoff), so a call that spent its retries, or an
episode not kept waiting, would be stored errored well within it. Nothing asserted
depends on its length (any outage under `outage_wait_s`, 900 s, must error nothing)."""


@pytest.mark.timeout(240)
def test_a_long_refusal_mid_grid_errors_nothing_and_the_grid_completes(tmp_path: Path) -> None:
    db, config, log = tmp_path / "lab.db", tmp_path / "lab.toml", tmp_path / "worker.log"
    app = OpenAIApp(delay_s=0.02)
    server = LoopbackServer(app).start()
    port = server.port
    config.write_text(REGISTRY.format(url=server.url))
    for args in (("demo-set",), ("sets", "create", "d12", "--dataset", "demo", "--n", "12",
                                 "--seed", "0"),
                 ("enqueue", "--models", "vllm-loop", "--conditions",
                  "none,enforced_rule,permit,budget", "--regimes", "clean,persistent",
                  "--set", "d12", "--run", "outage")):
        done = lab_here(db, config, *args)
        assert done.returncode == 0, done.stderr
    conn = sqlite3.connect(db, timeout=30)

    def count(sql: str) -> int:
        return int(conn.execute(sql).fetchone()[0])

    worker = start_lab(db, config, "worker", "--until-idle", log=log)
    try:
        wait_until(lambda: count("SELECT count(*) FROM episodes") >= 30, "30 episodes stored",
                   timeout=120)
        server.stop()  # the port now refuses connections
        before = app.calls
        status = wait_until(lambda: json.loads(lab_here(db, config, "status", "--json").stdout)
                            ["endpoints_down"], "lab status to show the endpoint down",
                            timeout=120, poll_s=0.2)
        assert [d["endpoint"] for d in status] == [f"{server.url}/v1"]
        shown = lab_here(db, config, "status").stdout
        assert f"endpoint {server.url}/v1 down since " in shown
        threading.Event().wait(OUTAGE_S)  # the outage: refused connections meanwhile
        assert count("SELECT count(*) FROM episodes WHERE error IS NOT NULL") == 0
        server = LoopbackServer(app, port=port).start()  # back on the same port
        assert worker.wait(180) == 0, log.read_text()[-3000:]
    finally:
        if worker.poll() is None:
            worker.kill()
        server.stop()
    assert count("SELECT count(*) FROM episodes") == 96
    assert count("SELECT count(*) FROM episodes WHERE error IS NOT NULL") == 0
    assert app.calls > before  # the server answered the episodes that waited
    with sqlite3.connect(db) as c:
        from core.store import connect
        assert not endpoints_down(connect(db))
        kinds = [k for (k,) in c.execute("SELECT kind FROM events WHERE kind LIKE 'endpoint%'")]
    assert kinds[:1] == ["endpoint_down"] and "endpoint_up" in kinds
    conn.close()


def test_status_readers_show_an_endpoint_down_only_while_a_live_worker_sees_it(db_path: Path
                                                                              ) -> None:
    from console.screens.dashboard import read_dashboard
    from console.screens.jobs import read_jobs
    from core import store
    from core.store import jobs as ledger
    from core.store.endpoints import forget_worker, record_change

    db = store.connect(db_path)
    ledger.register_worker(db, "host:1")
    ledger.register_worker(db, "host:2")
    now = __import__("time").time()
    url = "http://10.0.0.5:8000/v1"
    record_change(db, "host:1", url, "down", now - 60, ("qwen3-8b",), "connection failed")
    record_change(db, "host:2", url, "down", now - 30, ("qwen3-8b-think",), "HTTP 503")
    (down,) = endpoints_down(db, now=now)
    assert (down.endpoint, down.models, down.workers) == (url, ("qwen3-8b", "qwen3-8b-think"), 2)
    line = down.line()
    assert line.startswith(f"endpoint {url} down since {down.since_local()} (qwen3-8b, ")
    assert read_dashboard(db_path, 60.0, now).down == (down,)
    assert read_jobs(db_path, set(), now).down == [down]
    assert not endpoints_down(db, now=now + 3600)  # the workers' heartbeats went silent
    record_change(db, "host:1", url, "up", now, ("qwen3-8b",))
    forget_worker(db, "host:2")
    assert not endpoints_down(db, now=now)
    kinds = [k for (k,) in db.conn.execute("SELECT kind FROM events ORDER BY id")]
    assert kinds == ["endpoint_down", "endpoint_down", "endpoint_up"]
