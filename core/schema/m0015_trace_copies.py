"""lab.db migration 0015: a trace state copied from the depth before it."""

from __future__ import annotations

from sqlite_utils import Database

NAME = "0015_trace_copies"


def migrate(db: Database) -> None:
    """A depth whose evidence slice is empty shows what the depth before it showed; the
    second seed copies that state instead of asking again (its App. B).

    - traces.copied_from: the depth whose state this row copies (its answer,
      confidence, parse and labels; no call, so no tokens, latency or reply); NULL for
      a state the model was asked.
    """
    db.conn.execute("ALTER TABLE traces ADD COLUMN copied_from INTEGER")
