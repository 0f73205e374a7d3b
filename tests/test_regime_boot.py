"""The cost table's batched bootstrap and per-group reductions give each group's own
numbers to the last digit: `overall_intervals` against `bootstrap_intervals` of the
per-group statistic it replaces, and the cost table's column reductions against pandas."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analysis.base.arms import Grouping
from analysis.measures.cost import _column_mean, _column_sum
from analysis.measures.regime_boot import overall_intervals
from analysis.measures.success import QuestionMatrix, group_question_matrices, resample_means
from analysis.stats.bootstrap import bootstrap_intervals
from core.regimes import MEAN6

REGIMES = (*MEAN6, "plausible")


def groups_of_matrices() -> list[tuple[QuestionMatrix, ...]]:
    """Question matrices of random groups: different question counts, absent cells."""
    rng = np.random.default_rng(3)
    n = 1500
    frame = pd.DataFrame({
        "episode_id": np.arange(n), "model": rng.choice(["m1", "m2", "m3"], n),
        "condition": np.array(["none", "enforced_rule:k=3"])[rng.integers(0, 2, n)],
        "budget": 8, "regime": np.array(REGIMES)[rng.integers(0, len(REGIMES), n)],
        "seed": rng.integers(0, 3, n),
        "question_id": rng.integers(0, 25, n).astype(str),
        "correct": rng.integers(0, 2, n), "tool_calls": rng.integers(0, 9, n)})
    keys, code = Grouping().codes(frame)
    value = frame["correct"] - 0.013 * frame["tool_calls"]
    return group_question_matrices(frame, code, len(keys), [frame["correct"], value, value])


def _same(a: object, b: object) -> bool:
    return repr(a) == repr(b)  # repr writes every float to the last digit, NaN included


def test_overall_intervals_equal_each_groups_own_bootstrap() -> None:
    groups = groups_of_matrices()
    # a group without every mean6 regime ("all" and, forced, an undefined "mean6"), a
    # group whose matrices all miss some cells, and one without questions
    partial = tuple(QuestionMatrix(m.questions, m.regimes[:3], m.value[:, :3].copy(),
                                   m.present[:, :3].copy()) for m in groups[0])
    holes = tuple(QuestionMatrix(m.questions, m.regimes, m.value,
                                 m.present & (np.arange(len(m.questions)) % 4 > 0)[:, None])
                  for m in groups[1])
    empty = (QuestionMatrix((), ("clean",), np.zeros((0, 1)), np.zeros((0, 1), bool)),)
    groups = [*groups, partial, partial, holes, empty]
    scopes = ["mean6"] * len(groups)
    scopes[-4] = "all"
    assert len({len(g[0].questions) for g in groups}) > 2
    assert not all(m.present.all() for g in groups for m in g)
    got = overall_intervals(groups, scopes, n_boot=600, seed=5)
    for mats, scope, intervals in zip(groups, scopes, got):
        def stat(w: np.ndarray, mats: tuple = mats, scope: str = scope) -> np.ndarray:
            return np.column_stack([resample_means(m, w, scope)[:, -1] for m in mats])

        want = bootstrap_intervals(stat, len(mats[0].questions), 600, 5)
        assert _same(intervals, want)
    assert np.isnan(got[-3][0].estimate) and not np.isnan(got[-4][0].estimate)


def test_overall_intervals_of_full_mean6_matrices() -> None:
    """Every matrix on the six mean6 regimes with every cell present (the study's case):
    one division by the question count and one mean over a reshape."""
    rng = np.random.default_rng(8)
    groups = [tuple(QuestionMatrix(tuple(map(str, range(n))), MEAN6, rng.random((n, 6)) / 3,
                                   np.ones((n, 6), bool)) for _ in range(3))
              for n in (20, 20, 20, 31)]
    got = overall_intervals(groups, ["mean6"] * len(groups), n_boot=500, seed=2)
    for mats, intervals in zip(groups, got):
        def stat(w: np.ndarray, mats: tuple = mats) -> np.ndarray:
            return np.column_stack([resample_means(m, w)[:, -1] for m in mats])

        assert _same(intervals, bootstrap_intervals(stat, len(mats[0].questions), 500, 2))


@pytest.mark.parametrize("values", [
    np.array([0.1, np.nan, 0.7, 1e-9, 3.3, 0.2] * 3000),
    np.array([np.nan, np.nan]), np.arange(20_000, dtype=np.int64) * 7,
    np.array([True, False, True]), np.array([], dtype=float)])
def test_column_reductions_equal_pandas(values: np.ndarray) -> None:
    series = pd.Series(values)
    assert _same(_column_sum(values), series.sum())
    assert _same(_column_mean(values), float(series.mean()))
