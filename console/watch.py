"""Cheap change detection on lab.db for the console (no Textual here)."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from urllib.parse import quote


class DataVersion:
    """Tells whether another connection committed since the last call.

    `PRAGMA data_version` changes when *another* connection commits, and costs no
    read of any table, so polling it every second never competes with the workers.
    The connection is read-only (`mode=ro`): the console never takes a write lock
    while it waits. A lab.db in a read-only folder without its `-shm` file cannot be
    opened so; then it is opened `immutable` (nothing can commit there) and never changes.
    """

    def __init__(self, db_path: Path) -> None:
        self._path = Path(db_path)
        self._conn: sqlite3.Connection | None = None
        self._last: int | None = None
        self._lock = threading.Lock()

    def prime(self) -> None:
        """Take lab.db's version now, so that the next `changed()` says only whether a
        commit came since (the console's first screen reads after this; without it the
        first poll always reported a change and every screen read twice at start). An
        error here is left for `changed()` to meet, which then reports a change."""
        with self._lock:
            try:
                if self._conn is None:
                    self._conn = self._open()
                self._last = int(self._conn.execute("PRAGMA data_version").fetchone()[0])
            except sqlite3.Error:
                self._last = None

    def changed(self) -> bool:
        """True on the first call and whenever lab.db changed since the previous one."""
        with self._lock:
            if self._conn is None:
                self._conn = self._open()
            version = int(self._conn.execute("PRAGMA data_version").fetchone()[0])
            changed = version != self._last
            self._last = version
            return changed

    def _uri(self, mode: str) -> str:
        """lab.db's URI opened in `mode` ("ro" or "rw")."""
        return f"file:{quote(str(self._path.resolve()))}?mode={mode}"

    def _open(self) -> sqlite3.Connection:
        uri = self._uri("ro")
        conn = sqlite3.connect(uri, uri=True, check_same_thread=False, timeout=5)
        try:
            conn.execute("PRAGMA data_version").fetchone()
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        except sqlite3.OperationalError:  # no -shm and no right to create it
            conn.close()
            conn = sqlite3.connect(uri + "&immutable=1", uri=True, check_same_thread=False,
                                   timeout=5)
        return conn

    def close(self) -> None:
        """Close the connection (idempotent), then fold lab.db's write-ahead log into it.

        SQLite copies the log into lab.db and removes it when the last connection
        closes, unless that connection is read-only: this one usually outlives every
        other (the console's reads close theirs at once), so the commits that workers
        made while the console watched stayed in ``lab.db-wal``, and a copy of lab.db
        alone missed them. A short writable connection checkpoints what no reader still
        needs and, if it closes last, removes the log; it never waits for a lock, and on
        a read-only lab.db it does nothing."""
        with self._lock:
            if self._conn is None:
                return
            self._conn.close()
            self._conn = None
            try:
                conn = sqlite3.connect(self._uri("rw"), uri=True, timeout=0)
                try:
                    conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
                finally:
                    conn.close()
            except sqlite3.Error:
                pass  # read-only, or locked by a writer: it folds the log in itself
