"""Finished episodes with their steps, and the live tables of running ones."""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Callable, Sequence
from dataclasses import MISSING, fields
from operator import attrgetter
from typing import Any

from sqlite_utils import Database

from core.episode import EpisodeResult, Step, utc_now
from core.errors import StoreError
from core.redaction import redact_optional
from core.store.base import write
from core.store.decisions import cell_budget, store_derived, store_episode_packs
from core.store.monitor import pid_alive, stale_live_ids

_EPISODE_COLS = ("answered", "answer", "answer_action", "em", "f1", "correct", "placeholder",
                 "tool_calls", "extra_calls", "format_failures", "forced_turns", "refused_calls",
                 "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens",
                 "reasoning_tokens", "cost_usd", "wall_ms", "end_reason", "error", "started_at",
                 "finished_at")
_STEP_COLS = ("t", "thought", "action", "argument", "raw", "obs_index", "obs_failed",
              "obs_source", "obs_ref", "obs_text", "judgment", "judgment_source", "judgment_raw",
              "rule_signal", "stated_judgment", "streak", "forced", "refused", "format_failure",
              "decision", "input_tokens", "output_tokens", "latency_ms", "discarded",
              "tool_source", "reasoning", "reasoning_tokens", "decision_raw")
_EPISODE_SQL = (f"INSERT INTO episodes (cell_id, question_id, server, prompts_sha256, attempt, "
                f"{', '.join(_EPISODE_COLS)}) VALUES (?, ?, ?, ?, (SELECT count(*) + 1 FROM "
                f"episodes WHERE cell_id = ? AND question_id = ?), "
                f"{', '.join('?' * len(_EPISODE_COLS))})")
_STEP_SQL = (f"INSERT INTO steps (episode_id, {', '.join(_STEP_COLS)}) "
             f"VALUES ({', '.join('?' * (len(_STEP_COLS) + 1))})")
COMPLETE = "error IS NULL"
"""An episode that holds its (cell, question) key: it did not end in a model error."""


def _episode_value(r: EpisodeResult, column: str) -> Any:
    """An episode column's value; its error as `core.redaction` shows it (no credential)."""
    value = getattr(r, column)
    return redact_optional(value) if column == "error" else value


_step_row: Callable[[Step], tuple[Any, ...]] = attrgetter(*_STEP_COLS)
"""A step's `_STEP_COLS` values in order (read in C: a getattr per column per step cost
more than SQLite's insert of the row)."""


def write_episodes(db: Database, items: Sequence[tuple[int, EpisodeResult, int | None]],
                   server: str | None = None) -> list[int | None]:
    """Store finished episodes, each with all its steps, in one transaction.

    A complete episode takes its (cell, question) key; an errored one is kept as a
    record (error, attempt number, times) without taking it, so the pair can be
    retried. At most one complete episode per pair is ever stored.

    Args:
        items: (cell id, result, live id or None) per episode; live rows are removed.
        server: what served the episodes (recorded per episode).

    Returns:
        The new episode ids; None for an episode whose pair already has a complete
        episode (a second execution of the same job), which is left untouched.
    """
    ids: list[int | None] = []
    conn = db.conn
    budgets: dict[int, int] = {}
    prompt_sets: set[str] = set()  # recorded in this transaction already
    with write(db):
        for cell_id, r, live_id in items:
            if live_id is not None:
                conn.execute("DELETE FROM live_episodes WHERE id = ?", (live_id,))
            if _complete_exists(db, cell_id, r.question_id):
                ids.append(None)
                continue
            set_sha = r.prompts_sha256
            if set_sha is not None and set_sha not in prompt_sets:
                prompt_sets.add(set_sha)
                conn.execute("INSERT OR IGNORE INTO prompt_sets (sha256, files, created_at) "
                             "VALUES (?, ?, ?)",
                             (set_sha, json.dumps(r.prompts, sort_keys=True), utc_now()))
            cur = conn.execute(
                _EPISODE_SQL,
                (cell_id, r.question_id, r.server if r.server is not None else server, set_sha,
                 cell_id, r.question_id, *(_episode_value(r, c) for c in _EPISODE_COLS)))
            episode_id = int(cur.lastrowid or 0)
            conn.executemany(_STEP_SQL, [(episode_id, *_step_row(s)) for s in r.steps])
            if cell_id not in budgets:
                budgets[cell_id] = cell_budget(conn, cell_id)
            # analysis reads these, not steps; the packs of all of them at once below
            store_derived(conn, episode_id, cell_id, r.steps, budgets[cell_id], packs=False)
            ids.append(episode_id)
        store_episode_packs(conn, [i for i in ids if i is not None])
    return ids


def _complete_exists(db: Database, cell_id: int, question_id: str) -> bool:
    return db.conn.execute(f"SELECT 1 FROM episodes WHERE cell_id = ? AND question_id = ? AND "
                           f"{COMPLETE}", (cell_id, question_id)).fetchone() is not None


def episode_exists(db: Database, cell_id: int, question_id: str) -> bool:
    """Whether the (cell, question) pair has a complete (not errored) episode stored."""
    return _complete_exists(db, cell_id, question_id)


def complete_questions(db: Database, cell_id: int, question_ids: Sequence[str]) -> set[str]:
    """Those of `question_ids` whose (cell, question) pair has a complete episode stored.

    One query per 500 questions (a job's, at most 50 of them), where `episode_exists`
    per question cost a query each.
    """
    done: set[str] = set()
    ids = list(question_ids)
    for at in range(0, len(ids), 500):
        chunk = ids[at:at + 500]
        done.update(q for (q,) in db.conn.execute(
            f"SELECT question_id FROM episodes WHERE cell_id = ? AND {COMPLETE} AND "
            f"question_id IN ({', '.join('?' * len(chunk))})", (cell_id, *chunk)))
    return done


def prompt_set(db: Database, sha256: str) -> dict[str, str]:
    """The per-file sha256 of a recorded prompt set (episodes.prompts_sha256).

    Raises:
        StoreError: no such prompt set.
    """
    row = db.conn.execute("SELECT files FROM prompt_sets WHERE sha256 = ?", (sha256,)).fetchone()
    if row is None:
        raise StoreError(f"no prompt set {sha256[:12]}… in lab.db")
    return dict(json.loads(row[0]))


def live_start(db: Database, cell_id: int | None, question_id: str, label: str,
               worker: str | None = None) -> int:
    """Register a running episode so other processes can tail it.

    Args:
        worker: the worker (host:pid) that runs it; default this process. Its row is
            a leftover once that worker is gone (see `remove_stale_live`).
    """
    worker = f"{socket.gethostname()}:{os.getpid()}" if worker is None else worker
    with write(db):
        cur = db.conn.execute(
            "INSERT INTO live_episodes (cell_id, question_id, label, worker, started_at) "
            "VALUES (?, ?, ?, ?, ?)", (cell_id, question_id, label, worker, utc_now()))
        return int(cur.lastrowid or 0)


_LIVE_FIELDS = tuple((f.name, f.default) for f in fields(Step))
"""(name, default) of every Step field; MISSING for the required ones."""
# a row a reconcile removed (its worker looked lost) takes no more steps
_LIVE_SQL = ("INSERT OR REPLACE INTO live_steps (live_id, t, step) SELECT ?, ?, ? "
             "WHERE EXISTS (SELECT 1 FROM live_episodes WHERE id = ?)")


def live_step_json(step: Step) -> str:
    """A running step as the live table stores it: JSON of its fields that differ from
    their defaults (`live_steps` rebuilds the rest), much cheaper than `asdict`."""
    out = {}
    for name, default in _LIVE_FIELDS:
        value = getattr(step, name)
        if default is MISSING or value != default or type(value) is not type(default):
            out[name] = value
    return _LIVE_ENCODER.encode(out)


_LIVE_ENCODER = json.JSONEncoder(ensure_ascii=False, check_circular=False)
"""What `json.dumps(…, ensure_ascii=False, check_circular=False)` builds on every call."""


def live_step(db: Database, live_id: int, step: Step) -> None:
    """Commit one step of a running episode (visible to other processes at once)."""
    write_live_steps(db, [(live_id, step)])


def write_live_steps(db: Database, items: Sequence[tuple[int, Step]]) -> None:
    """Commit steps of running episodes, (live id, step) each, in one transaction."""
    with write(db):
        db.conn.executemany(_LIVE_SQL, [(live_id, step.t, live_step_json(step), live_id)
                                        for live_id, step in items])


def live_end(db: Database, live_id: int) -> None:
    """Forget a running episode that ended without being stored (e.g. a dry try)."""
    with write(db):
        db.conn.execute("DELETE FROM live_episodes WHERE id = ?", (live_id,))


def remove_live(db: Database, worker: str) -> int:
    """Remove the live rows of one worker (it stops: none of its episodes runs on)."""
    with write(db):
        ids = [r[0] for r in db.conn.execute("SELECT id FROM live_episodes WHERE worker = ?",
                                             (worker,))]
        _delete_live(db, ids)
    return len(ids)


def remove_stale_live(db: Database, now: float | None = None, host: str | None = None,
                      alive: Callable[[int], bool] = pid_alive) -> dict[int, str]:
    """Remove the live rows that no longer stand for a running episode.

    Those of a dead or stopped worker, of one whose job lease expired or was
    released, and of episodes already stored (`monitor.stale_live_ids`), judged and
    removed in one write transaction.

    Returns:
        The removed rows: live id → why.
    """
    with write(db):
        stale = stale_live_ids(db, now=now, host=host, alive=alive)
        _delete_live(db, list(stale))
    return stale


def _delete_live(db: Database, ids: Sequence[int]) -> None:
    # steps first: the cascade only runs with foreign keys on
    db.conn.executemany("DELETE FROM live_steps WHERE live_id = ?", [(i,) for i in ids])
    db.conn.executemany("DELETE FROM live_episodes WHERE id = ?", [(i,) for i in ids])


def live_steps(db: Database, live_id: int, after_t: int = 0) -> list[Step]:
    """Steps of a running episode committed so far (t > after_t)."""
    rows = db.conn.execute("SELECT step FROM live_steps WHERE live_id = ? AND t > ? ORDER BY t",
                           (live_id, after_t)).fetchall()
    return [Step(**json.loads(r[0])) for r in rows]


def episode_steps(db: Database, episode_id: int) -> list[Step]:
    """The stored steps of a finished episode, in order."""
    rows = db.conn.execute(f"SELECT {', '.join(_STEP_COLS)} FROM steps WHERE episode_id = ? "
                           f"ORDER BY t, discarded DESC", (episode_id,)).fetchall()
    out = []
    for row in rows:
        values = dict(zip(_STEP_COLS, row))
        for flag in ("forced", "refused", "format_failure", "discarded"):
            values[flag] = bool(values[flag])
        if values["obs_failed"] is not None:
            values["obs_failed"] = bool(values["obs_failed"])
        out.append(Step(**values))
    return out


def count(db: Database, table: str) -> int:
    """Row count of one of the project's tables."""
    if not db[table].exists():
        raise StoreError(f"no table '{table}' in lab.db")
    return int(db.conn.execute(f"SELECT count(*) FROM [{table}]").fetchone()[0])


