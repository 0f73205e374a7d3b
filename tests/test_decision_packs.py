"""`decision_packs` (one BLOB of packed decision points per episode, migration
0008) hold exactly the words SQLite packs from `decisions`, after storing, after judgment
replay (`rederive`) and after the migration's backfill; `decisions_frame` reads them
only when they cover the range, and gives the same frame as the row read either way."""

from __future__ import annotations

import itertools
import struct
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sqlite_utils import Database

from analysis.base.source import FrameSource
from core import store
from core.schema import SCHEMA_VERSION
from core.store import frames as F
from core.store.decisions import pack_words_sql, rederive
from core.store.packs import PackSpan, read_pack_span
from tests.helpers.builders import store_sim_grid, undo_migration

GRID = (("sim-own5", "none"), ("sim-stated-own3", "stated_judgment_rule:k=3"))
REGIMES = ("clean", "persistent")


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Sims of a plain and a stated-judgment arm, stored through the store."""
    path = tmp_path_factory.mktemp("packs") / "lab.db"
    db = store.connect(path)
    store_sim_grid(db, "p", GRID, REGIMES, 8)
    db.conn.close()
    return path


@pytest.fixture()
def db(stored: Path, tmp_path: Path) -> Database:
    """A fresh copy of the stored grid."""
    path = tmp_path / "lab.db"
    path.write_bytes(stored.read_bytes())
    return store.connect(path)


def sql_packs(db: Database) -> dict[int, tuple[int, bytes]]:
    """episode → (rows, words) as SQLite packs them from the stored `decisions` rows."""
    word0, word1 = pack_words_sql()
    rows = db.conn.execute(f"SELECT d.episode_id, {word0}, {word1} FROM decisions d "
                           "ORDER BY d.episode_id, d.seq").fetchall()
    out = {}
    for episode, group in itertools.groupby(rows, key=lambda r: r[0]):
        words = [w for r in group for w in r[1:]]
        out[episode] = (len(words) // 2, struct.pack(f"<{len(words)}q", *words))
    return out


def stored_packs(db: Database) -> dict[int, tuple[int, bytes]]:
    return {r[0]: (r[1], r[2]) for r in
            db.conn.execute("SELECT episode_id, n, words FROM decision_packs ORDER BY 1")}


def complete_ids(db: Database) -> np.ndarray:
    frame = F.episodes_frame(db)
    return frame.loc[frame["error"].isna(), "episode_id"].to_numpy()


def assert_pack_read_equals_row_read(db: Database) -> pd.DataFrame:
    ids = complete_ids(db)
    assert F.read_packs(db, ids) is not None  # the packs are what is read
    got = F.decisions_frame(db, episode_ids=ids)
    want = F.decisions_frame(db, F.Selection())  # joined rows, never the packs
    assert len(want) and list(got.columns) == list(want.columns)
    assert got.dtypes.equals(want.dtypes) and got.equals(want)
    return got


def test_stored_packs_are_the_sql_words_and_read_as_the_rows(db: Database) -> None:
    assert stored_packs(db) == sql_packs(db)
    frame = assert_pack_read_equals_row_read(db)
    stated = frame["stated_run"]
    assert (stated == -1).any() and (stated > 0).any()  # the stated arm's unknown runs


def test_replayed_judgments_rederive_rows_and_packs_together(db: Database) -> None:
    conn = db.conn
    ids = [r[0] for r in conn.execute(
        "SELECT e.id FROM episodes e JOIN cells c ON c.id = e.cell_id WHERE c.condition = "
        "'none' ORDER BY e.id LIMIT 6")]
    before = stored_packs(db)
    with conn:
        for i, (eid, t) in enumerate(conn.execute(
                f"SELECT episode_id, t FROM steps WHERE obs_index IS NOT NULL AND episode_id "
                f"IN ({', '.join('?' * len(ids))})", ids).fetchall()):
            conn.execute("UPDATE steps SET judgment_source = NULL WHERE episode_id = ? AND t = ?",
                         (eid, t))
            conn.execute("INSERT INTO probes (episode_id, t, kind, model, judgment, created_at) "
                         "VALUES (?, ?, 'judgment', 'sim', ?, 'now')",
                         (eid, t, ("USELESS", "USEFUL")[i % 3 == 0]))
    assert rederive(db, ids) == len(ids)
    after = stored_packs(db)
    assert after == sql_packs(db)
    assert any(after[i] != before[i] for i in ids)  # the replay changed decisions
    assert {i: v for i, v in after.items() if i not in ids} == {
        i: v for i, v in before.items() if i not in ids}
    assert_pack_read_equals_row_read(db)


def test_an_errored_episodes_rows_are_dropped_from_the_pack_read(db: Database) -> None:
    eid = db.conn.execute("SELECT episode_id FROM decision_packs ORDER BY episode_id "
                          "LIMIT 1 OFFSET 3").fetchone()[0]
    with db.conn:
        db.conn.execute("UPDATE episodes SET error = 'boom' WHERE id = ?", (eid,))
    frame = assert_pack_read_equals_row_read(db)
    assert eid not in set(frame["episode_id"])


def test_missing_packs_fall_back_to_the_rows(db: Database) -> None:
    ids = complete_ids(db)
    want = F.decisions_frame(db, episode_ids=ids)
    with db.conn:
        db.conn.execute("DELETE FROM decision_packs WHERE episode_id IN "
                        "(SELECT episode_id FROM decision_packs ORDER BY 1 LIMIT 2 OFFSET 5)")
    assert F.read_packs(db, ids) is None
    got = F.decisions_frame(db, episode_ids=ids)
    assert got.equals(want) and got.dtypes.equals(want.dtypes)
    assert F.read_packs(db, ids[:3]) is not None  # a range the packs still cover


def test_packs_in_another_layout_fall_back_to_the_rows(db: Database) -> None:
    """Words without the episode id in word 1 (a writer of another layout; seen once on a
    db a half-edited build had migrated) must never decode to an empty frame."""
    ids = complete_ids(db)
    want = F.decisions_frame(db, episode_ids=ids)
    with db.conn:  # same counts and byte length, ids gone: only the layout is wrong
        db.conn.execute("UPDATE decision_packs SET words = zeroblob(length(words))")
    assert F.read_packs(db, ids) is None
    got = F.decisions_frame(db, episode_ids=ids)
    assert len(got) and got.equals(want) and got.dtypes.equals(want.dtypes)


def test_the_migration_backfills_an_old_db(db: Database, tmp_path: Path) -> None:
    want = stored_packs(db)
    old = store.connect(undo_migration(db, "0008_decision_packs", "decision_packs"))
    assert store.schema_version(old) == SCHEMA_VERSION
    assert stored_packs(old) == want == sql_packs(old)
    assert_pack_read_equals_row_read(old)


def test_packs_read_ahead_for_a_wider_range_decode_as_the_rows(db: Database) -> None:
    """A PackSpan read for every id up to the last (what `prefetch_decisions` reads while
    the keys load) gives the rows of exactly the ids asked for; one that does not cover
    them is read again for their own range."""
    ids = complete_ids(db)
    want = F.decisions_frame(db, episode_ids=ids)
    wide = read_pack_span(db, 0, int(ids[-1]) + 5)
    got = F.decisions_frame(db, episode_ids=ids, packs=wide)
    assert got.equals(want) and got.dtypes.equals(want.dtypes)
    some = ids[3:9]
    part = F.decisions_frame(db, episode_ids=some, packs=wide)
    assert set(part["episode_id"]) == set(some)
    narrow = read_pack_span(db, int(ids[0]), int(ids[2]))  # does not hold `ids`
    assert F.decisions_frame(db, episode_ids=ids, packs=narrow).equals(want)


def test_frames_prefetch_the_packs_only_for_an_unfiltered_selection(db: Database) -> None:
    from analysis.measures.frames import load_frames

    frames = load_frames(db)
    frames.prefetch_decisions()
    assert frames._packs is not None
    prefetched = frames.decisions
    assert frames._packs is None  # consumed
    plain = load_frames(db).decisions
    assert prefetched.equals(plain) and prefetched.dtypes.equals(plain.dtypes)
    filtered = load_frames(db, models=["sim-own5"])
    filtered.prefetch_decisions()
    assert filtered._packs is None
    assert set(filtered.decisions["model"]) == {"sim-own5"}


@pytest.mark.parametrize("table", ["delta", "judgments"])
def test_compute_reads_the_packs_ahead_before_any_episode_keys(db: Database,
                                                               monkeypatch: pytest.MonkeyPatch,
                                                               table: str) -> None:
    """A table that reads decisions starts the packs' read before the episodes' keys are
    read: the two then overlap."""
    from analysis.measures.frames import Frames, load_frames
    from analysis.tables.compute import compute

    seen: list[bool] = []
    real = Frames._read_episode_keys

    def keys(self: Frames) -> pd.DataFrame:
        seen.append(self._packs is not None)
        return real(self)

    monkeypatch.setattr(Frames, "_read_episode_keys", keys)
    compute(load_frames(db), (table,), n_boot=20)
    assert seen == [True]


def _decision_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Which of the decision packs and the decision frame are read from now on."""
    from analysis.measures import frames as M

    reads: list[str] = []
    packs, frame = M._read_pack_span, M.Frames._read_decisions

    def read_packs(src: FrameSource) -> PackSpan:
        reads.append("packs")
        return packs(src)

    def read_frame(self: M.Frames, episodes: pd.DataFrame) -> pd.DataFrame:
        reads.append("decisions")
        return frame(self, episodes)

    monkeypatch.setattr(M, "_read_pack_span", read_packs)
    monkeypatch.setattr(M.Frames, "_read_decisions", read_frame)
    return reads


def test_leaving_reads_no_decisions_without_a_two_source_arm(db: Database,
                                                             monkeypatch: pytest.MonkeyPatch
                                                            ) -> None:
    """The leaving table's rows are the two-source arms': on a study without any it
    reads neither the packs nor the decision frame, and prints the same empty table."""
    from analysis.measures.frames import load_frames
    from analysis.measures.leaving import leaving_table
    from analysis.tables.compute import compute

    want = leaving_table(load_frames(db).episode_keys, pd.DataFrame(),
                         load_frames(db).decisions, n_boot=20)
    reads = _decision_reads(monkeypatch)
    got = compute(load_frames(db), ("leaving",), n_boot=20).table("leaving")
    assert got is not None
    assert reads == [] and got.rows == want.rows == ()


def test_leaving_reads_the_decisions_of_two_source_arms(cost_grid: Path, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from analysis.base.arms import Grouping
    from analysis.measures.frames import load_frames
    from analysis.measures.leaving import leaving_table
    from analysis.tables.compute import compute

    path = tmp_path / "lab.db"
    path.write_bytes(cost_grid.read_bytes())
    db = store.connect(path)
    frames = load_frames(db)
    grouping = Grouping(frames.selection.pool, frames.errored_episodes, frames.apart_episodes)
    want = leaving_table(frames.episodes, frames.backup_steps, frames.decisions, n_boot=20,
                         grouping=grouping)
    reads = _decision_reads(monkeypatch)
    got = compute(load_frames(db), ("leaving",), n_boot=20).table("leaving")
    assert got is not None and reads == ["packs", "decisions"]
    assert got.rows and repr(got.rows) == repr(want.rows)  # NaN intervals compare as text
    assert any(r.measure == "leave_delta" and r.n for r in got.rows)


def test_the_decoded_fields_are_the_stored_decision_rows(db: Database) -> None:
    """Every field `decisions_frame` decodes is the `decisions` table's own column (the
    one-bit ones as bool), read plainly row by row."""
    from core.store.decisions import PACKED_FIELDS

    names = [name for name, *_ in PACKED_FIELDS]
    ids = complete_ids(db)
    got = F.decisions_frame(db, episode_ids=ids)
    rows = db.conn.execute(f"SELECT episode_id, {', '.join(names)} FROM decisions WHERE "
                           f"episode_id IN ({', '.join(map(str, ids))}) "
                           "ORDER BY episode_id, seq").fetchall()
    want = pd.DataFrame(rows, columns=["episode_id", *names])
    assert len(got) == len(want) > 0
    for name, _, _, bits in [("episode_id", 0, 0, 64), *PACKED_FIELDS]:
        column = got[name].to_numpy()
        assert column.dtype == (bool if bits == 1 else "int64"), name
        assert (column.astype("int64") == want[name].to_numpy()).all(), name
    assert got["stated_run"].min() == -1 and got["own_latest"].any()
