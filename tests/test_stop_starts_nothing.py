"""After a stop signal no episode, model call or retry starts: counted by the server.

One loopback server and one lab.db serve a series of stops in a row (4 by default,
`LAB_STOP_ROUNDS=20` for the deep run docs/queue.md names). Each stop starts a real
`lab worker` (thread and process type; SIGTERM to the worker, or SIGINT to its process
group as Ctrl-C sends it) against a model with two call slots: the worker's first call
hangs (a call in flight when the signal comes), and the other slot's calls are
answered one after another. At the K-th call the server itself sends the signal,
waits until the kernel has delivered it to the worker process (its pending set in
/proc is empty), and only then answers that call, so the episode's next turn, or the
next episode, could start only after the signal. From then on the server counts
calls: it must see none. No clock decides anything: the order is the server's.

The worker is stopped before its Python-level handler may have run (its main thread
can be busy in SQLite): what lab promises is that delivery of the signal is enough
(`jobs.stop_signal`).

The rounds cycle through the four combinations, (thread, process) x (SIGTERM, SIGINT to
the group), each with its own K (2-5): the default 4 stops each combination once (a worker
that starts a call after the signal is red in its first round); the deep run repeats
them for the rare race (before the stop-signal check, 2-3 of 20 stops of
process workers sent one).
"""

from __future__ import annotations

import os
import signal
import sqlite3
import threading
from pathlib import Path

import pytest

from tests.helpers.queue import age_queued_jobs, lab_here, start_lab
from tests.servers import LoopbackServer, OpenAIApp, Reply, Request, react_responder

ROUNDS = int(os.environ.get("LAB_STOP_ROUNDS", "4"))
"""How many stops in a row (each a real `lab worker`): 4 here, 20 for the deep run."""
STOPS = [(kind, how, k) for i in range(ROUNDS)
         for kind, how, k in [(("thread", "process")[i % 2], ("term", "int-group")[i // 2 % 2],
                               2 + i % 4)]]
REGISTRY = """
[models.loop]
backend = "openai"
model = "loopback-model"
endpoints = ["{url}/v1"]
concurrency = 2
timeout_s = 60
max_retries = 2
backoff_s = 0.01
sampling = {{ temperature = 0.0 }}
"""


@pytest.mark.parametrize("grace", ["nan", "inf", "-1", "1e9", "601"])
def test_a_grace_that_is_no_bounded_time_is_refused_in_one_line(tmp_path: Path, grace: str) -> None:
    config = tmp_path / "lab.toml"
    config.write_text("")
    out = lab_here(tmp_path / "lab.db", config, "worker", "--until-idle", "--grace", grace)
    assert out.returncode == 2 and out.stderr.count("\n") == 1, out.stderr
    assert "--grace" in out.stderr and "Traceback" not in out.stderr


def _pending(pid: int) -> int:
    """The signals pending for the process `pid` (process-wide and its main thread)."""
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    masks = [int(line.split()[1], 16) for line in text.splitlines()
             if line.startswith(("ShdPnd:", "SigPnd:"))]
    return sum(masks)


class StopAtCall:
    """Answers chat calls; hangs the first of a round; signals the worker at call K."""

    def __init__(self, app: OpenAIApp) -> None:
        self.app = app
        self.lock = threading.Lock()
        self.round: tuple[int, str, int] | None = None  # (worker pid, how, K)
        self.seen = 0
        self.after = 0
        self.signalled = threading.Event()

    def start(self, pid: int, how: str, k: int) -> None:
        with self.lock:
            self.round, self.seen, self.after = (pid, how, k), 0, 0
            self.signalled.clear()

    def answer_all(self) -> None:
        """From now on answer every call (the worker that completes the grid)."""
        with self.lock:
            self.round = None
            self.signalled.clear()

    async def __call__(self, req: Request) -> Reply:
        if not req.path.endswith("/chat/completions") or self.round is None:
            return await self.app(req)
        with self.lock:
            if self.signalled.is_set():
                self.after += 1  # a call that started after the signal
                return Reply(action="hang")
            self.seen += 1
            n, round_ = self.seen, self.round
        assert round_ is not None
        pid, how, k = round_
        if n == 1:
            return Reply(action="hang")  # in flight when the signal comes: cut after grace
        if n == k:
            self.signalled.set()
            if how == "term":
                os.kill(pid, signal.SIGTERM)
            else:
                os.killpg(pid, signal.SIGINT)
            while _pending(pid):  # the kernel has handed the signal to the process
                await _yield()
        return await self.app(req)


async def _yield() -> None:
    import asyncio

    await asyncio.sleep(0)


@pytest.mark.timeout(900)
def test_stops_start_no_call_after_the_signal(tmp_path: Path) -> None:
    app = OpenAIApp(responder=react_responder(3), record=False)
    server_app = StopAtCall(app)
    with LoopbackServer(server_app) as server:
        db, config = tmp_path / "lab.db", tmp_path / "lab.toml"
        config.write_text(REGISTRY.format(url=server.url))
        assert lab_here(db, config, "demo-set").returncode == 0
        out = lab_here(db, config, "enqueue", "--models", "loop", "--conditions", "none",
                       "--regimes", "clean,persistent", "--set", "demo", "--budget", "6",
                       "--run", "r")
        assert out.returncode == 0, out.stderr
        leaks = []
        for i, (kind, how, k) in enumerate(STOPS):
            age_queued_jobs(db)  # the jobs the last stop released: taken at the start
            log = tmp_path / f"worker-{i}.log"
            proc = start_lab(db, config, "worker", "--type", kind, "--lease", "30",
                             "--grace", "1", log=log)
            server_app.start(proc.pid, how, k)
            try:
                code = proc.wait(timeout=120)
            finally:
                if proc.poll() is None:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait(10)
            assert server_app.signalled.is_set(), log.read_text()[-2000:]
            assert code == 0, log.read_text()[-2000:]
            if server_app.after:
                leaks.append((i, kind, how, k, server_app.after))
        assert not leaks, f"calls after the signal (stop, type, how, K, calls): {leaks}"
        server_app.answer_all()
        age_queued_jobs(db)
        done = lab_here(db, config, "worker", "--until-idle")  # no signal: in this process
        assert done.returncode == 0, done.stderr[-2000:]
    conn = sqlite3.connect(db)
    try:
        states = dict(conn.execute("SELECT state, count(*) FROM jobs GROUP BY state"))
    finally:
        conn.close()
    assert set(states) == {"done"}
