"""The cost table reads the episodes' keys and its columns, not the full frame:
the same columns, values and dtypes as `episodes_frame`, and the same table, on a stored
grid with stated-judgment, two-source and switch arms, a measuring arm and dollars."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analysis.base.arms import Grouping
from analysis.measures.frames import load_frames
from analysis.tables.compute import _compute_one, compute
from core import store
from core.store import frames as F
from core.store.selection import Selection
from tests.helpers.cost_grid import COST, assert_same
from tests.helpers.scale import results_json


@pytest.fixture
def stored(cost_grid: Path) -> Path:
    """The cost grid, built once per session (tests that change it copy it)."""
    return cost_grid


@pytest.mark.parametrize("selection, upto", [
    (F.Selection(), None), (F.Selection(), 40),
    (F.Selection(conditions=("two_source", "none")), None)], ids=["all", "upto", "arms"])
def test_cost_columns_are_those_of_episodes_frame(stored: Path, selection: Selection,
                                                  upto: int | None) -> None:
    db = store.connect(stored)
    episodes = F.episodes_frame(db, selection=selection, upto=upto)
    want = episodes.loc[episodes["error"].isna(), [*F.EPISODE_KEYS, *COST]]
    got = F.episode_keys_frame(db, selection, upto, COST)
    assert_same(got, want.reset_index(drop=True))
    # the grid exercises what the read must get right
    assert (episodes["cost_usd"] > 0).all() and episodes["cost_usd"].dtype == np.float64
    assert got["answer_action"].isna().any() and (got["answered"] == 0).any()  # unanswered
    for column, arms in F._ARM_ONLY:
        stored_counts = pd.read_sql_query(f"SELECT {column} FROM episodes", db.conn)[column]
        assert (stored_counts > 0).all()  # stored on every arm, read only on its own
        inside = got["condition"].isin(arms)
        assert (got.loc[~inside, column] == 0).all()
        assert (got.loc[inside, column] > 0).all() or not inside.any()


def test_values_past_their_bits_are_read_plainly(stored: Path, tmp_path: Path) -> None:
    path = tmp_path / "lab.db"
    shutil.copy(stored, path)
    db = store.connect(path)
    ids = [r[0] for r in db.conn.execute("SELECT id FROM episodes ORDER BY id LIMIT 2")]
    with db.conn:
        db.conn.execute("UPDATE episodes SET acting_output_tokens = ? WHERE id = ?",
                        (2 ** 40, ids[1]))
    assert F._read_episodes(db, "", [], F._cells(db), False) is None
    episodes = F.episodes_frame(db)
    want = episodes.loc[episodes["error"].isna(), [*F.EPISODE_KEYS, *COST]]
    got = F.episode_keys_frame(db, values=COST)
    assert_same(got, want.reset_index(drop=True))
    assert got.loc[got["episode_id"] == ids[1], "acting_output_tokens"].item() == 2 ** 40


def test_cost_table_from_its_columns_equals_the_full_frame(stored: Path, tmp_path: Path) -> None:
    db = store.connect(stored)
    grouping = Grouping((), load_frames(db).errored_episodes)
    full = load_frames(db)
    full.episodes  # noqa: B018  (loaded: episode_columns serves the full frame)
    assert full.episode_columns(COST) is full._episodes
    alone = load_frames(db)
    ep = alone.episode_columns(COST)
    assert alone._episodes is None and "answer" not in ep
    assert_same(ep, full.episodes.loc[:, list(ep.columns)])
    parts = [_compute_one(f, "cost", grouping, 50, 20, 0, 0.05, "none") for f in (full, alone)]
    assert alone._episodes is None
    assert [t.dicts() for t in parts[0].tables] == [t.dicts() for t in parts[1].tables]
    assert parts[0].actions == parts[1].actions and parts[0].counts == parts[1].counts
    rows = {(r.arm, r.measure): r.estimate for r in parts[1].tables[0].rows}
    assert rows[("stated_judgment_rule:k=3", "own calls")] > 0
    assert rows[("two_source", "dollars")] > 0
    # every table through compute, one at a time and together, as from the full frame
    path = tmp_path / "lab.db"
    shutil.copy(stored, path)
    copy = store.connect(path)
    together = load_frames(copy)
    both = compute(together, ("success", "cost", "budgets", "delta"), 50, 20, 0)
    assert together._episodes is None and not together._episode_columns
    shutil.rmtree(f"{path}.results")
    one = [compute(load_frames(copy), (n,), 50, 20, 0) for n in ("success", "cost", "budgets",
                                                                 "delta")]
    assert results_json(both)["tables"] == [t for r in one for t in results_json(r)["tables"]]
    assert both.answer_actions == one[1].answer_actions


def test_memory_order_reads_the_widest_columns_first_and_releases_them(stored: Path) -> None:
    from analysis.tables.compute import _RELEASE, _memory_order

    db = store.connect(stored)
    order, full = _memory_order(["success", "delta", "cost", "budgets"], load_frames(db))
    assert order == ["cost", "budgets", "success", _RELEASE, "delta"] and not full
    frames = load_frames(db)
    cost = frames.episode_columns(COST)
    assert frames.episode_columns(("correct",)) is cost  # served from the wider read
    order, full = _memory_order(["cost", "leaving"], load_frames(db))
    assert order == ["cost", "leaving"] and full  # two-source arms: leaving reads episodes
