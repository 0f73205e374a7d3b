"""The fast frame reads give the frames the plain reads give: same columns,
values and dtypes, on a small stored grid and on rows the packed read cannot carry."""

from __future__ import annotations

from pathlib import Path
from typing import TypedDict

import pandas as pd
import pytest
from sqlite_utils import Database

from core import store
from core.store import frames as F
from core.store.selection import Selection, where_clause
from tests.helpers.scale import load_fixture, write_rows


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("reads") / "lab.db"
    write_rows(store.connect(path), load_fixture())
    return path


class Extra(TypedDict, total=False):
    """The keyword arguments a test adds to episodes_frame."""

    upto: int


def plain_episodes(db: Database, selection: F.Selection | None = None, **extra: int
                   ) -> pd.DataFrame:
    """The reference: every column read through Python rows, joined by a merge."""
    clauses = [f"e.id <= {extra['upto']}"] if "upto" in extra else []
    where, args = where_clause(db, selection or F.Selection(), *clauses)
    frame = F._read_frame(db, F.EPISODE_FRAME_SQL + where + " ORDER BY e.id", args)
    frame = frame.merge(F._cells(db), on="cell_id", how="left", validate="many_to_one")
    rest = [c for c in frame.columns if c not in F._FRAME_ORDER and c not in F._cells(db)]
    return frame.loc[:, [*F._FRAME_ORDER, *rest]]


def assert_same(got: pd.DataFrame, want: pd.DataFrame) -> None:
    assert list(got.columns) == list(want.columns)
    assert got.dtypes.equals(want.dtypes), (got.dtypes[got.dtypes != want.dtypes])
    assert got.equals(want)


@pytest.mark.parametrize("selection, extra", [
    (F.Selection(), {}), (F.Selection(), {"upto": 40}), (F.Selection(seeds=(1,)), {}),
    (F.Selection(models=("sim-own5",), conditions=("stated_rule",)), {})],
    ids=["all", "upto", "seed", "model-arm"])
def test_episodes_frame_equals_the_plain_read(stored: Path, selection: Selection,
                                              extra: Extra) -> None:
    db = store.connect(stored)
    assert_same(F.episodes_frame(db, selection=selection, **extra),
                plain_episodes(db, selection, **extra))


def test_rows_the_packing_cannot_carry_are_read_plainly(stored: Path, tmp_path: Path) -> None:
    path = tmp_path / "lab.db"
    path.write_bytes(stored.read_bytes())
    db = store.connect(path)
    ids = [r[0] for r in db.conn.execute("SELECT id FROM episodes ORDER BY id LIMIT 3")]
    with db.conn:
        db.conn.execute("UPDATE episodes SET answer_action = NULL, answer = NULL WHERE id = ?",
                        (ids[0],))
        question = db.conn.execute("SELECT question_id FROM episodes WHERE id = ?",
                                   (ids[1],)).fetchone()[0]
        db.conn.execute("DELETE FROM questions WHERE id = ?", (question,))
    assert F._read_episodes(db, "", [], F._cells(db), False) is not None
    assert_same(F.episodes_frame(db), plain_episodes(db))
    with db.conn:
        db.conn.execute("UPDATE episodes SET input_tokens = ? WHERE id = ?", (2 ** 40, ids[2]))
    assert F._read_episodes(db, "", [], F._cells(db), False) is None
    frame = F.episodes_frame(db)
    assert_same(frame, plain_episodes(db))
    assert frame.loc[frame["episode_id"] == ids[2], "input_tokens"].item() == 2 ** 40


@pytest.mark.parametrize("selection", [F.Selection(), F.Selection(seeds=(0,))],
                         ids=["all", "seed"])
def test_decisions_by_episode_ids_equal_the_joined_read(stored: Path, selection: Selection) -> None:
    db = store.connect(stored)
    episodes = F.episodes_frame(db, selection=selection)
    ids = episodes.loc[episodes["error"].isna(), "episode_id"].to_numpy()
    want = F.decisions_frame(db, selection)
    got = F.decisions_frame(db, selection, episode_ids=ids)
    assert len(want) and got.equals(want) and got.dtypes.equals(want.dtypes)
    assert F.decisions_frame(db, selection, episode_ids=ids[::-1]).equals(want)
    assert F.decisions_frame(db, episode_ids=ids[:0]).empty


@pytest.fixture(scope="module")
def with_errors(stored: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The stored grid with a few errored episodes, some in every seed and arm."""
    path = tmp_path_factory.mktemp("errors") / "lab.db"
    path.write_bytes(stored.read_bytes())
    db = store.connect(path)
    ids = [r[0] for r in db.conn.execute("SELECT id FROM episodes ORDER BY id")]
    with db.conn:
        db.conn.executemany("UPDATE episodes SET error = 'boom' WHERE id = ?",
                            [(i,) for i in {*ids[1:40:7], *ids[::53]}])
    return path


@pytest.mark.parametrize("selection, upto", [
    (F.Selection(), None), (F.Selection(), 40), (F.Selection(seeds=(1,)), None),
    (F.Selection(models=("sim-own5",), conditions=("stated_rule",)), None),
    (F.Selection(pool=("seeds", "runs")), None), (F.Selection(seeds=(99,)), None)],
    ids=["all", "upto", "seed", "model-arm", "pooled", "none"])
def test_episode_keys_are_the_key_columns_of_episodes(with_errors: Path, selection: Selection,
                                                      upto: int | None) -> None:
    from analysis.measures.frames import episode_keys_of, load_frames

    db = store.connect(with_errors)
    episodes = F.episodes_frame(db, selection=selection, upto=upto)
    if selection.seeds != (99,):
        assert episodes["error"].notna().any() and episodes["error"].isna().any()
    want = episodes.loc[episodes["error"].isna(), list(F.EPISODE_KEYS)].reset_index(drop=True)
    assert_same(F.episode_keys_frame(db, selection, upto), want)
    if upto is None:  # Frames: read alone, or taken from the loaded episodes
        keys = load_frames(db, selection).episode_keys
        assert_same(keys, episode_keys_of(load_frames(db, selection).episodes))
        frames = load_frames(db, selection)
        assert_same(episode_keys_of(frames.episodes), frames.episode_keys)
    values = ("correct", "tool_calls", "answer_action")  # success/budgets read beside keys
    want = episodes.loc[episodes["error"].isna(), [*F.EPISODE_KEYS, *values]]
    assert_same(F.episode_keys_frame(db, selection, upto, values), want.reset_index(drop=True))
    if upto is None:
        got = load_frames(db, selection).episode_columns(("correct",))
        assert_same(got, want.loc[:, [*F.EPISODE_KEYS, "correct"]].reset_index(drop=True))


def test_all_tables_never_hold_the_episodes_and_the_decisions_together(stored: Path,
                                                                       tmp_path: Path) -> None:
    """`compute` runs the tables that read full episodes first, then releases them (keys
    kept) before the decision tables: same tables as one at a time, bounded memory."""
    import shutil

    from analysis.measures.frames import load_frames
    from analysis.tables.compute import compute
    from analysis.tables.registry import EPISODES, table_names

    path = tmp_path / "lab.db"
    shutil.copy(stored, path)
    db = store.connect(path)
    frames = load_frames(db)
    together = compute(frames, table_names(EPISODES), 50, 20, 0)
    assert frames._episodes is None and frames._decisions is not None
    assert frames._episode_keys is not None
    shutil.rmtree(f"{path}.results")  # cold again: each table alone, in a fresh Frames
    alone = [t for name in table_names(EPISODES)
             for t in compute(load_frames(db), (name,), 50, 20, 0).tables]
    assert [repr(t.rows) for t in together.tables] == [repr(t.rows) for t in alone]  # NaN-safe


def test_episode_keys_come_from_episode_columns_already_read(stored: Path,
                                                            monkeypatch: pytest.MonkeyPatch
                                                            ) -> None:
    """A table of episode columns read first (Success) leaves the keys for the next
    (Δ): the same frame as read alone, and no second read."""
    from analysis.measures.frames import Frames, load_frames

    db = store.connect(stored)
    want = load_frames(db).episode_keys
    frames = load_frames(db)
    frames.episode_columns(("correct", "tool_calls"))
    monkeypatch.setattr(Frames, "_read_episode_keys", lambda self: pytest.fail("read again"))
    assert_same(frames.episode_keys, want)


@pytest.mark.parametrize("selection", [F.Selection(), F.Selection(seeds=(1,))],
                         ids=["all", "seed"])
def test_the_apart_episodes_are_read_through_their_index(stored: Path, selection: Selection
                                                        ) -> None:
    """Every analysis reads the truncated and refused episodes: through the partial index
    `episodes_apart`, never a scan of every episode (red when the reader's condition and
    the index's differ, e.g. a new APART reason without a new index)."""
    db = store.connect(stored)
    statements: list[str] = []
    db.conn.set_trace_callback(statements.append)
    try:
        F.episodes_frame(db, selection=selection, upto=10**9, apart=True)
    finally:
        db.conn.set_trace_callback(None)
    reads = [s for s in statements if "end_reason IN" in s and s.lstrip().startswith("SELECT")]
    assert reads
    for read in reads:  # the packed read, and the plain one when it finds no rows
        plan = " ".join(str(r[-1]) for r in db.conn.execute("EXPLAIN QUERY PLAN " + read))
        assert "USING INDEX episodes_apart" in plan, plan
