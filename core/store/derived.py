"""The rebuild of lab.db's derived tables whose layout is stale.

The derived tables and the layout each is written in are described in
`core.store.layouts`. `core.store.connect` (`core.store.connection`) calls
`rederive_stale`:

- after every schema upgrade (migrations create derived tables empty, and never call
  application code): every derived table is rebuilt;
- when a recorded layout differs from this code's (another lab version wrote it):
  that table, and those built from it, are rebuilt.

A rebuild deletes the table's rows and writes them again from the stored data with
today's code, in one transaction, records the layouts and bumps the change counter
(results caches recompute); `connect` logs one line saying what it rebuilt. A
read-only lab.db cannot be rebuilt: its readers refuse the stale tables
(`core.store.layouts.require_layout`, one StoreError line saying what to do).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from sqlite_utils import Database

from core.store.base import write
from core.store.decisions import derive_all, pack_all
from core.store.episode_packs import store_packs
from core.store.judgment_packs import store_counts
from core.store.layouts import TABLES, code_layout, stale_tables


@dataclass(frozen=True)
class Rederived:
    """What `rederive_stale` rebuilt.

    Attributes:
        tables: the derived tables rebuilt, in TABLES order (empty: none was stale).
        episodes: episodes stored in lab.db.
        seconds: time taken.
    """

    tables: tuple[str, ...]
    episodes: int
    seconds: float

    def line(self, path: Path | str) -> str:
        """One line for the log: what was rebuilt, for how many episodes, how fast."""
        return (f"{path}: rederived {', '.join(self.tables)} of {self.episodes:,} episodes "
                f"with this lab's layouts ({self.seconds:.1f} s)")


def rederive_stale(db: Database, everything: bool = False) -> Rederived:
    """Rebuild the derived tables whose layout is stale, in one write transaction.

    Args:
        db: an open lab.db at the current schema (inside or outside a transaction).
        everything: rebuild every derived table whatever is recorded (after a schema
            upgrade).

    Returns:
        What was rebuilt.
    """
    start = time.perf_counter()
    conn = db.conn
    with write(db):
        tables = TABLES if everything else stale_tables(conn)  # read again under the lock
        if "decisions" in tables:  # rows and totals of every episode with steps
            derive_all(conn, packs=False)
        if "decision_packs" in tables:
            conn.execute("DELETE FROM decision_packs")
            pack_all(conn)
        if "episode_packs" in tables:
            conn.execute("DELETE FROM episode_packs")
            store_packs(conn)
        if "judgment_packs" in tables:
            conn.execute("DELETE FROM judgment_packs")
            store_counts(conn)
        if tables:
            now = datetime.now(UTC).isoformat(timespec="seconds")
            conn.executemany("INSERT OR REPLACE INTO derived_layouts (name, layout, derived_at) "
                             "VALUES (?, ?, ?)", [(t, code_layout(t), now) for t in tables])
            conn.execute("UPDATE analysis_state SET changes = changes + 1 WHERE id = 1")
        episodes = conn.execute("SELECT count(*) FROM episodes").fetchone()[0]
    return Rederived(tables, int(episodes), time.perf_counter() - start)
