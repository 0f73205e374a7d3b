"""`judgment_packs` (each episode's judgment counts, migration 0009) hold
exactly the `counts_sql` row of every stored episode, after storing, after judgment
replay (`rederive`) and after the migration's backfill; `judgment_counts` reads them,
counts the episodes without a row from their steps, and gives the counts of the step
query either way. The lab.db is test_judgment_counts' (replayed probes, stated
judgments, a discarded turn before its re-ask, repeated pages, an errored episode)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from sqlite_utils import Database

from core import store
from core.schema import SCHEMA_VERSION
from core.store import judgment_counts as J
from core.store.decisions import rederive
from core.store.judgment_packs import counts_sql
from core.store.selection import Selection, where_clause
from tests.helpers.builders import store_sim_grid, undo_migration
from tests.test_judgment_counts import GRID, REGIMES, _edit


@pytest.fixture(scope="module")
def edited(tmp_path_factory: pytest.TempPathFactory) -> Database:
    """test_judgment_counts' lab.db: sims of plain and stated arms, then its `_edit`."""
    db = store.connect(tmp_path_factory.mktemp("jpacks") / "lab.db")
    store_sim_grid(db, "j", GRID, REGIMES, 8)
    _edit(db)
    return db


@pytest.fixture()
def db(edited: Database, tmp_path: Path) -> Database:
    """A fresh copy of the edited lab.db."""
    copy = store.connect(tmp_path / "lab.db")
    edited.conn.backup(copy.conn)
    return copy


def all_ids(db: Database) -> list[int]:
    return [r[0] for r in db.conn.execute("SELECT id FROM episodes ORDER BY id")]


def stored_rows(db: Database) -> dict[int, tuple[int, ...]]:
    """episode → its stored words as six ints."""
    return {e: tuple(np.frombuffer(w, dtype="<i8").tolist())
            for e, w in db.conn.execute("SELECT episode_id, words FROM judgment_packs")}


def sql_rows(db: Database) -> dict[int, tuple[int, ...]]:
    """episode → its `counts_sql` row (every episode, errored ones too; zeros without an
    observation step)."""
    rows: dict[int, tuple[int, ...]] = {e: (e, 0, 0, 0, 0, 0) for e in all_ids(db)}
    cursor = db.conn.execute(counts_sql(True) + " WHERE s.obs_index IS NOT NULL GROUP BY e.id")
    rows.update({r[0]: tuple(r) for r in cursor})
    return rows


def step_query(db: Database, selection: Selection | None = None, upto: int | None = None
               ) -> J.JudgmentCounts:
    """The counts `judgment_counts` gave before the packs: SQLite over the steps."""
    extra = ["s.obs_index IS NOT NULL", "e.error IS NULL"]
    extra += [f"e.id <= {upto}"] if upto is not None else []
    where, args = where_clause(db, selection or Selection(), *extra)
    rows = np.array(db.conn.execute(counts_sql(True) + where + " GROUP BY e.id ORDER BY e.id",
                                    args).fetchall(), dtype=np.int64).reshape(-1, 6)
    counts = np.array([[(r[2 + i // 4] >> (16 * (i % 4))) & 0xFFFF for i in range(len(J.COUNTS))]
                       for r in rows], dtype=np.int32).reshape(-1, len(J.COUNTS))
    return J.JudgmentCounts(rows[:, 0], counts)


def assert_same(got: J.JudgmentCounts, want: J.JudgmentCounts) -> None:
    assert got.episode_ids.tolist() == want.episode_ids.tolist() and len(want.episode_ids)
    assert np.array_equal(got.counts, want.counts)


def test_stored_counts_are_the_sql_rows_once_rederived(db: Database) -> None:
    # `_edit` changed steps and probes after storing: the triggers dropped those rows
    missing = set(all_ids(db)) - set(stored_rows(db))
    assert missing and len(missing) < len(all_ids(db))
    assert_same(J.judgment_counts(db), step_query(db))  # the missing ones counted by id
    rederive(db, all_ids(db))
    stored = stored_rows(db)
    assert stored == sql_rows(db)
    totals = np.array(list(stored.values())).sum(axis=0)
    assert (totals[1:] > 0).all()  # every packed sum has counts: a wrong lane shows
    errored = db.conn.execute("SELECT id FROM episodes WHERE error IS NOT NULL").fetchone()[0]
    assert errored in stored  # stored, but never counted
    got = J.judgment_counts(db)
    assert errored not in got.episode_ids
    assert_same(got, step_query(db))
    sel = Selection(models=("sim-own5",), regimes=("persistent",))
    upto = int(got.episode_ids[len(got.episode_ids) // 2])
    assert_same(J.judgment_counts(db, sel, upto), step_query(db, sel, upto))
    half = J.judgment_counts(db, above=upto)
    assert half.episode_ids.min() > upto


def test_a_stored_episode_gets_its_row_in_the_same_transaction(db: Database) -> None:
    stored = stored_rows(db)
    fresh = [e for e in all_ids(db) if e in stored]
    assert fresh and all(stored[e] == sql_rows(db)[e] for e in fresh)


def test_replayed_judgments_drop_the_rows_until_rederived(db: Database) -> None:
    rederive(db, all_ids(db))
    conn = db.conn
    before = J.judgment_counts(db)
    steps = conn.execute("SELECT s.episode_id, s.t FROM steps s JOIN episodes e ON e.id = "
                         "s.episode_id WHERE s.obs_index IS NOT NULL AND s.discarded = 0 AND "
                         "s.judgment_source IS NOT NULL AND s.judgment = 'USEFUL' AND "
                         "e.error IS NULL ORDER BY 1, 2 LIMIT 6").fetchall()
    replayed = sorted({e for e, _ in steps})
    with conn:
        for eid, t in steps:
            conn.execute("UPDATE steps SET judgment_source = NULL WHERE episode_id = ? "
                         "AND t = ?", (eid, t))
            conn.execute("INSERT INTO probes (episode_id, t, kind, model, judgment, created_at) "
                         "VALUES (?, ?, 'judgment', 'sim', 'USELESS', 'now') ON CONFLICT "
                         "(episode_id, t, kind) DO UPDATE SET judgment = 'USELESS', "
                         "error = NULL", (eid, t))
    assert not set(replayed) & set(stored_rows(db))  # stale rows are never read
    assert_same(J.judgment_counts(db), step_query(db))
    assert rederive(db, replayed) == len(replayed)
    assert stored_rows(db) == sql_rows(db)
    after = J.judgment_counts(db)
    assert_same(after, step_query(db))
    assert not np.array_equal(after.counts, before.counts)  # the replay changed counts


def test_missing_rows_fall_back_to_the_steps(db: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    rederive(db, all_ids(db))
    want = step_query(db)
    with db.conn:
        db.conn.execute("DELETE FROM judgment_packs WHERE episode_id IN "
                        "(SELECT episode_id FROM judgment_packs ORDER BY 1 LIMIT 3 OFFSET 4)")
    assert_same(J.judgment_counts(db), want)  # counted by id
    monkeypatch.setattr(J, "_MAX_UNSTORED", 1)
    where, args = where_clause(db, Selection(), "e.error IS NULL")
    assert J._stored(db, where, args) is None
    assert_same(J.judgment_counts(db), want)  # counted over the steps
    with db.conn:  # same byte lengths, ids gone: another layout
        db.conn.execute("UPDATE judgment_packs SET words = zeroblob(length(words))")
    assert J._stored(db, where, args) is None
    assert_same(J.judgment_counts(db), want)


def test_the_migration_backfills_an_old_db(db: Database) -> None:
    rederive(db, all_ids(db))
    want = stored_rows(db)
    old = store.connect(undo_migration(db, "0009_judgment_packs", "judgment_packs"))
    assert store.schema_version(old) == SCHEMA_VERSION
    assert stored_rows(old) == want == sql_rows(old)
    assert_same(J.judgment_counts(old), step_query(old))
