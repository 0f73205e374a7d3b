"""The measures on small hand-built episodes whose arithmetic is written out, plus the
validation on simulated policies.

Episodes are built from compact strings: for observation i, `judg[i]` is U (USELESS),
F (USEFUL) or - (no judgment), `failed[i]` is 1 (failed by design) or 0, `stated[i]` is
u, f or -. An episode ends with `finish` at action `finish` (or, with finish=None, after
its last observation, which then has no decision after it).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analysis.measures.cost import tpc
from analysis.measures.decisions import decision_table, run_lengths
from analysis.measures.delta import design_contrast, time_matched_contrast
from analysis.measures.frames import frames_from
from analysis.measures.hazard import integration_index
from analysis.measures.success import paired_success, success_by_regime
from analysis.stats.lpm_boot import lstsq_weighted
from analysis.tables.compute import compute
from analysis.tables.plots import answer_action_chart, hazard_chart
from analysis.tables.registry import EPISODES, table_names
from analysis.tables.text import fmt_interval, render_results
from core.demo_data import demo_questions
from jobs.validate import validate_measures
from tests.helpers.synthetic import synthetic_hazard
from tests.oracles.measures import (
    hazard_curve,
    hazard_model,
    hazard_sample,
    judgment_rates,
    stopping_cost,
)
from tests.oracles.stats import fit_statsmodels, question_crossproducts

_JUDG = {"U": "USELESS", "F": "USEFUL", "-": None}
_STATED = {"u": "useless", "f": "useful", "-": None}


def build(specs: list[dict]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Episode and step frames from compact specs (see the module docstring)."""
    eps, steps = [], []
    for i, s in enumerate(specs, start=1):
        judg = s.get("judg", "U" * len(s.get("failed", "")))
        n = len(judg)
        failed = s.get("failed", "1" * n)
        stated = s.get("stated", "-" * n)
        refs = s.get("refs", [None] * n)
        sources = s.get("sources", ["foreign" if f == "1" else "gold" for f in failed])
        finish = s.get("finish")
        for t in range(1, n + 1):
            steps.append({"episode_id": i, "t": t, "action": "search", "obs_index": float(t),
                          "obs_failed": float(failed[t - 1]), "obs_source": sources[t - 1],
                          "obs_ref": refs[t - 1], "judgment": _JUDG[judg[t - 1]],
                          "judgment_source": "side_channel", "stated_judgment":
                          _STATED[stated[t - 1]], "streak": 0, "forced": 0})
        if finish is not None:
            steps.append({"episode_id": i, "t": finish, "action": "finish", "obs_index": None,
                          "obs_failed": None, "obs_source": None, "obs_ref": None,
                          "judgment": None, "judgment_source": None, "stated_judgment": None,
                          "streak": 0, "forced": 0})
        eps.append({"episode_id": i, "run": "r", "model": s.get("model", "m"),
                    "condition": s.get("condition", "none"), "regime": s.get("regime",
                                                                              "persistent"),
                    "budget": s.get("budget", 8), "seed": s.get("seed", 0),
                    "question_id": s.get("q", f"q{i}"), "answered": int(finish is not None),
                    "answer_action": float(finish) if finish else None,
                    "correct": s.get("correct", 0), "f1": 0.0, "tool_calls": n,
                    "extra_calls": s.get("extra", 0), "input_tokens": s.get("inp", 0),
                    "output_tokens": s.get("out", 0), "cost_usd": 0.0, "error": s.get("error")})
    return pd.DataFrame(eps), pd.DataFrame(steps)


def decisions(specs: list[dict]) -> pd.DataFrame:
    ep, st = build(specs)
    return decision_table(ep, st)


# --- decision table and runs -------------------------------------------------------


def test_decision_table_rows_outcomes_and_final_action() -> None:
    # obs 1..3 then finish at action 4 (budget 4): decisions after obs 1, 2, 3 at actions
    # 2, 3, 4; only the last answers, and it is at the final action.
    d = decisions([{"judg": "UFU", "failed": "110", "finish": 4, "budget": 4}])
    assert d["n_obs"].tolist() == [1, 2, 3]
    assert d["action"].tolist() == [2, 3, 4]
    assert d["answer"].tolist() == [0, 0, 1]
    assert d["final"].tolist() == [False, False, True]
    assert d["design_run"].tolist() == [1, 2, 0]
    assert d["own_run"].tolist() == [1, 0, 1]
    assert d["own_earlier"].tolist() == [False, False, True]  # obs 2 is not "earlier" at t=2


def test_a_format_failure_neither_extends_nor_resets_runs() -> None:
    ep, st = build([{"judg": "UUU", "finish": 4}])
    # insert a format failure (no action, no observation) at action 3, shifting obs 3
    st.loc[st["t"] >= 3, "t"] += 1
    st = pd.concat([st, pd.DataFrame([{"episode_id": 1, "t": 3, "action": None,
                                       "obs_index": None}])], ignore_index=True)
    d = decision_table(ep, st.sort_values("t"))
    # decisions after obs 1 (action 2), obs 2 (the format failure at 3 is skipped: the
    # decision belongs to the next valid action, the search at 4), obs 3 (action 5 =
    # finish); the run counts observations: 1, 2, 3
    assert d["action"].tolist() == [2, 4, 5]
    assert d["own_run"].tolist() == [1, 2, 3]
    assert d["answer"].tolist() == [0, 0, 1]


def test_run_lengths_reset_and_unchanged_rules() -> None:
    start = np.array([True, False, False, False, True, False])
    extend = np.array([True, True, False, True, True, True])
    reset = np.array([False, False, True, False, False, False])
    # seq 1: +1, +1, reset, +1 -> 1 2 0 1 ; seq 2 starts over: 1 2
    assert run_lengths(start, extend, reset).tolist() == [1, 2, 0, 1, 1, 2]
    # neither extend nor reset (a stated "no judgment") leaves the run unchanged
    assert run_lengths(start, extend & [1, 1, 0, 1, 1, 1], np.zeros(6, bool)).tolist() == [
        1, 2, 2, 3, 1, 2]


# --- Δ -----------------------------------------------------------------------------


def test_delta_group_boundaries() -> None:
    specs: list[dict] = [
        {"judg": "UUU", "finish": 4},                  # A: t=3, s=3 -> (a), answers
        {"judg": "UUUU"},                              # D: t=3, s=3 -> (a), continues
        {"judg": "UFU", "finish": 4},                  # C: t=3, s=1 -> (b), answers
        {"judg": "UFUU"},                              # E: t=3, s=1 -> (b), continues
        {"judg": "FUU", "finish": 4},                  # F: t=3, s=2 = t-1 -> neither
        {"judg": "U-U", "finish": 4},                  # G: no judgment resets: s=1 -> (b)
        {"judg": "UUU", "finish": 4, "budget": 4},     # H: the final action -> excluded
    ]
    c = time_matched_contrast(decisions(specs), n_boot=200)
    # (a): A answers, D does not -> 1/2 ; (b): C, G answer, E does not -> 2/3
    # one stratum (t=3): Δ = 1/2 - 2/3 = -1/6
    assert (c.n_a, c.answered_a, c.n_b, c.answered_b) == (2, 1, 3, 2)
    assert c.interval.estimate == pytest.approx(-1 / 6)
    assert c.interval.n == 7


def test_delta_mantel_haenszel_weights_two_strata() -> None:
    specs: list[dict] = [
        {"judg": "UUUU", "finish": 5},    # J1: t=3 (a) 0, t=4 (a) 1
        {"judg": "UUUUU"},                # J2: t=3 (a) 0, t=4 (a) 0
        {"judg": "UFUU", "finish": 5},    # K1: t=3 s=1 (b) 0, t=4 s=2 (b) 1
        {"judg": "UUFUU"},                # K2: t=3 s=0 none, t=4 s=1 (b) 0
        {"judg": "FFU", "finish": 4},     # K3: t=3 s=1 (b) 1
    ]
    c = time_matched_contrast(decisions(specs), n_boot=200)
    # t=3: (a) 0/2, (b) K1 0, K3 1 -> 1/2 ; w3 = 2*2/4 = 1,     d3 = 0 - 1/2 = -1/2
    # t=4: (a) 1/2, (b) K1 1, K2 0 -> 1/2 ; w4 = 2*2/4 = 1,     d4 = 0
    # Δ = (1*(-1/2) + 1*0) / (1 + 1) = -1/4
    assert c.interval.estimate == pytest.approx(-0.25)
    assert (c.n_a, c.n_b) == (4, 4)
    # by question × action every question is its own stratum: only questions with both
    # groups count, and no question has both -> undefined
    assert not time_matched_contrast(decisions(specs), strata="question_action",
                                     n_boot=50).interval.defined


def test_delta_variants_and_stated_judgments() -> None:
    specs: list[dict] = [
        {"judg": "UUU", "stated": "uuu", "finish": 4, "q": "a", "regime": "persistent"},
        {"judg": "UFU", "stated": "ufu", "q": "a", "regime": "recover_after_1",
         "failed": "100", "finish": None},
        {"judg": "UFUU", "stated": "u-uu", "q": "a", "regime": "persistent"},
    ]
    d = decisions(specs)
    # side channel at t=3: ep1 (a) 1; ep2 has no decision at t=3 (obs 3 is its last);
    # ep3 s=1 (b) 0 -> Δ = 1 - 0 = 1 (same question, action 4, both regimes' strata)
    assert time_matched_contrast(d, n_boot=50).interval.estimate == pytest.approx(1.0)
    assert time_matched_contrast(d, strata="question_action",
                                 n_boot=50).interval.estimate == pytest.approx(1.0)
    # by regime × action, ep1 and ep3 are both persistent at action 4 -> same stratum
    assert time_matched_contrast(d, strata="regime_action",
                                 n_boot=50).interval.estimate == pytest.approx(1.0)
    # stated: ep3 "u-uu" keeps its run through the unstated result: s=2 at t=3 -> neither
    st = time_matched_contrast(d, judgments="stated", n_boot=50)
    assert (st.n_a, st.n_b) == (1, 0) and not st.interval.defined


def test_design_label_contrast_by_action() -> None:
    specs: list[dict] = [
        {"failed": "111", "finish": 4, "regime": "persistent"},          # P1
        {"failed": "11111", "regime": "persistent"},                     # P2
        {"failed": "0011", "finish": 5, "regime": "late_onset_from_3"},  # L1
        {"failed": "00111", "regime": "late_onset_from_3"},              # L2
        {"failed": "0000", "finish": 5, "regime": "clean"},              # ignored
    ]
    c = design_contrast(decisions(specs), n_boot=100)
    # action 4 (t=3): persistent P1 1, P2 0 -> 1/2 ; late L1 0, L2 0 -> 0 ; w=2*2/4=1, d=+1/2
    # action 5 (t=4): persistent P2 0 -> 0/1 ; late L1 1, L2 0 -> 1/2 ; w=1*2/3, d=-1/2
    # RD = (1*(1/2) + (2/3)*(-1/2)) / (1 + 2/3) = (1/6) / (5/3) = 0.1
    assert c.interval.estimate == pytest.approx(0.1)
    assert (c.n_a, c.n_b) == (3, 4)


# --- I and the hazard curve --------------------------------------------------------


def test_integration_index_components() -> None:
    specs: list[dict] = [
        {"failed": "1111", "finish": 5},                           # j1 0, j2 0, j3 -, j4 1
        {"failed": "11111"},                                       # j1 0, j2 0, j3 -, j4 0
        {"failed": "1100", "finish": 5, "regime": "recover_after_2"},  # j1 0, j2 0, j0, j0
        {"failed": "00111", "finish": 6, "regime": "late_onset_from_3"},  # j0 j0 j1 0, j2 0, j3
        {"failed": "11111", "finish": 6},                          # j1..j4 0, j5 1
        {"failed": "1111", "finish": 5, "budget": 5},              # j4 at the final action
        {"failed": "1", "finish": 2},                              # j1 1
        {"failed": "1111", "finish": 5, "regime": "plausible"},    # not a mean6 regime
    ]
    ii = integration_index(decisions(specs), n_boot=100)
    # h45: j=4 -> 1, 0, 0 (ep5) ; j=5 -> 1 (ep5) ; final-action j4 excluded -> 2/4
    # h12: two decisions each in eps 1-6, answers 0 ; ep7 j1 answers -> 1/13
    assert (ii.n45, ii.n12) == (4, 13)
    assert ii.h45.estimate == pytest.approx(0.5)
    assert ii.h12.estimate == pytest.approx(1 / 13)
    assert ii.index.estimate == pytest.approx(0.5 - 1 / 13)
    curve = hazard_curve(decisions(specs), n_boot=50)
    # j=3: eps 1, 2, 5, 6 continue (ep6's is at action 4, not final), ep4 answers -> 1/5
    assert curve.counts[3] == 5 and curve.points[3].estimate == pytest.approx(1 / 5)
    assert not curve.points[7].defined  # no decision after 7 failures: "–", no crash


# --- hazard model ------------------------------------------------------------------


@pytest.mark.parametrize("fe", [False, True])
def test_hazard_model_recovers_beta_and_gamma(fe: bool) -> None:
    dec = synthetic_hazard(beta=0.08, gamma=0.15)
    fit = hazard_model(dec, fixed_effects=fe, n_boot=200)
    # generated with β = 0.08 per useless judgment, γ = 0.15 after an earlier useful one
    assert fit.beta.estimate == pytest.approx(0.08, abs=0.02)
    assert fit.gamma.estimate == pytest.approx(0.15, abs=0.03)
    assert fit.beta.low < 0.08 < fit.beta.high
    assert fit.n_decisions == 12000 and 0.3 < fit.share_earlier < 0.4


@pytest.mark.parametrize("fe", [False, True])
def test_numpy_least_squares_equals_statsmodels_on_the_full_sample(fe: bool) -> None:
    dec = synthetic_hazard(beta=0.05, gamma=-0.02, n_q=60, per_q=20, seed=4)
    sample = hazard_sample(dec)
    g, h, cols = question_crossproducts(sample, fe)
    fast = lstsq_weighted(g, h, np.ones((1, g.shape[0])), cols)[0]
    assert fast == pytest.approx(fit_statsmodels(sample, fe), abs=1e-9)
    # the within fit equals statsmodels with explicit question dummies
    assert fast == pytest.approx(fit_statsmodels(sample, fe, dummies=True), abs=1e-9)


def test_hazard_model_unidentified_without_earlier_useful() -> None:
    dec = synthetic_hazard(beta=0.05, gamma=0.0, n_q=30, per_q=10)
    dec["own_earlier"] = False
    dec["own_run"] = dec["n_obs"]  # run = action − 1: collinear with the action effects
    fit = hazard_model(dec, n_boot=50)
    assert not fit.beta.defined and not fit.gamma.defined


# --- success, cost, judgments ------------------------------------------------------


def test_success_per_regime_and_mean6() -> None:
    regimes = ["clean", "persistent", "recover_after_1", "recover_after_2", "recover_after_3",
               "late_onset_from_3"]
    specs: list[dict] = [{"q": q, "regime": r, "failed": "1", "correct": int(q == "a"), "seed": s}
             for q in ("a", "b") for r in regimes for s in (0, 1)]
    specs[0]["correct"] = 0  # q a, clean, seed 0 wrong: a's clean success = 1/2
    ep, _ = build(specs)
    res = dict(success_by_regime(ep, n_boot=100))
    # clean: (a 1/2 + b 0) / 2 = 1/4 ; the five others: (1 + 0) / 2 = 1/2
    assert res["clean"].estimate == pytest.approx(0.25)
    assert res["persistent"].estimate == pytest.approx(0.5)
    assert res["mean6"].estimate == pytest.approx((0.25 + 5 * 0.5) / 6)
    no_clean = dict(success_by_regime(ep[ep["regime"] != "clean"], n_boot=20))
    assert not no_clean["mean6"].defined  # a mean6 regime is missing -> "–"


def test_paired_success_difference_by_question() -> None:
    a, _ = build([{"q": q, "regime": "persistent", "failed": "1", "correct": c}
                  for q, c in (("x", 1), ("y", 1), ("z", 0))])
    b, _ = build([{"q": q, "regime": "persistent", "failed": "1", "correct": c}
                  for q, c in (("x", 0), ("y", 1), ("z", 0), ("w", 1))])
    res = dict(paired_success(a, b, n_boot=300))
    # common questions x, y, z: 2/3 - 1/3 = 1/3 ; w (only in b) is left out
    assert res["persistent"].estimate == pytest.approx(1 / 3)
    assert res["persistent"].n == 3 and 0 <= res["persistent"].p <= 1


def test_stopping_cost_and_tpc_by_hand() -> None:
    specs: list[dict] = [
        {"failed": "11", "finish": 3, "correct": 1, "inp": 1000, "out": 100, "extra": 2},
        {"failed": "1111", "finish": 5, "correct": 0, "inp": 3000, "out": 300},
        {"failed": "11111111", "finish": None, "correct": 0, "inp": 5000, "out": 500}]
    ep, _ = build(specs)
    ep["budget"] = [8, 5, 8]
    c = stopping_cost(ep, lam=0.05, n_boot=50)
    # answers at actions 3 and 5 -> median 4; action 5 is episode 2's final action -> 1/2
    assert (c.answered, c.median_answer_action, c.final_action_share) == (2, 4.0, 0.5)
    assert c.tool_calls == pytest.approx((2 + 4 + 8) / 3)
    # TPC = (100+300+500 + 0.25*(1000+3000+5000) + 500*14) / 1 correct = 10150
    assert tpc(ep) == pytest.approx(10150)
    # success (one regime, three questions) = 1/3; utility = mean(correct − 0.05·calls)
    assert c.utility.estimate == pytest.approx(np.mean([1 - 0.1, -0.2, -0.4]))
    # condition "none" does not need its 2 judgment calls: they only measure
    assert c.utility_all.estimate == pytest.approx(c.utility.estimate)
    assert (c.own_calls, c.measurement_calls) == (0.0, pytest.approx(2 / 3))
    rule = stopping_cost(ep.assign(condition="enforced_rule"), lam=0.05, n_boot=50)
    assert rule.utility_all.estimate == pytest.approx(np.mean([1 - 0.2, -0.2, -0.4]))
    assert math.isinf(tpc(ep.assign(correct=0)))


def test_tpc_leaves_out_tokens_of_judgments_that_only_measure() -> None:
    specs = [{"failed": "11", "finish": 3, "correct": 1, "inp": 1000, "out": 100, "extra": 2}]
    ep, _ = build(specs)
    # the acting turns used 600 of the 1000 input and 80 of the 100 output tokens;
    # the rest went to the 2 judgment forks
    ep = ep.assign(acting_input_tokens=600, acting_output_tokens=80)
    # condition none: the forks only measure -> 80 + 0.25*600 + 500*2 = 1230
    assert tpc(ep) == pytest.approx(1230)
    # enforced_rule needs its judgments -> everything is charged: 100 + 250 + 1000
    assert tpc(ep.assign(condition="enforced_rule")) == pytest.approx(1350)


def test_judgment_rates_first_repeat_and_dissociation() -> None:
    specs: list[dict] = [
        {"judg": "FFU", "failed": "000", "sources": ["gold", "gold", "distractor"],
         "refs": ["q#0", "q#0", "q#5"], "finish": 4},
        {"judg": "UUUUUU", "finish": None},       # own run reaches 5 after obs 5, continues
        {"judg": "UUUUU", "finish": 6},           # own run reaches 5, answers
        {"judg": "UUUUUUU", "finish": 8},         # ... at the final action: counts too
        {"judg": "UUUUU", "finish": 6, "regime": "clean"},  # another regime: left out
    ]
    ep, st = build(specs)
    rates = judgment_rates(st, decision_table(ep, st))
    # gold first: q#0 once judged USEFUL -> 1/1 ; gold repeat: q#0 again, USEFUL -> 1/1
    assert (rates.useful_gold_first.k, rates.useful_gold_first.n) == (1, 1)
    assert (rates.useful_gold_repeat.k, rates.useful_gold_repeat.n) == (1, 1)
    assert rates.useful_distractor_first.share == 0.0
    assert rates.useless_on_failed.share == 1.0 and rates.useless_on_real.share == 1 / 3
    # dissociation (persistent): three episodes reach a run of 5; two answer at a later
    # action (analysis.measures.dissociation); no stated judgments, so no stated run reaches 5
    assert (rates.dissociation.k, rates.dissociation.n) == (2, 3)
    assert (rates.stated_dissociation.k, rates.stated_dissociation.n) == (0, 0)


# --- wiring, formatting, undefined -------------------------------------------------


def test_everything_runs_on_empty_and_tiny_data_and_prints_dashes() -> None:
    ep, st = build([{"failed": "11", "finish": 3, "regime": "persistent", "error": None},
                    {"failed": "1", "finish": None, "error": "server_error: 500"}])
    res = compute(frames_from(ep, st), table_names(EPISODES), n_boot=20, hazard_boot=20)
    assert res.errored == 1
    text = render_results(res)
    assert "–" in text and "1 episode(s) ended in an error" in text
    empty = compute(frames_from(ep.iloc[0:0], st.iloc[0:0]), table_names(EPISODES), n_boot=10,
                    hazard_boot=10)
    assert all(not t.rows for t in empty.tables)
    render_results(empty)


def test_interval_format_and_charts() -> None:
    assert fmt_interval(0.33, 0.25, 0.41) == "+0.33 [+0.25, +0.41]"
    assert fmt_interval(-0.1, -0.17, -0.05) == "-0.10 [-0.17, -0.05]"
    assert fmt_interval(math.nan, math.nan, math.nan) == "–"
    assert fmt_interval(0.2, math.nan, math.nan) == "+0.20"
    chart = hazard_chart([("none", [0.1, 0.2, math.nan, 0.4])])
    assert "none" in chart and "\x1b[" not in chart
    assert "nothing to plot" in answer_action_chart([("x", ())], [0])


def test_validate_measures_separates_simulated_policies(tmp_path: Path) -> None:
    from core import store

    db = store.connect(tmp_path / "lab.db")
    questions = demo_questions()  # 60: I of the time hazard is > 0 with room to spare
    store.insert_questions(db, questions)
    # two seeds: one leaves sim-hazard-time's Δ interval wider than a ≈ 0 claim allows
    v = validate_measures(db, questions, seeds=(0, 1), n_boot=300)
    by = {c.model: c for c in v.checks}
    assert v.passed, v.failures()
    # time/deadline policies: exactly zero on both contrasts (deterministic sims)
    for name in ("sim-never", "sim-deadline", "sim-clock4", "sim-clock6", "sim-own7"):
        assert by[name].delta.interval.estimate == pytest.approx(0.0, abs=1e-12)
        assert by[name].design.interval.estimate == pytest.approx(0.0, abs=1e-12)
    # evidence-driven policies: lower bounds above zero
    for name in ("sim-own3", "sim-own5", "sim-design3", "sim-design5", "sim-hazard-own"):
        assert by[name].delta.interval.low > 0 and by[name].design.interval.low > 0
    # a clock scores I > 0 (why Δ exists); I is undefined when stopping precedes 4 failures
    assert by["sim-clock6"].index.index.estimate == pytest.approx(0.5)
    assert not by["sim-clock4"].index.index.defined
    # I is checked too, against Table 7 (> 0, ≈ 0 or undefined)
    assert by["sim-clock6"].expected == ("positive", "zero", "zero")
    assert by["sim-design3"].expected == ("undefined", "positive", "positive")
    assert by["sim-hazard-time"].index.index.low > 0
    # episodes reused: whether a run is stored does not depend on the resamples, so the
    # second pass draws none (its intervals are not what this line checks)
    again = validate_measures(db, questions, seeds=(0, 1), n_boot=0)
    assert again.new_episodes == 0 and again.episodes == v.episodes


def test_separation_rule() -> None:
    from analysis.stats.bootstrap import Interval
    from analysis.validate import separates

    assert separates(Interval(0.30, 0.01, 0.50), "positive")
    assert not separates(Interval(0.30, -0.01, 0.50), "positive")   # interval reaches 0
    assert not separates(Interval(math.nan), "positive")             # undefined is not > 0
    assert separates(Interval(0.02, 0.01, 0.03), "zero")             # |estimate| <= 0.05
    assert separates(Interval(-0.08, -0.17, 0.02), "zero")           # interval covers 0
    assert not separates(Interval(-0.08, -0.20, 0.04), "zero")       # … but ±0.12 is wide
    assert not separates(Interval(0.0, -0.5, 0.5), "zero")           # covers 0, says nothing
    assert separates(Interval(0.0, -0.1, 0.1), "zero")               # ±0.10: the bound
    assert separates(Interval(0.03), "zero") and not separates(Interval(0.06), "zero")
    assert not separates(Interval(0.20, 0.10, 0.30), "zero")
    # an undefined value is never ≈ 0 (I of sim-clock4 must be undefined, not ≈ 0)
    assert not separates(Interval(math.nan), "zero")
    assert separates(Interval(math.nan), "undefined")
    assert not separates(Interval(0.0, 0.0, 0.0), "undefined")
    with pytest.raises(ValueError, match="unknown expectation"):
        separates(Interval(0.0, 0.0, 0.0), "negative")
