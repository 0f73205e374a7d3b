"""The second seed's Tables 1–3, sweeps and calibration record on the trace sim, with every
number computed by hand.

The sim (analysis/replay/trace_sim.py) with 9 questions and split seed 7 puts q2, q3
and q7 in the test split and the other six in the calibration split:

    question  split  confidence at depth 0–3   correct at depth 0–3   proxy depth
    q0        cal    94 100 100 100            1 1 1 1
    q1        cal    64  79  94 100            1 0 1 1
    q2        test   44  59  74  89            0 1 1 1                3
    q3        test   84  99 100 100            1 1 1 1                3
    q4        cal    99 100 100 100            1 1 1 1
    q5        cal    50  65  80  95            1 0 0 1
    q6        cal    34  49  64  79            0 0 0 1
    q7        test   66  81  96 100            0 0 1 1                3
    q8        cal    34  49  64  79            0 0 1 1

Depth-zero calibration records: (.34, 0), (.34, 0), (.50, 1), (.64, 1), (.94, 1),
(.99, 1): already monotone, so the map is 0 at .34, 1 from .50 on, linear between:
φ(.44) = .10 / .16 = .625, and φ = 1 for every other test state.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analysis.replay.controllers import Gate
from analysis.replay.trace_sim import depth_zero_ece, expected_accuracy, sim_questions, sim_traces
from analysis.replay.trace_tables import TraceSettings
from analysis.replay.traces import build_traces, proxy_depth, split_mask
from analysis.tables.registry import TRACES, table_names
from analysis.tables.results import trace_tables

SETTINGS = TraceSettings(Gate(), "0", 7)
THIRD, TWO_THIRDS = 1 / 3, 2 / 3


@pytest.fixture(scope="module")
def tables() -> dict[str, dict[tuple[str, str, str], float]]:
    """Every table's estimates keyed by (arm, measure, scope)."""
    frame = sim_traces(9)
    out = {}
    for table in trace_tables(frame, table_names(TRACES), sim_questions(9), SETTINGS, n_boot=50):
        out[table.name] = {(r.arm, r.measure, r.scope): r.estimate for r in table.rows}
    return out


def test_the_sim_is_the_one_in_the_docstring() -> None:
    tr = build_traces(sim_traces(9), "sim-trace")
    assert (~split_mask(tr, 7)).nonzero()[0].tolist() == [2, 3, 7]
    assert (tr.confidence[[2, 3, 7]] * 100).round().tolist() == [
        [44, 59, 74, 89], [84, 99, 100, 100], [66, 81, 96, 100]]
    assert tr.correct[[2, 3, 7]].tolist() == [[0, 1, 1, 1], [1, 1, 1, 1], [0, 0, 1, 1]]
    assert [proxy_depth(q) for q in sim_questions(9).values()][2:8:1] == [3, 3, 3, 3, 2, 3]


def test_table1_by_hand(tables: dict[str, dict[tuple[str, str, str], float]]) -> None:
    t = tables["trace_table1"]
    # always-commit baselines on the test questions' correctness at depths 0–3
    assert t[("Parametric only", "OA", "")] == pytest.approx(THIRD)  # q3 only
    assert t[("Fixed RAG@1", "OA", "")] == pytest.approx(TWO_THIRDS)  # q2, q3
    assert t[("Fixed RAG@2", "OA", "")] == t[("Fixed RAG@3", "OA", "")] == 1
    assert t[("Adaptive proxy", "OA", "")] == 1 and t[("Adaptive proxy", "cost", "")] == 3
    for name in ("Parametric only", "Fixed RAG@1", "Adaptive proxy"):
        assert t[(name, "coverage", "")] == 1 and t[(name, "CA", "")] == t[(name, "OA", "")]
    # Raw-Gated: q2 .44, .59 retrieve, .74 commits at depth 2 (right); q3 .84 commits at
    # 0 (right); q7 .66 retrieves, .81 commits at 1 (wrong)
    assert t[("Raw-Gated", "OA", "")] == pytest.approx(TWO_THIRDS)
    assert t[("Raw-Gated", "CA", "")] == pytest.approx(TWO_THIRDS)
    assert t[("Raw-Gated", "coverage", "")] == 1
    assert t[("Raw-Gated", "cost", "")] == pytest.approx((2 + 0 + 1) / 3)
    # Calibrated-Gated: q2 φ(.44) = .625 retrieves, φ(.59) = 1 commits at 1 (right); q3 and
    # q7 φ = 1 commit at 0 (right, wrong)
    assert t[("Calibrated-Gated", "OA", "")] == pytest.approx(TWO_THIRDS)
    assert t[("Calibrated-Gated", "CA", "")] == pytest.approx(TWO_THIRDS)
    assert t[("Calibrated-Gated", "cost", "")] == pytest.approx(THIRD)
    assert t[("Calibrated − Raw", "cost", "")] == pytest.approx(THIRD - 1)
    assert t[("Calibrated − Raw", "OA", "")] == pytest.approx(0)
    assert t[("Raw-Gated", "abstain", "")] == t[("Raw-Gated", "escalate", "")] == 0


def test_table1_rows_name_the_controller_and_carry_intervals() -> None:
    frame = sim_traces(9)
    (table,) = trace_tables(frame, ("trace_table1",), sim_questions(9),
                            TraceSettings(Gate(0.25, 0.9, 2), "all", 7), n_boot=200)
    assert all("τ_lo=0.25, τ_hi=0.9, budget 2" in r.detail and "all depths" in r.detail
               for r in table.rows)
    oa = next(r for r in table.rows if r.arm == "Fixed RAG@1" and r.measure == "OA")
    assert 0 <= oa.ci_low <= oa.estimate <= oa.ci_high <= 1 and oa.n == 3
    (no_text,) = trace_tables(frame, ("trace_table1",), {}, SETTINGS, n_boot=10)
    assert "Adaptive proxy" not in {r.arm for r in no_text.rows}
    assert any("Adaptive proxy left out" in n for n in no_text.notes)


def test_table2_by_hand(tables: dict[str, dict[tuple[str, str, str], float]]) -> None:
    t = tables["trace_table2"]
    # depth 0 raw: three single-state bins, gaps .44, .16, .66
    assert t[("depth 0", "ece_raw", "")] == pytest.approx((0.44 + 0.16 + 0.66) / 3)
    # calibrated .625 (wrong: gap .625) and 1, 1 (one bin, accuracy .5: gap .5 twice)
    assert t[("depth 0", "ece_cal", "")] == pytest.approx((0.625 + 2 * 0.5) / 3)
    assert t[("depth 0", "top_share", "")] == 0
    # depth 1 raw: .59/1, .99/1, .81/0 → gaps .41, .01, .81; calibrated all 1, accuracy 2/3
    assert t[("depth 1", "ece_raw", "")] == pytest.approx((0.41 + 0.01 + 0.81) / 3)
    assert t[("depth 1", "ece_cal", "")] == pytest.approx(THIRD)
    assert t[("depth 1", "top_share", "")] == pytest.approx(THIRD)
    assert t[("depth 1", "top_raw", "")] == pytest.approx(0.99)
    assert t[("depth 1", "top_accuracy", "")] == 1 and t[("depth 1", "top_cal", "")] == 1
    # depth 2: .74 (gap .26), bin [.9, 1] holds 1.00 and .96, mean .98, all right (.02 × 2)
    assert t[("depth 2", "ece_raw", "")] == pytest.approx((0.26 + 2 * 0.02) / 3)
    assert t[("depth 2", "ece_cal", "")] == pytest.approx(0)
    assert t[("depth 2", "top_share", "")] == pytest.approx(TWO_THIRDS)
    assert t[("depth 2", "top_raw", "")] == pytest.approx(0.98)
    # depth 3: .89 right (gap .11), 1.00 and 1.00 right
    assert t[("depth 3", "ece_raw", "")] == pytest.approx(0.11 / 3)
    assert t[("depth 3", "ece_diff", "")] == pytest.approx(-0.11 / 3)


def test_table3_by_hand(tables: dict[str, dict[tuple[str, str, str], float]]) -> None:
    t = tables["trace_table3"]
    # q2 0→1 wrong → right; q7 1→2 wrong → right; nothing turns wrong; 9 transitions
    assert t[("all", "helpful", "")] == pytest.approx(2 / 9)
    assert t[("all", "harmful", "")] == 0
    assert t[("all", "net", "")] == pytest.approx(2 / 9)
    assert t[("0→1", "helpful", "")] == pytest.approx(THIRD)
    assert t[("1→2", "helpful", "")] == pytest.approx(THIRD)
    assert t[("2→3", "helpful", "")] == 0


def test_sweeps_by_hand(tables: dict[str, dict[tuple[str, str, str], float]]) -> None:
    t = tables["trace_sweeps"]
    # τ_hi = 0.9, raw: q2 never reaches .9 and escalates at depth 3 (.89); q3 commits at 1
    # (.99, right); q7 at 2 (.96, right): OA 2/3, CA 1, coverage 2/3, cost (3 + 1 + 2)/3
    assert t[("Raw-Gated", "OA", "τ_hi=0.9")] == pytest.approx(TWO_THIRDS)
    assert t[("Raw-Gated", "CA", "τ_hi=0.9")] == 1
    assert t[("Raw-Gated", "risk", "τ_hi=0.9")] == 0
    assert t[("Raw-Gated", "coverage", "τ_hi=0.9")] == pytest.approx(TWO_THIRDS)
    assert t[("Raw-Gated", "cost", "τ_hi=0.9")] == pytest.approx(2)
    # calibrated at 0.9: the same as at 0.7 (φ jumps from .625 to 1)
    assert t[("Calibrated-Gated", "cost", "τ_hi=0.9")] == pytest.approx(THIRD)
    # budget 0, raw: only q3 (.84) commits; .44 and .66 escalate
    assert t[("Raw-Gated", "OA", "budget 0")] == pytest.approx(THIRD)
    assert t[("Raw-Gated", "CA", "budget 0")] == 1
    assert t[("Raw-Gated", "cost", "budget 0")] == 0
    assert t[("Raw-Gated", "OA", "budget 3")] == t[("Raw-Gated", "OA", "τ_hi=0.7")]
    assert t[("Fixed RAG@1", "cost", "baseline")] == 1
    # reliability: depth 0, raw bin [0.8, 0.9) holds q3 (.84, right)
    assert t[("Raw-Gated", "bin_confidence", "t=0 bin [0.8, 0.9)")] == pytest.approx(0.84)
    assert t[("Raw-Gated", "bin_accuracy", "t=0 bin [0.8, 0.9)")] == 1


def test_calibration_record_lists_split_fit_records_and_map(
        tables: dict[str, dict[tuple[str, str, str], float]]) -> None:
    t = tables["trace_calibration"]
    splits = {scope: arm for (arm, measure, scope) in t if measure == "split"}
    assert sorted(s for s, a in splits.items() if a == "test") == [
        "hotpotqa:hotpotqa-q2", "hotpotqa:hotpotqa-q3", "hotpotqa:hotpotqa-q7"]
    records = {scope: v for (arm, measure, scope), v in t.items() if measure == "fit_record"}
    assert len(records) == 6 and records["hotpotqa:hotpotqa-q5 t=0"] == pytest.approx(0.5)
    points = {scope: v for (arm, measure, scope), v in t.items() if measure == "map"}
    assert points == {"κ=0.34": 0, "κ=0.5": 1, "κ=0.64": 1, "κ=0.94": 1, "κ=0.99": 1}


def test_sim_is_over_confident_and_the_depth_zero_map_lowers_held_out_ece() -> None:
    raw, cal, n = depth_zero_ece(300)
    assert n > 50 and raw > 0.15 and cal < raw / 2
    frame = sim_traces(300)
    tr = build_traces(frame, "sim-trace")
    # depth-wise accuracy rises as built (BASE .35, .50, .65, .80 at z = .5)
    means = [np.nanmean(tr.correct[:, t]) for t in range(4)]
    assert means == sorted(means)
    assert means[0] == pytest.approx(expected_accuracy(300, 0), abs=0.08)
    assert sim_traces(20, seed=3).equals(sim_traces(20, seed=3))
    assert not sim_traces(20, seed=3).equals(sim_traces(20, seed=4))


def test_unparsed_errored_and_copied_states() -> None:
    frame = sim_traces(9)
    q7 = frame["question_id"] == "hotpotqa-q7"
    # q7's depth-1 reply did not parse: no confidence, so π retrieves past it
    frame.loc[q7 & (frame["depth"] == 1), ["parsed", "confidence", "answer"]] = (0, None, None)
    # q3's depth-0 call failed: no state there (π retrieves), its depth 1 (.99) commits
    frame.loc[(frame["question_id"] == "hotpotqa-q3") & (frame["depth"] == 0), "error"] = "x"
    # q2's third slice was empty: 2 → 3 is not a transition
    frame["new_evidence"] = 1
    frame.loc[(frame["question_id"] == "hotpotqa-q2") & (frame["depth"] == 3),
              "new_evidence"] = 0
    t1, t3 = trace_tables(frame, ("trace_table1", "trace_table3"), sim_questions(9), SETTINGS,
                          n_boot=10)
    g = {(r.arm, r.measure): r.estimate for r in t1.rows}
    # raw: q2 commits at 2 (right), q3 at 1 (right), q7 at 2 (.96, right)
    assert g[("Raw-Gated", "OA")] == 1 and g[("Raw-Gated", "cost")] == pytest.approx(5 / 3)
    assert g[("Parametric only", "OA")] == 0  # the failed state counts as wrong
    n = next(r.n for r in t3.rows if r.arm == "all" and r.measure == "helpful")
    assert n == 9 - 1 - 1  # q3's 0 → 1 has no depth-0 state; q2's 2 → 3 adds no evidence


def test_nullable_int_columns_as_load_traces_returns_them() -> None:
    frame = sim_traces(9)
    frame["correct"] = frame["correct"].astype("Int64")
    frame.loc[0, "correct"] = pd.NA
    tr = build_traces(frame, "sim-trace")
    assert np.isnan(tr.correct[0, 0]) and tr.correct[1, 0] == 1


def test_validate_measures_checks_the_depth_zero_map_on_the_trace_sim() -> None:
    from analysis.validate import Validation, trace_check, validation_table

    check = trace_check()
    assert check.passed and check.ece_cal < check.ece_raw
    v = Validation((), 1, (0,), 0, 0, trace=check)
    assert v.passed and not v.failures()
    rows = {(r.model, r.measure): r for r in validation_table(v).rows}
    assert rows[("sim-trace", "ece_raw")].estimate == pytest.approx(check.ece_raw)
    assert rows[("sim-trace", "passed")].detail == "yes"
    from dataclasses import replace
    bad = replace(v, trace=replace(check, ece_cal=check.ece_raw + 0.01))
    assert not bad.passed and bad.failures() == ("sim-trace (depth-0 map)",)
