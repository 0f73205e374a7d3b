"""Tables that compute every group in one pass give each group's own numbers, to the last
digit: per-group question matrices, resample means, column summaries, the cost table and
the answer actions against the per-group functions they replace."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from analysis.base.arms import Grouping
from analysis.measures.cost import answer_actions, cost_table, group_answer_actions
from analysis.measures.decisions import arm_groups
from analysis.measures.success import (
    QuestionMatrix,
    _Means,
    group_question_matrices,
    paired_success,
    paired_table,
    question_matrix,
    regime_means,
    resample_means,
    success_by_regime,
    success_table,
)
from analysis.stats.bootstrap import bootstrap, resample_weights, summarize, summarize_columns
from tests.helpers.synthetic import random_episodes
from tests.oracles.measures import stopping_cost


@pytest.mark.parametrize("pool", [(), ("seeds",)])
def test_group_matrices_equal_each_groups_own(pool: tuple[str, ...]) -> None:
    ep = random_episodes()
    value = ep["correct"] - 0.05 * ep["tool_calls"] + ep["cost_usd"]
    value[::17] = np.nan  # a cell whose episodes are all undefined is absent
    keys, code = Grouping(pool).codes(ep)
    mats = group_question_matrices(ep, code, len(keys), [ep["correct"], value])
    subs = list(arm_groups(ep, Grouping(pool)))
    assert [k for k, _ in subs] == keys
    for (_, sub), got in zip(subs, mats):
        for column, m in zip(("correct", value.loc[sub.index]), got):
            want = question_matrix(sub, column)
            assert (want.questions, want.regimes) == (m.questions, m.regimes)
            assert np.array_equal(want.value, m.value) and np.array_equal(want.present, m.present)


def test_resample_means_equal_regime_means_bit_for_bit() -> None:
    ep = random_episodes(seed=1)
    m = question_matrix(ep, ep["correct"] - 0.05 * ep["tool_calls"])
    assert m.present.all()
    for w in [np.ones((1, len(m.questions))), *resample_weights(len(m.questions), 600, 3)]:
        for scope in ("mean6", "all"):
            assert np.array_equal(resample_means(m, w, scope), regime_means(m, w, scope),
                                  equal_nan=True)


@pytest.mark.parametrize("regimes", [7, 6, 4, 0])
def test_means_formed_once_equal_resample_means_bit_for_bit(regimes: int) -> None:
    """`_Means` (a group's bootstrap statistic with its weight-free parts formed once)
    gives `resample_means` to the last digit: every regime present or not, the six mean6
    regimes with another, alone or fewer, either scope, the point estimate's row of ones
    and resamples."""
    ep = random_episodes(seed=4)
    m = question_matrix(ep, ep["correct"] - 0.05 * ep["tool_calls"])
    assert m.regimes[6:] == ("plausible",) and m.present.all()  # after the six mean6 ones
    m = replace(m, regimes=m.regimes[:regimes], value=m.value[:, :regimes] / 3,
                present=m.present[:, :regimes])
    holes = replace(m, present=m.present & (np.arange(m.value.size).reshape(m.value.shape)
                                            % 7 != 0))
    for x in (m, holes):
        for w in [np.ones((1, len(x.questions))),
                  *resample_weights(len(x.questions), 600, 3)]:
            for scope in ("mean6", "all"):
                assert np.array_equal(_Means(x, scope)(w), resample_means(x, w, scope),
                                      equal_nan=True)


def test_summarize_columns_equal_summarize_per_column() -> None:
    rng = np.random.default_rng(2)

    def stat(w: np.ndarray) -> np.ndarray:
        x = w @ rng.random((9, 4)) - 4.5
        x[:, 1] = np.where(w[:, 0] > 1, np.nan, x[:, 1])  # undefined in some resamples
        x[:, 3] = np.nan  # never defined
        return x

    est, boot = bootstrap(stat, 9, 500, 4)
    for with_p in (False, True):
        got = summarize_columns(est, boot, 9, with_p)
        want = tuple(summarize(float(est[k]), boot[:, k], 9, with_p) for k in range(4))
        assert got == want
        assert np.isnan(got[1].low) or got[1].n_boot < 500


def test_summarize_columns_in_blocks_equal_summarize_per_column() -> None:
    """More columns than one block, each with its own tie tolerance, some undefined in
    some resamples: every column's Interval is its own."""
    rng = np.random.default_rng(8)
    boot = np.round(rng.normal(size=(300, 700)), 1)
    boot[rng.random(boot.shape) < 0.001] = np.nan
    est = rng.normal(size=700)
    ties = rng.choice([0.0, 0.05, 0.2], size=700)
    got = summarize_columns(est, boot, 12, True, ties=ties)
    want = tuple(summarize(float(est[k]), boot[:, k], 12, True, tie=float(ties[k]))
                 for k in range(700))
    assert got == want
    assert sum(iv.n_boot < 300 for iv in got) > 50


def test_success_and_paired_tables_equal_per_group_functions() -> None:
    from analysis.stats.bootstrap import bootstrap_p

    ep = random_episodes(seed=3)
    groups = list(arm_groups(ep, Grouping()))
    want: list[tuple[Any, ...]] = [(a.model, a.arm, r, iv.estimate, iv.low, iv.high)
                                   for a, sub in groups for r, iv in success_by_regime(sub, 200, 0)]
    got: list[tuple[Any, ...]] = [(r.model, r.arm, r.scope, r.estimate, r.ci_low, r.ci_high)
           for r in success_table(ep, 200, 0).rows]
    assert repr(got) == repr(want)
    refs = {a.pair_key(): sub for a, sub in groups if a.arm == "none"}
    want = [(a.model, a.arm, r, iv.estimate, iv.low, iv.high, bootstrap_p(iv, "greater"))
            for a, sub in groups
            if a.arm != "none" for r, iv in paired_success(sub, refs[a.pair_key()], 200, 0)]
    got = [(r.model, r.arm, r.scope, r.estimate, r.ci_low, r.ci_high, r.p)
           for r in paired_table(ep, n_boot=200).rows]
    assert len(want) > 20 and repr(got) == repr(want)


def test_cost_table_and_answer_actions_equal_per_group_functions() -> None:
    ep = random_episodes(seed=4)
    grouping = Grouping()
    groups = list(arm_groups(ep, grouping, families=True))
    rows = cost_table(ep, 0.05, 100, 0, grouping).rows
    assert len(rows) == 15 * len(groups)
    for i, (arm, sub) in enumerate(groups):
        c = stopping_cost(sub, 0.05, 100, 0)
        mine = {r.measure: r for r in rows[15 * i:15 * (i + 1)]}
        assert {r.arm for r in mine.values()} == {arm.arm}
        assert repr([mine[m].estimate for m in ("dollars", "TPC", "own calls", "input tokens",
                                                "median action", "final share")]) == repr(
            [c.dollars, c.tpc, c.own_calls, c.input_tokens, c.median_answer_action,
             c.final_action_share])
        for measure, iv in (("success", c.success), ("utility", c.utility),
                            ("utility (all calls)", c.utility_all)):
            r = mine[measure]
            assert repr((r.estimate, r.ci_low, r.ci_high)) == repr((iv.estimate, iv.low,
                                                                   iv.high))
    actions, counts = group_answer_actions(ep, grouping)
    assert actions == tuple((a, answer_actions(sub)) for a, sub in groups)
    assert counts == tuple(len(sub) for _, sub in groups)


def test_success_results_builds_the_group_matrices_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The success table and the paired differences read the same groups' matrices:
    `success_results` builds them once and gives both tables as computed apart."""
    from analysis.measures import success as S
    from analysis.measures.frames import Frames
    from analysis.measures.results import TableInput

    ep = random_episodes()
    want = (success_table(ep, n_boot=50), paired_table(ep, n_boot=50))
    calls = []
    real = S.group_question_matrices

    def counted(*args: Any, **kwargs: Any) -> list[tuple[QuestionMatrix, ...]]:
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(S, "group_question_matrices", counted)
    got = S.success_results(TableInput(Frames(ep), ep, Grouping(), 50, 50, 0, 0.0, "none"))
    assert len(calls) == 1
    assert [repr(t.rows) for t in got.tables] == [repr(t.rows) for t in want]
