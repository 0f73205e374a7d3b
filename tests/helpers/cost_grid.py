"""A stored grid of every arm kind the cost table treats apart, priced, with a few
errors and unanswered episodes; and the frame comparison its tests use."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from analysis.tables.registry import table_def
from core import store
from tests.helpers.builders import store_sim_grid

COST = table_def("cost").reads.columns
ARMS = (("sim-backup-own3", "two_source"), ("sim-backup-own3", "switch_rule:k=3"),
        ("sim-stated", "stated_judgment_rule:k=3"), ("sim-own5", "none:judge=true"),
        ("sim-own5", "enforced_rule:k=3"))


def build_cost_grid(path: Path) -> Path:
    """A small grid of every arm kind cost treats apart, priced, with a few errors."""
    db = store.connect(path)
    store_sim_grid(db, "cost", ARMS, ("clean", "persistent"), 6)
    rng = np.random.default_rng(7)
    ids = [r[0] for r in db.conn.execute("SELECT id FROM episodes ORDER BY id")]
    with db.conn:  # dollars of a priced model; arm-only counts stored on every arm
        db.conn.executemany(
            "UPDATE episodes SET cost_usd = ?, discarded_turns = COALESCE(discarded_turns, 0)"
            " + ?, backup_calls = COALESCE(backup_calls, 0) + ?, primary_judgments = "
            "COALESCE(primary_judgments, 0) + ? WHERE id = ?",
            [(float(rng.random() / 50), int(rng.integers(1, 3)), int(rng.integers(1, 3)),
              int(rng.integers(1, 3)), i) for i in ids])
        db.conn.execute(f"UPDATE episodes SET acting_input_tokens = NULL, acting_output_tokens"
                        f" = NULL WHERE id IN ({ids[2]}, {ids[9]})")
        db.conn.execute(f"UPDATE episodes SET error = 'boom' WHERE id IN ({ids[4]}, {ids[30]})")
        db.conn.execute("UPDATE episodes SET answered = 0, answer = NULL, answer_action = NULL "
                        f"WHERE id IN ({ids[5]}, {ids[21]}, {ids[40]})")
    db.conn.close()
    return path


def assert_same(got: pd.DataFrame, want: pd.DataFrame) -> None:
    """Same columns, dtypes and values."""
    assert list(got.columns) == list(want.columns)
    assert got.dtypes.equals(want.dtypes), got.dtypes[got.dtypes != want.dtypes]
    assert got.equals(want)
