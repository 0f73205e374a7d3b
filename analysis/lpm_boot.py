"""The question-cluster bootstrap of the hazard LPM's coefficients (SPEC §13.4): each
resample's X'X and X'y are matrix products of per-question cross-products (a question
drawn k times adds its block k times), solved in batches with no loop over rows, and
percentile intervals exactly those of solving every resample (`coefficient_intervals`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from analysis.stats import LEVEL, Interval, resample_weights, summarize

_RTOL = 1e-10
"""Relative eigenvalue cut-off for rank tests and pseudo-inverses of X'X."""
_CERTAIN = 1e-6
"""Lower bound on λ_min/λ_max above which a resample's X'X is full rank beyond doubt."""
_WINDOW = 1e-6
"""Relative distance (to the largest coefficient) within which a fast solution may lie
from `np.linalg.solve`'s when X'X passes `_CERTAIN` (condition ≤ 10⁶: errors ~1e-9)."""


def identified(xtx: np.ndarray, cols: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Per matrix in a stack of X'X: full rank?, and is each coefficient in `cols` identified?

    A full-rank X'X identifies everything; otherwise coefficient c is identified when
    dropping its column lowers the rank by one.

    Args:
        xtx: (b, p, p) cross-product matrices.
        cols: the coefficients asked about.

    Returns:
        (full rank (b,), identified (b, len(cols))).
    """
    ev = np.linalg.eigvalsh(xtx)
    full = ev[..., 0] > _RTOL * np.maximum(ev[..., -1], np.finfo(float).tiny)
    out = np.repeat(full[..., None], len(cols), axis=-1)
    if full.all():
        return full, out
    bad = ~full
    sub = xtx[bad]
    rank = np.linalg.matrix_rank(sub, hermitian=True, rtol=_RTOL)
    for k, c in enumerate(cols):
        keep = [i for i in range(xtx.shape[-1]) if i != c]
        out[bad, k] = rank - np.linalg.matrix_rank(sub[:, keep][:, :, keep], hermitian=True,
                                                   rtol=_RTOL) == 1
    return full, out


def lstsq_weighted(g: np.ndarray, h: np.ndarray, weights: np.ndarray,
                   cols: tuple[int, ...]) -> np.ndarray:
    """Least-squares coefficients for question-weighted samples, batched.

    Args:
        g: per-question X'X, (questions, p, p).
        h: per-question X'y, (questions, p).
        weights: (b, questions) resample counts.
        cols: coefficients to return.

    Returns:
        (b, len(cols)) coefficients; NaN where a coefficient is not identified.
    """
    n_q, p = h.shape
    xtx = (weights @ g.reshape(n_q, p * p)).reshape(-1, p, p)
    xty = weights @ h
    full, ok = identified(xtx, cols)
    coef = np.full((len(xtx), len(cols)), np.nan)
    if full.any():
        coef[full] = np.linalg.solve(xtx[full], xty[full][..., None])[:, list(cols), 0]
    if (~full).any():
        rest = np.einsum("bij,bj->bi", np.linalg.pinv(xtx[~full], hermitian=True, rtol=_RTOL),
                         xty[~full])[:, list(cols)]
        coef[~full] = np.where(ok[~full], rest, np.nan)
    return coef


def coefficient_intervals(g: np.ndarray, h: np.ndarray, cols: tuple[int, ...],
                          estimates: Sequence[float], n_boot: int, seed: int
                          ) -> tuple[Interval, ...]:
    """Question-cluster bootstrap intervals of the coefficients `cols`, exactly those of
    `summarize` over `lstsq_weighted` on every resample, without solving every resample
    exactly.

    A percentile interval reads only a few order statistics of the resamples, and the
    count of defined ones. Each resample's X'X and X'y come from the same matrix
    products as `lstsq_weighted`; a batch whose every X'X is full rank beyond doubt
    (`_spd_solve`) is solved by a vectorised Cholesky factorisation, any other batch by
    `lstsq_weighted` itself. Resamples whose approximate coefficient lies near one of
    the order statistics the percentiles read are then solved exactly as
    `lstsq_weighted` solves them (`np.linalg.solve`, matrix by matrix), so those order
    statistics, hence the interval, are the exact ones.

    Args:
        g: per-question X'X, (questions, p, p).
        h: per-question X'y, (questions, p).
        cols: coefficients to report.
        estimates: their point estimates, one per column.
        n_boot: resamples.
        seed: bootstrap seed.

    Returns:
        One Interval per coefficient in `cols`.
    """
    return intervals_many([(g, h, cols, estimates)], n_boot, seed)[0]


def intervals_many(fits: Sequence[tuple[np.ndarray, np.ndarray, tuple[int, ...],
                                        Sequence[float]]], n_boot: int, seed: int
                   ) -> list[tuple[Interval, ...]]:
    """`coefficient_intervals` of many fits, the Cholesky solves of fits with the same
    number of coefficients in one vectorised pass (a matrix's solution does not depend
    on the others in the stack; each fit's products and exact solves are its own).

    Args:
        fits: (g, h, cols, estimates) per fit, as `coefficient_intervals` takes them.
        n_boot: resamples.
        seed: bootstrap seed.

    Returns:
        Per fit, one Interval per coefficient in its `cols`.
    """
    out: list[tuple[Interval, ...]] = [()] * len(fits)
    by_p: dict[int, list[int]] = {}
    for i, (_, h, _, estimates) in enumerate(fits):
        if n_boot > 0:  # resample_weights yields a batch
            by_p.setdefault(h.shape[1], []).append(i)
        else:
            out[i] = tuple(summarize(e, np.empty(0), h.shape[0]) for e in estimates)
    for members in by_p.values():
        for start in range(0, len(members), _STACK):
            chunk = members[start:start + _STACK]
            products = [_resample_products(fits[i][0], fits[i][1], n_boot, seed)
                        for i in chunk]
            certain, coef = _spd_solve(np.concatenate([x for _, x, _ in products]),
                                       np.concatenate([y for _, _, y in products]))
            at = 0
            for i, (batches, xtx, xty) in zip(chunk, products, strict=True):
                rows = slice(at, at + len(xtx))
                at += len(xtx)
                out[i] = _intervals(*fits[i], batches, xtx, xty, certain[rows], coef[rows])
    return out


_STACK = 4
"""Fits whose resamples `intervals_many` solves in one pass (4 × 1,000 matrices of 12²
floats: ~5 MB per array of the factorisation; larger stacks were no faster)."""


def _resample_products(g: np.ndarray, h: np.ndarray, n_boot: int, seed: int
                       ) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    """The resample weight batches and every resample's X'X and X'y, by the matrix
    products `lstsq_weighted` computes (batch by batch)."""
    n_q, p = h.shape
    flat = g.reshape(n_q, p * p)
    batches = list(resample_weights(n_q, n_boot, seed))
    if _exact_products(flat, n_q):  # pooled X'X: many zero and repeated columns
        columns, spread = distinct_columns(flat)
        xtx = np.concatenate([(w @ columns)[:, spread].reshape(-1, p, p) for w in batches])
    else:
        xtx = np.concatenate([(w @ flat).reshape(-1, p, p) for w in batches])
    xty = np.concatenate([w @ h for w in batches])
    return batches, xtx, xty


def _exact_products(a: np.ndarray, n_q: int) -> bool:
    """Whether a resample's products with `a` are exact whatever the order of additions:
    integer entries, and every partial sum (weights summing to `n_q`) below 2⁵³."""
    return bool(np.array_equal(a, np.rint(a))
                and n_q * float(np.abs(a).max(initial=0.0)) < 2.0 ** 53)


def distinct_columns(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct columns of a matrix, and where each column is among them.

    Args:
        a: a (rows, k) matrix.

    Returns:
        (distinct columns in order of first occurrence (rows, d), index (k,) into them:
        ``distinct[:, index]`` equals `a`).
    """
    found: dict[bytes, int] = {}
    index = np.array([found.setdefault(c.tobytes(), len(found)) for c in a.T], dtype=np.int64)
    first = np.unique(index, return_index=True)[1]
    return np.ascontiguousarray(a[:, first]), index


def _intervals(g: np.ndarray, h: np.ndarray, cols: tuple[int, ...], estimates: Sequence[float],
               batches: list[np.ndarray], xtx: np.ndarray, xty: np.ndarray,
               certain: np.ndarray, coef: np.ndarray) -> tuple[Interval, ...]:
    """`coefficient_intervals` once the resamples' products and their `_spd_solve` are
    known."""
    n_q = h.shape[0]
    scale = float(np.abs(coef[certain]).max(initial=0.0))
    boot, exact, start = [], [], 0
    for w in batches:
        rows = slice(start, start + len(w))
        start += len(w)
        if certain[rows].all():
            boot.append(coef[rows][:, list(cols)])
            exact.append(np.zeros(len(w), dtype=bool))
        else:
            boot.append(lstsq_weighted(g, h, w, cols))
            exact.append(np.ones(len(w), dtype=bool))
    values, solved = np.vstack(boot), np.concatenate(exact)
    near = np.zeros(len(values), dtype=bool)
    for k in range(len(cols)):
        near |= _near_order_statistics(values[:, k], _WINDOW * scale) & ~solved
    if near.any():
        values[near] = np.linalg.solve(xtx[near], xty[near][..., None])[:, list(cols), 0]
    return tuple(summarize(e, values[:, k], n_q) for k, e in enumerate(estimates))


def _near_order_statistics(values: np.ndarray, tolerance: float) -> np.ndarray:
    """Rows whose value lies within 2·`tolerance` of an order statistic that
    `summarize`'s percentiles read (with a rank of margin on each side).

    If every value is within `tolerance` of its exact counterpart, replacing these rows
    by their exact values gives exactly the exact order statistics at those ranks: a
    row outside the window lies on the same side of them approximately and exactly.
    """
    defined = ~np.isnan(values)
    n = int(defined.sum())
    if n == 0:
        return defined
    tail = (1 - LEVEL) / 2
    pos = np.floor(np.array([tail, 1 - tail]) * (n - 1)).astype(np.int64)
    ranks = np.unique(np.clip((pos[:, None] + np.arange(-1, 3)).ravel(), 0, n - 1))
    stats = np.partition(values[defined], ranks)[ranks]
    with np.errstate(invalid="ignore"):
        return (np.abs(values[:, None] - stats[None, :]) <= 2 * tolerance).any(axis=1)


def _spd_solve(xtx: np.ndarray, xty: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Vectorised Cholesky solve of a stack of X'X b = X'y, and which X'X are full rank
    beyond doubt.

    λ_min ≥ 1/tr(X'X⁻¹) and λ_max ≤ tr(X'X), so when 1/(tr X'X · tr X'X⁻¹) exceeds
    `_CERTAIN` (far above `_RTOL`, the cut-off of `identified`), X'X is full rank and
    well conditioned (condition number ≤ 1/`_CERTAIN`): the solution here is then within
    a relative `_WINDOW` of `np.linalg.solve`'s. The stack is the last axis, so every
    step is one elementwise operation over all matrices.

    Args:
        xtx: (b, p, p) symmetric positive semi-definite matrices.
        xty: (b, p) right-hand sides.

    Returns:
        (certainly full rank, (b,), solutions (b, p); meaningless where not certain).
    """
    a, rhs = np.ascontiguousarray(np.moveaxis(xtx, 0, -1)), np.ascontiguousarray(xty.T)
    p = a.shape[0]
    low, inv = np.zeros_like(a), np.zeros_like(a)
    z, coef = np.zeros_like(rhs), np.zeros_like(rhs)
    ok = np.ones(a.shape[-1], dtype=bool)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for j in range(p):  # Cholesky a = low · lowᵀ, column by column
            d = a[j, j] - np.square(low[j, :j]).sum(axis=0)
            ok &= d > 0
            low[j, j] = np.sqrt(np.where(d > 0, d, 1.0))
            low[j + 1:, j] = (a[j + 1:, j] - (low[j + 1:, :j] * low[j, :j]).sum(axis=1)
                              ) / low[j, j]
        for i in range(p):  # inv = low⁻¹ (lower triangular) and low · z = rhs, row by row
            row = -(low[i, :i, None] * inv[:i, :i + 1]).sum(axis=0)
            row[i] += 1.0
            inv[i, :i + 1] = row / low[i, i]
            z[i] = (rhs[i] - (low[i, :i] * z[:i]).sum(axis=0)) / low[i, i]
        for i in reversed(range(p)):  # lowᵀ · coef = z
            coef[i] = (z[i] - (low[i + 1:, i] * coef[i + 1:]).sum(axis=0)) / low[i, i]
        bound = 1.0 / (np.trace(a) * np.square(inv).sum(axis=(0, 1)))
        certain = ok & (bound > _CERTAIN) & np.isfinite(coef).all(axis=0)
    return certain, coef.T
