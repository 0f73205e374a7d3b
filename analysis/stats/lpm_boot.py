"""The question-cluster bootstrap of the hazard LPM's coefficients (docs/results.md): each
resample's X'X and X'y are matrix products of per-question cross-products (a question
drawn k times adds its block k times), solved in batches with no loop over rows, and
percentile intervals exactly those of solving every resample (`coefficient_intervals`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from analysis.stats.bootstrap import Interval, resample_weights, summarize

_RTOL = 1e-10
"""Relative eigenvalue cut-off for rank tests and pseudo-inverses of X'X."""
_CERTAIN = 1e-6
"""Lower bound on λ_min/tr(X'X) above which a resample's X'X is full rank beyond doubt."""


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
    `summarize` over `lstsq_weighted` on every resample, with fewer steps per resample.

    Each resample's X'X and X'y come from the same matrix products as
    `lstsq_weighted`. A batch whose every X'X is full rank beyond doubt
    (`_certainly_full_rank`) is solved by one `np.linalg.solve` over the batch, which
    is what `lstsq_weighted` does for such a batch after its eigenvalue rank test (a
    matrix's solution does not depend on the others in the stack); any other batch
    goes through `lstsq_weighted` itself.

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
    n_q = h.shape[0]
    if n_boot <= 0:  # resample_weights yields no batch
        return tuple(summarize(e, np.empty(0), n_q) for e in estimates)
    batches, xtx, xty = _resample_products(g, h, n_boot, seed)
    values = _solve_resamples(g, h, cols, batches, xtx, xty)
    return tuple(summarize(e, values[:, k], n_q) for k, e in enumerate(estimates))


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


def _solve_resamples(g: np.ndarray, h: np.ndarray, cols: tuple[int, ...],
                     batches: list[np.ndarray], xtx: np.ndarray, xty: np.ndarray
                     ) -> np.ndarray:
    """`lstsq_weighted` of every batch, (resamples, len(cols)), given the batches'
    products: one `np.linalg.solve` over every resample when all are full rank beyond
    doubt, else batch by batch."""
    chosen = list(cols)
    if _certainly_full_rank(xtx):
        return np.linalg.solve(xtx, xty[..., None])[:, chosen, 0]
    out, start = [], 0
    for w in batches:
        rows = slice(start, start + len(w))
        start += len(w)
        if _certainly_full_rank(xtx[rows]):
            out.append(np.linalg.solve(xtx[rows], xty[rows][..., None])[:, chosen, 0])
        else:
            out.append(lstsq_weighted(g, h, w, cols))
    return np.vstack(out)


def _certainly_full_rank(xtx: np.ndarray) -> bool:
    """Whether every matrix of a stack of X'X is full rank beyond doubt: far from the
    cut-off of `identified`, so that its eigenvalue test would find each full rank.

    A Cholesky factorisation of X'X − c·I with c = `_CERTAIN` · tr(X'X) succeeds only
    where λ_min(X'X) > c (up to rounding of order p·ε·tr(X'X), which is backward
    stable), and λ_max ≤ tr(X'X); so λ_min/λ_max exceeds about `_CERTAIN`, far above
    `_RTOL`. One LAPACK call covers the stack; it fails as a whole when any matrix
    fails.

    Args:
        xtx: (b, p, p) symmetric positive semi-definite matrices.

    Returns:
        True when every matrix passes.
    """
    if not len(xtx):
        return True
    b, p = xtx.shape[:2]
    shifted = xtx.reshape(b, p * p).copy()
    diagonal = shifted[:, ::p + 1]  # a view of each matrix's diagonal
    shift = _CERTAIN * diagonal.sum(axis=1)
    if not (np.isfinite(shift).all() and (shift > 0).all()):
        return False
    diagonal -= shift[:, None]
    try:
        np.linalg.cholesky(shifted.reshape(b, p, p))
    except np.linalg.LinAlgError:
        return False
    return True
