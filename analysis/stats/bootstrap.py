"""Seeded, vectorised bootstrap machinery (docs/results.md): percentile intervals, paired
differences by question, question-cluster resampling, one-sided p, Holm, non-inferiority.

Every resample is a row of a weight matrix ``W`` (resamples × clusters) holding how
often each cluster (question) was drawn. A statistic is a function of ``W`` that
returns one value (or one vector) per row, computed from per-cluster arrays with
matrix products, so no Python loop runs over rows of data inside a resample; the
only loop is over batches of resamples, which bounds memory. Row ``ones`` (every
cluster once) gives the point estimate.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np

N_BOOT = 2000
"""Default number of question-level resamples: 2,000, as in the main paper."""
LEVEL = 0.95
NONINFERIORITY_MARGIN = -0.05
_BATCH = 250
"""Resamples drawn per batch; each batch has its own seeded stream, so results depend
only on (seed, number of resamples), never on memory settings."""

Statistic = Callable[[np.ndarray], np.ndarray]


@dataclass(frozen=True)
class Interval:
    """A point estimate with its percentile bootstrap interval.

    Attributes:
        estimate: the statistic on the observed data (NaN when undefined).
        low: lower percentile bound (NaN when undefined).
        high: upper percentile bound.
        n: number of clusters (questions) the estimate rests on.
        p: the share of resampled values <= 0 (NaN unless asked for); a test's p is
            `bootstrap_p`, which also reads `p_ge`.
        n_boot: resamples in which the statistic was defined.
        p_ge: the share of resampled values >= 0 (NaN unless asked for).
    """

    estimate: float
    low: float = math.nan
    high: float = math.nan
    n: int = 0
    p: float = math.nan
    n_boot: int = 0
    p_ge: float = math.nan

    @property
    def defined(self) -> bool:
        """Whether the point estimate exists (its group was not empty)."""
        return not math.isnan(self.estimate)


UNDEFINED = Interval(math.nan)


def resample_weights(n_clusters: int, n_boot: int, seed: int = 0) -> Iterator[np.ndarray]:
    """Yield cluster-bootstrap weight matrices in batches.

    Each row is one resample: ``n_clusters`` draws with replacement, counted per
    cluster. Batch ``i`` uses ``numpy.random.default_rng([seed, i])``.

    Args:
        n_clusters: number of clusters (questions) to resample.
        n_boot: total number of resamples.
        seed: seed of the streams.

    Yields:
        read-only float arrays of shape (batch, n_clusters) whose rows sum to
        ``n_clusters``.
    """
    if n_clusters * n_boot <= _FLOAT_CELLS:
        yield from _float_batches(n_clusters, n_boot, seed)
        return
    for counts in _weight_batches(n_clusters, n_boot, seed):
        w = counts.astype(float)
        w.setflags(write=False)
        yield w


_FLOAT_CELLS = 1_250_000
"""Resample matrices up to this many cells (10 MB as floats) are also kept as floats."""


@functools.lru_cache(maxsize=4)
def _float_batches(n_clusters: int, n_boot: int, seed: int) -> tuple[np.ndarray, ...]:
    """`_weight_batches` as read-only floats, for the few question counts a table uses.

    A study's groups resample with the same few weight matrices hundreds of times;
    converting the counts to floats took longer than the products that use them
    (3.6 ms per 2,000 × 300 resamples). Four entries of at most `_FLOAT_CELLS` cells
    bound the cache at 40 MB.
    """
    out = []
    for counts in _weight_batches(n_clusters, n_boot, seed):
        w = counts.astype(float)
        w.setflags(write=False)
        out.append(w)
    return tuple(out)


@functools.lru_cache(maxsize=64)
def _weight_batches(n_clusters: int, n_boot: int, seed: int) -> tuple[np.ndarray, ...]:
    """The draws of `resample_weights` as compact read-only counts, drawn once per
    (clusters, resamples, seed).

    Every group of a table with the same number of questions resamples with the same
    weights (they depend on nothing else), so a study's hundreds of groups and arm
    pairs share one draw per question count instead of drawing their own: the
    numbers are unchanged, the drawing is not repeated. A pure function of its
    arguments, so caching it for the process is safe; uint16 keeps 64 entries of
    2,000 × 300 resamples under 80 MB.
    """
    out = []
    done, batch = 0, 0
    while done < n_boot:
        b = min(_BATCH, n_boot - done)
        rng = np.random.default_rng([seed, batch])
        idx = rng.integers(0, n_clusters, size=(b, n_clusters))
        flat = (idx + (np.arange(b) * n_clusters)[:, None]).ravel()
        counts = np.bincount(flat, minlength=b * n_clusters).reshape(b, n_clusters)
        small = counts.astype(np.uint16 if n_clusters < 65_536 else np.int64)
        small.setflags(write=False)
        out.append(small)
        done += b
        batch += 1
    return tuple(out)


def bootstrap(statistic: Statistic, n_clusters: int, n_boot: int = N_BOOT,
              seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Evaluate a weight-matrix statistic on the data and on cluster resamples.

    Args:
        statistic: maps a (b, n_clusters) weight matrix to an array of shape (b,)
            or (b, k); NaN marks a resample where the statistic is undefined.
        n_clusters: number of clusters.
        n_boot: number of resamples (0: point estimate only).
        seed: bootstrap seed.

    Returns:
        (estimate of shape (k,), resampled values of shape (n_boot, k)).
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        est = np.asarray(statistic(np.ones((1, n_clusters))), dtype=float).reshape(1, -1)[0]
        if n_clusters == 0:
            return est * np.nan, np.full((n_boot, est.size), np.nan)
        parts = [np.asarray(statistic(w), dtype=float).reshape(w.shape[0], -1)
                 for w in resample_weights(n_clusters, n_boot, seed)]
    boot = np.vstack(parts) if parts else np.empty((0, est.size))
    return est, boot


def percentile_interval(boot: np.ndarray, level: float = LEVEL) -> tuple[float, float]:
    """Percentile interval of resampled values, ignoring undefined (NaN) resamples.

    Args:
        boot: resampled values, shape (n_boot,).
        level: coverage, e.g. 0.95.

    Returns:
        (low, high); NaN when no resample is defined.
    """
    vals = boot[~np.isnan(boot)]
    if vals.size == 0:
        return math.nan, math.nan
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(vals, [tail, 100 - tail])
    return float(low), float(high)


def one_sided_p(boot: np.ndarray) -> float:
    """The share of resampled values <= 0 (the raw count behind "greater" in
    `bootstrap_p`).

    Args:
        boot: resampled values (NaN resamples are ignored).

    Returns:
        The share, or NaN when no resample is defined.
    """
    vals = boot[~np.isnan(boot)]
    return float(np.mean(vals <= 0)) if vals.size else math.nan


ALTERNATIVES = ("greater", "less", "two-sided")


def bootstrap_p(interval: Interval, alternative: str = "greater") -> float:
    """The p of a bootstrap test of a difference against 0, the one p of lab (tables
    and registered tests alike).

    With B resamples in which the difference is defined, L the share of resampled
    differences <= 0 and G the share >= 0:

    - greater (H1: difference > 0): p = L
    - less (H1: difference < 0): p = G
    - two-sided: p = min(1, 2·min(L, G))

    each floored at 1/(B + 1). A resampled difference of exactly 0 counts against
    the hypothesis in every direction, so identical arms (every difference 0) give
    p = 1 whatever the alternative, and ties never make evidence. A paired difference
    of success counts a value within half the data's resolution of 0 as exactly 0
    (`analysis.stats.ties`), so a tie that rounding left at ±1e-17 is still a tie.

    Args:
        interval: a difference's Interval computed with its shares (``with_p``).
        alternative: "greater", "less" or "two-sided".

    Returns:
        The p, NaN when no resample is defined or the shares were not computed.
    """
    if alternative not in ALTERNATIVES:
        raise ValueError(f"alternative must be one of {', '.join(ALTERNATIVES)}, "
                         f"not {alternative!r}")
    le, ge = interval.p, interval.p_ge
    if interval.n_boot <= 0 or math.isnan(le) or (alternative != "greater" and math.isnan(ge)):
        return math.nan
    share = le if alternative == "greater" else ge if alternative == "less" else min(
        1.0, 2 * min(le, ge))
    return max(share, 1.0 / (interval.n_boot + 1))


def summarize(estimate: float, boot: np.ndarray, n: int, with_p: bool = False,
              level: float = LEVEL, tie: float = 0.0) -> Interval:
    """Turn a point estimate and its resamples into an Interval.

    Args:
        estimate: statistic on the data.
        boot: resampled values, shape (n_boot,).
        n: clusters behind the estimate.
        with_p: also compute the one-sided p.
        level: interval coverage.
        tie: resampled values within this of 0 are exact ties and count as 0 in both
            shares (`analysis.stats.ties`); 0 compares as written.

    Returns:
        The Interval; everything NaN when the estimate is undefined.
    """
    if estimate is None or math.isnan(estimate):
        return Interval(math.nan, n=n)
    low, high = percentile_interval(boot, level)
    p = one_sided_p(boot - tie) if with_p else math.nan
    p_ge = one_sided_p(-boot - tie) if with_p else math.nan
    return Interval(float(estimate), low, high, n, p, int(np.sum(~np.isnan(boot))), p_ge)


def bootstrap_intervals(statistic: Statistic, n_clusters: int, n_boot: int = N_BOOT,
                        seed: int = 0, with_p: bool = False,
                        ties: np.ndarray | float = 0.0) -> tuple[Interval, ...]:
    """`bootstrap` followed by `summarize` for each output column.

    Args:
        statistic: weight-matrix statistic (see `bootstrap`).
        n_clusters: number of clusters.
        n_boot: resamples.
        seed: bootstrap seed.
        with_p: compute one-sided p values.
        ties: per column (or one for all), the tolerance within which a resampled
            value is an exact tie (`summarize`'s ``tie``).

    Returns:
        One Interval per output column.
    """
    est, boot = bootstrap(statistic, n_clusters, n_boot, seed)
    return summarize_columns(est, boot, n_clusters, with_p, ties=ties)


def summarize_columns(estimates: np.ndarray, boot: np.ndarray, n: int, with_p: bool = False,
                      level: float = LEVEL, ties: np.ndarray | float = 0.0
                      ) -> tuple[Interval, ...]:
    """`summarize` of every column of a resample matrix, the percentiles of all columns
    without an undefined resample taken in one call.

    Percentiles and shares along an axis apply the same arithmetic to each column as
    on the column alone, so each Interval equals `summarize` of its column to the
    last digit; columns with NaN resamples go through `summarize` itself.

    Args:
        estimates: (k,) point estimates.
        boot: (n_boot, k) resampled values.
        n: clusters behind the estimates.
        with_p: also compute one-sided p values.
        level: interval coverage.
        ties: (k,) tolerances (or one for all) within which a resampled value counts
            as 0 in the shares (`summarize`'s ``tie``).

    Returns:
        One Interval per column.
    """
    est = np.asarray(estimates, dtype=float).reshape(-1)
    tol = np.broadcast_to(np.asarray(ties, dtype=float), est.shape)
    out: list[Interval | None] = [None] * est.size
    defined = ~np.isnan(boot)
    full = [k for k in range(est.size) if not math.isnan(est[k]) and defined[:, k].all()]
    tail = (1 - level) / 2 * 100
    # a block of columns at a time: each column's percentiles and shares are its own, so
    # the blocks bound the copies (a table's thousands of columns took 3 copies of boot)
    for lo in range(0, len(full) if boot.shape[0] else 0, _SUMMARY_COLUMNS):
        block = full[lo:lo + _SUMMARY_COLUMNS]
        # one row per column, its resamples contiguous: numpy partitions each row in
        # place instead of gathering a strided column (the hazard table's curves: the
        # percentiles 1.5-2x faster); the same values, each row's own arithmetic
        vals = boot[:, block].T.copy()
        low, high = np.percentile(vals, [tail, 100 - tail], axis=1)
        t = tol[block][:, None]
        p = np.mean(vals <= t, axis=1).tolist() if with_p else [math.nan] * len(block)
        p_ge = np.mean(vals >= -t, axis=1).tolist() if with_p else [math.nan] * len(block)
        for j, k in enumerate(block):
            out[k] = Interval(float(est[k]), float(low[j]), float(high[j]), n, p[j],
                              boot.shape[0], p_ge[j])
    return tuple(iv if iv is not None else summarize(float(est[k]), boot[:, k], n, with_p,
                                                     level, float(tol[k]))
                 for k, iv in enumerate(out))


_SUMMARY_COLUMNS = 256
"""Columns `summarize_columns` takes at a time (4 MB of 2,000 resamples)."""


def safe_ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """Elementwise num / den with NaN where den is 0 (an empty group).

    Args:
        num: numerators.
        den: denominators (broadcast with `num`).

    Returns:
        The ratios.
    """
    num, den = np.asarray(num, dtype=float), np.asarray(den, dtype=float)
    out = np.full(np.broadcast(num, den).shape, np.nan)
    np.divide(num, den, out=out, where=den > 0)
    return out


def cluster_mean(values: np.ndarray, n_boot: int = N_BOOT, seed: int = 0) -> Interval:
    """Mean of per-cluster values with a cluster-bootstrap interval.

    Args:
        values: one value per cluster (e.g. a question's mean success).
        n_boot: resamples.
        seed: bootstrap seed.

    Returns:
        The Interval of the mean.
    """
    v = np.asarray(values, dtype=float)
    return bootstrap_intervals(lambda w: (w @ v) / w.sum(axis=1), v.size, n_boot, seed)[0]


def paired_difference(a: np.ndarray, b: np.ndarray, n_boot: int = N_BOOT,
                      seed: int = 0) -> Interval:
    """Mean of a − b over paired clusters, resampling clusters, with one-sided p.

    Args:
        a: per-question values of arm A.
        b: per-question values of arm B, aligned with `a`.
        n_boot: resamples.
        seed: bootstrap seed.

    Returns:
        Interval of mean(a − b) with p = share of resampled differences <= 0.
    """
    d = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    return bootstrap_intervals(lambda w: (w @ d) / w.sum(axis=1), d.size, n_boot, seed,
                               with_p=True)[0]


def holm(pvalues: Sequence[float], alpha: float = 0.05) -> tuple[float, ...]:
    """Holm-adjusted p values, NaN entries left out.

    The same arithmetic as statsmodels' ``multipletests(method="holm")`` (sort,
    multiply by n, n−1, …, running maximum, cap at 1, unsort), without importing it:
    that import pulls in scipy.stats and costs ~1.5 s in a fresh process.

    Args:
        pvalues: raw p values of one hypothesis across models.
        alpha: family-wise error rate (kept for the signature; adjusted p values do
            not depend on it).

    Returns:
        Adjusted p values in the input order (NaN where the input was NaN).
    """
    p = np.asarray(pvalues, dtype=float)
    out = np.full(p.shape, np.nan)
    ok = ~np.isnan(p)
    if ok.any():
        raw = p[ok]
        order = np.argsort(raw)
        adjusted = np.maximum.accumulate(raw[order] * np.arange(len(raw), 0, -1))
        adjusted[adjusted > 1] = 1
        unsorted = np.empty_like(adjusted)
        unsorted[order] = adjusted
        out[ok] = unsorted
    return tuple(float(x) for x in out)


def noninferior(interval: Interval, margin: float = NONINFERIORITY_MARGIN) -> bool | None:
    """Non-inferiority of a difference: its lower bound lies above `margin`.

    Args:
        interval: interval of a difference (arm − comparator).
        margin: non-inferiority margin (−0.05, the main paper's, App. A).

    Returns:
        True/False, or None when the interval is undefined.
    """
    if math.isnan(interval.low):
        return None
    return interval.low > margin


def cluster_sums(cluster: np.ndarray, stratum: np.ndarray, values: np.ndarray,
                 n_clusters: int, n_strata: int) -> np.ndarray:
    """Sum rows into a (clusters × strata × values) array with one bincount per column.

    Args:
        cluster: cluster code per row (0 … n_clusters−1).
        stratum: stratum code per row (0 … n_strata−1).
        values: (rows, v) array of quantities to sum (e.g. a group flag and an outcome).
        n_clusters: number of clusters.
        n_strata: number of strata.

    Returns:
        float array of shape (n_clusters, n_strata, v).
    """
    values = np.asarray(values, dtype=float)
    if values.ndim == 1:
        values = values[:, None]
    key = np.asarray(cluster, dtype=np.int64) * n_strata + np.asarray(stratum, dtype=np.int64)
    size = n_clusters * n_strata
    cols = [np.bincount(key, weights=values[:, j], minlength=size) for j in range(values.shape[1])]
    return np.stack(cols, axis=-1).reshape(n_clusters, n_strata, values.shape[1])
