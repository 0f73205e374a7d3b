"""A full disk under lab.db, seen by every write transaction of the process.

SQLite says `database or disk is full` (SQLITE_FULL) when lab.db or its WAL cannot grow,
and `disk I/O error` when the file system refuses a write (ENOSPC). `core.store.base.write`
rolls such a transaction back (nothing is half-written) and tells `DISK`; the next
transaction that commits tells it the space is back. A worker reads `DISK.full` to pause:
it starts no new episode, keeps what finished in memory, retries its writes every
`PROBE_S` and resumes once one commits (`jobs.pump`). Each change is one log line.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time

LOG = logging.getLogger("lab.store")
MARKS = ("database or disk is full", "disk i/o error", "no space left")
"""What SQLite and the OS say when the disk under lab.db is full."""
PROBE_S = 1.0
"""How often a paused worker tries its writes again."""


def is_disk_full(exc: BaseException) -> bool:
    """Whether `exc` says the disk under lab.db is full."""
    if not isinstance(exc, (sqlite3.OperationalError, OSError)):
        return False
    return any(m in str(exc).lower() for m in MARKS)


class DiskState:
    """Whether this process's last write to lab.db failed for want of space."""

    def __init__(self) -> None:
        self.full = False
        self.since = 0.0
        self.failures = 0
        """Writes refused for want of space since the process started (tests read it)."""
        self._lock = threading.Lock()

    def failed(self, exc: BaseException) -> None:
        """A write failed with `exc` (a full disk): paused from now on, said once."""
        with self._lock:
            self.failures += 1
            if self.full:
                return
            self.full, self.since = True, time.monotonic()
        LOG.warning("lab.db's disk is full (%s): the worker pauses its jobs (no new episode "
                    "starts; finished ones wait in memory) and resumes when space is freed",
                    " ".join(str(exc).split()))

    def written(self) -> None:
        """A write committed: the space is back (said once)."""
        if not self.full:
            return
        with self._lock:
            if not self.full:
                return
            self.full = False
            paused = time.monotonic() - self.since
        LOG.warning("lab.db's disk has space again: the worker resumes its jobs (paused "
                    "%.0f s)", paused)


DISK = DiskState()
"""This process's view of the disk under lab.db."""
