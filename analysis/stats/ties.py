"""When a resampled difference is exactly zero: the tolerance tied to the data's
resolution.

A paired difference of success is a difference of means of per-question values
that lie on a grid (a question's seed average k/s, a regime mean over n questions,
an equal-weight mean over R regimes). In exact arithmetic a resample whose two arms
tie gives 0; in floating point the two means, each summed in its own order, can
differ by ~1e-17, and a one-sided p would count that tie for or against the
hypothesis at random. The smallest nonzero difference the grid allows is known, so
any resampled value within half of it is an exact tie: `paired_tolerance` computes
that half for each column of a paired statistic, and
`analysis.stats.bootstrap.summarize_columns` counts values within it as 0.

Where the values lie on no grid (or the grid is too fine to tell apart from rounding),
the tolerance falls back to a bound on the floating-point error of the sums, so only
differences that rounding alone could have produced count as ties.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction

import numpy as np

MAX_DENOMINATOR = 100_000
"""The largest grid denominator searched for (a seed average over up to hundreds of
episodes, a utility priced in hundredths of a correct answer, and their products)."""
_ON_GRID = 1e-9
"""How far (relative to the grid step) a value may lie from its grid point."""
_ROUNDING = 64 * np.finfo(float).eps
"""Per-term relative error allowed for a resampled sum (far above what the products
and means of `analysis.measures.success` accumulate)."""


def grid_denominator(values: np.ndarray) -> int | None:
    """The smallest L with every value × L a whole number, or None.

    Args:
        values: finite floats (a question's mean in a regime, any sign).

    Returns:
        L (1 for whole numbers), or None when some value has no denominator up to
        `MAX_DENOMINATOR`.
    """
    distinct = np.unique(np.asarray(values, dtype=float))
    den = 1
    for v in distinct.tolist():
        if not math.isfinite(v):
            return None
        frac = Fraction(v).limit_denominator(MAX_DENOMINATOR)
        if abs(float(frac) - v) > _ON_GRID / frac.denominator:
            return None
        den = math.lcm(den, frac.denominator)
        if den > MAX_DENOMINATOR:
            return None
    return den


def rounding_bound(n: int, scale: float) -> float:
    """The floating-point error a resampled mean of `n` values of size ≤ `scale` can
    carry (both arms' means, subtracted)."""
    return 2 * _ROUNDING * max(n, 1) * max(scale, 1.0)


def paired_tolerance(a_values: np.ndarray, a_present: np.ndarray, b_values: np.ndarray,
                     b_present: np.ndarray, columns: Sequence[Sequence[int]]) -> np.ndarray:
    """Half the smallest nonzero value of each column of a paired statistic.

    The statistic's column k is the equal-weight mean over the regimes `columns[k]` of
    (arm A's regime mean − arm B's regime mean), each regime mean the weighted mean
    of the questions present in it (`analysis.measures.success.regime_means`). With
    every value on the grid 1/L:

    - every question present in both arms in those regimes: the column is a whole
      number over n·L·R (n questions, R regimes), so its half-step is 1/(2nLR);
    - one regime, some questions absent: a difference of two fractions with
      denominators L·m and L·m' (m, m' ≤ n), at least 1/(L·n²) apart from 0;
    - several regimes with absent questions, or no grid: the rounding bound.

    Args:
        a_values: (questions, regimes) arm A's means (0 where absent).
        a_present: (questions, regimes) whether arm A ran the question there.
        b_values: arm B's, on the same questions and regimes.
        b_present: arm B's presence.
        columns: per column of the statistic, the regime indices it averages.

    Returns:
        (columns,) tolerances, each > 0.
    """
    n = a_values.shape[0]
    cells = np.concatenate([a_values[a_present], b_values[b_present]])
    scale = float(np.max(np.abs(cells))) if cells.size else 1.0
    floor = rounding_bound(n, scale)
    den = grid_denominator(cells) if cells.size else 1
    out = np.full(len(columns), floor)
    if den is None or n == 0:
        return out
    for k, regimes in enumerate(columns):
        cols = list(regimes)
        if not cols:
            continue
        full = bool(a_present[:, cols].all() and b_present[:, cols].all())
        if full:
            step = 1.0 / (n * den * len(cols))
        elif len(cols) == 1:
            step = 1.0 / (den * n * n)
        else:
            continue
        out[k] = max(step / 2, floor)
    return out
