"""The episodes' key packs and the decision packs read in a thread started before
`lab results` imports pandas and its table code.

At 198,000 episodes those reads are about 0.3 s of SQLite's CPU (the key packs and the
question ids 0.16 s, the decision packs 0.12 s) and the imports after the command starts
0.4-0.5 s. SQLite releases the GIL while a statement runs, so on a second core the reads
overlap the imports instead of following them (docs/performance.md, "Toward a second
per table"). The thread reads lab.db through a read-only connection of its own, in one
read transaction, beginning with the unfiltered selection's `Fingerprint`; the reader
takes the result only for a selection with that very fingerprint, on the same file, so
the rows are those it would have read itself (`Fingerprint`: equal fingerprints mean
equal data). Anything that goes wrong in the thread leaves nothing read early, and the
reader reads as before.
"""

from __future__ import annotations

import atexit
import os
import threading
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from sqlite_utils import Database

from core.store.packs import KeyPackText, PackSpan, key_pack_text, read_pack_span
from core.store.selection import Fingerprint, Selection, fingerprint


class EarlyReads:
    """The key packs (and the decision packs when asked) of every episode of a lab.db,
    read in a daemon thread from the moment it is made.

    Attributes:
        path: the lab.db file read (resolved).
    """

    def __init__(self, path: str | Path, decisions: bool,
                 kept: Callable[[Fingerprint], bool] | None = None) -> None:
        """Start reading.

        Args:
            path: the lab.db file (already opened and migrated by the caller).
            decisions: read the decision packs too (the table asked reads decisions).
            kept: asked in the thread with the fingerprint it read, before any pack:
                True when what the reader will compute is already kept (in the results
                cache), so nothing is read (a cached table at 198,000 episodes read
                0.3 s of SQLite and 48 MB of packs it never used).
        """
        self.path = os.path.realpath(path)
        self._kept = kept
        self._fingerprint: Future[Fingerprint | None] = Future()
        self._keys: Future[KeyPackText | None] | None = Future()
        self._packs: Future[PackSpan | None] | None = Future() if decisions else None
        self._db: Database | None = None
        self._stop = threading.Event()
        one_arena()
        pending = [f for f in (self._fingerprint, self._keys, self._packs) if f is not None]
        self._thread = threading.Thread(target=self._run, args=(pending,), daemon=True,
                                        name="early-reads")
        self._thread.start()
        atexit.register(self.close)

    def _run(self, pending: list[Future[Any]]) -> None:
        """The thread: the fingerprint, then the key packs, then the decision packs (the
        Futures in `pending`, in that order), each set as soon as it is read, so a reader
        has the keys before the decision packs are read; each is popped off `pending`
        as it is set, so the thread holds no read it has handed over."""
        try:
            from core.store.base import open_read_only

            db = self._db = open_read_only(Path(self.path))
            try:
                db.conn.execute("BEGIN")  # one snapshot for the fingerprint and the reads
                fp = fingerprint(db, Selection())
                _hand_over(pending, fp)
                if self._kept is not None and self._kept(fp):
                    self._stop.set()  # nothing to read: the reader reads no frame
                _hand_over(pending, None if self._stop.is_set()
                           else key_pack_text(db, fp.max_id))
                if pending:
                    _hand_over(pending, None if self._stop.is_set() or not fp.episodes
                               else read_pack_span(db, 0, fp.max_id))
                db.conn.execute("ROLLBACK")
            finally:
                self._db = None
                db.conn.close()
        except Exception:  # noqa: BLE001  (nothing read early: the reader reads itself)
            pass
        finally:
            for future in pending:
                future.set_result(None)

    def _matches(self, path: str, selection: Selection, fp: Fingerprint) -> bool:
        """Whether the reads describe this selection's data: the same file, an unfiltered
        selection, and the fingerprint the thread read."""
        return (not selection.filtered and bool(path) and os.path.realpath(path) == self.path
                and self._fingerprint.result() == fp)

    def take_key_packs(self, path: str, selection: Selection, fp: Fingerprint
                       ) -> KeyPackText | None:
        """The key packs' text read early for this selection (`key_pack_text` of
        `fp.max_id`), waiting for the thread if it is still reading them; None when they
        do not describe it, could not be read or were taken before (they are handed out
        once, and not kept here)."""
        keys, self._keys = self._keys, None
        return keys.result() if keys is not None and self._matches(path, selection, fp) \
            else None

    def take_decision_packs(self, path: str, selection: Selection, fp: Fingerprint
                            ) -> Future[PackSpan | None] | None:
        """The decision packs of ids 0..`fp.max_id`, being read (a Future, None inside
        when they could not be); None when they were not asked for, do not describe this
        selection or were taken before (handed out once, not kept here)."""
        packs, self._packs = self._packs, None
        return packs if packs is not None and self._matches(path, selection, fp) else None

    def close(self) -> None:
        """Stop the reads and let go of what was not taken: the command that started
        them calls it when it ends (a table served from the results cache takes nothing),
        or else the interpreter at exit (SQLite must not be mid-statement while it ends)."""
        atexit.unregister(self.close)
        self._stop.set()
        self._keys = self._packs = None
        db = self._db
        if db is not None and self._thread.is_alive():
            try:
                db.conn.interrupt()
            except Exception:  # noqa: BLE001  (closed meanwhile)
                pass
        self._thread.join()


def _hand_over(pending: list[Future[Any]], result: object) -> None:
    """Set the first pending Future to `result`, read before it is taken off `pending`
    (a read that fails leaves it there, for `EarlyReads._run` to set to None)."""
    pending.pop(0).set_result(result)


def one_arena() -> None:
    """Have glibc's malloc serve every thread from the one arena it serves the main thread
    from (``M_ARENA_MAX`` 1, what ``MALLOC_ARENA_MAX=1`` sets at a process's start).

    The reading thread allocates the packs' BLOB and text (about 40 MB at 198,000
    episodes, with SQLite's own buffers for them) and the main thread frees them once
    decoded. With an arena per thread that memory goes back to the thread's arena, where
    the main thread never reuses it: a table's peak 20-40 MB higher (Δ 387 -> 431 MB,
    measured); with one arena it is reused (393 MB). Nothing is done where the C library
    is not glibc.
    """
    import ctypes

    try:
        ctypes.CDLL(None).mallopt(_M_ARENA_MAX, 1)
    except (AttributeError, OSError):  # not glibc
        pass


_M_ARENA_MAX = -8
"""glibc's mallopt parameter number for ``M_ARENA_MAX`` (malloc.h)."""
