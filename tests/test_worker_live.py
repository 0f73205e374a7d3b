"""core.runner.LiveBuffer: live rows and finished episodes committed together per flush."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from sqlite_utils import Database

from core import store
from core.conditions import parse_condition
from core.data import Question
from core.demo_data import demo_questions
from core.episode import EpisodeResult, Step
from core.models.registry import builtin_models, make_client
from core.regimes import ForeignPool, parse_regime
from core.runner import CellSpec, LiveBuffer, run_one, setup_for


def _episode(db: Database, q: Question) -> tuple[int, EpisodeResult, list[Step]]:
    cell = CellSpec(builtin_models()["sim-own5"], parse_condition("none"),
                    parse_regime("persistent"), None, 8, 0)
    cell_id = store.ensure_cell(db, store.ensure_run(db, "live"), cell.columns())
    client = make_client(cell.model)
    steps: list[Step] = []
    result = asyncio.run(run_one(setup_for(cell, q, ForeignPool(demo_questions()), client),
                                 client, steps.append))
    return cell_id, result, steps


def _count(db: Database, table: str) -> int:
    return db.conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]


def test_a_running_episode_is_live_after_a_flush_and_gone_once_stored(db_path: Path) -> None:
    db = store.connect(db_path)
    q = demo_questions()[0]
    store.insert_questions(db, [q])
    cell_id, result, steps = _episode(db, q)
    buf = LiveBuffer(db, cell_id, "label")
    token = buf.start(q.id)
    buf.step(token, steps[0])
    assert _count(db, "live_episodes") == 0  # nothing before the flush
    assert buf.flush() == 0
    assert _count(db, "live_episodes") == 1 and _count(db, "live_steps") == 1
    for s in steps[1:]:
        buf.step(token, s)
    buf.finish(token, result)
    assert buf.flush() == 1
    assert _count(db, "live_episodes") == 0 and _count(db, "live_steps") == 0
    assert _count(db, "episodes") == 1 and _count(db, "steps") == len(steps)


def test_an_episode_that_ends_between_flushes_never_gets_a_live_row(db_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch
                                                                   ) -> None:
    db = store.connect(db_path)
    started = []
    real = store.live_start

    def counted(*a: Any, **k: Any) -> Any:
        started.append(a)
        return real(*a, **k)

    monkeypatch.setattr(store, "live_start", counted)
    q = demo_questions()[1]
    store.insert_questions(db, [q])
    cell_id, result, steps = _episode(db, q)
    buf = LiveBuffer(db, cell_id, "label")
    token = buf.start(q.id)
    for s in steps:
        buf.step(token, s)
    buf.finish(token, result)
    other = buf.start("gone")
    buf.drop(other)
    assert buf.flush() == 1
    assert _count(db, "live_episodes") == 0 and _count(db, "episodes") == 1
    assert started == []
