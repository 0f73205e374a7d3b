"""Episode packs (migration 0010): one BLOB per episode holding its keys and
packed integers, written with the episode, rewritten by `rederive`, dropped by any other
update; `episode_keys_frame` reads them for an unfiltered selection and gives exactly
the frame of the row read, else reads the rows."""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from sqlite_utils import Database

from core import store
from core.conditions import parse_condition
from core.demo_data import demo_questions
from core.models.registry import builtin_models, make_client
from core.regimes import ForeignPool, parse_regime
from core.runner import CellSpec
from core.schema import SCHEMA_VERSION
from core.store import episode_packs as P
from core.store import frames as F
from core.store.decisions import rederive
from core.store.frames import KEY_VALUES
from core.store.packs import KeyPackText
from jobs.kinds.episodes import run_questions
from tests.helpers.builders import undo_migration
from tests.helpers.cost_grid import COST, assert_same

READS = {"keys": (), "correct": ("correct",), "cost": COST, "all": KEY_VALUES}


def fresh(db: Database) -> dict[int, bytes | None]:
    """Every episode's pack computed now from its row."""
    return {row[0]: P.pack(row) for row in db.conn.execute(P.PACK_SQL)}


def packs(db: Database) -> dict[int, bytes]:
    """The stored packs."""
    return dict(db.conn.execute("SELECT episode_id, words FROM episode_packs").fetchall())


def all_ids(db: Database) -> list[int]:
    return [r[0] for r in db.conn.execute("SELECT id FROM episodes ORDER BY id")]


@pytest.fixture()
def db(cost_grid: Path, tmp_path: Path) -> Database:
    """test_cost_reads' grid (its direct updates dropped the packs), repacked by `rederive`."""
    path = tmp_path / "lab.db"
    shutil.copy(cost_grid, path)
    db = store.connect(path)
    assert packs(db) == {}  # the fixture's UPDATEs dropped every pack
    rederive(db, all_ids(db))
    return db


def rows_read(db: Database, monkeypatch: pytest.MonkeyPatch, *args: Any, **kwargs: Any
              ) -> pd.DataFrame:
    """episode_keys_frame as it reads without packs (the reference)."""
    with monkeypatch.context() as m:
        m.setattr(F, "read_key_packs", lambda *a: None)
        return F.episode_keys_frame(db, *args, **kwargs)


def read_packs(db: Database, upto: int | None, values: Sequence[str]) -> np.ndarray | None:
    """read_key_packs for episode_keys_frame's row layout of `values`."""
    probe: dict = {}

    def spy(db: Database, upto: int | None, fields: Any, text: KeyPackText | None = None
            ) -> dict[str, Any] | None:
        probe["rows"] = real(db, upto, fields, text)
        return probe["rows"]

    real = F.read_key_packs
    F.read_key_packs = spy
    try:
        F.episode_keys_frame(db, upto=upto, values=values)
    finally:
        F.read_key_packs = real
    return probe.get("rows")


def test_every_episode_stored_gets_its_pack(tmp_path: Path) -> None:
    db = store.connect(tmp_path / "lab.db")
    store.insert_questions(db, demo_questions())
    run_id = store.ensure_run(db, "p")
    pool = ForeignPool(demo_questions())
    cell = CellSpec(builtin_models()["sim-backup-own3"], parse_condition("switch_rule:k=3"),
                    parse_regime("persistent"), None, 8, 0)
    cell_id = store.ensure_cell(db, run_id, cell.columns())
    asyncio.run(run_questions(db, cell_id, cell, demo_questions()[:4], pool,
                              make_client(cell.model)))
    assert len(all_ids(db)) == 4
    assert packs(db) == fresh(db)
    assert read_packs(db, None, COST) is not None


def test_stored_packs_equal_a_fresh_pack(db: Database) -> None:
    stored_packs = packs(db)
    assert sorted(stored_packs) == all_ids(db) and stored_packs == fresh(db)
    flags = {i: np.frombuffer(w, "<i8")[2] for i, w in stored_packs.items()}
    errored = [r[0] for r in db.conn.execute("SELECT id FROM episodes WHERE error IS NOT NULL")]
    assert errored and all(flags[i] == 1 for i in errored)
    assert sum(flags.values()) == len(errored)


@pytest.mark.parametrize("values", READS.values(), ids=READS.keys())
@pytest.mark.parametrize("upto", [None, 40])
def test_keys_frame_from_packs_equals_the_row_read(db: Database, monkeypatch: pytest.MonkeyPatch,
                                                   values: tuple[str, ...], upto: int | None
                                                   ) -> None:
    assert read_packs(db, upto, values) is not None  # the packs are read
    got = F.episode_keys_frame(db, upto=upto, values=values)
    assert_same(got, rows_read(db, monkeypatch, upto=upto, values=values))
    episodes = F.episodes_frame(db, upto=upto)
    want = episodes.loc[episodes["error"].isna(), [*F.EPISODE_KEYS, *values]]
    assert_same(got, want.reset_index(drop=True))
    assert len(got) < len(episodes)  # errored episodes are dropped
    assert set(got["condition"]) >= {"two_source", "switch_rule", "stated_judgment_rule"}


def test_a_missing_pack_falls_back_to_the_rows(db: Database, monkeypatch: pytest.MonkeyPatch
                                              ) -> None:
    with db.conn:
        db.conn.execute("DELETE FROM episode_packs WHERE episode_id = ?", (all_ids(db)[7],))
    assert read_packs(db, None, COST) is None
    assert_same(F.episode_keys_frame(db, values=COST), rows_read(db, monkeypatch, values=COST))
    # an id range without the missing one still reads packs
    assert read_packs(db, all_ids(db)[6], COST) is not None


def test_an_updated_episode_drops_its_pack(db: Database) -> None:
    target = all_ids(db)[3]
    with db.conn:
        db.conn.execute("UPDATE episodes SET correct = 1 - correct, cost_usd = 7.5 "
                        "WHERE id = ?", (target,))
    assert target not in packs(db) and len(packs(db)) == len(all_ids(db)) - 1
    assert read_packs(db, None, COST) is None
    got = F.episode_keys_frame(db, values=("correct", "cost_usd"))
    episodes = F.episodes_frame(db)
    want = episodes.loc[episodes["error"].isna(), [*F.EPISODE_KEYS, "correct", "cost_usd"]]
    assert_same(got, want.reset_index(drop=True))
    assert got.loc[got["episode_id"] == target, "cost_usd"].item() == 7.5
    with db.conn:  # deleting an episode drops its pack too (no stale row left behind)
        db.conn.execute("DELETE FROM episodes WHERE id = ?", (all_ids(db)[5],))
    assert len(packs(db)) == len(all_ids(db)) - 1


def test_values_that_do_not_fit_are_read_from_the_rows(db: Database, monkeypatch: pytest.MonkeyPatch
                                                      ) -> None:
    target = all_ids(db)[2]
    with db.conn:
        db.conn.execute("UPDATE episodes SET tool_calls = 70000 WHERE id = ?", (target,))
        P.store_packs(db.conn, [target])
    assert np.frombuffer(packs(db)[target], "<i8")[P.WORD_AT[3]] == P.NO_WORD
    assert read_packs(db, None, ("tool_calls",)) is None  # its word does not fit: rows
    assert read_packs(db, None, ("correct",)) is not None  # other words still fit
    got = F.episode_keys_frame(db, values=("tool_calls",))
    assert got.loc[got["episode_id"] == target, "tool_calls"].item() == 70000
    assert_same(got, rows_read(db, monkeypatch, values=("tool_calls",)))


def test_a_question_id_holding_the_separator_falls_back(db: Database,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    target = all_ids(db)[1]
    with db.conn:
        db.conn.execute("UPDATE episodes SET question_id = question_id || char(31) || 'x' "
                        "WHERE id = ?", (target,))
        P.store_packs(db.conn, [target])
    assert len(packs(db)) == len(all_ids(db))
    assert read_packs(db, None, ()) is None
    got = F.episode_keys_frame(db)
    assert got.loc[got["episode_id"] == target, "question_id"].item().endswith("\x1fx")
    assert_same(got, rows_read(db, monkeypatch))


def test_rederive_keeps_the_packs_exact(db: Database) -> None:
    ids = all_ids(db)
    with db.conn:  # another writer's update drops the packs ...
        db.conn.execute("UPDATE episodes SET backup_calls = 9, acting_input_tokens = NULL "
                        f"WHERE id IN ({ids[0]}, {ids[11]})")
    assert len(packs(db)) == len(ids) - 2
    rederive(db, [ids[0], ids[11]])  # ... rederive recomputes the totals and repacks
    assert packs(db) == fresh(db) and len(packs(db)) == len(ids)


def test_the_migration_backfills_a_version_9_db(db: Database) -> None:
    want = packs(db)
    old = store.connect(undo_migration(db, "0010_episode_packs", "episode_packs"))
    assert store.schema_version(old) == SCHEMA_VERSION
    assert packs(old) == want == fresh(old)
    with old.conn:  # the migration's trigger is in place
        old.conn.execute("UPDATE episodes SET em = em WHERE id = ?", (all_ids(old)[0],))
    assert len(packs(old)) == len(want) - 1


def scanned_apart(db: Database, upto: int | None = None) -> bool:
    """Whether `read_key_packs` reads the episodes and the packs by two scans (no join)."""
    from core.store import packs as K

    return K._scanned_apart(db, (1 << 63) - 1 if upto is None else upto) is not None


def test_consecutive_ids_read_two_scans_and_a_gap_the_join(db: Database,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    ids = all_ids(db)
    assert ids == list(range(ids[0], ids[-1] + 1)) and scanned_apart(db)
    with db.conn:  # a deleted episode leaves a gap in the ids (its pack goes too)
        db.conn.execute("DELETE FROM episodes WHERE id = ?", (ids[5],))
    assert not scanned_apart(db) and scanned_apart(db, ids[4])
    assert read_packs(db, None, COST) is not None  # the join reads them
    assert_same(F.episode_keys_frame(db, values=COST), rows_read(db, monkeypatch, values=COST))


def test_a_pack_of_no_episode_is_never_read_as_one(db: Database, monkeypatch: pytest.MonkeyPatch
                                                  ) -> None:
    """As many packs as episodes, in increasing id order, yet one of them belongs to no
    episode (id 0) where an episode has none: the two scans must not take it."""
    ids = all_ids(db)
    words = bytearray(packs(db)[ids[3]])
    words[:8] = (0).to_bytes(8, "little")
    db.conn.execute("PRAGMA foreign_keys = OFF")  # as a lab.db written without them
    with db.conn:
        db.conn.execute("DELETE FROM episode_packs WHERE episode_id = ?", (ids[3],))
        db.conn.execute("INSERT INTO episode_packs VALUES (0, ?)", (bytes(words),))
    assert len(packs(db)) == len(ids) and not scanned_apart(db)
    assert read_packs(db, None, COST) is None  # the join sees the missing pack: rows
    assert_same(F.episode_keys_frame(db, values=COST), rows_read(db, monkeypatch, values=COST))
