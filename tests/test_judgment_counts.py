"""The judgments table from SQL counts equals the per-group pandas rates
(`tests.oracles.measures.judgment_rates`) on a small lab.db with repeated pages, replayed and
stated judgments, a discarded turn, distractors and an errored episode."""

from __future__ import annotations

import asyncio
import math
import threading
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sqlite_utils import Database

from analysis.base.arms import Grouping
from analysis.measures.cost import JUDGMENT_MEASURES
from analysis.measures.decisions import arm_groups
from analysis.measures.frames import frames_from, load_frames
from analysis.measures.judgments import (
    _episode_groups,
    _group_rates,
    frame_counts,
    judgments_table,
    observation_counts,
    start_frame_counts,
)
from analysis.tables.compute import compute
from core import store
from core.conditions import parse_condition
from core.demo_data import demo_questions
from core.errors import LabError
from core.models.registry import builtin_models, make_client
from core.regimes import ForeignPool, parse_regime
from core.runner import CellSpec
from core.store.frames import episodes_frame, steps_frame
from core.store.judgment_counts import COUNTS, judgment_counts
from core.store.judgment_packs import counts_sql
from core.store.selection import Selection
from jobs.kinds.episodes import run_questions
from tests.helpers.builders import store_sim_grid
from tests.helpers.gates import held_until
from tests.oracles.measures import judgment_rates

GRID = (("sim-own5", "none"), ("sim-stated-own3", "stated_judgment_rule:k=3"),
        ("sim-own3", "none"))
REGIMES = ("clean", "persistent", "plausible")


def _edit(db: Database) -> None:
    """Edge cases the sims do not produce on their own, written into the stored steps."""
    conn = db.conn
    obs = "SELECT episode_id, t FROM steps WHERE obs_index IS NOT NULL AND discarded = 0 "
    ep = [r[0] for r in conn.execute("SELECT id FROM episodes ORDER BY id")]
    with conn:
        # replayed judgments: the in-run one is gone (source NULL); the probe's counts,
        # the stale step value never does, and an errored probe is no judgment
        replay = conn.execute(obs + "AND episode_id IN (?, ?) ORDER BY episode_id, t",
                              (ep[0], ep[1])).fetchall()
        for i, (eid, t) in enumerate(replay):
            conn.execute("UPDATE steps SET judgment_source = NULL, judgment = 'USELESS' "
                         "WHERE episode_id = ? AND t = ?", (eid, t))
            if i % 4 != 3:
                conn.execute(
                    "INSERT INTO probes (episode_id, t, kind, model, judgment, created_at, "
                    "error) VALUES (?, ?, 'judgment', 'sim', ?, 'now', ?)",
                    (eid, t, ("USEFUL", "USELESS", "USEFUL")[i % 3],
                     "timeout" if i % 5 == 4 else None))
        # a probe never replaces a judgment asked in-run
        eid, t = conn.execute(obs + "AND judgment_source IS NOT NULL LIMIT 1").fetchone()
        conn.execute("INSERT INTO probes (episode_id, t, kind, model, judgment, created_at) "
                     "VALUES (?, ?, 'judgment', 'sim', 'UNPARSEABLE', 'now')", (eid, t))
        # distractors, an unknown page, an unknown failure flag
        conn.execute("UPDATE steps SET obs_source = 'distractor' WHERE obs_source = 'gold' "
                     "AND (episode_id + t) % 3 = 0")
        eid, t = conn.execute(obs + "AND obs_source = 'gold' AND obs_failed = 0 "
                              "AND judgment_source IS NOT NULL LIMIT 1 OFFSET 7").fetchone()
        conn.execute("UPDATE steps SET obs_ref = NULL WHERE episode_id = ? AND t = ?", (eid, t))
        eid, t = conn.execute(obs + "LIMIT 1 OFFSET 11").fetchone()
        conn.execute("UPDATE steps SET obs_failed = NULL WHERE episode_id = ? AND t = ?",
                     (eid, t))
        # a discarded turn that showed the page its re-ask shows again: the re-ask repeats
        eid, t = conn.execute(obs + "AND obs_source = 'gold' AND obs_failed = 0 AND action = "
                              "'search' AND judgment_source IS NOT NULL AND episode_id > ? "
                              "AND t = 1 LIMIT 1", (ep[5],)).fetchone()
        conn.execute("INSERT INTO steps (episode_id, t, discarded, action, obs_index, "
                     "obs_failed, obs_source, obs_ref, judgment, judgment_source, streak, "
                     "forced, refused, format_failure, input_tokens, output_tokens, latency_ms) "
                     "SELECT episode_id, t, 1, action, obs_index, 0, 'gold', obs_ref, 'USEFUL', "
                     "'side_channel', 0, 0, 0, 0, 0, 0, 0 FROM steps WHERE episode_id = ? "
                     "AND t = ?", (eid, t))
        # an errored episode (with a complete retry elsewhere or not) is never counted
        conn.execute("UPDATE episodes SET error = 'boom' WHERE id = ?", (ep[5],))


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Database:
    """Sims of plain and stated arms over three regimes, then `_edit`."""
    db = store.connect(tmp_path_factory.mktemp("judgments") / "lab.db")
    store_sim_grid(db, "j", GRID, REGIMES, 8)
    _edit(db)
    return db


def _clean_steps(db: Database, selection: Selection | None = None) -> pd.DataFrame:
    ep = episodes_frame(db, selection=selection)
    steps = steps_frame(db, selection=selection)
    return steps.loc[steps["episode_id"].isin(ep.loc[ep["error"].isna(), "episode_id"])]


def test_sql_counts_equal_the_step_frame_counts(db: Database) -> None:
    sql = judgment_counts(db)
    frame = observation_counts(_clean_steps(db))
    assert sql.episode_ids.tolist() == frame.episode_ids.tolist()
    assert np.array_equal(sql.counts, frame.counts)
    totals = dict(zip(COUNTS, sql.counts.sum(axis=0).tolist()))
    # every edge case is present, so a wrong rule changes some number
    for name in ("gold_repeat", "useful_gold_repeat", "distractor_first", "distractor_repeat",
                 "judged_failed", "useless_real", "stated_failed", "stated_useless_failed"):
        assert totals[name] > 0, name
    errored = db.conn.execute("SELECT id FROM episodes WHERE error IS NOT NULL").fetchone()[0]
    assert errored not in sql.episode_ids


def test_the_edge_cases_are_in_the_data(db: Database) -> None:
    steps = _clean_steps(db)
    replayed = steps.loc[steps["judgment_source"] == "replay"]
    assert set(replayed["judgment"]) == {"USEFUL", "USELESS"}
    assert "UNPARSEABLE" not in set(steps["judgment"].dropna())
    assert (steps["judgment_source"].isna() & steps["obs_index"].notna()
            & steps["judgment"].isna()).any()
    discarded = steps.loc[steps["discarded"] == 1].iloc[0]
    reask = steps.loc[(steps["episode_id"] == discarded["episode_id"])
                      & (steps["t"] == discarded["t"])]
    assert reask["discarded"].tolist() == [1, 0]
    assert reask["obs_ref"].nunique() == 1 and reask["judgment"].notna().all()


def test_selection_and_upto_filter_the_counts(db: Database) -> None:
    sel = Selection(models=("sim-own5",), regimes=("persistent",))
    got = judgment_counts(db, sel)
    want = observation_counts(_clean_steps(db, sel))
    assert got.episode_ids.tolist() == want.episode_ids.tolist() and len(got.episode_ids) > 0
    assert np.array_equal(got.counts, want.counts)
    upto = int(got.episode_ids[len(got.episode_ids) // 2])
    half = judgment_counts(db, sel, upto)
    assert half.episode_ids.tolist() == [i for i in got.episode_ids.tolist() if i <= upto]


def _same(a: object, b: object) -> bool:
    return repr(a) == repr(b)  # NaN shares compare equal by repr


@pytest.mark.parametrize("pool", [(), ("seeds", "runs")], ids=["split", "pooled"])
def test_group_rates_equal_judgment_rates_of_each_group(db: Database, pool: tuple[str, ...]
                                                        ) -> None:
    frames = load_frames(db, Selection(pool=pool))
    grouping = Grouping(pool, frames.errored_episodes)
    got = [(key, rates) for key, rates, _ in _group_rates(frame_counts(frames), frames.decisions,
                                                          frames.episodes, grouping)]
    steps = frames.steps
    dec = frames.decisions
    want = [(key, judgment_rates(steps.loc[steps["episode_id"].isin(ep["episode_id"])],
                                 dec.loc[dec["episode_id"].isin(ep["episode_id"])]))
            for key, ep in arm_groups(frames.episodes, grouping, families=True)]
    assert [k for k, _ in got] == [k for k, _ in want] and len(got) > 3
    for (key, g), (_, w) in zip(got, want):
        assert g == w, key
    assert any(g.dissociation.n > 0 for _, g in got)
    assert any(g.stated_dissociation.n > 0 for _, g in got)


def test_table_from_lab_db_equals_the_in_memory_frames(db: Database) -> None:
    from_db = compute(load_frames(db), ("judgments",)).table("judgments")
    assert from_db is not None
    frames = frames_from(episodes_frame(db), steps_frame(db))
    grouping = Grouping((), frames.errored_episodes)
    in_memory = judgments_table(frame_counts(frames), frames.decisions, frames.episodes,
                                grouping)
    assert _same(from_db, in_memory)
    assert [r.measure for r in from_db.rows[:len(JUDGMENT_MEASURES)]] == [
        label for _, label in JUDGMENT_MEASURES]
    assert any(not math.isnan(r.estimate) for r in from_db.rows)


def test_frames_without_pages_have_no_first_or_repeat(db: Database) -> None:
    steps = _clean_steps(db).drop(columns=["obs_ref"])
    counts = dict(zip(COUNTS, observation_counts(steps).counts.sum(axis=0).tolist()))
    assert all(counts[c] == 0 for c in COUNTS if "first" in c or "repeat" in c)
    assert counts["judged_real"] > 0


def test_an_episode_too_long_to_pack_is_refused(tmp_path: Path) -> None:
    db = store.connect(tmp_path / "lab.db")
    store.insert_questions(db, demo_questions()[:1])
    run_id = store.ensure_run(db, "long")
    cell = CellSpec(builtin_models()["sim-own5"], parse_condition("none"),
                    parse_regime("clean"), None, 8, 0)
    cell_id = store.ensure_cell(db, run_id, cell.columns())
    asyncio.run(run_questions(db, cell_id, cell, demo_questions()[:1],
                              ForeignPool(demo_questions()), make_client(cell.model)))
    eid = db.conn.execute("SELECT id FROM episodes").fetchone()[0]
    with db.conn:
        db.conn.executemany(
            "INSERT INTO steps (episode_id, t, action, obs_index, obs_failed, streak, forced, "
            "refused, format_failure, input_tokens, output_tokens, latency_ms, discarded) "
            "VALUES (?, ?, 'search', 1, 1, 0, 0, 0, 0, 0, 0, 0, 0)",
            [(eid, t) for t in range(1000, 1000 + (1 << 15))])
    with pytest.raises(LabError, match="observation steps"):
        judgment_counts(db)


def test_without_replayed_judgments_the_join_is_left_out_with_the_same_counts(db: Database,
                                                                              tmp_path: Path
                                                                             ) -> None:
    copy = store.connect(tmp_path / "copy.db")
    db.conn.backup(copy.conn)
    with copy.conn:
        copy.conn.execute("UPDATE probes SET error = 'lost' WHERE kind = 'judgment'")
    assert "probes" in counts_sql(True) and "probes" not in counts_sql(False)
    got = judgment_counts(copy)
    want = observation_counts(_clean_steps(copy))
    assert np.array_equal(got.counts, want.counts)
    assert not np.array_equal(got.counts, judgment_counts(db).counts)


def test_id_ranges_counted_in_parallel_equal_one_count(db: Database) -> None:
    whole = judgment_counts(db)
    frames = load_frames(db)
    for parts in (1, 2, 3):
        split = frame_counts(frames, parts)
        assert split.episode_ids.tolist() == whole.episode_ids.tolist()
        assert np.array_equal(split.counts, whole.counts)
    mid = int(whole.episode_ids[len(whole.episode_ids) // 2])
    assert judgment_counts(db, above=mid).episode_ids.min() > mid


def test_a_selection_without_episodes_gives_an_empty_table(db: Database) -> None:
    frames = load_frames(db, Selection(runs=("j",), regimes=("clean",), seeds=(0,),
                                       models=("sim-own5",), conditions=("stated_judgment_rule",)))
    assert frames.episodes.empty
    table = compute(frames, ("judgments",)).table("judgments")
    assert table is not None and table.rows == ()


@pytest.mark.parametrize("ascending", [True, False])
def test_episode_groups_find_each_id_or_none(ascending: bool) -> None:
    """Each id's group by definition (-1 for ids among no episode: below, between and
    above them), from keys in id order (searched once per run of ids) and shuffled."""
    known = np.array([3, 5, 8, 13, 21, 34], dtype=np.int64)
    codes = np.array([0, 1, 1, 2, 0, 3], dtype=np.int64)
    if not ascending:
        order = np.random.default_rng(1).permutation(len(known))
        known, codes = known[order], codes[order]
    ids = np.array([1, 3, 3, 3, 4, 5, 8, 8, 9, 13, 21, 21, 34, 34, 40], dtype=np.int64)
    want = [dict(zip(known.tolist(), codes.tolist())).get(i, -1) for i in ids.tolist()]
    episodes = pd.DataFrame({"episode_id": known})
    assert _episode_groups(episodes, codes, ids).tolist() == want
    assert _episode_groups(episodes, codes, ids[::-1]).tolist() == want[::-1]


def test_counts_started_are_made_while_the_table_goes_on(db: Database,
                                                         monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    """`start_frame_counts` returns before SQLite has counted (the table builds the
    decision frame meanwhile); the table from the started counts equals the one from
    `frame_counts`."""
    import analysis.measures.judgments as judgments

    frames = load_frames(db)
    grouping = Grouping((), frames.errored_episodes)
    want = judgments_table(frame_counts(frames), frames.decisions, frames.episode_keys,
                           grouping)
    go = threading.Event()
    monkeypatch.setattr(judgments, "judgment_counts",
                        held_until(go, judgments.judgment_counts, "start_frame_counts"))
    counting = start_frame_counts(frames, 2)
    go.set()  # reached only once start_frame_counts has returned
    got = judgments_table(counting, frames.decisions, frames.episode_keys, grouping)
    assert _same(got, want)
