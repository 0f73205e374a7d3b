"""The paper's definitions on hand-built step frames: stated runs with unknown points
(A18), decision points after format failures and refused forced turns, dissociation
(A12/F5/T2: questions, each question's seeds averaged) and the calls charged to an arm.

A step is written as a compact string per episode: each character is one action,
``U``/``F``/``-`` a search whose observation is judged USELESS/USEFUL/not at all (side
channel), ``x`` a format failure, ``r`` a refused forced turn, ``A`` finish. Stated
judgments, when given, are one character per observation: ``u`` useless, ``f``
useful, ``-`` none.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
import pytest

from analysis.measures.cost import charged_calls, measurement_calls
from analysis.measures.decisions import decision_table
from analysis.measures.delta import time_matched_contrast
from analysis.measures.dissociation import dissociation, group_dissociations
from core.errors import LabError

_JUDG = {"U": "USELESS", "F": "USEFUL", "-": None}
_STATED = {"u": "useless", "f": "useful", "-": None}


def frames(specs: list[dict]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Episode and step frames from compact specs (see the module docstring)."""
    eps, steps = [], []
    for i, s in enumerate(specs, start=1):
        stated = iter(s.get("stated", ""))
        n_obs = 0
        for t, c in enumerate(s["acts"], start=1):
            row: dict[str, Any] = {"episode_id": i, "t": t, "action": None, "obs_index": None,
                   "obs_failed": None, "judgment": None, "stated_judgment": None,
                   "format_failure": 0, "refused": 0, "forced": 0}
            if c in _JUDG:
                n_obs += 1
                row.update(action="search", obs_index=float(n_obs), obs_failed=1.0,
                           judgment=_JUDG[c], stated_judgment=_STATED[next(stated, "-")])
            elif c == "x":
                row.update(format_failure=1)
            elif c == "r":
                row.update(action="search", refused=1, forced=1)
            elif c == "A":
                row.update(action="finish")
            steps.append(row)
        answered = s["acts"].endswith("A")
        eps.append({"episode_id": i, "run": "r", "model": "m",
                    "condition": s.get("condition", "none"), "regime": s.get("regime",
                                                                              "persistent"),
                    "budget": s.get("budget", 8), "seed": s.get("seed", 0),
                    "question_id": s.get("q", f"q{i}"), "answered": int(answered),
                    "answer_action": float(len(s["acts"])) if answered else None})
    return pd.DataFrame(eps), pd.DataFrame(steps)


def table(specs: list[dict]) -> pd.DataFrame:
    return decision_table(*frames(specs))


# --- stated runs (A18) ---------------------------------------------------------------


def test_a_silent_observation_makes_the_stated_run_unknown_until_a_useful_one() -> None:
    d = table([{"acts": "UUUUUA", "stated": "u-u-u"},
               {"acts": "UUUUUUA", "stated": "uuu"},
               {"acts": "UUUUUUA", "stated": "u-ufuu"}])
    one, two, three = (d.loc[d["episode_id"] == i] for i in (1, 2, 3))
    # useless, none, useless, none, useless -> 1, unknown, unknown, unknown, unknown
    assert one["stated_run"].tolist() == [1, -1, -1, -1, -1]
    assert one["stated_known"].tolist() == [True, False, False, False, False]
    # useless ×3 -> s = 3 (then obs 4–6 have no statement: unknown)
    assert two["stated_run"].tolist()[:3] == [1, 2, 3]
    assert two["stated_known"].tolist() == [True, True, True, False, False, False]
    # useless, none, useless, useful, useless, useless -> 1, ?, ?, 0, 1, 2
    assert three["stated_run"].tolist() == [1, -1, -1, 0, 1, 2]


def test_stated_delta_leaves_unknown_points_out() -> None:
    # At t = 4: (b) would be "useless, none, useless, none" under the old rule (s = 2 ≤
    # t − 2); it is unknown now, so only the (a) and (b) episodes below are counted.
    specs = [{"acts": "UUUUA", "stated": "uuuu"},          # (a) at t=4, answers
             {"acts": "UUUUU", "stated": "uuuuu"},         # (a) at t=4, continues
             {"acts": "UUUUU", "stated": "ufuuu"},         # (b) at t=4 (s=2), continues
             {"acts": "UUUUA", "stated": "u-u-"},          # unknown at t=3 and t=4
             {"acts": "UUUUA", "stated": "u-uu"}]          # unknown at t=3 and t=4
    c = time_matched_contrast(table(specs), "stated", n_boot=20)
    # t=3: (a) eps 1, 2 answer 0/2; (b) ep 3 (s=1) 0/1. t=4: (a) 1/2, (b) 0/1
    assert (c.n_a, c.n_b, c.answered_a, c.answered_b) == (4, 2, 1, 0)
    assert c.interval.estimate == pytest.approx(0.25)


# --- decision points after invalid turns -------------------------------------------


def test_a_decision_belongs_to_the_next_valid_action() -> None:
    d = table([
        {"acts": "UxA"},     # format failure at 2, finish at 3: one decision, at 3, answers
        {"acts": "UUrrA"},   # two refused forced turns, then finish at 5
        {"acts": "UxU"},     # format failure, then a search: decision at 3, no answer
        {"acts": "UUxx"},    # nothing valid after obs 2: no decision for it
    ])
    assert d.loc[d["episode_id"] == 1, ["n_obs", "action", "answer"]].values.tolist() == [
        [1, 3, 1]]
    assert d.loc[d["episode_id"] == 2, ["n_obs", "action", "answer"]].values.tolist() == [
        [1, 2, 0], [2, 5, 1]]
    assert d.loc[d["episode_id"] == 3, ["n_obs", "action", "answer"]].values.tolist() == [
        [1, 3, 0]]
    assert d.loc[d["episode_id"] == 4, ["n_obs", "action", "answer"]].values.tolist() == [
        [1, 2, 0]]
    # the final flag follows the valid action: episode 2 answers at action 5 of 8
    assert not d["final"].any()


# --- dissociation ------------------------------------------------------------------


def test_dissociation_counts_answers_at_any_later_action() -> None:
    d = table([
        {"acts": "UUUUUA"},      # run 5 at the decision at action 6, answers there: yes
        {"acts": "UUUUUUUA"},    # reaches 5 at action 6, answers at the final action 8: yes
        {"acts": "UUUUUUUU"},    # reaches 5, never answers: no
        {"acts": "UUUUA"},       # run 4 only: not counted
        {"acts": "UFUUUUUA"},    # run 5 first after obs 7, answered at the final action: yes
        {"acts": "UUUUUA", "regime": "clean"},  # another regime: ignored
    ])
    r = dissociation(d)
    assert (r.questions, r.answered) == (4, 3)
    assert r.share == pytest.approx(0.75)
    # k=3: episodes 1, 2, 3, 4, 5 reach it; 1, 2, 4, 5 answer
    r3 = dissociation(d, k=3)
    assert (r3.questions, r3.answered) == (5, 4)
    clean = dissociation(d, regime="clean")
    assert (clean.questions, clean.answered) == (1, 1)


def test_dissociation_counts_questions_with_their_seeds_averaged() -> None:
    d = table([{"acts": "UUUUUA", "q": "q1", "seed": 0},    # q1: one of two seeds answers
               {"acts": "UUUUUUUU", "q": "q1", "seed": 1},
               {"acts": "UUUUUA", "q": "q2", "seed": 0},    # q2: both seeds answer
               {"acts": "UUUUUUA", "q": "q2", "seed": 1},
               {"acts": "UUUUUUUU", "q": "q3", "seed": 0},  # q3: reaches 5, never answers
               {"acts": "UUUA", "q": "q3", "seed": 1},      # q3 seed 1: run 3 only, left out
               {"acts": "UUA", "q": "q4", "seed": 0}])      # q4: never reaches 5
    r = dissociation(d)
    # 3 questions reached 5 (not 6 episodes): 0.5 + 1 + 0 answered, share = mean of shares
    assert (r.questions, r.answered) == (3, 1.5)
    assert (r.episodes, r.episodes_answered) == (5, 3)
    assert r.share == pytest.approx(0.5)  # episodes would say 3/5
    assert r.counts == "1.5/3 questions (3/5 episodes)"
    whole = dissociation(table([{"acts": "UUUUUA", "q": "q1", "seed": s} for s in (0, 1)]))
    assert whole.answered == 1 and isinstance(whole.answered, int)
    assert whole.counts == "1/1 questions (2/2 episodes)"


def test_dissociation_with_one_episode_per_question_is_the_papers_count() -> None:
    d = table([{"acts": "UUUUUA"}, {"acts": "UUUUUUUU"}, {"acts": "UUUUUUUA"}])
    r = dissociation(d)
    assert (r.questions, r.answered, r.episodes, r.episodes_answered) == (3, 2, 3, 2)
    assert r.counts == "2/3 questions"


def test_group_dissociations_equal_dissociation_of_each_group() -> None:
    specs = [{"acts": a, "q": f"q{i % 3}", "seed": i // 3, "condition": c}
             for i, a in enumerate(("UUUUUA", "UUUUUUUU", "UUUUUUA", "UFUUUUUA", "UUUUUU",
                                    "UUUUUA", "UUUUUUUU", "UUA"))
             for c in ("none", "permit")]
    specs[1] = {**specs[1], "acts": "UUUUUUUU"}  # the arms differ in one episode
    d = table(specs)
    groups = (d["condition"] == "permit").to_numpy().astype(np.int64)
    groups[d["question_id"].to_numpy() == "q2"] = -1  # rows in no group
    got = group_dissociations(d, groups, 2)
    for g, cond in enumerate(("none", "permit")):
        mine = d.loc[(d["condition"] == cond) & (d["question_id"] != "q2")]
        assert got[g] == dissociation(mine), cond
    assert got[0] != got[1] and got[0].questions == 2


def test_dissociation_from_stated_judgments_skips_unknown_runs() -> None:
    d = table([
        {"acts": "UUUUUA", "stated": "uuuuu"},    # stated run 5: counted, answered
        {"acts": "UUUUUUA", "stated": "uu-uuu"},  # unknown from obs 3 on (else it would be 5)
        {"acts": "UUUUUUUA", "stated": "u-fuuuu"},  # unknown at 2, reset at 3, then only 4
    ])
    r = dissociation(d, judgments="stated")
    assert (r.questions, r.answered) == (1, 1)


def test_dissociation_empty_and_bad_input() -> None:
    r = dissociation(table([{"acts": "UUA"}]))
    assert (r.questions, r.answered) == (0, 0) and math.isnan(r.share)
    two_arms = table([{"acts": "UUUUUA"}, {"acts": "UUUUUA", "condition": "permit"}])
    with pytest.raises(LabError, match="per arm"):
        dissociation(two_arms)
    with pytest.raises(LabError, match="k ≥ 1"):
        dissociation(table([{"acts": "UA"}]), k=0)
    with pytest.raises(ValueError):
        dissociation(table([{"acts": "UA"}]), judgments="vibes")


# --- calls charged to an arm -------------------------------------------------------


def test_charged_calls_count_only_the_conditions_own_judgment_calls() -> None:
    ep = pd.DataFrame({
        "condition": ["none", "none", "enforced_rule", "decide", "combo", "random_rule",
                      "lexical_rule", "budget"],
        "condition_spec": [None, '{"judge":true,"name":"none"}',
                           '{"judge":false,"k":7,"name":"enforced_rule"}', None, None,
                           '{"judge":true,"k":5,"name":"random_rule","rate":0.4}', None, None],
        "tool_calls": [4, 4, 3, 5, 2, 3, 3, 6],
        "extra_calls": [0, 4, 3, 5, 2, 3, 0, 6],   # the last: the sim's recorded judgments
    })
    # none:judge=true, random_rule:judge=true and budget (sim) only measure
    assert charged_calls(ep).tolist() == [4, 4, 6, 10, 4, 3, 3, 6]
    assert measurement_calls(ep).tolist() == [0, 4, 0, 0, 0, 3, 0, 6]
    # arm labels work where no spec is stored
    labelled = pd.DataFrame({"condition": ["none:judge=true", "enforced_rule:k=7"],
                             "tool_calls": [2, 2], "extra_calls": [2, 2]})
    assert charged_calls(labelled).tolist() == [2, 4]
