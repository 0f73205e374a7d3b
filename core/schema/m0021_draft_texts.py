"""lab.db migration 0021: the console's autosaved text of a draft amendment."""

from __future__ import annotations

from sqlite_utils import Database

NAME = "0021_draft_texts"


def migrate(db: Database) -> None:
    """What was typed in the console's amendment editor and not yet saved, kept so that
    it survives the console closing (or dying) before ctrl+s.

    - draft_texts: one row per draft with unsaved text: the editor's title, body, Tests
      and Scope text as typed (notes included, possibly invalid JSON), and when it was
      kept. Saving or discarding the text deletes the row; the amendment's own row
      changes only on save.
    """
    db.executescript(
        """
        CREATE TABLE draft_texts (
            amendment_id TEXT PRIMARY KEY REFERENCES amendments(id) ON DELETE CASCADE,
            title TEXT NOT NULL,
            body TEXT NOT NULL,
            tests TEXT NOT NULL,             -- as typed: notes and all, maybe invalid
            scope TEXT NOT NULL,
            kept_at TEXT NOT NULL            -- UTC, when the editor last kept it
        );
        """
    )
