"""analysis.stats.bootstrap: bootstrap, paired differences, MH risk difference, Holm,
non-inferiority."""

from __future__ import annotations

import math

import numpy as np
import pytest

from analysis.stats import bootstrap as stats
from analysis.stats.bootstrap import (
    Interval,
    bootstrap_intervals,
    cluster_mean,
    cluster_sums,
    holm,
    noninferior,
    one_sided_p,
    paired_difference,
    percentile_interval,
    resample_weights,
)
from tests.oracles.stats import mh_risk_difference


def test_resample_weights_count_draws_per_cluster() -> None:
    batches = list(resample_weights(7, 600, seed=3))
    w = np.vstack(batches)
    assert w.shape == (600, 7)
    assert np.all(w.sum(axis=1) == 7)  # each resample draws 7 questions
    assert [len(b) for b in batches] == [250, 250, 100]  # fixed batch size, seeded per batch


def test_bootstrap_is_reproducible_by_seed() -> None:
    v = np.arange(20, dtype=float) % 3
    a = cluster_mean(v, n_boot=500, seed=11)
    b = cluster_mean(v, n_boot=500, seed=11)
    c = cluster_mean(v, n_boot=500, seed=12)
    assert a == b
    assert (a.low, a.high) != (c.low, c.high) or a.n_boot != c.n_boot
    assert a.estimate == pytest.approx(v.mean())


def test_paired_difference_matches_a_direct_loop() -> None:
    rng = np.random.default_rng(5)
    a = rng.integers(0, 2, 40).astype(float)
    b = rng.integers(0, 2, 40).astype(float)
    got = paired_difference(a, b, n_boot=700, seed=9)
    # The same resamples, one by one: batch i draws from default_rng([seed, i]), 250 rows
    # per batch, each row 40 question indices; the statistic is mean(a[idx] - b[idx]).
    each = []
    for batch, size in enumerate((250, 250, 200)):
        idx = np.random.default_rng([9, batch]).integers(0, 40, size=(size, 40))
        for row in idx:
            each.append(np.mean(a[row] - b[row]))
    diffs = np.array(each)
    assert got.estimate == pytest.approx(np.mean(a - b))
    assert got.low == pytest.approx(np.percentile(diffs, 2.5))
    assert got.high == pytest.approx(np.percentile(diffs, 97.5))
    assert got.p == pytest.approx(np.mean(diffs <= 0))
    assert got.n == 40 and got.n_boot == 700


def test_percentile_interval_ignores_undefined_resamples() -> None:
    boot = np.array([np.nan, 1.0, 2.0, 3.0, np.nan])
    assert percentile_interval(boot, 0.5) == (1.5, 2.5)  # 25th/75th percentile of 1, 2, 3
    assert all(math.isnan(x) for x in percentile_interval(np.array([np.nan])))


def test_one_sided_p_is_share_at_or_below_zero() -> None:
    # resampled differences -1, 0, 1, 2: two of four are <= 0
    assert one_sided_p(np.array([-1.0, 0.0, 1.0, 2.0])) == 0.5


def test_mh_risk_difference_two_strata_by_hand() -> None:
    # stratum 1: (a) 6/10, (b) 2/10 -> w = 10*10/20 = 5,   d = 0.6 - 0.2 = 0.4
    # stratum 2: (a) 2/2,  (b) 0/8  -> w = 2*8/10  = 1.6, d = 1.0 - 0.0 = 1.0
    # stratum 3: (a) 3/3,  (b) none -> w = 0 (no comparison)
    # RD = (5*0.4 + 1.6*1.0) / (5 + 1.6) = 3.6 / 6.6
    rd = mh_risk_difference(np.array([10, 2, 3]), np.array([6, 2, 3]), np.array([10, 8, 0]),
                            np.array([2, 0, 0]))
    assert rd == pytest.approx(3.6 / 6.6)
    assert math.isnan(mh_risk_difference(np.array([3]), np.array([1]), np.array([0]),
                                         np.array([0])))  # no stratum with both groups


def test_mh_risk_difference_is_vectorised_over_resamples() -> None:
    n_a = np.array([[10, 2], [5, 5]])
    y_a = np.array([[6, 2], [5, 0]])
    n_b = np.array([[10, 8], [5, 5]])
    y_b = np.array([[2, 0], [0, 5]])
    # row 2: w = 2.5 each, d = +1 and -1 -> 0
    assert mh_risk_difference(n_a, y_a, n_b, y_b) == pytest.approx([3.6 / 6.6, 0.0])


def test_holm_against_statsmodels_and_by_hand() -> None:
    # imported here, not at the top: statsmodels pulls in scipy.stats (about a second),
    # which every test worker would pay while collecting the suite
    from statsmodels.stats.multitest import multipletests

    p = [0.01, 0.04, 0.03]
    # sorted 0.01, 0.03, 0.04 times 3, 2, 1 = 0.03, 0.06, 0.04; running max 0.03, 0.06, 0.06
    assert holm(p) == pytest.approx((0.03, 0.06, 0.06))
    q = [0.2, 0.001, 0.5, 0.049, 0.012]
    assert holm(q) == pytest.approx(tuple(multipletests(q, method="holm")[1]))
    out = holm([0.01, math.nan, 0.04])
    assert math.isnan(out[1]) and out[0] == pytest.approx(0.02) and out[2] == pytest.approx(0.04)


def test_noninferiority_at_the_margin() -> None:
    assert noninferior(Interval(0.0, -0.04, 0.05)) is True
    assert noninferior(Interval(0.0, -0.06, 0.05)) is False
    assert noninferior(Interval(0.0, -0.02, 0.05), margin=-0.02) is False  # strictly above
    assert noninferior(Interval(math.nan)) is None
    assert stats.NONINFERIORITY_MARGIN == -0.05


def test_undefined_statistic_gives_nan_interval() -> None:
    (iv,) = bootstrap_intervals(lambda w: np.full(w.shape[0], np.nan), 5, n_boot=50)
    assert not iv.defined and math.isnan(iv.low)
    (empty,) = bootstrap_intervals(lambda w: w.sum(axis=1), 0, n_boot=50)
    assert not empty.defined


def test_cluster_sums_by_cluster_and_stratum() -> None:
    # rows (cluster, stratum, value): (0,1,2) (0,1,3) (1,0,5) -> [[0, 5], [5, 0]]
    out = cluster_sums(np.array([0, 0, 1]), np.array([1, 1, 0]), np.array([2.0, 3.0, 5.0]), 2, 2)
    assert out[..., 0].tolist() == [[0.0, 5.0], [5.0, 0.0]]


def test_bootstrap_p_counts_ties_against_every_alternative() -> None:
    """greater = share ≤ 0, less = share ≥ 0, two-sided = min(1, 2·min(both)), floored
    at 1/(B + 1); resampled differences of exactly 0 never count as evidence."""
    from analysis.stats.bootstrap import bootstrap_p, summarize

    boot = np.array([-1.0, 0.0, 0.0, 1.0, 2.0, 3.0, np.nan])
    iv = summarize(0.5, boot, 10, with_p=True)
    assert (iv.n_boot, iv.p, iv.p_ge) == (6, 3 / 6, 5 / 6)
    assert bootstrap_p(iv, "greater") == 3 / 6
    assert bootstrap_p(iv, "less") == 5 / 6
    assert bootstrap_p(iv, "two-sided") == 1.0
    zeros = summarize(0.0, np.zeros(99), 10, with_p=True)
    assert [bootstrap_p(zeros, a) for a in ("greater", "less", "two-sided")] == [1.0] * 3
    positive = summarize(1.0, np.ones(99), 10, with_p=True)
    assert bootstrap_p(positive, "greater") == 1 / 100       # the floor, not 0
    assert bootstrap_p(positive, "two-sided") == 1 / 100
    assert bootstrap_p(positive, "less") == 1.0
    with pytest.raises(ValueError):
        bootstrap_p(positive, "lesser")
    assert np.isnan(bootstrap_p(summarize(1.0, np.ones(9), 10), "greater"))  # no shares


def test_summarize_columns_gives_both_shares_like_summarize() -> None:
    from analysis.stats.bootstrap import summarize, summarize_columns

    rng = np.random.default_rng(0)
    boot = rng.integers(-2, 3, size=(200, 3)).astype(float)
    got = summarize_columns(np.array([0.1, 0.0, -0.2]), boot, 7, with_p=True)
    for k, iv in enumerate(got):
        assert iv == summarize([0.1, 0.0, -0.2][k], boot[:, k], 7, with_p=True)
