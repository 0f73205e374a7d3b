"""lab.db migration 0012: live rows belong to a worker (indexes for the reconcile);
ownerless rows dropped."""

from __future__ import annotations

from sqlite_utils import Database

NAME = "0012_live_owner"


def migrate(db: Database) -> None:
    """Live rows belong to a worker, so none outlives it: indexes for the reconcile that removes
    those of dead workers, and the rows written before any had an owner dropped (no
    reader can tell whether one of them still runs; kill -9 left them for good)."""
    for sql in (
            "DELETE FROM live_steps WHERE live_id IN "
            "(SELECT id FROM live_episodes WHERE worker IS NULL)",
            "DELETE FROM live_episodes WHERE worker IS NULL",
            "CREATE INDEX IF NOT EXISTS live_episodes_worker ON live_episodes(worker)",
            "CREATE INDEX IF NOT EXISTS live_episodes_pair ON live_episodes(cell_id, question_id)"):
        db.conn.execute(sql)
