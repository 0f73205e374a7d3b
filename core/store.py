"""lab.db: connection, migrations and the project's reads and writes (SPEC §10).

The only module that writes SQL. Writers take `BEGIN IMMEDIATE` so that several
processes (workers, the console, `lab tail`) share one file under WAL with a busy
timeout instead of failing with "database is locked".
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import sqlite3
from collections.abc import Iterator, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from sqlite_utils import Database

from core.data import Question, question_from_record, question_to_record
from core.episode import EpisodeResult, Step, utc_now
from core.errors import StoreError
from core.schema import MIGRATIONS, SCHEMA_VERSION

BUSY_TIMEOUT_MS = 60_000


def connect(path: Path | str) -> Database:
    """Open lab.db (creating and migrating it as needed).

    Args:
        path: the database file.

    Raises:
        StoreError: the file was written by a newer lab (higher schema version), or
            is not an SQLite database.
    """
    path = Path(path)
    if path.parent and not path.parent.exists():
        raise StoreError(f"{path}: directory {path.parent} does not exist")
    conn = sqlite3.connect(str(path), isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000,
                           check_same_thread=False)
    db = Database(conn)
    try:
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            conn.close()
            raise StoreError(
                f"{path} has schema version {version}, newer than this lab knows "
                f"({SCHEMA_VERSION}): upgrade lab before using this file")
        if conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
            conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA foreign_keys = ON")
        if version < SCHEMA_VERSION:
            with write(db):
                MIGRATIONS.apply(db)
                conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise StoreError(f"{path}: not a usable lab database ({exc})") from None
    return db


@contextlib.contextmanager
def write(db: Database) -> Iterator[Database]:
    """A write transaction (BEGIN IMMEDIATE): all or nothing."""
    conn = db.conn
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield db
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def schema_version(db: Database) -> int:
    """`PRAGMA user_version` of an open lab.db."""
    return int(db.conn.execute("PRAGMA user_version").fetchone()[0])


# -- questions -----------------------------------------------------------------


def insert_questions(db: Database, questions: Sequence[Question]) -> tuple[int, int]:
    """Store questions in one transaction: all or none.

    A question already present with the same content is skipped; one present with
    different content is refused (episodes may refer to it).

    Returns:
        (newly stored, already present).

    Raises:
        StoreError: an id exists with different content; nothing is written.
    """
    now = utc_now()
    new = same = 0
    with write(db):
        for q in questions:
            record = json.dumps(question_to_record(q), sort_keys=True, ensure_ascii=False)
            row = db.conn.execute("SELECT dataset, record FROM questions WHERE id = ?",
                                  (q.id,)).fetchone()
            if row is not None:
                if row[0] == q.dataset and row[1] == record:
                    same += 1
                    continue
                raise StoreError(f"question {q.id} is already stored (dataset {row[0]}) with "
                                 f"different content; nothing was imported")
            db.conn.execute(
                "INSERT INTO questions (id, dataset, question, answer, type, level, record, "
                "imported_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (q.id, q.dataset, q.question, q.answer, q.type, q.level, record, now))
            new += 1
    return new, same


def _question(row: sqlite3.Row | tuple[Any, ...]) -> Question:
    return question_from_record(json.loads(row[1]), row[0])


def load_questions(db: Database, dataset: str | None = None,
                   ids: Sequence[str] | None = None) -> list[Question]:
    """Questions of a dataset, or the given ids in the given order.

    Raises:
        StoreError: an id that is not stored.
    """
    if ids is not None:
        out = []
        for qid in ids:
            row = db.conn.execute("SELECT dataset, record FROM questions WHERE id = ?",
                                  (qid,)).fetchone()
            if row is None:
                raise StoreError(f"question '{qid}' is not in lab.db "
                                 f"(import it with `lab data import hotpotqa FILE`)")
            out.append(_question(row))
        return out
    sql, args = "SELECT dataset, record FROM questions", ()
    if dataset is not None:
        sql, args = sql + " WHERE dataset = ?", (dataset,)
    return [_question(r) for r in db.conn.execute(sql + " ORDER BY id", args)]


def question_ids(db: Database, dataset: str) -> list[str]:
    """Sorted ids of a dataset's questions."""
    return [r[0] for r in db.conn.execute(
        "SELECT id FROM questions WHERE dataset = ? ORDER BY id", (dataset,))]


def datasets(db: Database) -> dict[str, int]:
    """Question count per dataset."""
    return dict(db.conn.execute(
        "SELECT dataset, count(*) FROM questions GROUP BY dataset ORDER BY dataset").fetchall())


# -- question sets -------------------------------------------------------------


def save_question_set(db: Database, name: str, dataset: str, ids: Sequence[str], seed: int,
                      exclude: Sequence[str], held_out: bool, sha256: str) -> None:
    """Store a question set (names are unique and sets are never changed).

    Raises:
        StoreError: a set of that name exists.
    """
    with write(db):
        if db.conn.execute("SELECT 1 FROM question_sets WHERE name = ?", (name,)).fetchone():
            raise StoreError(f"question set '{name}' already exists; sets are frozen once made")
        db.conn.execute(
            "INSERT INTO question_sets (name, dataset, n, seed, exclude, ids, sha256, held_out, "
            "created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (name, dataset, len(ids), seed, json.dumps(list(exclude)), json.dumps(list(ids)),
             sha256, int(held_out), utc_now()))


def question_set(db: Database, name: str) -> dict[str, Any]:
    """One question set as a dict (ids decoded).

    Raises:
        StoreError: no such set.
    """
    row = db.conn.execute("SELECT * FROM question_sets WHERE name = ?", (name,)).fetchone()
    if row is None:
        names = [r[0] for r in db.conn.execute("SELECT name FROM question_sets ORDER BY name")]
        raise StoreError(f"no question set '{name}'"
                         + (f"; existing: {', '.join(names)}" if names else
                            " (create one with `lab sets create`)"))
    cols = [d[0] for d in db.conn.execute("SELECT * FROM question_sets LIMIT 0").description]
    out = dict(zip(cols, row))
    out["ids"] = json.loads(out["ids"])
    out["exclude"] = json.loads(out["exclude"])
    out["held_out"] = bool(out["held_out"])
    return out


def question_sets(db: Database) -> list[dict[str, Any]]:
    """All question sets, without their id lists."""
    cur = db.conn.execute("SELECT name, dataset, n, seed, exclude, sha256, held_out, created_at "
                          "FROM question_sets ORDER BY name")
    cols = [d[0] for d in cur.description]
    return [dict(zip(cols, r)) for r in cur]


# -- runs and cells ------------------------------------------------------------


def ensure_run(db: Database, name: str, amendment_id: str | None = None) -> int:
    """Id of the run called `name`, created if new."""
    with write(db):
        row = db.conn.execute("SELECT id FROM runs WHERE name = ?", (name,)).fetchone()
        if row:
            return int(row[0])
        cur = db.conn.execute(
            "INSERT INTO runs (name, amendment_id, exploratory, created_at) VALUES (?, ?, ?, ?)",
            (name, amendment_id, int(amendment_id is None), utc_now()))
        return int(cur.lastrowid or 0)


def cell_hash(spec: dict[str, Any]) -> str:
    """sha256 of a cell's canonical JSON."""
    return hashlib.sha256(json.dumps(spec, sort_keys=True, separators=(",", ":")).encode()
                          ).hexdigest()


def ensure_cell(db: Database, run_id: int, cell: dict[str, Any]) -> int:
    """Id of the cell (created if new). `cell` holds the columns of `cells` but id."""
    with write(db):
        row = db.conn.execute("SELECT id FROM cells WHERE run_id = ? AND spec_hash = ?",
                              (run_id, cell["spec_hash"])).fetchone()
        if row:
            return int(row[0])
        cols = ["run_id", *cell.keys(), "created_at"]
        cur = db.conn.execute(
            f"INSERT INTO cells ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
            (run_id, *cell.values(), utc_now()))
        return int(cur.lastrowid or 0)


def next_replicate(db: Database, run_id: int) -> int:
    """One more than the highest replicate number used in a run."""
    row = db.conn.execute("SELECT max(replicate) FROM cells WHERE run_id = ?", (run_id,)).fetchone()
    return 0 if row[0] is None else int(row[0]) + 1


# -- episodes ------------------------------------------------------------------

_EPISODE_COLS = ("answered", "answer", "answer_action", "em", "f1", "correct", "placeholder",
                 "tool_calls", "extra_calls", "format_failures", "forced_turns", "refused_calls",
                 "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens",
                 "cost_usd", "wall_ms", "end_reason", "error", "started_at", "finished_at")
_STEP_COLS = ("t", "thought", "action", "argument", "raw", "obs_index", "obs_failed",
              "obs_source", "obs_ref", "obs_text", "judgment", "judgment_source", "judgment_raw",
              "rule_signal", "stated_judgment", "streak", "forced", "refused", "format_failure",
              "decision", "input_tokens", "output_tokens", "latency_ms")
_EPISODE_SQL = (f"INSERT INTO episodes (cell_id, question_id, server, {', '.join(_EPISODE_COLS)}) "
                f"VALUES ({', '.join('?' * (len(_EPISODE_COLS) + 3))})")
_STEP_SQL = (f"INSERT INTO steps (episode_id, {', '.join(_STEP_COLS)}) "
             f"VALUES ({', '.join('?' * (len(_STEP_COLS) + 1))})")


def _step_row(step: Step) -> tuple[Any, ...]:
    return tuple(getattr(step, c) for c in _STEP_COLS)


def write_episodes(db: Database, items: Sequence[tuple[int, EpisodeResult, int | None]],
                   server: str | None = None) -> list[int | None]:
    """Store finished episodes, each with all its steps, in one transaction.

    Args:
        items: (cell id, result, live id or None) per episode; live rows are removed.
        server: what served the episodes (recorded per episode).

    Returns:
        The new episode ids; None for an episode whose (cell, question) already
        existed (a second execution of the same job), which is left untouched.
    """
    ids: list[int | None] = []
    conn = db.conn
    with write(db):
        for cell_id, r, live_id in items:
            if live_id is not None:
                conn.execute("DELETE FROM live_episodes WHERE id = ?", (live_id,))
            cur = conn.execute(
                _EPISODE_SQL.replace("INSERT", "INSERT OR IGNORE", 1),
                (cell_id, r.question_id, server, *(getattr(r, c) for c in _EPISODE_COLS)))
            if cur.rowcount == 0:
                ids.append(None)
                continue
            episode_id = cur.lastrowid
            conn.executemany(_STEP_SQL, [(episode_id, *_step_row(s)) for s in r.steps])
            ids.append(episode_id)
    return ids


def episode_exists(db: Database, cell_id: int, question_id: str) -> bool:
    """Whether the (cell, question) episode is stored."""
    return db.conn.execute("SELECT 1 FROM episodes WHERE cell_id = ? AND question_id = ?",
                           (cell_id, question_id)).fetchone() is not None


def live_start(db: Database, cell_id: int | None, question_id: str, label: str,
               worker: str | None = None) -> int:
    """Register a running episode so other processes can tail it."""
    with write(db):
        cur = db.conn.execute(
            "INSERT INTO live_episodes (cell_id, question_id, label, worker, started_at) "
            "VALUES (?, ?, ?, ?, ?)", (cell_id, question_id, label, worker, utc_now()))
        return int(cur.lastrowid or 0)


def live_step(db: Database, live_id: int, step: Step) -> None:
    """Commit one step of a running episode (visible to other processes at once)."""
    with write(db):
        db.conn.execute("INSERT OR REPLACE INTO live_steps (live_id, t, step) VALUES (?, ?, ?)",
                        (live_id, step.t, json.dumps(asdict(step), ensure_ascii=False)))


def live_end(db: Database, live_id: int) -> None:
    """Forget a running episode that ended without being stored (e.g. a dry try)."""
    with write(db):
        db.conn.execute("DELETE FROM live_episodes WHERE id = ?", (live_id,))


def live_steps(db: Database, live_id: int, after_t: int = 0) -> list[Step]:
    """Steps of a running episode committed so far (t > after_t)."""
    rows = db.conn.execute("SELECT step FROM live_steps WHERE live_id = ? AND t > ? ORDER BY t",
                           (live_id, after_t)).fetchall()
    return [Step(**json.loads(r[0])) for r in rows]


def episode_steps(db: Database, episode_id: int) -> list[Step]:
    """The stored steps of a finished episode, in order."""
    rows = db.conn.execute(f"SELECT {', '.join(_STEP_COLS)} FROM steps WHERE episode_id = ? "
                           f"ORDER BY t", (episode_id,)).fetchall()
    out = []
    for row in rows:
        values = dict(zip(_STEP_COLS, row))
        for flag in ("forced", "refused", "format_failure"):
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
