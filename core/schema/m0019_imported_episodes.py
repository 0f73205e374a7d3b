"""lab.db migration 0019: episodes imported from released files, and sets made from id lists."""

from __future__ import annotations

from sqlite_utils import Database

NAME = "0019_imported_episodes"


def migrate(db: Database) -> None:
    """A run can hold episodes that were not run here but imported from a released file
    (one record per episode: its actions, judgments and success, no text); a question
    set can be made from a released list of ids.

    - run_imports: one row per file imported into a run: its name, sha256, number of
      records, the data's license line, the released split it came from and when.
      A run with such rows holds imported episodes only.
    - question_refs: the ids of questions an imported episode names that the dataset
      does not hold yet, with that dataset; the question itself links up when the
      dataset is imported (its row in `questions` wins).
    - question_sets.manifest: JSON of what a set imported from a manifest recorded
      (file, sha256, version, seed tag, the dataset's sha256); NULL for drawn sets.
    """
    db.executescript(
        """
        CREATE TABLE run_imports (
            id INTEGER PRIMARY KEY,
            run_id INTEGER NOT NULL REFERENCES runs(id),
            file TEXT NOT NULL,              -- the source file's name (no folder)
            sha256 TEXT NOT NULL,            -- of the file's bytes as read
            records INTEGER NOT NULL,        -- episodes it held
            license TEXT NOT NULL,           -- the data's license line
            split TEXT,                      -- the released split (e.g. test300)
            imported_at TEXT NOT NULL
        );
        CREATE INDEX run_imports_run ON run_imports(run_id);
        CREATE TABLE question_refs (
            id TEXT PRIMARY KEY,             -- a question id no dataset held at import
            dataset TEXT NOT NULL
        );
        ALTER TABLE question_sets ADD COLUMN manifest TEXT;
        """
    )
