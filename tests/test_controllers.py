"""Calibration and confidence-gated controllers: numbers computed by hand.

The controller is the second seed's π (its Eq. 1): commit at κ ≥ τ_hi; retrieve while
budget remains; at budget 0 abstain at κ ≤ τ_lo, else escalate.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analysis.base.rows import Table
from analysis.replay.branches import Branches
from analysis.replay.calibration import calibration_split, ece, fit_isotonic, risk_coverage
from analysis.replay.controllers import Gate, controller_table, pi, replay, run_controller
from core.errors import ConfigError

# 20 answer states: confidence and correctness (the hand computation is in each test)
CONF = np.array([0.05, 0.15, 0.15, 0.25, 0.35, 0.45, 0.45, 0.55, 0.55, 0.65,
                 0.65, 0.75, 0.75, 0.85, 0.85, 0.95, 0.95, 0.95, 1.00, 1.00])
RIGHT = np.array([0, 0, 1, 0, 0, 1, 0, 1, 0, 1, 1, 1, 0, 1, 1, 1, 1, 0, 1, 1])


def test_ece_ten_equal_width_bins_by_hand() -> None:
    # bins: [0,.1): .05/0 gap .05 (n1); [.1,.2): .15,.15/0,1 gap |.5-.15|=.35 (n2);
    # [.2,.3): .25/0 .25 (n1); [.3,.4): .35/0 .35 (n1); [.4,.5): .45,.45/1,0 gap .05 (n2);
    # [.5,.6): .55,.55/1,0 .05 (n2); [.6,.7): .65,.65/1,1 .35 (n2); [.7,.8): .75,.75/1,0
    # .25 (n2); [.8,.9): .85,.85/1,1 .15 (n2); [.9,1]: .95×3,1×2/1,1,0,1,1 |.8-.97|=.17 (n5)
    by_hand = (0.05 + 2 * 0.35 + 0.25 + 0.35 + 2 * 0.05 + 2 * 0.05 + 2 * 0.35 + 2 * 0.25
               + 2 * 0.15 + 5 * 0.17) / 20
    assert ece(CONF, RIGHT) == pytest.approx(by_hand)
    assert ece(np.array([np.nan, 0.5]), np.array([1, 1])) == pytest.approx(0.5)


def test_risk_coverage_and_aurc_by_hand() -> None:
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


def test_isotonic_pools_violators_and_is_monotone() -> None:
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


def test_isotonic_fit_only_on_depth_zero_of_the_calibration_split_and_a_leak_would_change_it(
        ) -> None:
    episodes, steps, probes = _branches(400)
    table = controller_table(episodes, steps, probes, n_boot=50)
    got = {(r.measure, r.scope): r.estimate for r in table.rows}
    assert got[("ece", "isotonic")] < got[("ece", "raw")]
    # refit by hand on the calibration questions' first decision points (t=1): same number
    cal = calibration_split(episodes["question_id"].to_numpy())
    cal_q = set(episodes.loc[cal, "question_id"])
    qs = probes["episode_id"].map(episodes.set_index("episode_id")["question_id"])
    fit = probes.loc[qs.isin(cal_q) & (probes["t"] == 1)]
    ev = probes.loc[~qs.isin(cal_q)]
    iso = fit_isotonic(fit["confidence"].to_numpy(), fit["correct"].to_numpy())
    honest = ece(iso.predict(ev["confidence"].to_numpy()), ev["correct"].to_numpy())
    assert got[("ece", "isotonic")] == pytest.approx(honest)
    leaky = fit_isotonic(probes["confidence"].to_numpy(), probes["correct"].to_numpy())
    leaked = ece(leaky.predict(ev["confidence"].to_numpy()), ev["correct"].to_numpy())
    assert leaked != pytest.approx(honest)
    assert 0.3 < cal.mean() < 0.7 and not (set(ev.episode_id) & set(fit.episode_id))
    # --fit-depths all: every calibration point
    every = controller_table(episodes, steps, probes, n_boot=50, fit_depths="all")
    iso_all = fit_isotonic(*(probes.loc[qs.isin(cal_q), c].to_numpy()
                             for c in ("confidence", "correct")))
    got_all = {(r.measure, r.scope): r.estimate for r in every.rows}
    assert got_all[("ece", "isotonic")] == pytest.approx(
        ece(iso_all.predict(ev["confidence"].to_numpy()), ev["correct"].to_numpy()))
    success = next(r for r in table.rows if r.measure == "success" and r.scope == "raw")
    assert "τ_lo=0.3, τ_hi=0.7, budget 3" in success.detail
    assert all("τ_lo=0.3, τ_hi=0.7, budget 3" in r.detail for r in table.rows
               if r.measure in ("coverage", "abstain", "escalate", "retrievals"))


def test_pi_on_five_traces_by_hand() -> None:
    """Five depth 0–3 traces under (τ_lo, τ_hi) = (0.3, 0.7), budget 3 (b_t = 3 − t)."""
    kappa = np.array([
        [0.80, 0.10, 0.10, 0.10],  # t=0: 0.80 ≥ 0.7 → commit at once, 0 retrievals
        [0.50, 0.69, 0.70, 0.95],  # 0.50, 0.69 < 0.7 → retrieve twice; 0.70 ≥ 0.7 → commit at 2
        [0.10, 0.20, 0.05, 0.30],  # ≤ τ_lo at b > 0 only retrieves; t=3, b=0, 0.30 ≤ 0.3 → abstain
        [0.10, 0.50, 0.60, 0.50],  # t=3, b=0, 0.3 < 0.50 < 0.7 → escalate
        [0.40, np.nan, 0.20, 0.31],  # NaN at b > 0 retrieves; t=3: 0.31 > τ_lo → escalate
    ])
    gate = Gate()
    r = replay(kappa, np.full(5, 4), gate)
    assert r.action.tolist() == ["commit", "commit", "abstain", "escalate", "escalate"]
    assert r.stop.tolist() == [0, 2, 3, 3, 3]
    # abstention only at budget 0: with budget 1 trace 3 abstains at t=1 (b=0, 0.20 ≤ 0.3)
    # and trace 4 escalates at t=1 (0.50); trace 2 reaches no commit (0.69 < 0.7 at b=0)
    r1 = replay(kappa, np.full(5, 4), Gate(max_retrievals=1))
    assert r1.action.tolist() == ["commit", "escalate", "abstain", "escalate", "escalate"]
    assert r1.stop.tolist() == [0, 1, 1, 1, 1]
    # budget 0: π acts on depth 0 alone; 0.10 ≤ 0.3 abstains, 0.40/0.50 escalate
    r0 = replay(kappa, np.full(5, 4), Gate(max_retrievals=0))
    assert r0.action.tolist() == ["commit", "escalate", "abstain", "abstain", "escalate"]
    # the elementwise rule itself, at its boundaries
    assert pi(np.array([0.7, 0.69, 0.3, 0.3, 0.31, np.nan, np.nan]),
              np.array([0, 1, 1, 0, 0, 1, 0]), gate).tolist() == [
        "commit", "retrieve", "retrieve", "abstain", "escalate", "retrieve", "escalate"]
    with pytest.raises(ConfigError):
        Gate(tau_hi=1.5)


def test_controller_on_react_branches_uses_pi_with_the_next_point_as_retrieval() -> None:
    valid = np.ones((5, 3), dtype=bool)
    conf = np.array([[0.5, 0.9, 0.9],    # retrieve, then commit at the 2nd point
                     [0.1, 0.9, 0.9],    # low at b > 0 only retrieves: commit at the 2nd
                     [0.5, np.nan, 0.5],  # last point, b = 0, 0.5 → escalate
                     [0.95, 0.1, 0.1],   # commit at once
                     [0.1, 0.2, 0.25]])  # last point, b = 0, 0.25 ≤ 0.3 → abstain
    correct = np.array([[0, 1, 1], [0, 1, 1], [1, 1, 0], [0, 1, 1], [1, 1, 0]], dtype=float)
    n_obs = np.tile(np.array([1, 2, 3]), (5, 1))
    b = Branches(np.arange(5), np.array(["a", "b", "c", "d", "e"]), valid, n_obs, n_obs,
                 np.zeros((5, 3), dtype=int), correct, conf, np.full((5, 3), 10.0),
                 np.zeros(5), np.full(5, 3.0), np.full(5, 4))
    out = run_controller(b, conf, Gate())
    assert out.action.tolist() == ["commit", "commit", "escalate", "commit", "abstain"]
    assert out.correct.tolist() == [1, 1, 0, 0, 0]
    assert out.calls.tolist() == [2, 2, 3, 1, 3]
    assert out.retrievals.tolist() == [1, 1, 2, 0, 2]
    assert out.abstained_wrong.tolist() == [0, 0, 0, 0, 1]  # its branch there was wrong
    assert out.cost.tolist() == [10 + 1000, 10 + 1000, 10 + 1500, 10 + 500, 10 + 1500]
    # a budget of one retrieval: the 5th abstains at its 2nd point (0.2), the 3rd escalates
    # there (no confidence), the 2nd commits there (0.9)
    one = run_controller(b, conf, Gate(max_retrievals=1))
    assert one.action.tolist() == ["commit", "commit", "escalate", "commit", "abstain"]
    assert one.calls.tolist() == [2, 2, 2, 1, 2]


def _estimates(table: Table) -> dict[tuple[str, str], float]:
    return {(r.measure, r.scope): r.estimate for r in table.rows}


def test_controllers_read_the_branches_asked_for_a_confidence_never_mixed_with_the_plain() -> None:
    episodes, steps, asked = _branches(200)
    asked["kind"] = "answer_now_confidence"
    # the paper's branches at the same points: other answers, and a confidence stated
    # unasked that is always 0.99 (reading it, every controller would commit at once)
    plain = asked.assign(kind="answer_now", confidence=0.99, correct=1 - asked["correct"])
    both = pd.concat([plain, asked], ignore_index=True)
    table = controller_table(episodes, steps, both, n_boot=50)
    alone = controller_table(episodes, steps, asked, n_boot=50)
    assert _estimates(table) == pytest.approx(_estimates(alone), nan_ok=True)
    on_plain = _estimates(controller_table(episodes, steps, plain, n_boot=50))
    assert on_plain[("coverage", "raw")] == 1.0 != _estimates(table)[("coverage", "raw")]
    success = next(r for r in table.rows if r.measure == "success" and r.scope == "raw")
    assert success.detail.endswith("; branches asked for a confidence")
    assert any("asked for a confidence (lab replay answer-now --confidence) in 1 groups"
               in n for n in table.notes)
    # the paper's branches alone, stating no confidence: no rows, and the table says why
    silent = controller_table(episodes, steps, plain.assign(confidence=np.nan), n_boot=50)
    assert not silent.rows
    assert any("asked without confidence" in n and "lab replay answer-now --confidence" in n
               for n in silent.notes)
    # asked, but no reply stated one; and no branch at all
    mute = controller_table(episodes, steps, asked.assign(confidence=np.nan), n_boot=50)
    assert not mute.rows and any("no reply stated one" in n for n in mute.notes)
    empty = controller_table(episodes, steps, asked.iloc[:0], n_boot=50)
    assert not empty.rows and any("no answer-now branches" in n for n in empty.notes)
