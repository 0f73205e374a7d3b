"""lab.db migration 0010: episode_packs: each episode's keys and integer values as one BLOB."""

from __future__ import annotations

from sqlite_utils import Database

NAME = "0010_episode_packs"


def migrate(db: Database) -> None:
    """Each episode's keys and integer values as one BLOB, so analysis reads a whole id
    range in one value instead of one Python object per value per episode.

    - episode_packs: one row per stored episode (errored ones included, so a reader
      checks coverage by counting rows): ``words`` is its
      `core.store.episode_packs.PACK_SQL` row as little-endian 8-byte words: id,
      cell_id, the error flag, the `EPISODE_WORDS` words 1.. (−1 where a field does
      not fit its bits) and cost_usd as float64 (NaN where NULL). Written with the
      episode and by `derive_all` in the same transaction, after the episode's totals;
      filled for stored episodes by `core.store.derived.rederive_stale` after the
      upgrade, with the same function, so stored words equal a fresh computation.
    - a trigger drops an episode's row when the episode is updated or deleted outside
      those writers: a reader then reads the episodes' rows until they are repacked.
    """
    db.conn.execute(
        """
        CREATE TABLE episode_packs (
            episode_id INTEGER PRIMARY KEY REFERENCES episodes(id) ON DELETE CASCADE,
            words BLOB NOT NULL              -- little-endian 8-byte words: a PACK_SQL row
        )
        """
    )
    for event in ("UPDATE", "DELETE"):
        db.conn.execute(f"CREATE TRIGGER episodes_{event.lower()}_0010 AFTER {event} ON "
                        "episodes BEGIN DELETE FROM episode_packs WHERE episode_id = OLD.id; "
                        "END")
