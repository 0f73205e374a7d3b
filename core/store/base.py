"""Connection, migrations and the write transaction of lab.db."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from pathlib import Path

from sqlite_utils import Database

from core.errors import StoreError
from core.schema import MIGRATIONS, SCHEMA_VERSION

BUSY_TIMEOUT_MS = 60_000


def connect(path: Path | str) -> Database:
    """Open lab.db (creating and migrating it as needed).

    Args:
        path: the database file.

    Raises:
        StoreError: the file was written by a newer lab (higher schema version), or
            is not an SQLite database.
    """
    path = Path(path)
    if path.parent and not path.parent.exists():
        raise StoreError(f"{path}: directory {path.parent} does not exist")
    conn = sqlite3.connect(str(path), isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000,
                           check_same_thread=False)
    db = Database(conn)
    try:
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            conn.close()
            raise StoreError(
                f"{path} has schema version {version}, newer than this lab knows "
                f"({SCHEMA_VERSION}): upgrade lab before using this file")
        if conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
            conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        if version < SCHEMA_VERSION:  # before foreign keys go on: a rebuild must not cascade
            with write(db):
                MIGRATIONS.apply(db)
                conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        conn.execute("PRAGMA foreign_keys = ON")
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise StoreError(f"{path}: not a usable lab database ({exc})") from None
    return db


@contextlib.contextmanager
def write(db: Database) -> Iterator[Database]:
    """A write transaction (BEGIN IMMEDIATE): all or nothing.

    Nested use joins the outer transaction, so a caller can make several store
    calls atomic by wrapping them in one `write`.
    """
    conn = db.conn
    if conn.in_transaction:
        yield db
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield db
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def schema_version(db: Database) -> int:
    """`PRAGMA user_version` of an open lab.db."""
    return int(db.conn.execute("PRAGMA user_version").fetchone()[0])


