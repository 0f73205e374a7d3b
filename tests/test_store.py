"""lab.db: schema version, uniqueness, atomic writes, live steps across processes."""

from __future__ import annotations

import asyncio
import copy
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from sqlite_utils import Database

from core import store
from core.conditions import parse_condition
from core.episode import EpisodeResult, Step
from core.errors import StoreError
from core.models.registry import builtin_models, make_client
from core.regimes import ForeignPool, parse_regime
from core.runner import CellSpec, run_one, setup_for
from core.schema import SCHEMA_VERSION
from jobs.kinds.episodes import run_questions
from tests.helpers.builders import make_pool

FIXED_TABLES = {"questions", "question_sets", "amendments", "deviations", "runs", "cells", "jobs",
                "episodes", "steps"}


def test_schema_tables_wal_and_version(db_path: Path) -> None:
    db = store.connect(db_path)
    assert FIXED_TABLES <= set(db.table_names())
    assert db.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert store.schema_version(db) == SCHEMA_VERSION
    db.conn.close()
    store.connect(db_path)  # reopening is idempotent


def test_newer_schema_is_refused(db_path: Path) -> None:
    store.connect(db_path).conn.close()
    conn = sqlite3.connect(db_path)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    with pytest.raises(StoreError, match="newer than this lab knows"):
        store.connect(db_path)


def test_not_a_database(tmp_path: Path) -> None:
    bad = tmp_path / "x.db"
    bad.write_text("hello, I am not sqlite" * 100)
    with pytest.raises(StoreError, match="not a usable lab database"):
        store.connect(bad)


def _cell(db: Database, model: str = "sim-own5", condition: str = "enforced_rule",
          regime: str = "persistent") -> tuple[CellSpec, int]:
    cell = CellSpec(builtin_models()[model], parse_condition(condition), parse_regime(regime),
                    None, 8, 0)
    run_id = store.ensure_run(db, "t")
    return cell, store.ensure_cell(db, run_id, cell.columns())


def _one_episode(db_path: Path) -> tuple[Database, int, EpisodeResult]:
    """A fresh lab.db, one sim cell and one finished (not yet stored) episode of it."""
    db = store.connect(db_path)
    pool = make_pool()
    store.insert_questions(db, pool)
    cell, cell_id = _cell(db)
    client = make_client(cell.model)
    result = asyncio.run(run_one(setup_for(cell, pool[0], ForeignPool(pool), client), client))
    return db, cell_id, result


def test_episode_unique_per_cell_and_question(db_path: Path) -> None:
    db, cell_id, result = _one_episode(db_path)
    first = store.write_episodes(db, [(cell_id, result, None)])
    again = store.write_episodes(db, [(cell_id, result, None)])
    assert first[0] is not None and again == [None]
    assert store.count(db, "episodes") == 1
    assert store.count(db, "steps") == len(result.steps)
    assert store.episode_steps(db, first[0])[0].obs_ref == result.steps[0].obs_ref


def test_episode_and_steps_are_one_transaction(db_path: Path) -> None:
    db, cell_id, result = _one_episode(db_path)
    result.steps.append(result.steps[-1])  # duplicate (episode_id, t): the insert must fail
    with pytest.raises(sqlite3.IntegrityError):
        store.write_episodes(db, [(cell_id, result, None)])
    assert store.count(db, "episodes") == 0 and store.count(db, "steps") == 0


def test_run_questions_stores_each_once(db_path: Path) -> None:
    db = store.connect(db_path)
    pool = make_pool(6)
    store.insert_questions(db, pool)
    cell, cell_id = _cell(db, "sim-clock4", "none", "recover_after_1")
    client = make_client(cell.model)
    n = asyncio.run(run_questions(db, cell_id, cell, pool, ForeignPool(pool), client, batch=4))
    assert n == 6
    assert asyncio.run(run_questions(db, cell_id, cell, pool, ForeignPool(pool), client)) == 0
    assert store.count(db, "episodes") == 6


def test_live_steps_visible_to_another_process_while_running(db_path: Path) -> None:
    db = store.connect(db_path)
    pool = make_pool()
    store.insert_questions(db, pool)
    cell, cell_id = _cell(db)
    live_id = store.live_start(db, cell_id, pool[0].id, "label")
    client = make_client(cell.model)
    seen = []

    def on_step(step: Step) -> None:
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


def test_question_conflict_refused_and_nothing_written(db_path: Path) -> None:
    db = store.connect(db_path)
    pool = make_pool(3)
    assert store.insert_questions(db, pool) == (3, 0)
    assert store.insert_questions(db, pool) == (0, 3)
    changed = make_pool(4)
    changed[1] = make_pool(2)[0].__class__(**{**changed[1].__dict__, "answer": "other"})
    with pytest.raises(StoreError, match="different content"):
        store.insert_questions(db, changed)
    assert store.count(db, "questions") == 3


def test_schema_version_counts_the_migrations() -> None:
    from core.schema import MIGRATIONS

    assert SCHEMA_VERSION == len(MIGRATIONS._migrations)


def _old_schema_db(db_path: Path) -> tuple[list[Any], list[Any]]:  # sqlite3 rows
    """A lab.db at schema version 2 (episodes unique per pair) with two episodes and steps."""
    from sqlite_utils import Database

    from core.schema import MIGRATIONS

    conn = sqlite3.connect(db_path, isolation_level=None)
    MIGRATIONS.apply(Database(conn), stop_before="0003_errored_episodes_and_prompt_sets")
    conn.execute("PRAGMA user_version = 2")
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute("INSERT INTO runs (id, name, created_at) VALUES (1, 'old', 't')")
    conn.execute("INSERT INTO cells (id, run_id, model, model_spec, condition, condition_spec, "
                 "condition_hash, regime, regime_hash, budget, seed, spec_hash, created_at) "
                 "VALUES (1, 1, 'm', '{}', 'none', '{}', 'ch', 'clean', 'rh', 8, 0, 'sh', 't')")
    for eid, qid, error in ((7, "q1", None), (9, "q2", "connection: refused")):
        conn.execute(
            "INSERT INTO episodes (id, cell_id, question_id, answered, em, f1, correct, "
            "placeholder, tool_calls, extra_calls, format_failures, forced_turns, refused_calls, "
            "input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost_usd, "
            "wall_ms, end_reason, error, server, started_at, finished_at) VALUES "
            "(?, 1, ?, 0, 0, 0.5, 0, 0, 2, 1, 0, 0, 0, 100, 20, 3, 4, 0.25, 12.5, ?, ?, 'srv', "
            "'s', 'f')", (eid, qid, "error" if error else "budget", error))
        for t in (1, 2):
            conn.execute("INSERT INTO steps (episode_id, t, raw, streak, forced, refused, "
                         "format_failure, input_tokens, output_tokens, latency_ms) "
                         "VALUES (?, ?, 'raw', 0, 0, 0, 0, 1, 1, 1.0)", (eid, t))
    before = conn.execute("SELECT * FROM episodes ORDER BY id").fetchall()
    steps = conn.execute("SELECT * FROM steps ORDER BY episode_id, t").fetchall()
    conn.close()
    return before, steps


def test_migration_0003_keeps_every_episode_and_step_and_frees_errored_pairs(db_path: Path) -> None:
    before, steps = _old_schema_db(db_path)
    db = store.connect(db_path)
    conn = db.conn
    assert store.schema_version(db) == SCHEMA_VERSION >= 3
    n = len(before[0])
    assert [r[:n] for r in conn.execute("SELECT * FROM episodes ORDER BY id")] == before
    m = len(steps[0])
    assert [r[:m] for r in conn.execute("SELECT * FROM steps ORDER BY episode_id, t")] == steps
    assert conn.execute("SELECT attempt, prompts_sha256 FROM episodes WHERE id = 9"
                        ).fetchone() == (1, None)
    assert {r[2] for r in conn.execute("PRAGMA foreign_key_list(steps)")} == {"episodes"}
    assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
    assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    insert = ("INSERT INTO episodes (cell_id, question_id, answered, em, f1, correct, placeholder,"
              " tool_calls, extra_calls, format_failures, forced_turns, refused_calls, "
              "input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost_usd, "
              "wall_ms, end_reason, error, started_at, finished_at) VALUES "
              "(1, ?, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 'x', ?, 's', 'f')")
    conn.execute(insert, ("q2", None))  # the errored pair takes its complete episode
    with pytest.raises(sqlite3.IntegrityError):
        conn.execute(insert, ("q2", None))  # never two complete episodes of a pair
    with pytest.raises(sqlite3.IntegrityError):
        conn.execute(insert, ("q1", None))
    conn.execute("DELETE FROM episodes WHERE id = 7")  # the cascade still reaches steps
    assert conn.execute("SELECT count(*) FROM steps WHERE episode_id = 7").fetchone()[0] == 0
    assert conn.execute("SELECT count(*) FROM steps WHERE episode_id = 9").fetchone()[0] == 2


def test_errored_episodes_keep_their_record_but_not_the_key(db_path: Path) -> None:
    from core.store import jobs as ledger

    db, cell_id, result = _one_episode(db_path)
    errored = copy.deepcopy(result)
    errored.error, errored.end_reason = "connection: refused (gave up after 5 attempts)", "error"
    first = store.write_episodes(db, [(cell_id, errored, None)])
    assert first[0] is not None
    assert not store.episode_exists(db, cell_id, result.question_id)
    assert ledger.stored_questions(db, cell_id) == set()
    assert ledger.errored_questions(db, cell_id) == {result.question_id: errored.error}
    again = store.write_episodes(db, [(cell_id, errored, None)])  # a second failed try
    done = store.write_episodes(db, [(cell_id, result, None)])
    late = store.write_episodes(db, [(cell_id, errored, None), (cell_id, result, None)])
    assert again[0] is not None and done[0] is not None and late == [None, None]
    assert store.episode_exists(db, cell_id, result.question_id)
    assert ledger.errored_questions(db, cell_id) == {}
    rows = db.conn.execute("SELECT error IS NULL, attempt FROM episodes ORDER BY id").fetchall()
    assert rows == [(0, 1), (0, 2), (1, 3)]
    assert store.count(db, "steps") == 3 * len(result.steps)


def test_episodes_record_the_prompt_files_they_used(db_path: Path) -> None:
    import prompts
    from core.store.episodes import prompt_set

    db, cell_id, result = _one_episode(db_path)
    assert "prompts/system.txt" in result.prompts and "prompts/question.txt" in result.prompts
    assert all(result.prompts[k] == v for k, v in prompts.file_hashes().items()
               if k in result.prompts)
    (eid,) = store.write_episodes(db, [(cell_id, result, None)])
    (sha,) = db.conn.execute("SELECT prompts_sha256 FROM episodes WHERE id = ?", (eid,)
                             ).fetchone()
    assert sha == result.prompts_sha256 and prompt_set(db, sha) == result.prompts


def test_errored_episodes_are_read_through_their_partial_index(db_path: Path) -> None:
    """Migration 0011: the errored episodes' read (every analysis makes it) uses the
    index of errored episodes instead of scanning every episode."""
    from core.store.frames import episodes_frame

    db = store.connect(db_path)
    seen: list[str] = []
    db.conn.set_trace_callback(seen.append)
    episodes_frame(db, upto=10, errored=True)
    db.conn.set_trace_callback(None)
    sql = [s for s in seen if "e.error IS NOT NULL" in s][-1]
    plan = " ".join(row[-1] for row in db.conn.execute("EXPLAIN QUERY PLAN " + sql))
    assert "episodes_errored" in plan, plan


def test_selection_runs_are_the_runs_of_the_matching_episodes(db_path: Path) -> None:
    """`selection_runs` asks each run for one matching episode; it names exactly the
    distinct runs of the episodes the selection and the id bound keep."""
    from core.store.selection import EPISODES_FROM, Selection, selection_runs, where_clause

    db = store.connect(db_path)
    pool = make_pool(3)
    store.insert_questions(db, pool)
    for run, model, regime in (("a", "sim-own5", "persistent"), ("b", "sim-clock4", "clean"),
                               ("c", "sim-own5", "clean")):
        cell = CellSpec(builtin_models()[model], parse_condition("none"), parse_regime(regime),
                        None, 8, 0)
        cell_id = store.ensure_cell(db, store.ensure_run(db, run), cell.columns())
        asyncio.run(run_questions(db, cell_id, cell, pool, ForeignPool(pool),
                                  make_client(cell.model)))
    store.ensure_run(db, "empty")

    def distinct(sel: Selection, upto: int | None) -> tuple[str, ...]:
        where, args = where_clause(db, sel, *([f"e.id <= {upto}"] if upto is not None else []))
        sql = f"SELECT DISTINCT r.name {EPISODES_FROM}{where}"
        return tuple(sorted(r[0] for r in db.conn.execute(sql, args)))

    checked = set()
    for sel in (Selection(), Selection(models=("sim-own5",)), Selection(regimes=("clean",)),
                Selection(runs=("b", "empty")), Selection(models=("sim-clock4",), runs=("a",))):
        for upto in (None, 3, 4, 7, 0):
            got = selection_runs(db, sel, upto)
            assert got == distinct(sel, upto)
            checked.add(got)
    assert {("a", "b", "c"), ("a", "c"), ("b", "c"), ("b",), ("a",), ()} <= checked


def test_complete_questions_answers_as_episode_exists_per_question(db_path: Path) -> None:
    db, cell_id, result = _one_episode(db_path)
    _, other_cell = _cell(db, regime="clean")
    errored = copy.deepcopy(result)
    errored.question_id, errored.error, errored.end_reason = "q-errored", "timeout", "error"
    elsewhere = copy.deepcopy(result)
    elsewhere.question_id = "q-other-cell"
    store.write_episodes(db, [(cell_id, result, None), (cell_id, errored, None),
                              (other_cell, elsewhere, None)])
    # more ids than one query takes, the stored ones at both ends
    ids = ["q-other-cell", *(f"absent-{i}" for i in range(1200)), "q-errored",
           result.question_id]
    assert store.complete_questions(db, cell_id, ids) == {
        q for q in ids if store.episode_exists(db, cell_id, q)} == {result.question_id}
    assert store.complete_questions(db, other_cell, ids) == {"q-other-cell"}
    assert store.complete_questions(db, cell_id, []) == set()
