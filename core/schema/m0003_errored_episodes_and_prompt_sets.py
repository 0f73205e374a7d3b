"""lab.db migration 0003: an errored episode keeps its row but frees its (cell, question)
pair; prompt sets."""

from __future__ import annotations

import sqlite3

from sqlite_utils import Database

NAME = "0003_errored_episodes_and_prompt_sets"


_EPISODES_0003 = """
CREATE TABLE episodes (
    id INTEGER PRIMARY KEY,
    cell_id INTEGER NOT NULL REFERENCES cells(id),
    question_id TEXT NOT NULL,
    answered INTEGER NOT NULL,
    answer TEXT,
    answer_action INTEGER,
    em INTEGER NOT NULL,
    f1 REAL NOT NULL,
    correct INTEGER NOT NULL,
    placeholder INTEGER NOT NULL,
    tool_calls INTEGER NOT NULL,
    extra_calls INTEGER NOT NULL,
    format_failures INTEGER NOT NULL,
    forced_turns INTEGER NOT NULL,
    refused_calls INTEGER NOT NULL,
    input_tokens INTEGER NOT NULL,
    output_tokens INTEGER NOT NULL,
    cache_read_tokens INTEGER NOT NULL,
    cache_write_tokens INTEGER NOT NULL,
    cost_usd REAL NOT NULL,
    wall_ms REAL NOT NULL,
    end_reason TEXT NOT NULL,        -- finish, budget, format_failure, error
    error TEXT,                      -- NULL: a complete episode
    server TEXT,
    started_at TEXT NOT NULL,
    finished_at TEXT NOT NULL,
    attempt INTEGER NOT NULL DEFAULT 1,  -- 1 + earlier (errored) records of the pair
    prompts_sha256 TEXT              -- prompt_sets.sha256 of the prompt files it used
)"""
_EPISODE_COLS_0002 = (
    "id, cell_id, question_id, answered, answer, answer_action, em, f1, correct, placeholder, "
    "tool_calls, extra_calls, format_failures, forced_turns, refused_calls, input_tokens, "
    "output_tokens, cache_read_tokens, cache_write_tokens, cost_usd, wall_ms, end_reason, "
    "error, server, started_at, finished_at")


def migrate(db: Database) -> None:
    """Only complete episodes are unique per (cell, question); prompt provenance.

    An errored episode (refused connection, 5xx after retries, context overflow)
    keeps its row but no longer holds the (cell, question) key, so the pair can be
    retried; at most one complete episode per pair (a partial unique index).
    SQLite cannot drop a UNIQUE constraint in place, so `episodes` is rebuilt with
    SQLite's documented procedure (new table, copy, drop, rename), which needs
    foreign keys off: dropping the old table with them on would cascade-delete
    every step. `store.connect` runs migrations before turning them on; the
    foreign-key check at the end makes the transaction fail if any link broke.

    Raises:
        sqlite3.IntegrityError: foreign keys on, or a link broken (`store.connect`
            reports it as one StoreError line).
    """
    conn = db.conn
    if conn.execute("PRAGMA foreign_keys").fetchone()[0]:
        raise sqlite3.IntegrityError("migration 0003 must run with foreign keys off "
                                     "(dropping episodes would cascade to steps)")
    conn.execute(_EPISODES_0003.replace("CREATE TABLE episodes", "CREATE TABLE episodes_0003"))
    conn.execute(f"INSERT INTO episodes_0003 ({_EPISODE_COLS_0002}) "
                 f"SELECT {_EPISODE_COLS_0002} FROM episodes")
    conn.execute("DROP TABLE episodes")
    conn.execute("ALTER TABLE episodes_0003 RENAME TO episodes")
    db.executescript(
        """
        CREATE UNIQUE INDEX episodes_complete ON episodes(cell_id, question_id)
            WHERE error IS NULL;
        CREATE INDEX episodes_pair ON episodes(cell_id, question_id);

        CREATE TABLE prompt_sets (
            sha256 TEXT PRIMARY KEY,         -- of the sorted "file sha256" lines below
            files TEXT NOT NULL,             -- JSON object: prompts/<name>.txt -> sha256
            created_at TEXT NOT NULL
        );
        """
    )
    broken = conn.execute("PRAGMA foreign_key_check").fetchall()
    if broken:
        raise sqlite3.IntegrityError(f"migration 0003 broke {len(broken)} foreign-key links: "
                                     f"{broken[:3]}")
