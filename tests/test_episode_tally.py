"""The Dashboard's counts over every episode, kept between reads (`core.store.tally`).

A tally must read what a count of every episode reads, after any sequence of stored
episodes (complete, errored, truncated, refused, with and without calls, of several
models, finished inside and outside the rate's window), and count every row again when
the table changed otherwise (a row deleted or updated once stored, a lab.db put back
with fewer rows, a clock set back). Its reads must cost the episodes stored since the
last read, not the whole table: counted as SQLite's virtual-machine steps (a progress
handler), never as time.
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest
from sqlite_utils import Database

from core import store
from core.episode import EpisodeResult, iso_time
from core.models.base import END_REFUSAL, END_TRUNCATED
from core.store import monitor
from core.store.tally import QueueTally, SpendTally
from jobs.grid import GridRequest
from tests.helpers.console import build
from tests.helpers.reads import vm_steps

GRID = GridRequest(models=("sim-never", "sim-own5"), conditions=("none",),
                   regimes=("clean",), question_set="demo", run="tally")
ENDS = {2: "error", 3: "error", 4: END_TRUNCATED, 5: END_REFUSAL}
"""A batch's kind of episode (0–5) -> how it ended (else it answered)."""
T0 = 1_800_000_000.0
"""The clock of the first batch (seconds since the epoch)."""


@pytest.fixture(scope="module")
def cells_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A lab.db with the grid's two cells (one per model) and no episode."""
    return build(tmp_path_factory.mktemp("tally") / "lab.db", GRID, run=False)


@pytest.fixture
def db(cells_db: Path, tmp_path: Path) -> Database:
    shutil.copy(cells_db, tmp_path / "lab.db")
    return store.connect(tmp_path / "lab.db")


def _cells(db: Database) -> list[int]:
    return [i for (i,) in db.conn.execute("SELECT id FROM cells ORDER BY id")]


def _batch(db: Database, k: int, at: float, n: int = 12) -> None:
    """Store `n` episodes of batch `k`, finished at `at` and the seconds before it: of
    both cells, every kind the counts tell apart; costs are multiples of 1/1024 dollar,
    so that sums in any order are exact."""
    cells = _cells(db)
    items = []
    for i in range(n):
        kind = (k + i) % 6
        tokens = 0 if kind in (3, 4) else 100 + i
        items.append((cells[i % 2], EpisodeResult(
            f"b{k}-q{i}", input_tokens=tokens, output_tokens=tokens // 10,
            cache_read_tokens=i if kind == 1 else 0, cost_usd=(i + k) / 1024 if tokens else 0.0,
            error="model error: refused" if kind in (2, 3) else None,
            end_reason=ENDS.get(kind, "finish"),
            started_at=iso_time(at - 40 * i - 1), finished_at=iso_time(at - 40 * i)), None))
    store.write_episodes(db, items)


def _same(db: Database, queue: QueueTally, spend: SpendTally, now: float) -> None:
    """The tallied reads equal reads that count every episode."""
    assert monitor.queue_counts(db, now=now, tally=queue) == monitor.queue_counts(db, now=now)
    assert monitor.spend_counted(db, spend) == monitor.spend_counted(db)


def test_a_tally_reads_what_a_count_of_every_episode_reads(db: Database) -> None:
    queue, spend = QueueTally(), SpendTally()
    _same(db, queue, spend, T0)  # no episode yet
    for k in range(6):
        now = T0 + 25 * k
        _batch(db, k, now)
        _same(db, queue, spend, now)
        _same(db, queue, spend, now + 7)  # the window moves with no new episode
    counts = monitor.queue_counts(db, now=T0 + 132, tally=queue)
    assert counts.episodes == 72 and counts.errored == 24
    assert (counts.truncated, counts.refused) == (12, 12)
    assert 0 < len(counts.recent) < 72  # some finished in the last minute, some before
    spent = monitor.spend_counted(db, spend)
    assert {s.model for s in spent.rows} == {"sim-never", "sim-own5"}
    assert spent.errored_with_calls == 12 and spent.errored_without_calls == 12
    assert (queue.full_reads, spend.full_reads) == (1, 1)  # every read after the first: new rows


def test_a_clock_set_back_counts_the_window_again(db: Database) -> None:
    queue = QueueTally()
    _batch(db, 0, T0)
    monitor.queue_counts(db, now=T0 + 600, tally=queue)  # every episode outside the window
    earlier = monitor.queue_counts(db, now=T0 + 5, tally=queue)
    assert earlier == monitor.queue_counts(db, now=T0 + 5) and len(earlier.recent) == 2
    assert queue.full_reads == 2


def test_a_change_other_than_new_episodes_counts_every_row_again(db: Database) -> None:
    queue, spend = QueueTally(), SpendTally()
    _batch(db, 0, T0)
    _same(db, queue, spend, T0)
    with db.conn:  # a stored row changed: the change counter moves (triggers, migration 0007)
        db.conn.execute("UPDATE episodes SET cost_usd = 1.5, error = NULL "
                        "WHERE id = (SELECT min(id) FROM episodes WHERE error IS NOT NULL)")
    _same(db, queue, spend, T0)
    with db.conn:
        db.conn.execute("DELETE FROM episodes WHERE id = (SELECT max(id) FROM episodes)")
    _same(db, queue, spend, T0)
    assert (queue.full_reads, spend.full_reads) == (3, 3)


def test_a_lab_db_put_back_with_other_rows_is_counted_again(db: Database,
                                                            tmp_path: Path) -> None:
    """A lab.db copied back from before a batch, then given a smaller batch: the change
    counter is the same as when the tally last read, the rows are not."""
    path = tmp_path / "lab.db"
    _batch(db, 0, T0)
    db.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    shutil.copy(path, tmp_path / "before.db")
    queue, spend = QueueTally(), SpendTally()
    _batch(db, 1, T0 + 10)
    _same(db, queue, spend, T0 + 10)
    db.conn.close()
    shutil.copy(tmp_path / "before.db", path)
    again = store.connect(path)
    _batch(again, 2, T0 + 20, n=7)
    _same(again, queue, spend, T0 + 20)
    assert (queue.full_reads, spend.full_reads) == (2, 2)


def test_a_read_that_fails_half_way_leaves_no_sum_counted_twice(db: Database) -> None:
    """Spend's second statement refused (an authorizer denies the error column) after
    its first added the new episodes' tokens: the next read counts every row again."""
    spend = SpendTally()
    _batch(db, 0, T0)
    monitor.spend_counted(db, spend)
    _batch(db, 1, T0 + 10)

    def no_error_column(action: int, table: str | None, column: str | None, *_: object
                        ) -> int:
        return sqlite3.SQLITE_DENY if column == "error" else sqlite3.SQLITE_OK

    db.conn.set_authorizer(no_error_column)
    with pytest.raises(sqlite3.DatabaseError):
        monitor.spend_counted(db, spend)
    db.conn.set_authorizer(None)
    assert monitor.spend_counted(db, spend) == monitor.spend_counted(db)
    assert spend.full_reads == 2


def test_a_read_costs_the_new_episodes_not_the_table(db: Database) -> None:
    """After 1,200 episodes, reading 12 more costs a small part of counting all 1,212."""
    for k in range(100):
        _batch(db, k, T0 + k)
    queue, spend = QueueTally(), SpendTally()
    now = T0 + 200

    def read_both(q: QueueTally, s: SpendTally) -> None:
        monitor.queue_counts(db, now=now, tally=q)
        monitor.spend_counted(db, s)

    first = vm_steps(db, lambda: read_both(queue, spend))
    _batch(db, 100, now)
    fresh = vm_steps(db, lambda: read_both(QueueTally(), SpendTally()))
    after = vm_steps(db, lambda: read_both(queue, spend))
    assert fresh >= first > 0
    assert after * 20 < fresh, (after, fresh)
    _same(db, queue, spend, now)


def test_the_dashboard_counts_only_new_episodes_each_second(db: Database) -> None:
    """The Dashboard's reads keep their tallies: read after read, the counts follow the
    episodes stored, and only the first read counts every row."""
    from console.screens.dashboard import read_dashboard, read_spend

    path = Path(db.conn.execute("PRAGMA database_list").fetchone()[2])
    queue, spend = QueueTally(), SpendTally()
    for k in range(3):
        _batch(db, k, T0 + k)
        data = read_dashboard(path, 60.0, T0 + k, queue)
        assert data.queue == monitor.queue_counts(db, now=T0 + k)
        assert read_spend(path, spend) == monitor.spend_counted(db)
    assert (queue.full_reads, spend.full_reads) == (1, 1)


def test_a_lab_db_without_the_change_counter_counts_every_row(tmp_path: Path) -> None:
    """Before migration 0007 there is no change counter to trust: every read counts all."""
    conn = sqlite3.connect(tmp_path / "old.db")
    conn.executescript(
        "CREATE TABLE episodes (id INTEGER PRIMARY KEY, error TEXT, end_reason TEXT, "
        "finished_at TEXT); INSERT INTO episodes (error, end_reason, finished_at) VALUES "
        "(NULL, 'finish', '2026-01-01T00:00:00'), ('x', 'error', '2026-01-01T00:00:00');")
    conn.commit()
    db = Database(conn)
    queue = QueueTally()
    assert queue.read(db, "2025-12-31")[:4] == (2, 1, 0, 0)
    assert queue.read(db, "2025-12-31")[:4] == (2, 1, 0, 0)
    assert queue.full_reads == 2
