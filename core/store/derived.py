"""Derived tables of lab.db, the layout each was written in, and their rebuild.

Derived tables hold what lab.db's episodes, steps and probes determine: `decisions`
with the episodes' step totals (`core.store.decisions`), `decision_packs`,
`episode_packs` (`core.store.episode_packs`) and `judgment_packs`
(`core.store.judgment_counts`). Each is written in a layout, ``<version>:<fingerprint>``:
the writer module's hand-bumped ``…LAYOUT_VERSION`` and the first 16 hex digits of the
sha256 of its ``layout_text`` (the packing queries and field tables, so reordering
`EPISODE_WORDS` changes it by itself). ``derived_layouts`` (migration 0013) records
each table's layout.

`core.store.connect` calls `rederive_stale`:

- after every schema upgrade (migrations create derived tables empty, and never call
  application code): every derived table is rebuilt;
- when a recorded layout differs from this code's (another lab version wrote it):
  that table, and those built from it, are rebuilt.

A rebuild deletes the table's rows and writes them again from the stored data with
today's code, in one transaction, records the layouts and bumps the change counter
(results caches recompute); `connect` logs one line saying what it rebuilt. A
read-only lab.db cannot be rebuilt: its readers refuse the stale tables
(`require_layout`, one StoreError line saying what to do).
"""

from __future__ import annotations

import hashlib
import sqlite3
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from sqlite_utils import Database

from core.errors import StoreError
from core.store import decisions, episode_packs
from core.store.base import write

TABLES = ("decisions", "decision_packs", "episode_packs", "judgment_packs")
"""The derived tables, in rebuild order."""
BUILT_FROM = {"decision_packs": "decisions", "episode_packs": "decisions"}
"""A table rebuilt whenever the one it is built from is (the episode packs hold the step
totals that `decisions`' rebuild rewrites)."""


def code_layout(table: str) -> str:
    """The layout this code writes and reads `table` in.

    Args:
        table: one of TABLES.

    Returns:
        ``<version>:<fingerprint>``.
    """
    from core.store import judgment_counts  # it reads frames, which read us

    version, text = {
        "decisions": (decisions.DECISIONS_LAYOUT_VERSION, decisions.decisions_layout_text),
        "decision_packs": (decisions.PACKS_LAYOUT_VERSION, decisions.packs_layout_text),
        "episode_packs": (episode_packs.LAYOUT_VERSION, episode_packs.layout_text),
        "judgment_packs": (judgment_counts.LAYOUT_VERSION, judgment_counts.layout_text),
    }[table]
    return f"{version}:{hashlib.sha256(text().encode()).hexdigest()[:16]}"


def recorded_layouts(conn: sqlite3.Connection) -> dict[str, str]:
    """The layouts lab.db records per derived table (none before migration 0013)."""
    try:
        return dict(conn.execute("SELECT name, layout FROM derived_layouts").fetchall())
    except sqlite3.OperationalError:  # no derived_layouts table: nothing recorded
        return {}


def stale_tables(conn: sqlite3.Connection) -> tuple[str, ...]:
    """The derived tables whose recorded layout is missing or differs from the code's,
    with those built from them, in TABLES order."""
    recorded = recorded_layouts(conn)
    stale = {t for t in TABLES if recorded.get(t) != code_layout(t)}
    stale |= {t for t, source in BUILT_FROM.items() if source in stale}
    return tuple(t for t in TABLES if t in stale)


def require_layout(db: Database, table: str) -> None:
    """Refuse to read `table` unless lab.db records this code's layout for it and for the
    table it is built from (`BUILT_FROM`).

    Args:
        db: an open lab.db.
        table: one of TABLES.

    Raises:
        StoreError: the table was written in another layout (or none is recorded) and
            has not been rebuilt, e.g. a read-only lab.db written by another lab version.
    """
    recorded = recorded_layouts(db.conn)
    for name in (BUILT_FROM.get(table), table):
        if name is not None and recorded.get(name) != code_layout(name):
            path = db.conn.execute("PRAGMA database_list").fetchone()[2] or "lab.db"
            raise StoreError(
                f"{path}: {name} was written in layout {recorded.get(name) or 'unknown'} "
                f"and this lab reads layout {code_layout(name)}; open the file once with "
                f"write access (any lab command, e.g. `lab status --db {path}`) to "
                f"rederive it")


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
    from core.store.judgment_counts import store_counts

    start = time.perf_counter()
    conn = db.conn
    with write(db):
        tables = TABLES if everything else stale_tables(conn)  # read again under the lock
        if "decisions" in tables:  # rows and totals of every episode with steps
            decisions.derive_all(conn, packs=False)
        if "decision_packs" in tables:
            conn.execute("DELETE FROM decision_packs")
            decisions.pack_all(conn)
        if "episode_packs" in tables:
            conn.execute("DELETE FROM episode_packs")
            episode_packs.store_packs(conn)
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
