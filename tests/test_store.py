"""lab.db: schema version, uniqueness, atomic writes, live steps across processes."""

from __future__ import annotations

import asyncio
import sqlite3
import subprocess
import sys
import textwrap

import pytest

from core import store
from core.conditions import parse_condition
from core.errors import StoreError
from core.models.registry import builtin_models, make_client
from core.regimes import ForeignPool, parse_regime
from core.runner import CellSpec, run_one, run_questions, setup_for
from core.schema import SCHEMA_VERSION
from tests.helpers import make_pool

FIXED_TABLES = {"questions", "question_sets", "amendments", "deviations", "runs", "cells", "jobs",
                "episodes", "steps"}


def test_schema_tables_wal_and_version(db_path):
    db = store.connect(db_path)
    assert FIXED_TABLES <= set(db.table_names())
    assert db.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert store.schema_version(db) == SCHEMA_VERSION
    db.conn.close()
    store.connect(db_path)  # reopening is idempotent


def test_newer_schema_is_refused(db_path):
    store.connect(db_path).conn.close()
    conn = sqlite3.connect(db_path)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    with pytest.raises(StoreError, match="newer than this lab knows"):
        store.connect(db_path)


def test_not_a_database(tmp_path):
    bad = tmp_path / "x.db"
    bad.write_text("hello, I am not sqlite" * 100)
    with pytest.raises(StoreError, match="not a usable lab database"):
        store.connect(bad)


def _cell(db, model="sim-own5", condition="enforced_rule", regime="persistent"):
    cell = CellSpec(builtin_models()[model], parse_condition(condition), parse_regime(regime),
                    None, 8, 0)
    run_id = store.ensure_run(db, "t")
    return cell, store.ensure_cell(db, run_id, cell.columns())


def _one_episode(db_path):
    """A fresh lab.db, one sim cell and one finished (not yet stored) episode of it."""
    db = store.connect(db_path)
    pool = make_pool()
    store.insert_questions(db, pool)
    cell, cell_id = _cell(db)
    client = make_client(cell.model)
    result = asyncio.run(run_one(setup_for(cell, pool[0], ForeignPool(pool), client), client))
    return db, cell_id, result


def test_episode_unique_per_cell_and_question(db_path):
    db, cell_id, result = _one_episode(db_path)
    first = store.write_episodes(db, [(cell_id, result, None)])
    again = store.write_episodes(db, [(cell_id, result, None)])
    assert first[0] is not None and again == [None]
    assert store.count(db, "episodes") == 1
    assert store.count(db, "steps") == len(result.steps)
    assert store.episode_steps(db, first[0])[0].obs_ref == result.steps[0].obs_ref


def test_episode_and_steps_are_one_transaction(db_path):
    db, cell_id, result = _one_episode(db_path)
    result.steps.append(result.steps[-1])  # duplicate (episode_id, t): the insert must fail
    with pytest.raises(sqlite3.IntegrityError):
        store.write_episodes(db, [(cell_id, result, None)])
    assert store.count(db, "episodes") == 0 and store.count(db, "steps") == 0


def test_run_questions_stores_each_once(db_path):
    db = store.connect(db_path)
    pool = make_pool(6)
    store.insert_questions(db, pool)
    cell, cell_id = _cell(db, "sim-clock4", "none", "recover_after_1")
    client = make_client(cell.model)
    n = asyncio.run(run_questions(db, cell_id, cell, pool, ForeignPool(pool), client, batch=4))
    assert n == 6
    assert asyncio.run(run_questions(db, cell_id, cell, pool, ForeignPool(pool), client)) == 0
    assert store.count(db, "episodes") == 6


def test_live_steps_visible_to_another_process_while_running(db_path):
    db = store.connect(db_path)
    pool = make_pool()
    store.insert_questions(db, pool)
    cell, cell_id = _cell(db)
    live_id = store.live_start(db, cell_id, pool[0].id, "label")
    client = make_client(cell.model)
    seen = []

    def on_step(step):
        store.live_step(db, live_id, step)
        code = textwrap.dedent(f"""
            from core import store
            db = store.connect({str(db_path)!r})
            print(len(store.live_steps(db, {live_id})))
        """)
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             check=True)
        seen.append(int(out.stdout))

    result = asyncio.run(run_one(setup_for(cell, pool[0], ForeignPool(pool), client), client,
                                 on_step=on_step))
    assert seen == list(range(1, len(result.steps) + 1))
    store.write_episodes(db, [(cell_id, result, live_id)])
    assert store.count(db, "live_steps") == 0 and store.count(db, "live_episodes") == 0


def test_question_conflict_refused_and_nothing_written(db_path):
    db = store.connect(db_path)
    pool = make_pool(3)
    assert store.insert_questions(db, pool) == (3, 0)
    assert store.insert_questions(db, pool) == (0, 3)
    changed = make_pool(4)
    changed[1] = make_pool(2)[0].__class__(**{**changed[1].__dict__, "answer": "other"})
    with pytest.raises(StoreError, match="different content"):
        store.insert_questions(db, changed)
    assert store.count(db, "questions") == 3


def test_schema_version_counts_the_migrations():
    from core.schema import MIGRATIONS

    assert SCHEMA_VERSION == len(MIGRATIONS._migrations)
