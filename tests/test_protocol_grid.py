"""The whole protocol's grid: every condition × the six mean6 regimes × HotpotQA and FEVER.

The grid runs through the queue (a real in-process worker) on simulated agents, then
the leaving and budget-scaling tables show rows for it, and no table pools the two
datasets.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from console.cli import main
from core import store
from core.conditions import ARMS
from core.demo_fever import DEMO_FEVER_DATASET
from core.regimes import MEAN6

CONDITIONS = tuple("random_rule:rate=0.3" if name == "random_rule" else name for name in ARMS)
"""All 14 arms (random_rule with its rate given, as a grid without a dev set needs)."""
SIMS = ("sim-backup-own3", "sim-stated")
"""One sim that switches to the backup on its own evidence, one that states judgments."""
SETS = {"hp2": ("demo", 2), "fv2": (DEMO_FEVER_DATASET, 2)}
"""Question set → (dataset, questions)."""


def _json_rows(capsys: pytest.CaptureFixture[str], argv: list[str]) -> list[dict]:
    capsys.readouterr()
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    return out["rows"] if isinstance(out, dict) else out


def test_every_condition_regime_and_dataset_through_the_queue(db_path: Path, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]
                                                             ) -> None:
    config = tmp_path / "empty.toml"
    config.write_text("", encoding="utf-8")
    base = ["--db", str(db_path), "--config", str(config)]
    assert main([*base, "demo-set"]) == 0
    for name, (dataset, n) in SETS.items():
        assert main([*base, "sets", "create", name, "--dataset", dataset, "--n", str(n),
                     "--seed", "1"]) == 0
        assert main([*base, "enqueue", "--models", ",".join(SIMS), "--conditions",
                     ",".join(CONDITIONS), "--regimes", ",".join(MEAN6), "--set", name,
                     "--run", "protocol"]) == 0
        # the budget-scaling table: one arm also at 16 actions
        assert main([*base, "enqueue", "--models", ",".join(SIMS), "--conditions", "budget",
                     "--regimes", ",".join(MEAN6), "--set", name, "--budgets", "16",
                     "--run", "protocol"]) == 0
    assert main([*base, "worker", "--until-idle"]) == 0

    db = store.connect(db_path)
    cells = {tuple(r) for r in db.conn.execute(
        "SELECT c.condition, c.regime, q.dataset, c.budget, count(*), "
        "sum(e.error IS NOT NULL) FROM episodes e JOIN cells c ON c.id = e.cell_id "
        "JOIN questions q ON q.id = e.question_id "
        "GROUP BY c.condition, c.regime, q.dataset, c.budget")}
    per_cell = len(SIMS) * 2
    assert {(c, r, d, b) for c, r, d, b, _, _ in cells if b == 8} == {
        (a, r, d) + (8,) for a in ARMS for r in MEAN6 for d in ("demo", DEMO_FEVER_DATASET)}
    assert all(n == per_cell and not errors for *_, n, errors in cells)
    assert {(c, b) for c, _, _, b, _, _ in cells if b == 16} == {("budget", 16)}

    leaving = _json_rows(capsys, [*base, "results", "leaving", "--format", "json",
                                  "--resamples", "20"])
    assert {(r["arm"], r["dataset"], r["model"]) for r in leaving} == {
        (a, d, m) for a in ("two_source", "switch_rule") for d in ("demo", DEMO_FEVER_DATASET)
        for m in SIMS}
    switched = {(r["arm"], r["dataset"], r["model"]): r["estimate"] for r in leaving
                if r["measure"] == "switched_by_4"}
    # the evidence-switching sim leaves a persistently failing primary by action 4
    assert switched[("two_source", "demo", "sim-backup-own3")] == 1.0
    assert switched[("two_source", DEMO_FEVER_DATASET, "sim-backup-own3")] == 1.0

    budgets = _json_rows(capsys, [*base, "results", "budgets", "--format", "json",
                                  "--resamples", "20"])
    assert {(r["arm"], r["dataset"]) for r in budgets} == {
        ("budget", "demo"), ("budget", DEMO_FEVER_DATASET)}
    assert {r["measure"] for r in budgets} >= {"median_action@8", "median_action@16",
                                               "median_action_diff"}

    for table in ("success", "delta", "index", "cost", "judgments", "leaving", "budgets"):
        rows = _json_rows(capsys, [*base, "results", table, "--format", "json",
                                   "--resamples", "20"])
        assert rows, table
        # every row names one dataset and one question set; each set is its own dataset
        assert {(r["dataset"], r["question_set"]) for r in rows} == {
            (d, s) for s, (d, _) in SETS.items()}, table
