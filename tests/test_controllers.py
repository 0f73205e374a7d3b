"""Calibration and confidence-gated controllers (issue 12): numbers computed by hand."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analysis.replay.branches import Branches
from analysis.replay.calibration import calibration_split, ece, fit_isotonic, risk_coverage
from analysis.replay.controllers import controller_table, run_controller

# 20 answer states: confidence and correctness (the hand computation is in each test)
CONF = np.array([0.05, 0.15, 0.15, 0.25, 0.35, 0.45, 0.45, 0.55, 0.55, 0.65,
                 0.65, 0.75, 0.75, 0.85, 0.85, 0.95, 0.95, 0.95, 1.00, 1.00])
RIGHT = np.array([0, 0, 1, 0, 0, 1, 0, 1, 0, 1, 1, 1, 0, 1, 1, 1, 1, 0, 1, 1])


def test_ece_ten_equal_width_bins_by_hand():
    # bins: [0,.1): .05/0 gap .05 (n1); [.1,.2): .15,.15/0,1 gap |.5-.15|=.35 (n2);
    # [.2,.3): .25/0 .25 (n1); [.3,.4): .35/0 .35 (n1); [.4,.5): .45,.45/1,0 gap .05 (n2);
    # [.5,.6): .55,.55/1,0 .05 (n2); [.6,.7): .65,.65/1,1 .35 (n2); [.7,.8): .75,.75/1,0
    # .25 (n2); [.8,.9): .85,.85/1,1 .15 (n2); [.9,1]: .95×3,1×2/1,1,0,1,1 |.8-.97|=.17 (n5)
    by_hand = (0.05 + 2 * 0.35 + 0.25 + 0.35 + 2 * 0.05 + 2 * 0.05 + 2 * 0.35 + 2 * 0.25
               + 2 * 0.15 + 5 * 0.17) / 20
    assert ece(CONF, RIGHT) == pytest.approx(by_hand)
    assert ece(np.array([np.nan, 0.5]), np.array([1, 1])) == pytest.approx(0.5)


def test_risk_coverage_and_aurc_by_hand():
    conf = np.array([0.9, 0.8, 0.8, 0.3])
    right = np.array([1, 0, 1, 0])
    rc = risk_coverage(conf, right)
    # the tie at .8 shares its one error: errors in order 0, .5, .5, 1
    assert rc.coverage.tolist() == [0.25, 0.5, 0.75, 1.0]
    assert rc.risk.tolist() == pytest.approx([0.0, 0.25, 1 / 3, 0.5])
    assert rc.aurc == pytest.approx((0 + 0.25 + 1 / 3 + 0.5) / 4)
    full = risk_coverage(CONF, RIGHT)
    assert full.risk[-1] == pytest.approx(1 - RIGHT.mean())
    assert risk_coverage(CONF[::-1], RIGHT[::-1]).aurc == pytest.approx(full.aurc)


def test_isotonic_pools_violators_and_is_monotone():
    iso = fit_isotonic(np.array([0.1, 0.2, 0.3, 0.4]), np.array([0, 1, 0, 1]))
    assert iso.y.tolist() == pytest.approx([0.0, 0.5, 0.5, 1.0])
    pred = iso.predict(CONF)
    assert np.all(np.diff(pred[np.argsort(CONF)]) >= -1e-12)
    assert ece(fit_isotonic(CONF, RIGHT).predict(CONF), RIGHT) < ece(CONF, RIGHT)


def _branches(n_episodes: int, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Episodes with 3 decision points each; confidence over-states P(correct) by 0.3."""
    rng = np.random.default_rng(seed)
    ep, st, pr = [], [], []
    for e in range(n_episodes):
        qid = f"q{e}"
        ep.append(dict(episode_id=e, question_id=qid, model="m", arm="none", condition="none",
                       condition_hash="h", budget=4, dataset="d", question_set="s", run="r",
                       seed=0, replicate=0, amendment=None, regime="persistent",
                       correct=0, tool_calls=3, error=None))
        for t in (1, 2, 3):
            p = rng.uniform(0.0, 0.7)
            st.append(dict(episode_id=e, t=t, obs_index=t, judgment="USELESS", discarded=0))
            pr.append(dict(episode_id=e, t=t, kind="answer_now", correct=int(rng.uniform() < p),
                           confidence=round(min(1.0, p + 0.3), 2), probe_input_tokens=100,
                           probe_output_tokens=10))
    return pd.DataFrame(ep), pd.DataFrame(st), pd.DataFrame(pr)


def test_isotonic_fit_only_on_the_calibration_split_and_a_leak_would_change_it():
    episodes, steps, probes = _branches(400)
    table = controller_table(episodes, steps, probes, n_boot=50)
    got = {(r.measure, r.scope): r.estimate for r in table.rows}
    assert got[("ece", "isotonic")] < got[("ece", "raw")]
    # refit by hand on the calibration questions only: same number
    cal = calibration_split(episodes["question_id"].to_numpy())
    cal_q = set(episodes.loc[cal, "question_id"])
    qs = probes["episode_id"].map(episodes.set_index("episode_id")["question_id"])
    fit = probes.loc[qs.isin(cal_q)]
    ev = probes.loc[~qs.isin(cal_q)]
    iso = fit_isotonic(fit["confidence"].to_numpy(), fit["correct"].to_numpy())
    honest = ece(iso.predict(ev["confidence"].to_numpy()), ev["correct"].to_numpy())
    assert got[("ece", "isotonic")] == pytest.approx(honest)
    leaky = fit_isotonic(probes["confidence"].to_numpy(), probes["correct"].to_numpy())
    leaked = ece(leaky.predict(ev["confidence"].to_numpy()), ev["correct"].to_numpy())
    assert leaked != pytest.approx(honest)
    assert 0.3 < cal.mean() < 0.7 and not (set(ev.episode_id) & set(fit.episode_id))


def test_controller_commits_abstains_retrieves_and_escalates():
    valid = np.ones((4, 3), dtype=bool)
    conf = np.array([[0.5, 0.9, 0.9],    # retrieve, then commit at the 2nd point
                     [0.1, 0.9, 0.9],    # abstain at once
                     [0.5, np.nan, 0.5],  # never sure: escalate at the last point
                     [0.95, 0.1, 0.1]])  # commit at once
    correct = np.array([[0, 1, 1], [0, 1, 1], [1, 1, 0], [0, 1, 1]], dtype=float)
    n_obs = np.tile(np.array([1, 2, 3]), (4, 1))
    b = Branches(np.arange(4), np.array(["a", "b", "c", "d"]), valid, n_obs, n_obs,
                 np.zeros((4, 3), dtype=int), correct, conf, np.full((4, 3), 10.0),
                 np.zeros(4), np.full(4, 3.0), np.full(4, 4))
    out = run_controller(b, conf, 0.8, 0.2)
    assert out.action.tolist() == ["commit", "abstain", "escalate", "commit"]
    assert out.correct.tolist() == [1, 0, 0, 0]
    assert out.calls.tolist() == [2, 1, 3, 1]
    assert out.abstained_wrong.tolist() == [0, 1, 0, 0]  # its branch there was wrong
    assert out.cost.tolist() == [10 + 1000, 10 + 500, 10 + 1500, 10 + 500]
