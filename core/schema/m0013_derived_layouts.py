"""lab.db migration 0013: the layout each derived table was written in."""

from __future__ import annotations

from sqlite_utils import Database

NAME = "0013_derived_layouts"


def migrate(db: Database) -> None:
    """Derived tables record the layout they were written in.

    - derived_layouts: one row per derived table (decisions with the episodes' step
      totals, decision_packs, episode_packs, judgment_packs): ``layout`` is the
      version and fingerprint of the code that wrote its rows
      (`core.store.derived`); a reader refuses rows of another layout and
      `core.store.connect` rederives them. Created empty: every table counts as
      written in an unknown layout, so the first open after this upgrade rederives
      them all.
    """
    db.conn.execute(
        """
        CREATE TABLE derived_layouts (
            name TEXT PRIMARY KEY,           -- the derived table
            layout TEXT NOT NULL,            -- '<version>:<fingerprint>' of its writer
            derived_at TEXT NOT NULL         -- UTC, when its rows were last rebuilt
        )
        """
    )
