"""lab.db migration 0009: judgment_packs: each episode's judgment counts as one BLOB."""

from __future__ import annotations

from sqlite_utils import Database

NAME = "0009_judgment_packs"


def migrate(db: Database) -> None:
    """Each episode's judgment counts, so the judgments table reads no step.

    - judgment_packs: one row per stored episode (errored ones and those without an
      observation step included, so a reader checks coverage by counting rows):
      ``words`` is its `core.store.judgment_packs.counts_sql` row as six
      little-endian int64 (id, observations, the four packed sums; zeros without an
      observation). Written with the episode and by `rederive` in the same
      transaction; filled for stored episodes by `core.store.derived.rederive_stale`
      after the upgrade.
    - triggers drop an episode's row when its steps or judgment probes change
      outside those writers (e.g. probes stored before their `rederive`): a reader
      counts such episodes from the steps until they are rederived.
    """
    db.conn.execute(
        """
        CREATE TABLE judgment_packs (
            episode_id INTEGER PRIMARY KEY REFERENCES episodes(id) ON DELETE CASCADE,
            words BLOB NOT NULL              -- 6 little-endian int64: a counts_sql row
        )
        """
    )
    drop = "BEGIN DELETE FROM judgment_packs WHERE episode_id = {}.episode_id; END"
    for event, row in (("INSERT", "NEW"), ("UPDATE", "OLD"), ("UPDATE", "NEW"),
                       ("DELETE", "OLD")):
        name = f"{event.lower()}_{row.lower()}_0009"
        db.conn.execute(f"CREATE TRIGGER steps_{name} AFTER {event} ON steps "
                        + drop.format(row))
        db.conn.execute(f"CREATE TRIGGER probes_{name} AFTER {event} ON probes "
                        f"WHEN {row}.kind = 'judgment' " + drop.format(row))
