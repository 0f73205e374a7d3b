"""Exact ties of a paired difference count as ties: the resampled difference of two
arms on the grid of sixths (mean6) or seed averages is compared exactly, not as the
±1e-17 that subtracting two separately summed means leaves (`analysis.stats.ties`)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import pandas as pd
import pytest

from analysis.measures.success import paired_regime_mean, paired_success, paired_table
from analysis.stats.bootstrap import bootstrap_p, resample_weights
from analysis.stats.ties import grid_denominator, paired_tolerance
from core.regimes import MEAN6

# 20 questions × the six mean6 regimes, one episode each: arm A and arm B correct (1) or
# not. Of 2,000 resamples, 110 give a mean6 difference ≤ 0 in exact arithmetic (p =
# 0.0550), 11 of them exact ties that subtracting the arms' means turned into +1e-17.
A = [[1, 1, 1, 1, 1, 1], [1, 1, 0, 1, 0, 1], [1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 0, 1],
     [1, 1, 1, 0, 1, 1], [0, 1, 0, 1, 0, 1], [1, 1, 1, 1, 0, 1], [1, 1, 0, 0, 1, 1],
     [1, 1, 1, 1, 1, 0], [1, 1, 1, 1, 0, 1], [1, 1, 1, 1, 1, 1], [0, 1, 1, 0, 1, 0],
     [1, 1, 0, 1, 1, 0], [1, 0, 0, 1, 1, 1], [1, 1, 1, 1, 1, 1], [1, 1, 0, 1, 0, 1],
     [1, 0, 1, 1, 1, 1], [0, 0, 1, 1, 1, 1], [1, 1, 1, 1, 1, 0], [1, 1, 1, 1, 1, 1]]
B = [[1, 1, 1, 1, 0, 0], [1, 1, 0, 0, 0, 1], [1, 0, 1, 1, 1, 1], [0, 1, 1, 1, 1, 1],
     [0, 1, 0, 1, 1, 0], [1, 0, 0, 1, 1, 1], [1, 1, 1, 1, 1, 1], [1, 0, 1, 0, 1, 1],
     [1, 1, 1, 0, 1, 1], [1, 1, 0, 1, 0, 1], [1, 1, 1, 0, 1, 1], [1, 0, 0, 1, 1, 1],
     [1, 0, 1, 1, 0, 0], [1, 1, 1, 0, 1, 0], [1, 1, 1, 0, 0, 1], [0, 0, 1, 1, 1, 1],
     [1, 0, 1, 0, 1, 1], [1, 1, 0, 1, 1, 1], [1, 1, 1, 1, 1, 1], [1, 1, 1, 0, 1, 1]]


def _episodes(correct: npt.ArrayLike, condition: str = "a", model: str = "m", seeds: int = 1,
              regimes: Sequence[str] = MEAN6) -> pd.DataFrame:
    c = np.asarray(correct)
    if c.ndim == 2:
        c = c[:, :, None]
    rows = [(model, condition, f"q{q:02d}", r, s, int(c[q, i, s]))
            for q in range(c.shape[0]) for i, r in enumerate(regimes)
            for s in range(min(seeds, c.shape[2]))]
    frame = pd.DataFrame(rows, columns=["model", "condition", "question_id", "regime", "seed",
                                        "correct"])
    return frame.assign(budget=8, episode_id=np.arange(len(frame)))


def _exact_p(sums: np.ndarray) -> float:
    """The share of whole-number resampled sums ≤ 0, floored at 1/(B+1)."""
    return max(float(np.mean(sums <= 0)), 1 / (len(sums) + 1))


def _weights(n: int, n_boot: int = 2000) -> np.ndarray:
    return np.vstack(list(resample_weights(n, n_boot, 0)))


def test_the_twenty_question_tie_reads_the_exact_p() -> None:
    got = dict(paired_success(_episodes(A), _episodes(B), 2000, 0))["mean6"]
    exact = _exact_p(_weights(20) @ (np.array(A) - np.array(B)).sum(axis=1))
    assert exact == pytest.approx(0.055)
    assert bootstrap_p(got, "greater") == exact  # 0.0495 before: a pass at α = 0.05
    assert bootstrap_p(got, "greater") >= 0.05


def test_the_table_row_reads_the_same_p() -> None:
    ep = pd.concat([_episodes(A, "enforced_rule:k=3"), _episodes(B, "none")],
                   ignore_index=True).assign(episode_id=lambda f: np.arange(len(f)))
    rows = [r for r in paired_table(ep, n_boot=2000).rows if r.scope == "mean6"]
    assert len(rows) == 1 and rows[0].p == pytest.approx(0.055)


@pytest.mark.parametrize("seed", range(8))
def test_every_share_equals_the_whole_number_count(seed: int) -> None:
    """Random arms with two seeds (values in halves; mean6 in twelfths) and per regime:
    each p equals the share computed on whole numbers, in both directions."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 2, (12, 6, 2))
    b = rng.integers(0, 2, (12, 6, 2)) * (rng.random((12, 6, 2)) < 0.9)
    got = dict(paired_success(_episodes(a, seeds=2), _episodes(b, seeds=2), 400, 0))
    w = _weights(12, 400)
    diff = (a - b).sum(axis=2)  # per question and regime, in halves
    for i, r in enumerate(MEAN6):
        sums = w @ diff[:, i]
        assert got[r].p == np.mean(sums <= 0) and got[r].p_ge == np.mean(sums >= 0), r
    sums = w @ diff.sum(axis=1)
    assert got["mean6"].p == np.mean(sums <= 0) and got["mean6"].p_ge == np.mean(sums >= 0)


def test_mean3_ties_are_exact() -> None:
    regimes = ("clean", "persistent", "recover_after_2")
    a, b = np.array(A)[:, :3], np.array(B)[:, :3]
    iv, _ = paired_regime_mean(_episodes(a, regimes=regimes), _episodes(b, regimes=regimes),
                               regimes, 2000, 0)
    sums = _weights(20) @ (a - b).sum(axis=1)
    assert iv is not None and iv.p == np.mean(sums <= 0) and iv.p_ge == np.mean(sums >= 0)


def test_grid_denominator_finds_the_grid_or_says_none() -> None:
    assert grid_denominator(np.array([0, 1, 0.5, 1 / 3])) == 6
    assert grid_denominator(np.array([0.95, 1.0, -0.05])) == 20
    assert grid_denominator(np.array([0, 1])) == 1
    assert grid_denominator(np.array([np.pi])) is None


def test_the_tolerance_is_half_the_smallest_step() -> None:
    ones = np.ones((20, 6), dtype=bool)
    values = np.zeros((20, 6))
    values[0, 0] = 0.5
    tol = paired_tolerance(values, ones, values * 0, ones, [[0], list(range(6))])
    assert tol.tolist() == [pytest.approx(1 / (2 * 20 * 2)), pytest.approx(1 / (2 * 20 * 2 * 6))]
    absent = ones.copy()
    absent[3, 0] = False
    tol = paired_tolerance(values, absent, values * 0, ones, [[0], list(range(6))])
    assert tol[0] == pytest.approx(1 / (2 * 2 * 20 * 20)) and 0 < tol[1] < 1e-10
