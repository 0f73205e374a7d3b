"""The layout each derived table of lab.db is written in, and the check its readers make.

Derived tables hold what lab.db's episodes, steps and probes determine: `decisions`
with the episodes' step totals (`core.store.decisions`), `decision_packs`,
`episode_packs` (`core.store.episode_packs`) and `judgment_packs`
(`core.store.judgment_packs`). Each is written in a layout, ``<version>:<fingerprint>``:
the writer module's hand-bumped ``…LAYOUT_VERSION`` and the first 16 hex digits of the
sha256 of its ``layout_text`` (the packing queries and field tables, so reordering
`EPISODE_WORDS` changes it by itself). ``derived_layouts`` (migration 0013) records
each table's layout.

The readers (`core.store.packs`, `core.store.frames`, `core.store.judgment_counts`)
call `require_layout` before they decode a table; `core.store.derived` rebuilds the
`stale_tables`. This module imports only the writers' layout definitions, so the
readers can check a layout without importing the rebuild, and the rebuild the
readers.
"""

from __future__ import annotations

import hashlib
import sqlite3

from sqlite_utils import Database

import core.store.decisions as decisions
import core.store.episode_packs as episode_packs
import core.store.judgment_packs as judgment_packs
from core.errors import StoreError

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
    # looked up at each call, not imported by value: a bumped version (tests patch one)
    # counts at once
    version, text = {
        "decisions": (decisions.DECISIONS_LAYOUT_VERSION, decisions.decisions_layout_text),
        "decision_packs": (decisions.PACKS_LAYOUT_VERSION, decisions.packs_layout_text),
        "episode_packs": (episode_packs.LAYOUT_VERSION, episode_packs.layout_text),
        "judgment_packs": (judgment_packs.LAYOUT_VERSION, judgment_packs.layout_text),
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
