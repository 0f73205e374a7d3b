"""Replay jobs through real `lab worker` processes against a counting loopback server.

Judgment probes share the worker's slots for the model with its other jobs and hold
one host-wide call slot each (jobs.slots): however many replay jobs the workers take
at once, the calls in flight to the model never pass its `concurrency`.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from tests.helpers.gates import FillGate
from tests.helpers.queue import lab_here, start_lab
from tests.servers import LoopbackServer, react_responder

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


def test_replay_jobs_of_two_workers_never_exceed_the_models_concurrency(tmp_path: Path) -> None:
    app = FillGate(6, delay_s=0.05, responder=react_responder(1), record=False)
    with LoopbackServer(app) as server:
        db, config = tmp_path / "lab.db", tmp_path / "lab.toml"
        config.write_text(REGISTRY.format(url=server.url, concurrency=6))
        assert lab_here(db, config, "demo-set").returncode == 0
        out = lab_here(db, config, "enqueue", "--models", "loop", "--conditions", "none",
                      "--regimes", "clean", "--set", "demo", "--budget", "4", "--seeds", "0,1",
                      "--run", "r")
        assert out.returncode == 0, out.stderr
        assert lab_here(db, config, "worker", "--until-idle").returncode == 0  # the episodes
        plan = lab_here(db, config, "replay", "judgments", "--run", "r", "--json")
        assert plan.returncode == 0, plan.stderr
        planned = json.loads(plan.stdout)["calls"]
        assert planned >= 120 and json.loads(plan.stdout)["jobs"] >= 4  # jobs of ≤ 50 questions
        app.calls = app.peak = app.waiting = 0
        app.full = None  # the replay's calls fill the cap anew
        log = tmp_path / "worker.log"
        workers = [start_lab(db, config, "worker", "--until-idle", "--workers", "2",
                             "--type", kind, log=log) for kind in ("thread", "process")]
        for w in workers:
            assert w.wait(timeout=240) == 0, log.read_text()[-2000:]
    conn = sqlite3.connect(db)
    n, distinct, errors = conn.execute(
        "SELECT count(*), count(DISTINCT episode_id || '|' || t), sum(error IS NOT NULL) "
        "FROM probes WHERE kind = 'judgment'").fetchone()
    assert (n, distinct, errors) == (planned, planned, 0)
    assert app.calls == planned  # every probe asked once
    assert app.peak == 6  # the cap was reached and never passed, by both workers together
