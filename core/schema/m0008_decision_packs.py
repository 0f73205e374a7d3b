"""lab.db migration 0008: decision_packs: each episode's decision points as one BLOB."""

from __future__ import annotations

from sqlite_utils import Database

NAME = "0008_decision_packs"


def migrate(db: Database) -> None:
    """Each episode's decision points as one BLOB, so analysis reads one value per episode.

    - decision_packs: per episode with decision points, ``n`` (its rows in
      `decisions`) and ``words``: those rows in ``seq`` order, each two little-endian
      int64 words (`core.store.decisions.PACKED_FIELDS`; the second also holds the
      episode id above bit 23). Written with the rows in the same transaction
      (episode store, `rederive`); filled for stored episodes by
      `core.store.derived.rederive_stale` after the upgrade. `decisions`
      stays (SQL queries read it); a reader uses the packs only when their ``n`` add
      up to the rows of `decisions` in the range it reads.
    """
    db.conn.execute(
        """
        CREATE TABLE decision_packs (
            episode_id INTEGER PRIMARY KEY REFERENCES episodes(id) ON DELETE CASCADE,
            n INTEGER NOT NULL,              -- decision points (rows of decisions)
            words BLOB NOT NULL              -- 2 little-endian int64 per point, seq order
        )
        """
    )
