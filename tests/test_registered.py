"""Registered tests on hand-built episodes: every kind and verdict computed by hand.

Each episode is written out step by step (observations with their design label and
judgments, then an answer or the budget), so every number below can be checked on
paper; the frames go through the real pipeline (`frames_from`, the decision table).
"""

from __future__ import annotations

import itertools
import re
from typing import Any

import numpy as np
import pandas as pd
import pytest

from analysis.measures.frames import Frames, frames_from
from analysis.prereg.outcome_kinds import cohen_kappa, wilson
from analysis.prereg.outcomes import Outcome, evaluate, evaluate_test, verdict
from core.conditions import parse_condition
from core.errors import ConfigError
from core.registered_tests import validate_tests

FROZEN = "2030-01-01T00:00:00+00:00"
AFTER, BEFORE = "2030-01-02T00:00:00+00:00", "2029-12-31T00:00:00+00:00"
MAIN = ["clean", "persistent", "recover_after_1", "recover_after_2", "recover_after_3",
        "late_onset_from_3"]


class Builder:
    """Episodes and steps written out by hand."""

    def __init__(self) -> None:
        self.ids = itertools.count(1)
        self.episodes: list[dict] = []
        self.steps: list[dict] = []

    def add(self, *, model: str = "m1", cond: str = "none", regime: str = "persistent",
            q: str = "q1", correct: int = 0, obs: str = "", answer_at: int | None = None,
            budget: int = 8, run: str = "gov", amendment: str | None = "A1",
            qset: str = "s", dataset: str = "demo", seed: int = 0, tool_calls: int | None = None,
            extra_calls: int = 0, stated: str = "", started: str = AFTER) -> None:
        """One episode. `obs` has one letter per observation: x = failed and judged
        USELESS, f = failed and judged USEFUL, u = real and judged USELESS, r = real
        and judged USEFUL; `stated` one letter per observation: l = "useless",
        s = "useful", - = no statement. The agent answers at `answer_at` (after
        answer_at − 1 observations) or never."""
        eid = next(self.ids)
        c = parse_condition(cond)
        n_obs = answer_at - 1 if answer_at else budget
        assert len(obs) == n_obs, "one letter per observation"
        for i, ch in enumerate(obs, start=1):
            st = stated[i - 1] if i <= len(stated) else "-"
            self.steps.append({
                "episode_id": eid, "t": i, "action": "search", "obs_index": i,
                "obs_failed": int(ch in "xf"), "obs_source": "failed" if ch in "xf" else "gold",
                "obs_ref": f"p{i}", "judgment": "USELESS" if ch in "xu" else "USEFUL",
                "judgment_source": "side_channel",
                "stated_judgment": {"l": "useless", "s": "useful"}.get(st),
                "rule_signal": None, "streak": 0, "forced": 0, "refused": 0,
                "format_failure": 0})
        if answer_at:
            self.steps.append({"episode_id": eid, "t": answer_at, "action": "finish",
                               "obs_index": None, "obs_failed": None, "obs_source": None,
                               "obs_ref": None, "judgment": None, "judgment_source": None,
                               "stated_judgment": None, "rule_signal": None, "streak": 0,
                               "forced": 0, "refused": 0, "format_failure": 0})
        self.episodes.append({
            "episode_id": eid, "run": run, "amendment": amendment, "cell_id": 1,
            "model": model, "condition": c.name, "arm": c.label(),
            "condition_hash": c.spec_hash(), "condition_spec": c.to_json(), "regime": regime,
            "budget": budget, "seed": seed, "replicate": 0, "question_set": qset,
            "dataset": dataset, "question_id": q, "answered": int(bool(answer_at)),
            "answer": "a" if answer_at else None, "answer_action": answer_at,
            "correct": correct, "f1": float(correct), "em": correct, "placeholder": 0,
            "tool_calls": n_obs if tool_calls is None else tool_calls,
            "extra_calls": extra_calls, "format_failures": 0, "forced_turns": 0,
            "refused_calls": 0, "input_tokens": 0, "output_tokens": 0,
            "cache_read_tokens": 0, "cache_write_tokens": 0, "cost_usd": 0.0,
            "end_reason": "answer" if answer_at else "budget", "error": None,
            "started_at": started, "finished_at": started})

    def frames(self) -> Frames:
        return frames_from(pd.DataFrame(self.episodes), pd.DataFrame(self.steps))


SCOPE = {"models": ["m1", "m2", "m3"], "conditions": ["none", "enforced_rule", "none:judge=true",
                                                    "random_rule", "budget"],
         "regimes": [*MAIN, "plausible"], "question_sets": ["s", "s2"], "budgets": [8, 16]}


def amendment(*tests: dict, scope: dict | None = None) -> dict:
    valid = validate_tests([dict(t) for t in tests], scope or SCOPE)
    return {"id": "A1", "scope": scope or SCOPE, "frozen_at": FROZEN, "tests": valid}


def one(frames: Frames, test: dict, **kw: dict | None) -> Outcome:
    return evaluate_test(amendment(test, **kw), test, frames, n_boot=200)


def success_pair(b: Builder, model: str, a_right: int, b_right: int, n: int = 4, **kw: Any
                 ) -> None:
    """n questions in persistent: arm enforced_rule correct on a_right, none on b_right."""
    for i in range(n):
        b.add(model=model, cond="enforced_rule", q=f"q{i}", correct=int(i < a_right),
              obs="x" * 7, answer_at=8, **kw)
        b.add(model=model, cond="none", q=f"q{i}", correct=int(i < b_right), obs="x" * 7,
              answer_at=8, **kw)


DIFF = {"id": "D", "kind": "paired_diff", "metric": "success", "regime": "persistent",
        "a": "enforced_rule", "b": "none", "on": "estimate", "op": ">=", "threshold": 0.25}


def test_each_verdict_of_a_threshold_test() -> None:
    b = Builder()
    success_pair(b, "m1", 4, 2)   # +0.5
    success_pair(b, "m2", 1, 3)   # −0.5
    f = b.frames()
    assert one(f, {**DIFF, "models": ["m1"]}).verdict == "pass"
    assert one(f, {**DIFF, "models": ["m2"]}).verdict == "fail"
    got = one(f, {**DIFF, "models": ["m1", "m2"]})
    assert got.verdict == "partial" and got.numbers.startswith("1/2: ")
    assert one(f, {**DIFF, "models": ["m3"]}).verdict == "n.a."          # no data at all
    assert one(f, {**DIFF, "models": ["m1", "m3"]}).verdict == "n.a."    # a pass on missing data
    assert one(f, {**DIFF, "models": ["m2", "m3"]}).verdict == "fail"
    single = one(f, {**DIFF, "models": ["m1"]})
    assert single.estimate == pytest.approx(0.5) and single.n_episodes == 8
    assert single.runs == ("gov",) and single.after_freeze is True


def test_paired_diff_p_value_verdicts_with_holm() -> None:
    b = Builder()
    success_pair(b, "m1", 8, 0, n=8)   # every resample +1: p = 1/n_boot
    success_pair(b, "m2", 4, 4, n=8)   # every resample 0: p = 1
    f = b.frames()
    test = {"id": "H", "kind": "paired_diff", "metric": "success", "regime": "persistent",
            "a": "enforced_rule", "b": "none"}
    got = one(f, {**test, "models": ["m1", "m2"]})
    assert got.verdict == "partial"
    p1, p2 = got.parts
    assert (p1.verdict, p2.verdict) == ("pass", "fail")
    # p floored at 1/(resamples + 1); Holm across the two models of one dataset and set
    assert p1.p == pytest.approx(1 / 201) and p1.p_adjusted == pytest.approx(2 / 201)
    assert p2.p == 1 and p2.p_adjusted == 1 and (p1.holm_m, p2.holm_m) == (2, 2)
    assert one(f, {**test, "models": ["m2"]}).verdict == "fail"  # not "n.a.": it has data
    assert one(f, {**test, "models": ["m3"]}).verdict == "n.a."


@pytest.mark.parametrize("alternative", ["greater", "less", "two-sided"])
@pytest.mark.parametrize("right", [0, 17, 40])
def test_identical_arms_never_pass_in_any_direction(alternative: str, right: int) -> None:
    """Every difference is 0, so every resampled difference ties at 0: ties count
    against the hypothesis, p = 1, whatever the alternative (it was 1/n_boot for
    "less" and two-sided when ties counted for the hypothesis)."""
    b = Builder()
    success_pair(b, "m1", right, right, n=40)
    success_pair(b, "m2", right, right, n=40)
    test = {"id": "H", "kind": "paired_diff", "metric": "success", "regime": "persistent",
            "a": "enforced_rule", "b": "none", "alternative": alternative,
            "models": ["m1", "m2"]}
    got = one(b.frames(), test)
    assert got.verdict == "fail"
    assert [(p.p, p.p_adjusted, p.holm_m) for p in got.parts] == [(1.0, 1.0, 2)] * 2


def test_one_worse_question_of_40_is_no_evidence_that_a_is_below_b() -> None:
    """a is wrong where b is right on one question of 40, tied on 39: "less" reads the
    share of resampled differences ≥ 0 (resamples without that question tie at 0),
    about (39/40)^40 ≈ 0.36, not 1/(resamples + 1)."""
    b = Builder()
    success_pair(b, "m1", 0, 1, n=40)
    test = {"id": "H", "kind": "paired_diff", "metric": "success", "regime": "persistent",
            "a": "enforced_rule", "b": "none", "models": ["m1"]}
    less = one(b.frames(), {**test, "alternative": "less"})
    (part,) = less.parts
    assert less.verdict == "fail" and part.estimate == pytest.approx(-1 / 40)
    assert 0.25 < part.p < 0.5 and part.p_adjusted == part.p and part.holm_m == 1
    two = one(b.frames(), {**test, "alternative": "two-sided"})
    assert two.verdict == "fail" and two.parts[0].p == pytest.approx(min(1, 2 * part.p))
    assert one(b.frames(), {**test, "alternative": "greater"}).parts[0].p == 1


def test_holm_family_is_one_dataset_and_set_across_models() -> None:
    """Two models on two question sets: each set is its own family of two (the
    paper's "across models within each hypothesis"), not one family of four."""
    b = Builder()
    for qset in ("s", "s2"):
        success_pair(b, "m1", 8, 0, n=8, qset=qset)
        success_pair(b, "m2", 8, 0, n=8, qset=qset)
    test = {"id": "H", "kind": "paired_diff", "metric": "success", "regime": "persistent",
            "a": "enforced_rule", "b": "none", "models": ["m1", "m2"]}
    got = one(b.frames(), test)
    assert len(got.parts) == 4
    assert all(p.holm_m == 2 and p.p_adjusted == pytest.approx(2 / 201) for p in got.parts)
    none = one(b.frames(), {**test, "correction": "none"})
    assert all(p.holm_m == 1 and p.p_adjusted == p.p for p in none.parts)


def test_only_the_amendments_own_runs_count() -> None:
    """An exploratory run, another amendment's run, another arm spec and another
    budget on the same model and set would each flip the verdict if pooled."""
    b = Builder()
    success_pair(b, "m1", 4, 2)                                   # A1's run: +0.5
    success_pair(b, "m1", 0, 4, n=12, run="explore", amendment=None,
                 started=BEFORE)                                  # exploratory: −1
    success_pair(b, "m1", 0, 4, n=12, run="other", amendment="A2")
    for i in range(12):                                           # k=7 arm, budget 16
        b.add(model="m1", cond="enforced_rule:k=7", q=f"q{i}", obs="x" * 7, answer_at=8)
        b.add(model="m1", cond="enforced_rule", q=f"q{i}", obs="x" * 15, answer_at=16,
              budget=16)
    f = b.frames()
    got = one(f, {**DIFF, "models": ["m1"]})
    assert (got.verdict, got.estimate, got.n_episodes, got.runs) == ("pass", 0.5, 8, ("gov",))
    assert got.after_freeze is True
    named = one(f, {**DIFF, "models": ["m1"], "runs": ["explore"]})   # 0/12 vs 4/12
    assert named.verdict == "fail" and named.estimate == pytest.approx(-1 / 3)
    assert named.after_freeze is False
    pooled = one(f, {**DIFF, "models": ["m1"], "runs": ["gov", "explore", "other"]})
    assert pooled.verdict == "fail"  # what pooling would have reported


def test_a_test_never_pools_question_sets_or_datasets() -> None:
    b = Builder()
    success_pair(b, "m1", 4, 2)                         # set s: +0.5
    success_pair(b, "m1", 0, 4, qset="s2")              # set s2: −1
    got = one(b.frames(), {**DIFF, "models": ["m1"]})
    assert got.verdict == "partial" and [p.unit.question_set for p in got.parts] == ["s", "s2"]
    assert "m1 (demo/s)" in got.numbers
    assert one(b.frames(), {**DIFF, "models": ["m1"], "question_sets": ["s2"]}).verdict == "fail"


def test_arm_labels_match_exactly_and_a_bare_random_rule_takes_the_models_rate() -> None:
    b = Builder()
    for i in range(4):
        b.add(cond="none:judge=true", q=f"q{i}", correct=1, obs="x" * 7, answer_at=8)
        b.add(cond="none", q=f"q{i}", correct=0, obs="x" * 7, answer_at=8)
        b.add(cond="random_rule:rate=0.42", q=f"q{i}", correct=1, obs="x" * 7, answer_at=8)
    f = b.frames()
    base = {"id": "J", "kind": "paired_diff", "metric": "success", "regime": "persistent",
            "on": "estimate", "op": "==", "threshold": 1.0, "models": ["m1"]}
    assert one(f, {**base, "a": "none:judge=true", "b": "none"}).verdict == "pass"
    assert one(f, {**base, "a": "none", "b": "none"}).estimate == 0.0  # bare none: judge=false only
    assert one(f, {**base, "a": "random_rule", "b": "none"}).verdict == "pass"
    b.add(cond="random_rule:rate=0.3", q="q0", obs="x" * 7, answer_at=8)
    got = one(b.frames(), {**base, "a": "random_rule", "b": "none"})
    assert got.verdict == "n.a." and "matches several arms" in got.numbers


def delta_data(b: Builder, model: str = "m1", cond: str = "none", q: str = "q") -> None:
    """Δ by hand. A: every result useless, answers at action 5 → (a) at t=3 (no
    answer) and t=4 (answer). B: useless, useful, useless… never answers → (b) at
    t=3…6. MH by t: t=3 diff 0, t=4 diff 1, equal weights ½ → Δ = 0.5."""
    b.add(model=model, cond=cond, q=q + "a", obs="xxxx", answer_at=5)
    b.add(model=model, cond=cond, q=q + "b", obs="xfxxxxxx")


def test_delta_bound_on_the_estimate_and_on_the_bounds() -> None:
    b = Builder()
    delta_data(b)
    f = b.frames()
    test = {"id": "T", "kind": "delta_bound", "condition": "none", "on": "estimate",
            "op": ">=", "threshold": 0.5, "models": ["m1"]}
    got = one(f, test)
    assert got.verdict == "pass" and got.estimate == pytest.approx(0.5)
    assert "a 1/2, b 0/4" in got.numbers
    assert one(f, {**test, "threshold": 0.51}).verdict == "fail"
    legacy = {"id": "T", "kind": "delta_bound", "condition": "none", "bound": "lower",
              "threshold": 1.5, "models": ["m1"]}
    assert one(f, legacy).verdict == "fail"                        # LB > 1.5 cannot hold
    assert one(f, {**legacy, "bound": "upper"}).verdict == "pass"  # UB < 1.5


def test_delta_bound_leaves_clean_out_as_the_paper_does() -> None:
    # clean qc: three real results judged useless, then an answer at action 4: an (a)
    # decision at t=3 that answers. Pooled with the five failure regimes it would make
    # t=3 a 1/2, b 0/1 (w 2/3, diff ½) beside t=4 a 1/1, b 0/1 (w ½, diff 1): Δ = 5/7;
    # the paper's Δ leaves clean out, so the test reads Δ = 0.5 on delta_data's two
    # episodes (and says it read those two)
    b = Builder()
    delta_data(b)
    b.add(regime="clean", q="qc", obs="uuu", answer_at=4)
    f = b.frames()
    test = {"id": "T", "kind": "delta_bound", "condition": "none", "on": "estimate",
            "op": ">=", "threshold": 0.5, "models": ["m1"]}
    got = one(f, test)
    assert got.estimate == pytest.approx(0.5) and "a 1/2, b 0/4" in got.numbers
    assert got.n_episodes == 2
    # a test that names its regimes pools exactly those, clean too
    named = one(f, {**test, "regimes": MAIN})
    assert named.estimate == pytest.approx(5 / 7) and "a 2/3, b 0/4" in named.numbers
    assert named.n_episodes == 3


def test_design_contrast_and_index_by_hand() -> None:
    b = Builder()
    # persistent: answers at action 5 (decisions at actions 4 and 5 in the window);
    # late_onset_from_3 never answers: MH by action → 0.5
    b.add(regime="persistent", q="qa", obs="xxxx", answer_at=5)
    b.add(regime="late_onset_from_3", q="qb", obs="rrxxxxxx")
    f = b.frames()
    design = {"id": "DL", "kind": "design_contrast_bound", "condition": "none",
              "on": "estimate", "op": ">", "threshold": 0.49, "models": ["m1"]}
    got = one(f, design)
    assert got.verdict == "pass" and got.estimate == pytest.approx(0.5)
    # I: persistent answering at action 6: j = 1, 2 no answer; j = 4 no, j = 5 answer →
    # h45 = 1/2, h12 = 0/2 → I = 0.5 (late_onset "rrxxxxxx" adds j = 1, 2, 4 without
    # answers; its j = 5 is at the final action and left out: h12 = 0/4, h45 = 1/3)
    b2 = Builder()
    b2.add(regime="persistent", q="qa", obs="xxxxx", answer_at=6)
    index = {"id": "I", "kind": "index_bound", "condition": "none", "on": "estimate",
             "op": "<=", "threshold": 0.05, "models": ["m1"]}
    got = one(b2.frames(), index)
    assert got.verdict == "fail" and got.estimate == pytest.approx(0.5)
    b2.add(regime="late_onset_from_3", q="qb", obs="rrxxxxxx")
    assert one(b2.frames(), index).estimate == pytest.approx(1 / 3)


def test_regime_families_are_never_pooled() -> None:
    b = Builder()
    delta_data(b)
    b.add(regime="plausible", q="qp", obs="xxx", answer_at=4)
    got = one(b.frames(), {"id": "T", "kind": "median_action", "condition": "none",
                           "op": "<=", "value": 5, "models": ["m1"]})
    assert [p.what for p in got.parts] == ["main", "plausible"]
    assert [p.estimate for p in got.parts] == [5.0, 4.0]


def test_budget_contrasts() -> None:
    b = Builder()
    for i in range(2):
        b.add(cond="budget", q=f"q{i}", obs="x" * 16, budget=16, tool_calls=10 + i)
        b.add(cond="budget", q=f"q{i}", obs="x" * 8, budget=8, tool_calls=4 + i)
    b.add(cond="budget", q="q2", obs="x" * 11, answer_at=12, budget=16)
    b.add(cond="budget", q="q2", obs="x" * 5, answer_at=6)
    f = b.frames()
    calls = {"id": "B", "kind": "budget_contrast", "condition": "budget", "metric": "tool_calls",
             "budgets": [16, 8], "op": ">=", "threshold": 4, "models": ["m1"]}
    got = one(f, calls)
    # (10 + 11 + 11)/3 − (4 + 5 + 5)/3 = 6
    assert got.verdict == "pass" and got.estimate == pytest.approx(6.0)
    assert "budget" not in validate_tests([calls], SCOPE)[0]
    within = {**calls, "op": "<=", "threshold": 1, "absolute": True}
    assert one(f, within).verdict == "fail"
    median = {**calls, "metric": "median_action", "op": "==", "threshold": 6}
    assert one(f, median).estimate == pytest.approx(6.0)  # 12 − 6


def test_budget_contrast_compares_the_same_regimes_at_both_budgets() -> None:
    """Six regimes at 8, three at 16 (the paper's design): the contrast reads only the
    regimes both budgets ran, names them, and is not n.a. for a family label."""
    b = Builder()
    for regime in MAIN:
        b.add(cond="budget", regime=regime, q="q1", obs="x" * 8, tool_calls=2)
    for regime in ("clean", "persistent", "recover_after_2"):
        b.add(cond="budget", regime=regime, q="q1", obs="x" * 16, budget=16, tool_calls=5)
    f = b.frames()
    calls = {"id": "B", "kind": "budget_contrast", "condition": "budget", "metric": "tool_calls",
             "budgets": [16, 8], "op": ">=", "threshold": 3, "models": ["m1"]}
    got = one(f, calls)
    assert got.verdict == "pass" and got.estimate == pytest.approx(3.0)
    assert "regimes at both: clean, persistent, recover_after_2" in got.numbers
    named = one(f, {**calls, "regime": "recover_after_1"})
    assert named.verdict == "n.a." and "recover_after_1 not run at budget 16" in named.numbers


def test_mean3_is_the_equal_weight_mean_of_the_three_16_action_regimes() -> None:
    b = Builder()
    right = {"clean": (2, 0), "persistent": (1, 1), "recover_after_2": (2, 1),
             "recover_after_1": (0, 2)}  # recover_after_1 is not in mean3
    for regime, (a_right, b_right) in right.items():
        for i in range(2):
            b.add(cond="enforced_rule", regime=regime, q=f"q{i}", correct=int(i < a_right),
                  obs="x" * 7, answer_at=8)
            b.add(cond="none", regime=regime, q=f"q{i}", correct=int(i < b_right),
                  obs="x" * 7, answer_at=8)
    test = {"id": "M3", "kind": "paired_diff", "metric": "mean3", "a": "enforced_rule",
            "b": "none", "on": "estimate", "op": ">", "threshold": 0, "models": ["m1"]}
    got = one(b.frames(), test)
    # (1 − 0 + 0.5 − 0.5 + 1 − 0.5) / 3 = 0.5
    assert got.verdict == "pass" and got.estimate == pytest.approx(0.5)
    b.episodes = [e for e in b.episodes if e["regime"] != "recover_after_2"]
    assert "recover_after_2 not run by both arms" in one(b.frames(), test).numbers


def test_a_descriptive_test_reports_its_numbers_without_a_verdict() -> None:
    b = Builder()
    success_pair(b, "m1", 8, 0, n=8)
    test = {"id": "R", "kind": "paired_diff", "metric": "success", "regime": "persistent",
            "a": "enforced_rule", "b": "none", "alternative": "two-sided", "descriptive": True,
            "models": ["m1"]}
    got = one(b.frames(), test)
    assert got.verdict == "reported" and got.estimate == 1 and got.parts[0].p < 0.05
    assert "(reported)" in got.numbers


@pytest.mark.parametrize("field, value, message", [
    ("alpha", 5, "alpha must be in (0, 1)"), ("alpha", -1, "alpha must be in (0, 1)"),
    ("alpha", 0, "alpha must be in (0, 1)"), ("alpha", float("nan"), "finite"),
    ("lam", -0.1, "lam (price per call) must be ≥ 0"), ("lam", float("inf"), "finite")])
def test_a_paired_test_with_a_meaningless_number_is_refused(field: str, value: float, message: str
                                                           ) -> None:
    test = {"id": "H", "kind": "paired_diff", "metric": "mean6", "a": "enforced_rule",
            "b": "none", field: value}
    with pytest.raises(ConfigError, match=re.escape(message)):
        validate_tests([test], SCOPE)


@pytest.mark.parametrize("test, message", [
    ({"kind": "delta_bound", "condition": "none", "on": "ci_high", "op": "<",
      "threshold": float("nan")}, "threshold must be a finite number"),
    ({"kind": "delta_bound", "condition": "none", "on": "ci_high", "op": "<",
      "threshold": float("-inf")}, "threshold must be a finite number"),
    ({"kind": "noninferiority", "metric": "mean6", "a": "combo", "b": "budget",
      "margin": float("inf")}, "margin must be a finite number"),
    ({"kind": "answered_share", "condition": "budget", "op": ">", "value": 1.5},
     "value is a share and must be in [0, 1]"),
    ({"kind": "dissociation", "condition": "none", "op": "<", "threshold": 10},
     "threshold is a share"),
    ({"kind": "judgment_validity", "condition": "none", "useless_on_failed": 80},
     "useless_on_failed is a share"),
    ({"kind": "judgment_validity", "condition": "none", "kappa": 2}, "kappa must be in [-1, 1]"),
    ({"kind": "answered_share", "condition": "budget", "op": ">", "value": 0.5,
      "at_action": 9}, "at_action 9 is beyond the budget of 8 actions"),
    ({"kind": "median_action", "condition": "budget", "op": ">=", "value": 12},
     "value (an answering action) must be within 1…8"),
    ({"kind": "dissociation", "condition": "none", "op": "<", "threshold": 0.1,
      "min_questions": 0}, "min_questions must be ≥ 1"),
    ({"kind": "classify", "outcomes": [{"label": "x", "all": [
        {"kind": "answered_share", "condition": "budget", "op": ">", "value": -0.1}]},
        {"label": "y"}]}, "value is a share"),
])
def test_a_test_with_a_number_that_cannot_mean_anything_is_refused(
        test: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        validate_tests([{"id": "T", **test}], SCOPE)


def test_at_action_16_is_within_a_16_action_budget() -> None:
    test = {"id": "T", "kind": "answered_share", "condition": "budget", "op": ">",
            "value": 0.5, "at_action": 16, "budget": 16}
    assert validate_tests([test], SCOPE)
    nested = {"id": "C", "kind": "classify", "budget": 16, "outcomes": [
        {"label": "x", "all": [{k: v for k, v in test.items() if k not in ("id", "budget")}]},
        {"label": "y"}]}
    assert validate_tests([nested], SCOPE)


def test_a_tests_file_with_one_object_says_so() -> None:
    with pytest.raises(ConfigError, match=re.escape("this holds one object: wrap it in [ ]")):
        validate_tests({"id": "H", "kind": "paired_diff"}, SCOPE)


def test_a_frozen_test_with_a_meaningless_alpha_is_na_never_pass() -> None:
    """An amendment stored by an older version, before alpha was checked: the test has
    an effect of +1 on every question and alpha 5 would pass it; it is n.a. instead."""
    b = Builder()
    success_pair(b, "m1", 8, 0, n=8)
    test = {"id": "H", "kind": "paired_diff", "metric": "success", "regime": "persistent",
            "a": "enforced_rule", "b": "none", "alpha": 5, "models": ["m1"]}
    stored = {"id": "A1", "scope": SCOPE, "frozen_at": FROZEN, "tests": [test]}
    got = evaluate_test(stored, test, b.frames(), n_boot=200)
    assert got.verdict == "n.a." and "alpha must be in (0, 1)" in got.numbers


def test_dissociation_share_and_bound() -> None:
    b = Builder()
    # both reach five useless judgments at the decision after observation 5 (action 6);
    # the first answers at action 7, the second never
    b.add(q="q1", obs="xxxxxx", answer_at=7)
    b.add(q="q2", obs="x" * 8)
    b.add(q="q3", obs="xxrxxx", answer_at=7)   # run only 3 before it answers: not counted
    f = b.frames()
    test = {"id": "F5", "kind": "dissociation", "condition": "none", "op": "<",
            "threshold": 0.6, "models": ["m1"]}
    got = one(f, test)
    assert got.verdict == "pass" and got.estimate == pytest.approx(0.5)
    assert "1/2 questions answered" in got.numbers
    assert got.ci_high == pytest.approx(wilson(1, 2).high) and got.ci_high > 0.6
    assert one(f, {**test, "on": "ci_high"}).verdict == "fail"
    assert one(f, {**test, "min_questions": 3}).verdict == "reported"  # descriptive below 3


def test_judgment_validity_and_kappa() -> None:
    b = Builder()
    # failed observations: x x x f → 3/4 USELESS; real: u r r r → 1/4 USELESS
    b.add(cond="none:judge=true", q="q1", obs="xxxf", answer_at=5, stated="llss")
    b.add(cond="none:judge=true", q="q2", obs="urrr", answer_at=5, stated="l-s-")
    f = b.frames()
    test = {"id": "V", "kind": "judgment_validity", "condition": "none:judge=true",
            "useless_on_failed": 0.8, "useless_on_real": 0.5, "kappa": 0.6, "models": ["m1"]}
    got = one(f, test)
    assert [(p.what, p.verdict) for p in got.parts] == [
        ("useless_on_failed", "fail"), ("useless_on_real", "pass"), ("kappa", "pass")]
    assert got.parts[0].estimate == 0.75 and got.parts[1].estimate == 0.25
    assert got.verdict == "partial"
    # stated vs side channel on the 6 observations with a statement:
    # (x,l) (x,l) (x,s) (f,s) (u,l) (r,s): agreement 5/6, both "useless" rates 1/2 → κ = 2/3
    assert got.parts[2].estimate == pytest.approx(2 / 3)
    assert cohen_kappa(np.array([1, 1, 1, 0, 1, 0]), np.array([1, 1, 0, 0, 1, 0])) \
        == pytest.approx(2 / 3)


def test_utility_with_all_calls_counted() -> None:
    b = Builder()
    for i in range(3):  # same answers and tool calls; 3 judgment calls each
        b.add(cond="enforced_rule", q=f"q{i}", correct=1, obs="xx", answer_at=3, extra_calls=3)
        b.add(cond="none:judge=true", q=f"q{i}", correct=1, obs="xx", answer_at=3,
              extra_calls=3)
    f = b.frames()
    test = {"id": "E3", "kind": "paired_diff", "metric": "utility_all", "regime": "persistent",
            "a": "enforced_rule", "b": "none:judge=true", "on": "estimate", "op": "==",
            "threshold": -0.15, "models": ["m1"]}
    # enforced_rule pays for its judgments: 1 − .05·(2 + 3) = .75; judge=true only
    # measures: 1 − .05·2 = .9
    got = one(f, test)
    assert got.estimate == pytest.approx(-0.15)
    assert one(f, {**test, "metric": "utility", "threshold": 0.0}).verdict == "pass"


def test_classify_takes_the_first_outcome_that_holds() -> None:
    b = Builder()
    delta_data(b, "m1")                        # Δ = 0.5
    b.add(model="m2", q="z1", obs="x" * 8)     # no decision in (a)/(b) meets: Δ undefined
    b.add(model="m3", q="y1", obs="xxxxxxxx")
    b.add(model="m3", q="y2", obs="xxxxxxxx")  # only group (a), never answers
    test: dict[str, Any] = {"id": "PP1", "kind": "classify", "models": ["m1", "m3"], "outcomes": [
        {"label": "executed", "all": [
            {"kind": "delta_bound", "condition": "none", "on": "estimate", "op": ">",
             "threshold": 0.25},
            {"kind": "answered_share", "condition": "none", "regime": "persistent", "op": ">",
             "value": 0.4}]},
        {"label": "not executed", "any": [
            {"kind": "answered_share", "condition": "none", "regime": "persistent",
             "op": "<", "value": 0.4}]},
        {"label": "partial"}]}
    f = b.frames()
    got = one(f, test)
    # m1: Δ .5 > .25 and 1/2 answered > .4 → executed; m3: Δ undefined, but it never
    # answers (0 > .4 is false), so "executed" is decided false whatever Δ says and
    # "not executed" holds (0 < .4)
    assert got.verdict == "executed / not executed"
    assert got.parts[1].detail == ""
    assert one(f, {**test, "models": ["m1"]}).verdict == "executed"
    low = dict(test, models=["m1"], outcomes=[
        {"label": "executed", "all": [{**test["outcomes"][0]["all"][0], "threshold": 0.9}]},
        *test["outcomes"][1:]])
    assert one(f, low).verdict == "partial"  # neither condition holds: the else
    # m2's Δ is undefined too, but it never answers: decided as well
    assert one(f, {**test, "models": ["m2"]}).verdict == "not executed"


def test_classify_conditions_inherit_the_budget_and_may_span_two() -> None:
    b = Builder()
    for i in range(2):
        b.add(cond="budget", q=f"q{i}", obs="x" * 5, answer_at=6, budget=16, tool_calls=5)
        b.add(cond="budget", q=f"q{i}", obs="x" * 5, answer_at=6, tool_calls=5)
    test: dict[str, Any] = {"id": "A9x", "kind": "classify", "budget": 16, "models": ["m1"],
                            "outcomes": [
        {"label": "pass", "all": [
            {"kind": "median_action", "condition": "budget", "op": "<=", "value": 7},
            {"kind": "budget_contrast", "condition": "budget", "metric": "tool_calls",
             "budgets": [16, 8], "absolute": True, "op": "<=", "threshold": 1}]},
        {"label": "fail"}]}
    got = one(b.frames(), test)
    assert got.verdict == "pass" and got.n_episodes == 4  # budget 16 and, for the contrast, 8
    only16 = dict(test, outcomes=[{"label": "pass", "all": [test["outcomes"][0]["all"][0]]},
                                  {"label": "fail"}])
    assert one(b.frames(), only16).n_episodes == 2


def test_verdict_rules() -> None:
    from analysis.prereg.outcome_data import Unit
    from analysis.prereg.outcome_kinds import Part

    u = Unit("m", "d", "s")

    def parts(*vs: str) -> list[Part]:
        return [Part(u, str(i), v) for i, v in enumerate(vs)]

    assert verdict(parts("pass", "pass")) == "pass"
    assert verdict(parts("fail", "n.a.")) == "fail"
    assert verdict(parts("pass", "fail", "n.a.")) == "partial"
    assert verdict(parts("pass", "n.a.")) == "n.a."
    assert verdict([]) == "n.a."


@pytest.mark.parametrize("test, message", [
    ({"id": "X", "kind": "delta_bound", "condition": "none", "threshold": 0.1},
     "exactly one of 'on'"),
    ({"id": "X", "kind": "delta_bound", "condition": "none", "conditions": ["none"],
      "on": "ci_low", "op": ">", "threshold": 0.1}, "exactly one of 'condition' or 'conditions'"),
    ({"id": "X", "kind": "paired_diff", "metric": "mean6", "a": "none", "b": "budget",
      "on": "estimate", "op": ">="}, "needs 'op' and 'threshold'"),
    ({"id": "X", "kind": "paired_diff", "metric": "mean6", "a": "none", "b": "budget",
      "on": "estimate", "op": ">=", "threshold": 4, "alternative": "greater"},
     "'alternative' belongs to the p-value rule"),
    ({"id": "X", "kind": "budget_contrast", "condition": "budget", "metric": "tool_calls",
      "budgets": [8, 8], "op": ">=", "threshold": 4}, "two different positive integers"),
    ({"id": "X", "kind": "judgment_validity", "condition": "none"}, "at least one of"),
    ({"id": "X", "kind": "classify", "outcomes": [{"label": "a"}, {"label": "b"}]},
     "only the last outcome may have no condition"),
    ({"id": "X", "kind": "classify", "outcomes": [
        {"label": "a", "all": [{"kind": "median_action", "condition": "none", "op": "<",
                                "value": 7, "models": ["m1"]}]}, {"label": "b"}]},
     r"outcomes\[0\].all\[0\]: unknown field 'models'"),
    ({"id": "X", "kind": "median_action", "condition": "none", "op": "<", "value": 7,
      "models": ["m9"]}, "model 'm9' is outside the amendment's scope"),
    ({"id": "X", "kind": "median_action", "condition": "none:judge=true", "op": "<",
      "value": 7, "budget": 32}, "budget 32 is outside"),
    ({"id": "X", "kind": "median_action", "condition": "enforced_rule:k=7", "op": "<",
      "value": 7}, "condition 'enforced_rule:k=7' is not among the amendment's scoped"),
])
def test_validation_errors(test: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message) as info:
        validate_tests([test], SCOPE)
    assert "\n" not in str(info.value)


def test_to_dict_has_one_object_per_test_with_parts() -> None:
    b = Builder()
    success_pair(b, "m1", 4, 2)
    (got,) = evaluate(amendment({**DIFF, "models": ["m1"]}), b.frames(), n_boot=200)
    d = got.to_dict()
    assert {"amendment", "id", "kind", "verdict", "estimate", "ci_low", "ci_high",
            "n_episodes", "runs", "after_freeze", "parts"} <= set(d)
    assert d["parts"][0]["model"] == "m1" and d["parts"][0]["verdict"] == "pass"
    assert d["ci_low"] <= d["estimate"] == 0.5 <= d["ci_high"]


def test_documented_worked_examples_are_valid_tests() -> None:
    import json
    from pathlib import Path

    text = (Path(__file__).parents[1] / "docs" / "registered-tests.md").read_text(encoding="utf-8")
    block = text.split("Worked examples", 1)[1].split("```json\n", 1)[1].split("```", 1)[0]
    tests = validate_tests(json.loads(block))
    kinds = {t["kind"] for t in tests}
    assert {"paired_diff", "index_bound", "design_contrast_bound", "budget_contrast",
            "dissociation", "judgment_validity", "classify"} <= kinds
