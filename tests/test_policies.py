"""Offline stopping policies: a fixture whose best policy is known."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analysis.replay.branches import build_branches
from analysis.replay.policies import policies, policy_table, stopping_paid
from tests.oracles.replay import best_policy


def _fixture(n: int = 10, judgments: tuple[str, ...] = ("USELESS", "USELESS", "USEFUL",
                                                        "USEFUL", "USEFUL", "USEFUL",
                                                        "USEFUL"), right_from: int = 3,
             agent_correct: int = 1) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """n episodes, budget 8, 7 decision points; the answer-now branch is right from the
    `right_from`-th observation on; the agent searches to the budget (7 calls)."""
    ep, st, pr = [], [], []
    for e in range(n):
        ep.append(dict(episode_id=e, question_id=f"q{e}", model="m", arm="none",
                       condition="none", condition_hash="h", budget=8, dataset="d",
                       question_set="s", run="r", seed=0, replicate=0, amendment=None,
                       regime="persistent", correct=agent_correct, tool_calls=7, error=None))
        for t in range(1, 8):
            st.append(dict(episode_id=e, t=t, obs_index=t, judgment=judgments[t - 1],
                           discarded=0))
            pr.append(dict(episode_id=e, t=t, kind="answer_now", correct=int(t >= right_from),
                           confidence=0.5, probe_input_tokens=100, probe_output_tokens=10))
    return pd.DataFrame(ep), pd.DataFrame(st), pd.DataFrame(pr)


def test_best_policy_is_the_known_one_and_regret_is_exact() -> None:
    episodes, steps, probes = _fixture()
    b = build_branches(episodes, steps, probes)
    results = list(policies(b))
    names = [r.name for r in results]
    assert names[:7] == [f"cap {c}" for c in range(1, 8)] and names[-1] == "agent"
    assert len(names) == 7 + 7 + 49 + 1
    for lam in (0.0, 0.02, 0.05):
        best = best_policy(results, lam)
        assert best is not None and best.name == "cap 3"
    by = {r.name: r for r in results}
    assert by["cap 3"].calls.tolist() == [3.0] * 10 and by["cap 3"].correct.mean() == 1.0
    assert by["own 2"].correct.mean() == 0.0  # fires after the 2nd observation: too early
    assert by["own 3"].calls.tolist() == [7.0] * 10  # never fires: the agent's own outcome
    table = policy_table(episodes, steps, probes, n_boot=50)
    got = {(r.measure, r.scope): r for r in table.rows}
    regret = got[("regret", "λ=0.05 · best on own branches")]
    assert regret.estimate == pytest.approx((1 - 0.05 * 3) - (1 - 0.05 * 7))
    assert regret.detail == "cap 3 − agent"
    assert got[("best_utility", "λ=0.02 · best on own branches")].detail == "cap 3"
    # the arm is the unaided one: Table 17's regret of `none` is the same number
    unaided = got[("regret", "λ=0.05 · best on none")]
    assert unaided.estimate == pytest.approx(regret.estimate)
    assert unaided.detail == "cap 3 on none 0.850 − own runs 0.650"


def test_policy_without_its_branches_is_not_eligible() -> None:
    episodes, steps, probes = _fixture()
    probes = probes.loc[probes["t"] != 3]  # nobody replayed the 3rd point
    results = list(policies(build_branches(episodes, steps, probes)))
    assert {r.name: r.missing for r in results}["cap 3"] == 10
    best = best_policy(results, 0.05)
    assert best is not None and best.name == "cap 4"


def test_would_stopping_have_paid_at_the_first_five_useless_point() -> None:
    episodes, steps, probes = _fixture(judgments=("USELESS",) * 7, right_from=5,
                                       agent_correct=0)
    b = build_branches(episodes, steps, probes)
    mask, now, cont, extra = stopping_paid(b)
    assert mask.all() and now.tolist() == [1.0] * 10 and cont.tolist() == [0.0] * 10
    assert extra.tolist() == [2.0] * 10  # 7 calls made, 5 at the point
    table = policy_table(episodes, steps, probes, n_boot=50)
    unaided, own = [r for r in table.rows if r.measure == "stop_paid"]
    assert unaided.scope == "own 5: answer now − continue · none"
    for paid in (unaided, own):
        assert paid.estimate == 1.0 and "answering better on 10, continuing on 0" in paid.detail
        assert paid.regimes == "persistent" and paid.n == 10
    no_branches = policy_table(episodes, steps, probes.iloc[0:0], n_boot=10)
    assert not no_branches.rows and "no answer-now branches" in no_branches.notes[-1]


def test_a_policy_fires_only_before_the_agent_ended() -> None:
    episodes, steps, probes = _fixture()
    episodes.loc[0, ["tool_calls", "correct"]] = [2, 0]  # agent 0 answered after 2 calls
    steps = steps.loc[~((steps["episode_id"] == 0) & (steps["t"] > 2))]
    probes = probes.loc[~((probes["episode_id"] == 0) & (probes["t"] > 2))]
    by = {r.name: r for r in policies(build_branches(episodes, steps, probes))}
    assert by["cap 3"].correct[0] == 0 and by["cap 3"].calls[0] == 2
    assert np.all(by["cap 3"].correct[1:] == 1)


def test_validate_measures_checks_calibration_and_recovers_the_sims_policies(tmp_path: Path
                                                                            ) -> None:
    from analysis.validate import PROBE_EXPECTED, validation_table
    from core import store
    from core.demo_data import demo_questions
    from jobs.validate import validate_measures

    db = store.connect(tmp_path / "lab.db")
    store.insert_questions(db, demo_questions())
    names = [m for m, _ in PROBE_EXPECTED]
    v = validate_measures(db, demo_questions()[:24], models=names, n_boot=50)
    assert [p.model for p in v.probes] == names
    for p in v.probes:
        assert p.recovered is not None and p.recovered[0] == p.built_with, p
        assert p.recovered[1] == 1.0 and p.n > 0
        assert p.ece_isotonic < p.ece_raw and p.ece_raw > 0.1  # over-confident by 0.25
    assert v.passed, v.failures()
    stored = db.conn.execute("SELECT count(*) FROM probes WHERE kind = 'answer_now'"
                             ).fetchone()[0]
    again = validate_measures(db, demo_questions()[:24], models=names, n_boot=50)
    assert again.probes == v.probes  # branches reused, nothing asked twice
    assert db.conn.execute("SELECT count(*) FROM probes").fetchone()[0] == stored
    measures = {r.measure for r in validation_table(v).rows}
    assert {"ece_raw", "ece_isotonic", "recovered_policy"} <= measures


def test_a_sim_built_with_another_rule_is_not_recovered() -> None:
    from analysis.validate import ProbeCheck

    assert not ProbeCheck("sim-own5", "own 5", ("own 3", 1.0), 0.2, 0.01, 10).passed
    assert not ProbeCheck("sim-own5", "own 5", ("own 5", 1.0), 0.2, 0.3, 10).passed
    assert ProbeCheck("sim-own5", "own 5", ("own 5", 1.0), 0.2, 0.01, 10).passed
