"""Δ's batched resampling gives every contrast the interval it gets alone,
to the last digit: the straightforward weight-matrix statistic is the reference."""

from __future__ import annotations

import numpy as np
import pytest

from analysis.measures.delta import Counts, contrasts
from analysis.stats.bootstrap import bootstrap_intervals, cluster_sums, safe_ratio
from tests.oracles.stats import mh_risk_difference


def _random_counts(rng: np.random.Generator, n_q: int, n_s: int, per_question: bool) -> Counts:
    n = 30 * n_q
    q = rng.integers(0, n_q, n)
    s = rng.integers(0, n_s, n)
    a = rng.random(n) < 0.4
    b = ~a & (rng.random(n) < 0.6)
    a[s == 0] = False  # a stratum with only (b)
    b[s == n_s - 1] = False  # and one with only (a)
    y = (rng.random(n) < np.where(a, 0.7, 0.3)).astype(float)
    return Counts.of(q, n_q, s, n_s, a, b, y, per_question, "test")


def _alone(item: Counts, n_boot: int, seed: int) -> tuple[float, ...]:
    """The interval as the unbatched code computed it (all strata, float64, mh_risk_difference)."""
    c = item.counts
    n_q, n_s = c.shape[:2]
    if item.per_question:
        n_a, y_a, n_b, y_b = (c[..., i] for i in range(4))
        w = np.nan_to_num(safe_ratio(n_a * n_b, n_a + n_b))
        d = np.nan_to_num(safe_ratio(y_a, n_a) - safe_ratio(y_b, n_b))
        num, den = (w * d).sum(axis=1), w.sum(axis=1)

        def stat(wts: np.ndarray) -> np.ndarray:
            return safe_ratio(wts @ num, wts @ den)
    else:
        flat = c.reshape(n_q, n_s * 4)

        def stat(wts: np.ndarray) -> np.ndarray:
            t = (wts @ flat).reshape(wts.shape[0], n_s, 4)
            return mh_risk_difference(t[..., 0], t[..., 1], t[..., 2], t[..., 3])

    (iv,) = bootstrap_intervals(stat, n_q, n_boot, seed)
    return iv.estimate, iv.low, iv.high, iv.n, iv.n_boot


@pytest.mark.parametrize("seed", [0, 3])
def test_batched_contrasts_equal_each_alone_to_the_last_digit(seed: int) -> None:
    rng = np.random.default_rng(seed)
    # strata counts below and above 8 (numpy sums 8 or more terms pairwise), two
    # question counts, nested strata, and a contrast whose groups never meet
    items = [_random_counts(rng, n_q, n_s, nested)
             for n_q in (25, 40) for n_s in (1, 3, 4, 9, 23) for nested in (False, True)]
    items.append(Counts.of(np.arange(6) % 3, 3, np.zeros(6, dtype=np.int64), 1,
                           np.arange(6) < 3, np.zeros(6, dtype=bool), np.ones(6), False, "t"))
    got = contrasts(items, n_boot=300, seed=seed)
    for item, c in zip(items, got):
        want = _alone(item, 300, seed)
        have = (c.interval.estimate, c.interval.low, c.interval.high, c.interval.n,
                c.interval.n_boot)
        np.testing.assert_array_equal(np.array(have), np.array(want))
        assert (c.n_a, c.n_b) == (item.n_a, item.n_b)
    assert np.isnan(got[-1].interval.estimate)
    assert contrasts([], 300, seed) == []


def test_counts_match_their_decisions() -> None:
    q = np.array([0, 0, 1, 1, 1])
    s = np.array([0, 1, 0, 1, 1])
    a = np.array([True, False, True, False, False])
    b = np.array([False, True, False, True, True])
    y = np.array([1.0, 0.0, 1.0, 1.0, 0.0])
    c = Counts.of(q, 2, s, 2, a, b, y, False, "t")
    assert (c.n_a, c.answered_a, c.n_b, c.answered_b) == (2, 2, 3, 1)
    np.testing.assert_array_equal(c.counts, cluster_sums(q, s, np.column_stack(
        [a, a * y, b, b * y]), 2, 2))


@pytest.mark.parametrize("threads", [2, 3])
def test_batches_on_threads_equal_one_thread(monkeypatch: pytest.MonkeyPatch,
                                             threads: int) -> None:
    """Resample batches spread over worker threads (a few at a time) give the intervals
    of one thread, batch for batch."""
    import analysis.measures.delta as delta

    rng = np.random.default_rng(11)
    items = [_random_counts(rng, 30, n_s, nested) for n_s in (1, 4, 9) for nested in (False, True)]
    monkeypatch.setattr(delta, "worker_threads", lambda: 1)
    want = contrasts(items, n_boot=1100, seed=2)
    monkeypatch.setattr(delta, "worker_threads", lambda: threads)
    assert repr(contrasts(items, n_boot=1100, seed=2)) == repr(want)
