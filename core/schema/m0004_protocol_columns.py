"""lab.db migration 0004: columns for the rest of the paper's protocol (reasoning, discarded
turns, tool source)."""

from __future__ import annotations

from sqlite_utils import Database

NAME = "0004_protocol_columns"


def migrate(db: Database) -> None:
    """Columns for the rest of the paper's protocol (its arms, thinking models).

    - steps.reasoning / reasoning_tokens: thinking-mode text of that turn, stored
      apart from the thought and never fed back; episodes.reasoning_tokens totals it.
    - steps.discarded: a turn the stated-judgment rule discarded and re-asked with the
      forced-finish instruction (kept for the record, counted in extra calls).
    - steps.tool_source: which source a search ran on ("primary" or "backup" in
      two-source runs; NULL otherwise).
    """
    db.executescript(
        """
        ALTER TABLE steps ADD COLUMN reasoning TEXT;
        ALTER TABLE steps ADD COLUMN reasoning_tokens INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE steps ADD COLUMN discarded INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE steps ADD COLUMN tool_source TEXT;
        ALTER TABLE episodes ADD COLUMN reasoning_tokens INTEGER NOT NULL DEFAULT 0;
        """
    )
