"""Cheap change detection on lab.db for the console (no Textual here)."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path


class DataVersion:
    """Tells whether another connection committed since the last call.

    `PRAGMA data_version` changes when *another* connection commits, and costs no
    read of any table, so polling it every second never competes with the workers.
    The connection is read-only (`mode=ro`): the console never takes a write lock
    while it waits.
    """

    def __init__(self, db_path: Path) -> None:
        self._path = Path(db_path)
        self._conn: sqlite3.Connection | None = None
        self._last: int | None = None
        self._lock = threading.Lock()

    def changed(self) -> bool:
        """True on the first call and whenever lab.db changed since the previous one."""
        with self._lock:
            if self._conn is None:
                self._conn = sqlite3.connect(f"file:{self._path}?mode=ro", uri=True,
                                             check_same_thread=False, timeout=5)
            version = int(self._conn.execute("PRAGMA data_version").fetchone()[0])
            changed = version != self._last
            self._last = version
            return changed

    def close(self) -> None:
        """Close the connection (idempotent)."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
