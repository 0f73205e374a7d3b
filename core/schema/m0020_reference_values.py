"""lab.db migration 0020: published values imported as a named reference for replication."""

from __future__ import annotations

from sqlite_utils import Database

NAME = "0020_reference_values"


def migrate(db: Database) -> None:
    """A study's published numbers (Δ, its interval and mean6 per split × model × arm)
    can be imported under a name and compared with lab's own (`lab results replication`).

    - reference_sets: one row per imported file: its name in lab, the source file's name
      and sha256, the data's license line, the dataset and action budget the values
      were computed on, and when.
    - reference_values: one row per published cell of a set: the split (compared with
      the run of that name), the model, lab's arm for the condition, the key as the file
      wrote it, Δ with its 95% interval, and mean6 (NULL where the file gives none).
    """
    db.executescript(
        """
        CREATE TABLE reference_sets (
            id INTEGER PRIMARY KEY,
            name TEXT NOT NULL UNIQUE,       -- what --against names
            file TEXT NOT NULL,              -- the source file's name (no folder)
            sha256 TEXT NOT NULL,            -- of the file's bytes as read
            license TEXT NOT NULL,           -- the data's license line
            dataset TEXT NOT NULL,           -- the dataset the values were computed on
            budget INTEGER NOT NULL,         -- the action budget they ran under
            imported_at TEXT NOT NULL
        );
        CREATE TABLE reference_values (
            set_id INTEGER NOT NULL REFERENCES reference_sets(id) ON DELETE CASCADE,
            split TEXT NOT NULL,             -- e.g. test300: the run it is compared with
            model TEXT NOT NULL,
            arm TEXT NOT NULL,               -- lab's arm (the released unaided is none)
            source_key TEXT NOT NULL,        -- the key as the file wrote it
            delta REAL NOT NULL,
            ci_low REAL NOT NULL,
            ci_high REAL NOT NULL,
            mean6 REAL,                      -- NULL where the file gives none
            PRIMARY KEY (set_id, split, model, arm)
        );
        """
    )
