"""Any budget per cell, and the budget-scaling table (paper D.1 Table 16, D.2 Table 18):
hand-computed on a small frame, and end to end from `lab enqueue --budgets 8,16`
through the queue to `lab results budgets --format json`."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analysis.base.rows import Row
from analysis.measures.budgets import BudgetSide, budget_pairs, budget_table, weighted_median
from console.cli import main
from core import prereg, store
from core.data import ids_hash
from core.demo_set import ensure_demo_set
from core.models.registry import builtin_models
from jobs.grid import GridRequest, plan


def _episodes(budget: int, rows: list[tuple[str, int, int | None, int]],
              arm: str = "budget", regime: str = "persistent") -> list[dict]:
    """(question, correct, answer action or None, tool calls) → episode rows."""
    return [{"episode_id": i, "model": "m", "condition": arm, "arm": arm, "budget": budget,
             "regime": regime, "question_id": q, "correct": c, "answered": a is not None,
             "answer_action": a, "tool_calls": t}
            for i, (q, c, a, t) in enumerate(rows)]


@pytest.fixture
def frame() -> pd.DataFrame:
    at8 = _episodes(8, [("q1", 1, 3, 2), ("q2", 0, 8, 7), ("q3", 0, None, 8),
                        ("q4", 1, 5, 4)])
    # q5 ran only at 16: it is not paired and is left out
    at16 = _episodes(16, [("q1", 1, 3, 2), ("q2", 1, 16, 15), ("q3", 0, 16, 15),
                          ("q4", 0, None, 16), ("q5", 1, 2, 1)])
    return pd.DataFrame(at8 + at16)


def _by_measure(rows: Sequence[Row]) -> dict[tuple[str, str], Row]:
    return {(r.measure, r.scope): r for r in rows}


def test_table_by_hand(frame: pd.DataFrame) -> None:
    table = budget_table(frame, n_boot=200, seed=1)
    rows = _by_measure(table.rows)
    scope = "persistent · 16 vs 8"
    assert len(table.rows) == 15 and {r.scope for r in table.rows} == {scope}
    expected = {  # on q1–q4
        "success": (2 / 4, 2 / 4), "answered": (3 / 4, 3 / 4),
        "median_action": (5.0, 16.0),  # answers at 3, 5, 8 | 3, 16, 16
        "final_share": (1 / 3, 2 / 3),  # q2 at 8 | q2, q3 at 16
        "tool_calls": (21 / 4, 48 / 4),
    }
    for measure, (at8, at16) in expected.items():
        r8, r16 = rows[(f"{measure}@8", scope)], rows[(f"{measure}@16", scope)]
        diff = rows[(f"{measure}_diff", scope)]
        assert (r8.budget, r16.budget, diff.budget) == (8, 16, 16)
        assert r8.estimate == pytest.approx(at8) and r16.estimate == pytest.approx(at16)
        assert diff.estimate == pytest.approx(at16 - at8)
        assert r8.n == r16.n == diff.n == 4 and diff.unit == "questions"
        assert diff.ci_low <= diff.estimate <= diff.ci_high
        assert np.isnan(r8.p) and not np.isnan(diff.p)
    assert rows[("median_action@16", scope)].detail == "3 answers"
    # paired resampling: q1 is identical at both budgets, so a diff interval that
    # resampled the budgets independently would be wider than this one
    assert rows[("tool_calls_diff", scope)].ci_low > 0


def test_groups_and_regimes_never_pool(frame: pd.DataFrame) -> None:
    other_arm = frame.assign(arm="enforced_rule", condition="enforced_rule")
    clean = frame.assign(regime="clean")
    only8 = frame.loc[frame["budget"] == 8].assign(arm="none", condition="none")
    table = budget_table(pd.concat([frame, other_arm, clean, only8], ignore_index=True),
                         n_boot=20)
    lines = {(r.arm, r.scope) for r in table.rows}
    assert lines == {("budget", "persistent · 16 vs 8"), ("budget", "clean · 16 vs 8"),
                     ("enforced_rule", "persistent · 16 vs 8")}  # none ran one budget only


def test_three_budgets_give_every_pair(frame: pd.DataFrame) -> None:
    at12 = frame.loc[frame["budget"] == 8].assign(budget=12)
    table = budget_table(pd.concat([frame, at12], ignore_index=True), n_boot=10)
    assert {r.scope for r in table.rows} == {"persistent · 12 vs 8", "persistent · 16 vs 8",
                                             "persistent · 16 vs 12"}
    assert budget_pairs([16, 8, 12, 8]) == [(8, 12), (8, 16), (12, 16)]


@pytest.mark.parametrize("values", [[3.0], [1.0, 4.0], [5.0, 1.0, 3.0, 2.0, 9.0], [2.0, 2.0]])
def test_weighted_median_is_numpys_median_with_unit_weights(values: list[float]) -> None:
    v = np.array(values)
    assert weighted_median(v, np.ones((1, v.size)))[0] == np.median(v)


def test_weighted_median_under_weights() -> None:
    v = np.array([1.0, 2.0, 10.0])
    got = weighted_median(v, np.array([[0.0, 0.0, 3.0], [2.0, 1.0, 1.0], [0.0, 0.0, 0.0]]))
    assert got[0] == 10.0 and got[1] == 1.5 and np.isnan(got[2])


def test_budgets_grid_through_the_queue(db_path: Path, tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--db", str(db_path), "demo-set"]) == 0
    config = tmp_path / "empty.toml"
    config.write_text("", encoding="utf-8")
    base = ["--db", str(db_path), "--config", str(config)]
    assert main([*base, "enqueue", "--models", "sim-deadline,sim-own3", "--conditions",
                 "none,enforced_rule:k=3", "--regimes", "persistent", "--set", "demo",
                 "--budgets", "8,16", "--run", "scale"]) == 0
    assert main([*base, "worker", "--until-idle"]) == 0
    db = store.connect(db_path)
    budgets = {r[0]: r[1] for r in db.conn.execute(
        "SELECT c.budget, count(*) FROM episodes e JOIN cells c ON c.id = e.cell_id "
        "GROUP BY c.budget")}
    assert set(budgets) == {8, 16} and budgets[8] == budgets[16] > 0
    longest = db.conn.execute("SELECT max(answer_action) FROM episodes e JOIN cells c ON "
                              "c.id = e.cell_id WHERE c.budget = 16").fetchone()[0]
    assert longest == 16  # a 16-action cell really runs 16 actions
    capsys.readouterr()
    assert main([*base, "results", "budgets", "--format", "json", "--resamples", "50"]) == 0
    rows = json.loads(capsys.readouterr().out)
    if isinstance(rows, dict):
        rows = rows["rows"]
    got = {(r["model"], r["arm"], r["measure"]): r for r in rows}
    assert {(m, a) for m, a, _ in got} == {(m, a) for m in ("sim-deadline", "sim-own3")
                                           for a in ("none", "enforced_rule:k=3")}
    # the deadline sim answers at the last action whatever the budget
    assert got[("sim-deadline", "none", "median_action@8")]["estimate"] == 8
    assert got[("sim-deadline", "none", "median_action@16")]["estimate"] == 16
    assert got[("sim-deadline", "none", "median_action_diff")]["estimate"] == 8
    assert got[("sim-deadline", "none", "final_share@16")]["estimate"] == 1
    # the rule answers after 3 useless results at either budget: the stop does not move
    rule = got[("sim-deadline", "enforced_rule:k=3", "median_action_diff")]
    assert rule["estimate"] == 0 and rule["scope"] == "persistent · 16 vs 8"
    assert got[("sim-deadline", "enforced_rule:k=3", "tool_calls_diff")]["estimate"] == 0
    capsys.readouterr()
    assert main([*base, "results", "budgets", "--resamples", "20"]) == 0
    text = capsys.readouterr().out
    assert "Budget scaling" in text and "median_action_diff" in text


def test_an_amendment_scope_gates_each_budget(db_path: Path) -> None:
    db = store.connect(db_path)
    ensure_demo_set(db)
    ids = store.question_set(db, "demo")["ids"][:10]
    store.save_question_set(db, "t10", "demo", ids, 1, [], True, ids_hash(ids))
    scope = {"models": ["sim-own5"], "conditions": ["budget"], "regimes": ["persistent"],
             "question_sets": ["t10"], "budgets": [8, 16]}
    tests = [{"id": "D1", "kind": "median_action", "condition": "budget", "regime": "persistent",
              "budget": 16, "op": ">=", "value": 12}]
    models = builtin_models()
    prereg.create(db, "budget scaling", "", tests, scope)
    prereg.freeze(db, "A1", models)

    def req(*budgets: int) -> GridRequest:
        return GridRequest(models=("sim-own5",), conditions=("budget",), regimes=("persistent",),
                           question_set="t10", budgets=budgets, amendment="A1", run="d")

    grid = plan(db, req(8, 16), models)
    assert grid.mode == "governed" and {c.cell.budget for c in grid.cells} == {8, 16}
    with pytest.raises(prereg.GateError, match="budget 12 is not in its scope"):
        plan(db, req(8, 12), models)


def _per_episode(side: BudgetSide, w: np.ndarray) -> np.ndarray:
    """The five measures summed episode by episode (the definition)."""
    ew = w[:, side.question]
    total = ew.sum(axis=1)
    answers = ew @ side.answered
    mask = side.answered.astype(bool)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.column_stack([
            ew @ side.correct / total, answers / total,
            weighted_median(side.action[mask], ew[:, mask]),
            ew @ (side.answered * (side.action >= side.budget)) / answers,
            ew @ side.tool_calls / total])


@pytest.mark.parametrize("seed", range(6))
def test_measures_summed_by_question_equal_the_per_episode_definition(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n_q, n_ep = 7, 25  # several episodes per question (seeds pooled), some unanswered
    question = np.sort(rng.integers(0, n_q, n_ep))
    question[:n_q] = np.arange(n_q)
    answered = rng.random(n_ep) < 0.7
    side = BudgetSide.from_arrays(8, question, rng.integers(0, 2, n_ep).astype(float),
                                  answered, rng.integers(1, 9, n_ep).astype(float),
                                  rng.integers(0, 9, n_ep).astype(float))
    w = np.vstack([np.ones(n_q), np.zeros(n_q),
                   *(np.bincount(rng.integers(0, n_q, n_q), minlength=n_q)
                     for _ in range(300))]).astype(float)
    got, want = side.measures(w), _per_episode(side, w)
    assert np.array_equal(got, want, equal_nan=True)  # the same floats, not just close
