"""Counts over every stored episode, kept between reads so that each read counts only the
episodes stored since the one before.

The Dashboard reads its queue and spend panels again every second while workers store
episodes. Counted from scratch, each read scans every episode: on a lab.db of 198,000
episodes about 0.1 s for the queue panel and 0.3 s for spend, so a console left open on
the Dashboard took 0.6–0.7 of a core beside the workers, against 0.1 on an empty lab.db
(docs/performance.md). A tally reads the rows past the last id it counted (a search of
the primary key) and one count of the table through its smallest index, whatever the
table's size.

Why the sums stay true: lab writes an episode row once and never deletes it; every
other change to the table (a row deleted, or updated once its totals are set) moves
``analysis_state.changes`` (triggers of migration 0007), as the results cache relies on.
A tally remembers the last id it counted, how many rows that was and the counter, and
reads in one snapshot; it counts every row again when the counter moved, or when the
table holds other rows than those counted plus the new ones (a row stored under the last
id, a lab.db put back from a backup).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from sqlite_utils import Database

from core.end_reasons import apart_sql


@contextmanager
def snapshot(db: Database) -> Iterator[None]:
    """One read transaction for the statements inside (WAL: they all see the same
    commits), unless the connection is already in one."""
    if db.conn.in_transaction:
        yield
        return
    db.conn.execute("BEGIN")
    try:
        yield
    finally:
        db.conn.execute("ROLLBACK")


def _changes(db: Database) -> int | None:
    """``analysis_state.changes``, or None on a lab.db without it (then every read
    counts every row)."""
    try:
        row = db.conn.execute("SELECT changes FROM analysis_state WHERE id = 1").fetchone()
    except sqlite3.OperationalError:  # no such table: a lab.db before migration 0007
        return None
    return int(row[0]) if row else None


@dataclass
class Tally:
    """What a tally has counted: the episodes with ids up to `upto`, `rows` of them,
    under the change counter `changes` (None: nothing counted yet). Subclasses hold the
    sums and say how to count past an id (`_count_past`)."""

    upto: int = 0
    rows: int = 0
    changes: int | None = None
    full_reads: int = 0
    """How many reads counted every row (the first, and each one whose check failed)."""
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def _read(self, db: Database, again: bool = False) -> None:
        """Count the episodes stored since the last read into the sums (call inside
        `snapshot`, holding the lock).

        Args:
            db: an open lab.db.
            again: count every row whatever the checks say.
        """
        changes = _changes(db)
        fresh = again or changes is None or changes != self.changes
        try:
            new, last = self._count_past(db, 0 if fresh else self.upto, fresh)
            total = int(db.conn.execute("SELECT count(*) FROM episodes").fetchone()[0])
            if not fresh and total != self.rows + new:  # other rows than those counted
                fresh = True
                new, last = self._count_past(db, 0, True)
        except BaseException:
            self.changes = None  # sums half added: the next read counts every row
            raise
        self.full_reads += fresh
        self.rows = new if fresh else self.rows + new
        self.upto = last if fresh else max(self.upto, last)
        self.changes = changes

    def _count_past(self, db: Database, past: int, fresh: bool) -> tuple[int, int]:
        """Add the episodes with ids over `past` to the sums (`fresh`: set them anew).

        Returns:
            (how many episodes that was, the highest id among them or 0).
        """
        raise NotImplementedError


@dataclass
class QueueTally(Tally):
    """The queue panel's counts of episodes: all stored, errored, complete but truncated
    or refused (`core.end_reasons.APART`), and when each stored within the rate's window
    finished."""

    errored: int = 0
    truncated: int = 0
    refused: int = 0
    recent: list[str] = field(default_factory=list)
    """finished_at of the episodes counted that finished at or after `since`, in id
    order (ISO text, as stored)."""
    since: str = ""

    def read(self, db: Database, since: str) -> tuple[int, int, int, int, tuple[str, ...]]:
        """The counts now: (stored, errored, truncated, refused, finished_at of those
        that finished at or after `since`).

        Args:
            db: an open lab.db.
            since: the rate window's start (ISO text, compared as stored).
        """
        with self._lock, snapshot(db):
            earlier = since < self.since  # a clock set back: older rows count again
            self.since = since
            self._read(db, again=earlier)
            return self.rows, self.errored, self.truncated, self.refused, tuple(self.recent)

    def _count_past(self, db: Database, past: int, fresh: bool) -> tuple[int, int]:
        n, errored, truncated, refused, last, finished = db.conn.execute(
            f"SELECT count(*), count(error), {apart_sql()}, COALESCE(max(id), 0), "
            "group_concat(CASE WHEN finished_at >= ? THEN finished_at END, ' ') "
            "FROM episodes WHERE id > ?", (self.since, past)).fetchone()
        new = (finished or "").split()
        if not fresh:
            self.errored += int(errored or 0)
            self.truncated += int(truncated or 0)
            self.refused += int(refused or 0)
            self.recent = [f for f in self.recent if f >= self.since] + new
        else:
            self.errored, self.truncated, self.refused = (int(errored or 0),
                                                          int(truncated or 0),
                                                          int(refused or 0))
            self.recent = new
        return int(n), int(last)


MADE_CALLS = ("(e.input_tokens + e.output_tokens + e.cache_read_tokens + "
              "e.cache_write_tokens > 0 OR e.cost_usd > 0)")
"""An episode that used tokens or dollars: its calls were made here and answered."""


@dataclass
class SpendTally(Tally):
    """Spend per model of the episodes that made calls (`MADE_CALLS`), and how many
    errored and complete episodes are left out of it.

    Dollars are summed read by read (each read's sum added to the last), so they can
    differ from one sum over every row in the last binary digit; tokens are exact.
    """

    models: dict[str, list[Any]] = field(default_factory=dict)
    """model -> [episodes, input, output, cache read, cache write tokens, dollars]."""
    errored_with_calls: int = 0
    errored_without_calls: int = 0
    made_elsewhere: int = 0

    def read(self, db: Database) -> tuple[list[tuple[Any, ...]], int, int, int]:
        """The spend now: (one row per model in model order: model, episodes, the four
        token counts, dollars; errored with calls; errored without; complete without)."""
        with self._lock, snapshot(db):
            self._read(db)
            rows = [(m, *v) for m, v in sorted(self.models.items())]
            return (rows, self.errored_with_calls, self.errored_without_calls,
                    self.made_elsewhere)

    def _count_past(self, db: Database, past: int, fresh: bool) -> tuple[int, int]:
        if fresh:
            self.models = {}
            self.errored_with_calls = self.errored_without_calls = self.made_elsewhere = 0
        for model, *sums in db.conn.execute(
                "SELECT c.model, count(*), sum(e.input_tokens), sum(e.output_tokens), "
                "sum(e.cache_read_tokens), sum(e.cache_write_tokens), sum(e.cost_usd) "
                f"FROM episodes e JOIN cells c ON c.id = e.cell_id WHERE e.id > ? AND "
                f"{MADE_CALLS} GROUP BY c.model", (past,)):
            kept = self.models.setdefault(str(model), [0, 0, 0, 0, 0, 0.0])
            for i, value in enumerate(sums[:5]):
                kept[i] += int(value or 0)
            kept[5] += float(sums[5] or 0.0)
        n, last, with_calls, without, elsewhere = db.conn.execute(
            "SELECT count(*), COALESCE(max(e.id), 0), "
            f"count(CASE WHEN e.error IS NOT NULL AND {MADE_CALLS} THEN 1 END), "
            f"count(CASE WHEN e.error IS NOT NULL AND NOT {MADE_CALLS} THEN 1 END), "
            f"count(CASE WHEN e.error IS NULL AND NOT {MADE_CALLS} THEN 1 END) "
            "FROM episodes e WHERE e.id > ?", (past,)).fetchone()
        self.errored_with_calls += int(with_calls or 0)
        self.errored_without_calls += int(without or 0)
        self.made_elsewhere += int(elsewhere or 0)
        return int(n), int(last)
