"""Opening lab.db: migrated by `core.store.base`, its stale derived tables rebuilt by
`core.store.derived`.

Apart from base because the rebuild imports the writers of the derived tables, and
every writer imports base (for `write`): base opens and migrates, this module adds
the rebuild, and nothing a writer imports opens lab.db.
"""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path

from sqlite_utils import Database

from core.store.base import open_migrated
from core.store.derived import rederive_stale
from core.store.layouts import stale_tables

LOG = logging.getLogger("lab.store")


def connect(path: Path | str, create: bool = True, read_only_fallback: bool = False
            ) -> Database:
    """Open lab.db (creating and migrating it as needed).

    After a schema upgrade, and whenever a derived table's recorded layout differs from
    this code's, the derived tables are rebuilt from the stored data
    (`core.store.derived`), one warning line logged when lab.db held episodes; a
    read-only lab.db is left as it is (its readers refuse the stale tables).

    Args:
        path: the database file.
        create: create the file when it does not exist; read-only commands pass
            False so a mistyped --db never leaves an empty lab.db behind.
        read_only_fallback: an existing lab.db that cannot be opened for writing (a
            read-only file, folder or mount) is opened read-only instead of failing
            (`core.store.base.open_read_only`): what the console and the analysis
            readers ask; a command that writes leaves it False and fails in one line.

    Raises:
        StoreError: no file (with create=False), the file was written by a newer lab
            (higher schema version), is not an SQLite database, or cannot be opened
            or written (read-only file or mount).
    """
    return open_migrated(path, create, _rederive, read_only_fallback)


def db_file(db: Database) -> str:
    """The main database file of a connection ("" for an in-memory database)."""
    for _, name, file in db.conn.execute("PRAGMA database_list").fetchall():
        if name == "main":
            return str(file or "")
    return ""


def _rederive(db: Database, path: Path, everything: bool = False) -> None:
    """Rebuild stale derived tables (all of them when `everything`), logging one line when
    episodes were rederived; skipped on a read-only lab.db."""
    if not everything and not stale_tables(db.conn):
        return
    try:
        done = rederive_stale(db, everything)
    except sqlite3.OperationalError as exc:
        if "readonly" in str(exc) or "read-only" in str(exc):
            return  # nothing may be written: readers refuse the stale tables
        raise
    if done.tables and done.episodes:
        LOG.warning(done.line(path))
