"""Every judgment measure says where its judgments came from (in-run or replayed).

Two runs of the same deterministic sims: run "a" keeps its in-run (side-channel)
judgments; in run "b" every judgment is moved into the probes table as if `lab replay
judgments` had asked it (same replies), and the decision table is re-derived. So the
rows of run a must say ``side_channel n``, those of run b ``replay n``, the two runs
pooled ``both: side_channel n_a, replay n_b`` with n_a + n_b = n, and every estimate
stays what it was. lab.db's frames and frames built in memory agree.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from sqlite_utils import Database

from analysis.base.rows import Row
from analysis.measures.decisions import judgment_sources
from analysis.measures.frames import Frames, frames_from, load_frames
from analysis.tables.compute import compute
from core import store
from core.store.decisions import rederive
from core.store.frames import episodes_frame, steps_frame
from core.store.selection import Selection
from tests.helpers.builders import store_sim_grid

GRID = (("sim-own5", "none"), ("sim-own3", "none"))
REGIMES = ("persistent", "late_onset_from_3", "clean")
TABLES = ("delta", "hazard", "judgments")
STATED = ("stated judgments, by t", "stated useless on failed",
          "answered after 5 stated useless")
"""Scopes / measures that read stated judgments, not side-channel ones."""


def _replay_run(db: Database, run: str) -> int:
    """Move the in-run judgments of a run's episodes into probes (source replay)."""
    ids = [r[0] for r in db.conn.execute(
        "SELECT e.id FROM episodes e JOIN cells c ON c.id = e.cell_id JOIN runs r ON "
        "r.id = c.run_id WHERE r.name = ?", (run,))]
    marks = ", ".join("?" * len(ids))
    with db.conn:
        db.conn.execute(
            f"INSERT INTO probes (episode_id, t, kind, model, judgment, parse_ok, created_at) "
            f"SELECT episode_id, t, 'judgment', 'sim', judgment, 1, 'now' FROM steps WHERE "
            f"judgment_source IS NOT NULL AND discarded = 0 AND episode_id IN ({marks})", ids)
        db.conn.execute(f"UPDATE steps SET judgment = NULL, judgment_source = NULL WHERE "
                        f"episode_id IN ({marks})", ids)
    rederive(db, ids)
    return len(ids)


def _rows(frames: Frames) -> list[Row]:
    results = compute(frames, TABLES, n_boot=20, hazard_boot=20)
    return [r for t in results.tables for r in t.rows]


def _reads_side_channel(r: Row) -> bool:
    return not (r.measure == "hazard" or r.measure == "design" or r.scope in STATED
                or r.measure in STATED)


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> tuple[Database, list[Row]]:
    """Runs a and b of the same sims; the rows before run b's judgments were replayed."""
    path: Path = tmp_path_factory.mktemp("sources") / "lab.db"
    db = store.connect(path)
    for run in ("a", "b"):
        store_sim_grid(db, run, GRID, REGIMES, 6)
    before = _rows(load_frames(db, Selection(pool=("runs",))))
    assert _replay_run(db, "b") > 0
    return db, before


def test_each_row_says_side_channel_or_replay_with_its_n(study: tuple[Database, list[Row]]) -> None:
    db, _ = study
    rows = _rows(load_frames(db))
    assert {r.runs for r in rows} == {"a", "b"}
    source = {"a": "side_channel", "b": "replay"}
    checked = 0
    for r in rows:
        if not _reads_side_channel(r):
            assert r.judgments == "", (r.measure, r.scope)
        elif r.n == 0:
            assert r.judgments == ""
        else:
            assert r.judgments == f"{source[r.runs]} {r.n:,}", (r.measure, r.scope, r.runs)
            checked += 1
    measures = {r.measure for r in rows if r.judgments}
    assert {"delta", "beta", "gamma", "USELESS on failed", "USELESS on real",
            "answered after 5 own useless"} <= measures
    assert checked > 20


def test_pooled_rows_say_both_and_the_counts_add_up(study: tuple[Database, list[Row]]) -> None:
    db, before = study
    pooled = _rows(load_frames(db, Selection(pool=("runs",))))
    alone = {(r.model, r.measure, r.scope, r.runs): r for r in _rows(load_frames(db))}
    both = 0
    for r in pooled:
        if not _reads_side_channel(r) or r.n == 0:
            assert r.judgments == ""
            continue
        a, b = (alone[(r.model, r.measure, r.scope, run)] for run in ("a", "b"))
        assert r.judgments == judgment_sources(a.n, b.n) == (
            f"both: side_channel {a.n:,}, replay {b.n:,}")
        if r.unit == "questions":  # runs a and b asked the same questions: they count
            assert a.n == b.n == r.n  # under both sources, once each in n
        else:
            assert a.n + b.n == r.n
        both += 1
    assert both > 10
    # the replies are the same, only their source moved: every estimate is unchanged
    assert [replace(r, judgments="") for r in pooled] == [
        replace(r, judgments="") for r in before]
    assert {r.judgments.split()[0] for r in before if r.judgments} == {"side_channel"}


def test_frames_in_memory_say_the_same(study: tuple[Database, list[Row]]) -> None:
    db, _ = study
    sel = Selection(pool=("runs",))
    stored = _rows(load_frames(db, sel))
    in_memory = _rows(frames_from(episodes_frame(db, selection=sel),
                                  steps_frame(db, selection=sel), sel))
    assert [r.judgments for r in in_memory] == [r.judgments for r in stored]
    assert any(r.judgments.startswith("both:") for r in stored)


def test_judgment_sources_text() -> None:
    assert judgment_sources(1204, 0) == "side_channel 1,204"
    assert judgment_sources(0, 96) == "replay 96"
    assert judgment_sources(1108, 96) == "both: side_channel 1,108, replay 96"
    assert judgment_sources(0, 0) == ""


def test_the_text_tables_say_where_each_groups_judgments_came_from(study: tuple[Database, list[Row]]
                                                                  ) -> None:
    from analysis.tables.text import render_table

    db, _ = study
    results = compute(load_frames(db), TABLES, n_boot=20, hazard_boot=20)
    for table in results.tables:
        text = render_table(table)
        assert "judgments (side_channel: asked in-run; replay: lab replay judgments):" in text
        lines = text.splitlines()
        for model in ("sim-own5", "sim-own3"):
            a = [line for line in lines if line.startswith(f"  {model} · none · a")]
            b = [line for line in lines if line.startswith(f"  {model} · none · b")]
            assert len(a) == len(b) == 1, table.name
            assert "side_channel " in a[0] and "replay " in b[0]
