"""Table 17 as the paper computes it (the main paper, App. D.2): the best policy is chosen on the
unaided runs in mean4, every arm's regret is measured against it, and no policy or
controller row averages the main regimes with plausible unless it is the paper's mean4.

The hand computation (budget 4: decision points after observations 1, 2, 3; every
unaided judgment USELESS, so `own k` fires where `cap k` does and loses the tie):

unaided `none` (searches to the budget: 3 calls, wrong), answer-now branch at 1, 2, 3:

    persistent       q1 0 1 1   q2 0 0 1
    plausible        q1 0 0 0   q2 1 1 1
    recover_after_1  q1 1 0 0   q2 1 0 0   (main family, not in mean4)

    mean4 (persistent, plausible) success: cap 1 (0 + .5)/2 = .25, cap 2 (.5 + .5)/2
    = .5, cap 3 (1 + .5)/2 = .75 → best cap 3 at every λ; utility at λ = .05:
    .75 − .05·3 = .60. Were recover_after_1 averaged in, cap 1 would tie cap 3 at .5
    and win the tie.

`enforced_rule` (answers after 1 call; one decision point, its branch = its answer):
persistent q1 1, q2 0; plausible q1 0, q2 1 → success .5, utility .5 − .05 = .45.

Table 17 regret of enforced_rule: λ=0: .75 − .5 = +.25; λ=.05: .60 − .45 = +.15.
On its own branches every policy gives its own outcome (best cap 1, regret 0): a
table that chose the best policy on the arm's own branches would show 0.
Regret of none: λ=0: .75 − 0 = .75; λ=.05: .60 − (0 − .15) = .75.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analysis.base.rows import Row, Table
from analysis.replay.branches import regime_cells
from analysis.replay.controllers import controller_table
from analysis.replay.policies import MEAN4, group_policies, policies, policy_table
from core.regimes import regime_family

NONE_BRANCHES = {
    "persistent": {"q1": (0, 1, 1), "q2": (0, 0, 1)},
    "plausible": {"q1": (0, 0, 0), "q2": (1, 1, 1)},
    "recover_after_1": {"q1": (1, 0, 0), "q2": (1, 0, 0)},
}
RULE_CORRECT = {"persistent": {"q1": 1, "q2": 0}, "plausible": {"q1": 0, "q2": 1}}


def _study() -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    ep: list[dict] = []
    st: list[dict] = []
    pr: list[dict] = []

    def episode(arm: str, regime: str, q: str, correct: int, branches: tuple[int, ...]
                ) -> None:
        e = len(ep)
        ep.append(dict(episode_id=e, question_id=q, model="m", arm=arm, condition=arm,
                       condition_hash=f"h-{arm}", budget=4, dataset="d", question_set="s",
                       run="r", seed=0, replicate=0, amendment=None, regime=regime,
                       correct=correct, tool_calls=len(branches), error=None))
        for t, right in enumerate(branches, start=1):
            st.append(dict(episode_id=e, t=t, obs_index=t, judgment="USELESS", discarded=0))
            pr.append(dict(episode_id=e, t=t, kind="answer_now", correct=right,
                           confidence=0.3 + 0.4 * right, probe_input_tokens=100,
                           probe_output_tokens=10))

    for regime, by_q in NONE_BRANCHES.items():
        for q, branches in by_q.items():
            episode("none", regime, q, 0, branches)
    for regime, answers in RULE_CORRECT.items():
        for q, correct in answers.items():
            episode("enforced_rule", regime, q, correct, (correct,))
    return pd.DataFrame(ep), pd.DataFrame(st), pd.DataFrame(pr)


def _rows(table: Table, measure: str, scope: str) -> dict[str, Row]:
    return {r.label: r for r in table.rows if r.measure == measure and r.scope == scope}


def test_best_policy_is_chosen_on_the_unaided_runs_and_every_arm_is_regretted_against_it() -> None:
    episodes, steps, probes = _study()
    table = policy_table(episodes, steps, probes, n_boot=200)
    for lam, best_u, rule_regret, none_regret in ((0.0, 0.75, 0.25, 0.75),
                                                  (0.05, 0.60, 0.15, 0.75)):
        scope = f"λ={lam:g} · best on none"
        (best,) = _rows(table, "best_utility", scope).values()
        assert best.label == "none" and best.detail == "cap 3"
        assert best.estimate == pytest.approx(best_u)
        assert best.regimes == "persistent,plausible" and best.n == 2
        regret = _rows(table, "regret", scope)
        assert set(regret) == {"none", "enforced_rule"}
        assert regret["enforced_rule"].estimate == pytest.approx(rule_regret)
        assert regret["none"].estimate == pytest.approx(none_regret)
        for r in regret.values():
            assert r.regimes == "persistent,plausible" and r.unit == "questions"
            assert r.ci_low <= r.estimate <= r.ci_high and r.n == 2
        assert regret["enforced_rule"].detail == (
            f"cap 3 on none {best_u:.3f} − own runs {0.5 - lam:.3f}")
        # the per-arm view (each arm's best on its own branches) gives other numbers
        own = _rows(table, "regret", f"λ={lam:g} · best on own branches")
        rule_own = [r for r in own.values() if r.label == "enforced_rule"]
        assert rule_own and rule_own[0].estimate == pytest.approx(0.0)
        assert rule_own[0].detail == "cap 1 − agent"


def test_regimes_outside_mean4_do_not_enter_table_17() -> None:
    episodes, steps, probes = _study()
    unaided = episodes.loc[episodes["arm"] == "none"]
    everything = group_policies(unaided, steps, probes)
    assert everything is not None and everything.regimes == ("persistent", "recover_after_1",
                                                              "plausible")
    best = everything.best(0.0)
    assert best is not None
    assert everything.results[best].name == "cap 1"  # the tie, as docstring
    mean4 = group_policies(unaided.loc[unaided["regime"].isin(MEAN4)], steps, probes)
    best4 = mean4.best(0.0) if mean4 is not None else None
    assert mean4 is not None and best4 is not None and mean4.results[best4].name == "cap 3"
    assert mean4.success[best4] == pytest.approx(0.75)


def test_a_regime_average_is_the_mean_of_regime_means_not_of_pooled_episodes() -> None:
    # q1 runs twice in persistent (seeds), q2 once; plausible: q1 only
    cells = regime_cells(np.array(["q1", "q1", "q2", "q1"]),
                         np.array(["persistent", "persistent", "persistent", "plausible"]))
    values = np.array([1.0, 0.0, 1.0, 0.0])
    # persistent: q1 .5, q2 1 → .75; plausible: q1 0 → 0; mean .375 (pooled: .5)
    assert cells.average(values) == pytest.approx(0.375)
    m = cells.matrix(values)
    assert m.present.tolist() == [[True, True], [True, False]]


def test_policy_and_controller_rows_never_average_plausible_with_the_main_regimes() -> None:
    episodes, steps, probes = _study()
    table = policy_table(episodes, steps, probes, n_boot=50)
    for r in table.rows:
        families = {regime_family(x) for x in r.regimes.split(",")}
        if "best on none" in r.scope or r.scope.endswith("· none"):
            assert r.regimes == "persistent,plausible"  # the paper's mean4, named per row
        else:
            assert len(families) == 1 and r.regimes, r
    own = [r for r in table.rows if r.measure == "best_utility" and "own" in r.scope
           and r.label == "none" and r.scope.startswith("λ=0 ")]
    assert sorted(r.regimes for r in own) == ["persistent,recover_after_1", "plausible"]
    # main family of none: cap 1 (0 + 1)/2 = .5 ties cap 3 (1 + 0)/2 and wins it
    main = next(r for r in own if r.regimes != "plausible")
    assert main.detail == "cap 1" and main.estimate == pytest.approx(0.5)
    controllers = controller_table(*_many(40), n_boot=20)
    assert {r.regimes for r in controllers.rows} == {"persistent", "plausible"}


def _many(n: int) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """n questions × (persistent, plausible) unaided episodes with random branches."""
    rng = np.random.default_rng(0)
    ep: list[dict] = []
    st: list[dict] = []
    pr: list[dict] = []
    for regime in ("persistent", "plausible"):
        for q in range(n):
            e = len(ep)
            ep.append(dict(episode_id=e, question_id=f"q{q}", model="m", arm="none",
                           condition="none", condition_hash="h", budget=4, dataset="d",
                           question_set="s", run="r", seed=0, replicate=0, amendment=None,
                           regime=regime, correct=0, tool_calls=3, error=None))
            for t in (1, 2, 3):
                p = rng.uniform()
                st.append(dict(episode_id=e, t=t, obs_index=t, judgment="USELESS",
                               discarded=0))
                pr.append(dict(episode_id=e, t=t, kind="answer_now",
                               correct=int(rng.uniform() < p), confidence=round(p, 2),
                               probe_input_tokens=100, probe_output_tokens=10))
    return pd.DataFrame(ep), pd.DataFrame(st), pd.DataFrame(pr)


def test_arms_without_unaided_runs_get_no_regret_and_a_note() -> None:
    episodes, steps, probes = _study()
    table = policy_table(episodes.loc[episodes["arm"] != "none"], steps, probes, n_boot=20)
    assert not [r for r in table.rows if "best on none" in r.scope]
    assert any("no 'none' runs" in n for n in table.notes)


def test_policies_keeps_its_signature_for_other_callers() -> None:
    episodes, steps, probes = _study()
    gp = group_policies(episodes.loc[episodes["arm"] == "none"], steps, probes)
    assert gp is not None
    direct = list(policies(gp.branches))
    assert [r.name for r in direct] == [r.name for r in gp.results]
    assert np.array_equal(direct[2].correct, gp.results[2].correct)
