"""lab.db migration 0016: prompt packs, the active one, and the pack each cell runs with."""

from __future__ import annotations

from sqlite_utils import Database

NAME = "0016_prompt_packs"


def migrate(db: Database) -> None:
    """Prompt packs travel with the study in lab.db.

    - prompt_packs: one row per imported pack (a folder of prompt pieces), keyed by the
      sha256 of its pieces; `pieces` is a JSON object piece name -> exact file text.
    - prompt_pack_active: at most one row (id 1); its sha256 is the pack new cells run
      with, NULL for the built-in wording.
    - cells.prompt_pack: the pack a cell runs with (NULL: the built-in wording); it is
      part of the cell's spec and arm hash, so runs under different wording never pool.
    """
    db.conn.execute("""
        CREATE TABLE prompt_packs (
            sha256 TEXT PRIMARY KEY,
            pieces TEXT NOT NULL,
            source TEXT,
            created_at TEXT NOT NULL
        )""")
    db.conn.execute("""
        CREATE TABLE prompt_pack_active (
            id INTEGER PRIMARY KEY CHECK (id = 1),
            sha256 TEXT REFERENCES prompt_packs(sha256),
            changed_at TEXT NOT NULL
        )""")
    db.conn.execute("ALTER TABLE cells ADD COLUMN prompt_pack TEXT")
