"""A new backend is one module and one registry line (CONTRIBUTING.md, "A backend").

The toy oracle (tests/helpers/toy_backend.py) is registered the way a real backend is
and then used like any other model: lab.toml validates its table from the dataclass,
`lab models` lists it, `lab try` runs an episode and the queue runs a grid of it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from console.cli import main
from core import store
from core.demo_set import ensure_demo_set
from core.errors import ConfigError
from core.models.backends import BACKENDS, Backend, register
from core.models.registry import load_registry
from jobs.control import enqueue_grid
from jobs.grid import GridRequest
from jobs.settings import WorkerSettings
from jobs.worker import run_worker
from tests.helpers.toy_backend import OracleClient, OracleConfig

TOML = """
[models.oracle]
backend = "oracle"
searches = 2
concurrency = 3
"""


@pytest.fixture()
def oracle() -> Iterator[Backend]:
    """The toy backend registered for one test (the line a new backend adds)."""
    backend = register(Backend("oracle", OracleConfig, OracleClient))
    yield backend
    del BACKENDS["oracle"]


@pytest.fixture()
def config(tmp_path: Path) -> Path:
    path = tmp_path / "lab.toml"
    path.write_text(TOML, encoding="utf-8")
    return path


def test_its_table_is_validated_from_its_dataclass(oracle: Backend, tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    for body, message in [
        ("", "missing field 'searches' (backend 'oracle' needs searches)"),
        ("searches = 9", "searches must be in [0, 8], got 9"),
        ("searches = true", "searches must be an integer in [0, 8], got True"),
        ("searches = 1\nconcurrency = 0", "concurrency must be in [1, 4096], got 0"),
        ("searches = 1\nhedge = 3", "hedge must be a string, got 3"),
        ("searches = 1\nmodel = \"x\"", "unknown field 'model' for backend 'oracle' "
                                        "(known: backend, concurrency, hedge, searches)"),
    ]:
        path.write_text(f'[models.o]\nbackend = "oracle"\n{body}\n', encoding="utf-8")
        with pytest.raises(ConfigError) as info:
            load_registry(path)
        assert str(info.value) == f"{path}: models.o: {message}"


def test_its_hash_leaves_out_serving_settings(oracle: Backend, config: Path) -> None:
    spec = load_registry(config)["oracle"]
    assert spec.concurrency == 3 and spec.in_process
    assert spec.spec() == {"name": "oracle", "backend": "oracle", "searches": 2}


def test_an_unregistered_backend_is_one_line(config: Path) -> None:
    with pytest.raises(ConfigError, match="unknown backend 'oracle' \\(one of: openai, "
                                          "anthropic, sim\\)"):
        load_registry(config)


def test_a_name_registers_once(oracle: Backend) -> None:
    with pytest.raises(ValueError, match="registered already"):
        register(Backend("oracle", OracleConfig, OracleClient))


def test_lab_lists_it_and_runs_an_episode(oracle: Backend, config: Path, db_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--db", str(db_path), "--config", str(config), "models"]) == 0
    assert "oracle                 oracle     answers after 2 searches" in capsys.readouterr().out
    assert main(["--db", str(db_path), "--config", str(config), "try", "--model", "oracle",
                 "--condition", "none", "--regime", "clean", "--question", "demo-001"]) == 0
    out = capsys.readouterr().out
    assert out.count("action: search[") == 2
    assert "answer: 'Mourford' at action 3   gold: 'Mourford'   F1 1.00   correct" in out


def test_the_queue_runs_a_grid_of_it(oracle: Backend, config: Path, db_path: Path) -> None:
    db = store.connect(db_path)
    ensure_demo_set(db)
    settings = WorkerSettings(db_path=db_path, worker_id="recipe-host:1", config_path=config)
    plan, _, jobs = enqueue_grid(db, settings, GridRequest(
        models=("oracle",), conditions=("none",), regimes=("clean",), question_set="demo",
        run="oracle"), load_registry(config))
    assert jobs >= 1 and plan.summary()["sim_episodes"] == plan.episodes  # in process
    assert plan.estimate() == {}  # computed here: nothing to pay for
    run_worker(settings, until_idle=True)
    db.conn.close()
    with sqlite3.connect(db_path) as conn:
        rows = conn.execute("SELECT e.answered, e.em, e.tool_calls FROM episodes e JOIN cells c "
                            "ON c.id = e.cell_id WHERE c.model = 'oracle'").fetchall()
    assert len(rows) == plan.episodes > 0
    assert all(answered == 1 and em == 1 and calls == 2 for answered, em, calls in rows)
