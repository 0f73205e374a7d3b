"""A lab.toml pointing at a vLLM-style server and at Claude runs grids through the queue
exactly like the sim models: enqueue → worker subprocess → stored episodes → results."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest

from tests.helpers.cli import lab
from tests.helpers.queue import run_lab
from tests.servers import AnthropicApp, LoopbackServer, OpenAIApp

REGISTRY = """
[models.vllm-loop]
backend = "openai"
model = "loopback-model"
endpoints = ["{openai}/v1"]
sampling = {{ temperature = 0.7, top_p = 0.8, top_k = 20, min_p = 0.0 }}
concurrency = 8
timeout_s = 30
backoff_s = 0.01

[models.claude-loop]
backend = "anthropic"
model = "claude-loopback"
base_url = "{anthropic}"
sampling = "default"
price_per_mtok = {{ input = 1.0, output = 5.0, cache_write = 1.25, cache_read = 0.10 }}
concurrency = 4
timeout_s = 30
backoff_s = 0.01
"""


def test_real_backends_run_grids_through_the_queue(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-not-a-real-key")
    db = tmp_path / "lab.db"
    with LoopbackServer(OpenAIApp()) as oa, LoopbackServer(AnthropicApp()) as an:
        config = tmp_path / "lab.toml"
        config.write_text(REGISTRY.format(openai=oa.url, anthropic=an.url))

        def cli(*args: str) -> str:  # in-process; the worker below is a real subprocess
            code, out, err = lab(capsys, "--db", db, "--config", config, *args)
            assert code == 0, err
            return out

        cli("demo-set")
        cli("sets", "create", "d12", "--dataset", "demo", "--n", "12", "--seed", "0")
        grid_args = ("--models", "vllm-loop,claude-loop,sim-own5", "--conditions",
                     "none,enforced_rule", "--regimes", "clean,persistent", "--set", "d12",
                     "--run", "real")  # 12 questions: the path is tested, not the size
        plan = json.loads(cli("enqueue", *grid_args, "--dry-run", "--json"))
        assert plan["new_episodes"] == 3 * 2 * 2 * 12
        assert plan["estimate"]["claude-loop"]["dollars"] > 0
        cli("enqueue", *grid_args)
        work = run_lab(db, config, "worker", "--until-idle", "--workers", "2", timeout=300)
        assert work.returncode == 0, work.stderr[-2000:]
        status = json.loads(cli("status", "--json"))
        (grid,) = status["grids"]
        assert grid["stored"] == plan["new_episodes"] and grid["errored"] == 0
        rows = json.loads(cli("results", "cost", "--format", "json", "--resamples", "50"))
        dollars = {(r["model"], r["condition"]): r["estimate"] for r in rows
                   if r["measure"] == "dollars"}
        assert dollars[("claude-loop", "none")] > 0 and dollars[("vllm-loop", "none")] == 0
        conn = sqlite3.connect(db)
        served = dict(conn.execute("SELECT c.model, group_concat(DISTINCT e.server) FROM "
                                   "episodes e JOIN cells c ON c.id = e.cell_id GROUP BY c.model"))
        conn.close()
        assert served["vllm-loop"] == f"{oa.url}/v1" and served["claude-loop"] == an.url
        assert served["sim-own5"] is None
    raw = db.read_bytes() + (tmp_path / "lab.db-wal").read_bytes() if (
        tmp_path / "lab.db-wal").exists() else db.read_bytes()
    assert b"sk-test-not-a-real-key" not in raw
    assert os.environ["ANTHROPIC_API_KEY"] not in work.stderr
