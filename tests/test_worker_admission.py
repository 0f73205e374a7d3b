"""A worker admits as many calls as its model's `concurrency` allows, and no more.

A model with a high concurrency (a few large GPU boxes) must see that many calls in
flight from one `lab worker` with its default options: no smaller bound hidden in the
worker's admission, job sizing or connection pool. The server holds every call until
the model's whole concurrency is in flight (or the test gives up), so the count comes
from the server's side and no timing is measured.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest

from core import store
from core.demo_set import ensure_demo_set
from core.models.registry import load_registry
from jobs.control import enqueue_grid
from jobs.grid import GridRequest
from jobs.settings import WorkerSettings
from tests.helpers.queue import start_lab
from tests.helpers.waiting import wait_until
from tests.servers import LoopbackServer, OpenAIApp, react_responder

CAP = 300
"""The model's concurrency: above the 256 a worker used to stop at."""
SEEDS = 5
"""Five seeds of the 60 demo questions: 300 episodes, one call each."""


class GateApp(OpenAIApp):
    """Holds each chat call until `target` are held at once (or `release`), counting them."""

    def __init__(self, target: int) -> None:
        super().__init__(responder=react_responder(0), record=False)
        self.target = target
        self.held = 0
        self.held_peak = 0
        self.reached = threading.Event()
        self._gate: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    async def _answer(self, body: dict[str, Any], fault: Any) -> Any:
        if self._gate is None:
            self._gate, self._loop = asyncio.Event(), asyncio.get_running_loop()
        self.held += 1
        self.held_peak = max(self.held_peak, self.held)
        try:
            if self.held >= self.target:
                self.reached.set()
                self._gate.set()
            await self._gate.wait()
            return await super()._answer(body, fault)
        finally:
            self.held -= 1

    def release(self) -> None:
        """Let every held call answer (from the test's thread)."""
        if self._loop is not None and self._gate is not None:
            self._loop.call_soon_threadsafe(self._gate.set)


def _queue(tmp: Path, url: str) -> tuple[Path, Path]:
    db_path, config = tmp / "lab.db", tmp / "lab.toml"
    config.write_text(f'[models.wide]\nbackend = "openai"\nmodel = "loopback-model"\n'
                      f'endpoints = ["{url}/v1"]\nconcurrency = {CAP}\ntimeout_s = 600\n'
                      f'max_retries = 0\nsampling = {{ temperature = 0.0 }}\n')
    db = store.connect(db_path)
    ensure_demo_set(db)
    enqueue_grid(db, WorkerSettings(db_path=db_path, config_path=config),
                 GridRequest(models=("wide",), conditions=("none",), regimes=("clean",),
                             question_set="demo", seeds=tuple(range(SEEDS)), run="wide"),
                 load_registry(config))
    db.conn.close()
    return db_path, config


@pytest.mark.timeout(400)
def test_a_worker_with_default_options_fills_the_models_whole_concurrency(tmp_path: Path) -> None:
    app = GateApp(CAP)
    with LoopbackServer(app) as srv:
        db_path, config = _queue(tmp_path, srv.url)
        worker = start_lab(db_path, config, "worker", "--until-idle",
                           log=tmp_path / "worker.log")
        try:
            reached = app.reached.wait(180)  # generous: on an idle machine a few seconds
        finally:
            app.release()
        worker.wait(180)
    log = (tmp_path / "worker.log").read_text()
    assert reached, f"the server saw at most {app.held_peak} calls in flight of {CAP}"
    assert app.held_peak == CAP, app.held_peak  # and never more than the cap
    assert worker.returncode == 0, log
    stored = wait_until(lambda: sqlite3.connect(db_path).execute(
        "SELECT count(*) FROM episodes WHERE error IS NULL").fetchone()[0], "episodes")
    assert stored == SEEDS * 60 and app.calls == SEEDS * 60
