"""The hazard linear probability model (SPEC §13.4, paper App. C.2; exploratory).

answer ~ α_action + α_regime + β·run + γ·earlier useful (+ question fixed effects) on
every decision after a result judged useless, after 1–6 results, in the five failure
regimes, the final action excluded. statsmodels gives the point estimates; the
question-cluster bootstrap solves each resample from per-question cross-products
X'X and X'y (a resample that draws a question k times adds its block k times), in
batches, with no loop over rows.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis.decisions import codes, judgment_columns
from analysis.stats import LEVEL, Interval, cluster_sums, resample_weights, summarize
from core.regimes import FAILURE_REGIMES

HAZARD_BOOT = 1000
LPM_T_MAX = 6
COEFS = ("run", "earlier")
_RTOL = 1e-10
"""Relative eigenvalue cut-off for rank tests and pseudo-inverses of X'X."""
_CERTAIN = 1e-6
"""Lower bound on λ_min/λ_max above which a resample's X'X is full rank beyond doubt."""
_WINDOW = 1e-6
"""Relative distance (to the largest coefficient) within which a fast solution may lie
from `np.linalg.solve`'s when X'X passes `_CERTAIN` (condition ≤ 10⁶: errors ~1e-9)."""


@dataclass(frozen=True)
class HazardFit:
    """β (run of useless judgments) and γ (earlier useful) of the hazard LPM.

    Attributes:
        beta: change in P(answer) per additional consecutive useless judgment.
        gamma: change in P(answer) after an earlier result judged not useless.
        fixed_effects: whether question fixed effects were included.
        judgments: "side_channel" or "stated".
        n_decisions: decisions in the fit.
        share_earlier: share of them with an earlier useful judgment.
    """

    beta: Interval
    gamma: Interval
    fixed_effects: bool
    judgments: str
    n_decisions: int
    share_earlier: float


def hazard_sample(dec: pd.DataFrame, judgments: str = "side_channel",
                  regimes: Sequence[str] = FAILURE_REGIMES) -> pd.DataFrame:
    """The LPM's decisions: after a result judged useless, 1–6 results, failure regimes.

    Args:
        dec: decision table rows of one arm.
        judgments: "side_channel" or "stated".
        regimes: the failure regimes fitted (default: the main family's five; another
            family's table passes its own regime, never a mix of families).

    Returns:
        DataFrame with answer, action, regime, run, earlier (0/1) and question_id.
    """
    return sample_frame(dec, np.flatnonzero(sample_mask(dec, judgments, regimes)), judgments)


def sample_mask(dec: pd.DataFrame, judgments: str = "side_channel",
                regimes: Sequence[str] = FAILURE_REGIMES) -> np.ndarray:
    """Which rows of `dec` `hazard_sample` keeps (a stated run can be unknown (−1): left out).

    Args:
        dec: decision table rows.
        judgments: "side_channel" or "stated".
        regimes: the failure regimes fitted.

    Returns:
        A boolean array, one per row.
    """
    return (dec["regime"].isin(list(regimes)).to_numpy() & ~dec["final"].to_numpy(dtype=bool)
            & after_useless(dec, slice(None), judgments))


def after_useless(dec: pd.DataFrame, rows: np.ndarray | slice, judgments: str = "side_channel"
                  ) -> np.ndarray:
    """`sample_mask` less its regime and final-action tests, on the rows `rows` of `dec`:
    after a result judged useless (run known), after 1–`LPM_T_MAX` results.

    Args:
        dec: decision table rows.
        rows: positions in `dec` (or a slice).
        judgments: "side_channel" or "stated".

    Returns:
        A boolean array, one per row taken.
    """
    run_col, latest, _ = judgment_columns(judgments)
    n_obs, run = dec["n_obs"].to_numpy()[rows], dec[run_col].to_numpy()[rows]
    return (dec[latest].to_numpy(dtype=bool)[rows] & (n_obs >= 1) & (n_obs <= LPM_T_MAX)
            & (run >= 0))


def sample_frame(dec: pd.DataFrame, rows: np.ndarray, judgments: str = "side_channel"
                 ) -> pd.DataFrame:
    """`hazard_sample`'s frame on the rows (positions in `dec`) `sample_mask` kept,
    reading only the columns it needs.

    Args:
        dec: decision table rows.
        rows: positions of the kept rows, in order.
        judgments: "side_channel" or "stated".

    Returns:
        DataFrame with answer, action, regime, run, earlier (0/1) and question_id.
    """
    run_col, _, earlier = judgment_columns(judgments)

    def column(name: str) -> pd.Series:
        return dec[name].take(rows)

    return pd.DataFrame({
        "answer": column("answer").to_numpy(dtype=float),
        "action": column("action").to_numpy(), "regime": column("regime").astype(str).to_numpy(),
        "run": column(run_col).to_numpy(dtype=float),
        "earlier": column(earlier).to_numpy(dtype=float),
        "question_id": column("question_id").astype(str).to_numpy(),
    })


def _dummies(values: pd.Series, prefix: str) -> pd.DataFrame:
    """``pd.get_dummies(values.astype(str), prefix=prefix, drop_first=True, dtype=float)``,
    built from integer codes: the same columns (the values' text sorted, the first
    dropped), names and floats, without converting every row to text."""
    codes, uniques = pd.factorize(values)
    labels = [str(u) for u in uniques]
    order = sorted(range(len(labels)), key=labels.__getitem__)
    rank = np.empty(len(labels), dtype=np.int64)
    rank[order] = np.arange(len(labels))
    out = (rank[codes][:, None] == np.arange(1, len(labels))[None, :]).astype(float)
    return pd.DataFrame(out, index=values.index,
                        columns=[f"{prefix}_{labels[i]}" for i in order[1:]])


def design_matrix(sample: pd.DataFrame, fixed_effects: bool = False,
                  intercept: bool = True) -> pd.DataFrame:
    """Regressors of the LPM: [const], action and regime dummies, run, earlier[, question].

    Args:
        sample: `hazard_sample` output.
        fixed_effects: add question dummies (first question dropped).
        intercept: include a constant column.

    Returns:
        The design as a float DataFrame (the coefficient names are its columns).
    """
    parts = [_dummies(sample["action"], "action"), _dummies(sample["regime"], "regime"),
             sample[list(COEFS)].astype(float)]
    if fixed_effects:
        parts.append(_dummies(sample["question_id"], "q"))
    x = pd.concat(parts, axis=1)
    if intercept:
        x.insert(0, "const", 1.0)
    return x


def _identified(xtx: np.ndarray, cols: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Per matrix in a stack of X'X: full rank?, and is each coefficient in `cols` identified?

    A full-rank X'X identifies everything; otherwise coefficient c is identified when
    dropping its column lowers the rank by one.
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


def fit_statsmodels(sample: pd.DataFrame, fixed_effects: bool = False,
                    dummies: bool = False) -> tuple[float, float]:
    """Point estimates (β, γ) of statsmodels OLS on the full sample (`ols_params`).

    With question fixed effects the default fit is the within estimator: y and the
    regressors demeaned by question (identical to question dummies by
    Frisch–Waugh–Lovell, and far cheaper with hundreds of questions).

    Args:
        sample: `hazard_sample` output.
        fixed_effects: include question fixed effects.
        dummies: fit the fixed effects as explicit question dummies instead.

    Returns:
        (β, γ); NaN for a coefficient that is not identified (e.g. no decision with
        an earlier useful judgment, so run is collinear with the action).
    """
    if sample.empty:
        return math.nan, math.nan
    if fixed_effects and not dummies:
        return _point_estimates(sample, design_matrix(sample, intercept=False), True)
    return _point_estimates(sample, design_matrix(sample, fixed_effects), False)


def _point_estimates(sample: pd.DataFrame, x: pd.DataFrame, within: bool
                     ) -> tuple[float, float]:
    """`fit_statsmodels` on a design already built (demeaned by question when `within`)."""
    y = sample["answer"].to_numpy(dtype=float)
    if within:
        by_q = sample["question_id"].to_numpy()
        x = x - x.groupby(by_q).transform("mean")
        y = y - pd.Series(y).groupby(by_q).transform("mean").to_numpy()
    return point_estimates(x.to_numpy(), y, tuple(x.columns.get_loc(c) for c in COEFS))


def point_estimates(x: np.ndarray, y: np.ndarray, cols: tuple[int, ...]
                    ) -> tuple[float, float]:
    """(β, γ) of `ols_params` on a design, NaN where not identified.

    Args:
        x: the design (n, p), already demeaned by question for fixed effects.
        y: the outcomes (n,), likewise.
        cols: the columns of run and earlier.

    Returns:
        (β, γ).
    """
    # a rank-deficient design is expected (e.g. no earlier useful judgment); the
    # identification test below turns the affected coefficients into NaN
    params = ols_params(x, y)
    _, ok = _identified((x.T @ x)[None], cols)
    beta, gamma = (float(params[c]) if good else math.nan for c, good in zip(cols, ok[0]))
    return beta, gamma


def ols_params(x: np.ndarray, y: np.ndarray, rcond: float = 1e-15) -> np.ndarray:
    """statsmodels' ``OLS(y, x).fit().params`` (method "pinv"), the same arithmetic.

    statsmodels computes the pseudo-inverse by SVD, inverting singular values above
    ``rcond`` × the largest (``statsmodels.tools.tools.pinv_extended``), then
    params = pinv(x) · y. Doing exactly that here gives the same digits without
    importing statsmodels, which pulls in scipy.stats (1.5–7 s in a fresh process).

    Args:
        x: design matrix (n, p).
        y: outcomes (n,).
        rcond: relative cut-off for small singular values.

    Returns:
        The p coefficients.
    """
    x = np.asarray(x).conjugate()
    u, s, vt = np.linalg.svd(x, False)
    cutoff = rcond * np.maximum.reduce(s)
    for i in range(min(vt.shape[1], u.shape[0])):
        s[i] = 1.0 / s[i] if s[i] > cutoff else 0.0
    pinv = np.dot(np.transpose(vt), np.multiply(s[:, np.newaxis], np.transpose(u)))
    return np.dot(pinv, y)


def question_crossproducts(sample: pd.DataFrame, fixed_effects: bool = False
                           ) -> tuple[np.ndarray, np.ndarray, tuple[int, ...]]:
    """Per-question X'X and X'y of the LPM, within-question when `fixed_effects`.

    With fixed effects each question's block is demeaned (X'X − s s'/n), which is
    what a resample that draws the question k times contributes k times.

    Args:
        sample: `hazard_sample` output.
        fixed_effects: within-question (fixed effects) version.

    Returns:
        (G of shape (questions, p, p), h of shape (questions, p), indices of run and
        earlier among the p columns).
    """
    return _crossproducts(sample, design_matrix(sample, intercept=not fixed_effects),
                          fixed_effects)


def _crossproducts(sample: pd.DataFrame, x: pd.DataFrame, fixed_effects: bool
                   ) -> tuple[np.ndarray, np.ndarray, tuple[int, ...]]:
    """`question_crossproducts` on the design without question dummies, already built."""
    z, y = x.to_numpy(), sample["answer"].to_numpy(dtype=float)
    q, uniq = codes(sample["question_id"])
    n_q, p = len(uniq), z.shape[1]
    zero = np.zeros_like(q)
    outer = (z[:, :, None] * z[:, None, :]).reshape(len(z), p * p)
    g = cluster_sums(q, zero, outer, n_q, 1)[:, 0, :].reshape(n_q, p, p)
    h = cluster_sums(q, zero, z * y[:, None], n_q, 1)[:, 0, :]
    if fixed_effects:
        n = cluster_sums(q, zero, np.ones(len(z)), n_q, 1)[:, 0, 0]
        s = cluster_sums(q, zero, z, n_q, 1)[:, 0, :]
        sy = cluster_sums(q, zero, y, n_q, 1)[:, 0, 0]
        g = g - s[:, :, None] * s[:, None, :] / n[:, None, None]
        h = h - s * (sy / n)[:, None]
    return g, h, tuple(x.columns.get_loc(c) for c in COEFS)


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
    full, ok = _identified(xtx, cols)
    coef = np.full((len(xtx), len(cols)), np.nan)
    if full.any():
        coef[full] = np.linalg.solve(xtx[full], xty[full][..., None])[:, list(cols), 0]
    if (~full).any():
        rest = np.einsum("bij,bj->bi", np.linalg.pinv(xtx[~full], hermitian=True, rtol=_RTOL),
                         xty[~full])[:, list(cols)]
        coef[~full] = np.where(ok[~full], rest, np.nan)
    return coef


def hazard_model(dec: pd.DataFrame, judgments: str = "side_channel",
                 fixed_effects: bool = False, n_boot: int = HAZARD_BOOT,
                 seed: int = 0, regimes: Sequence[str] = FAILURE_REGIMES) -> HazardFit:
    """The hazard LPM answer ~ action + regime + β·run + γ·earlier [+ question] (SPEC §13.4).

    statsmodels gives the point estimates; the question-cluster bootstrap solves
    each resample from per-question cross-products (identical on the full sample).

    Args:
        dec: decision table rows of one arm.
        judgments: "side_channel" or "stated".
        fixed_effects: include question fixed effects.
        n_boot: resamples (SPEC: 1,000).
        seed: bootstrap seed.
        regimes: the failure regimes fitted (`hazard_sample`).

    Returns:
        The HazardFit (NaN coefficients where not identified).
    """
    return fit_hazard(hazard_sample(dec, judgments, regimes), judgments, fixed_effects, n_boot,
                      seed)


def fit_hazard(sample: pd.DataFrame, judgments: str = "side_channel",
               fixed_effects: bool = False, n_boot: int = HAZARD_BOOT, seed: int = 0
               ) -> HazardFit:
    """`hazard_model` on a `hazard_sample` already drawn (the hazard table fits the same
    sample with and without question fixed effects).

    Args:
        sample: `hazard_sample` output.
        judgments: the judgment source the sample was drawn with.
        fixed_effects: include question fixed effects.
        n_boot: resamples.
        seed: bootstrap seed.

    Returns:
        The HazardFit.
    """
    n = len(sample)
    share = float(sample["earlier"].mean()) if n else math.nan
    if n == 0:
        nan = Interval(math.nan)
        return HazardFit(nan, nan, fixed_effects, judgments, 0, share)
    return _fit(sample, design_matrix(sample, intercept=not fixed_effects), judgments,
                fixed_effects, n_boot, seed)


def fit_both(sample: pd.DataFrame, judgments: str = "side_channel",
             n_boot: int = HAZARD_BOOT, seed: int = 0) -> tuple[HazardFit, HazardFit]:
    """`fit_hazard` pooled and with question fixed effects, building the design once.

    Args:
        sample: `hazard_sample` output.
        judgments: the judgment source the sample was drawn with.
        n_boot: resamples.
        seed: bootstrap seed.

    Returns:
        (pooled fit, fit with question fixed effects).
    """
    if sample.empty:
        return (fit_hazard(sample, judgments, False, n_boot, seed),
                fit_hazard(sample, judgments, True, n_boot, seed))
    x = design_matrix(sample)  # the design without intercept is the same less "const"
    return (_fit(sample, x, judgments, False, n_boot, seed),
            _fit(sample, x.drop(columns="const"), judgments, True, n_boot, seed))


def _fit(sample: pd.DataFrame, x: pd.DataFrame, judgments: str, fixed_effects: bool,
         n_boot: int, seed: int) -> HazardFit:
    """`fit_hazard` on a non-empty sample and its design, already built (one design serves
    the point estimates, within-question with fixed effects, and the cross-products)."""
    n = len(sample)
    share = float(sample["earlier"].mean())
    beta, gamma = _point_estimates(sample, x, fixed_effects)
    g, h, cols = _crossproducts(sample, x, fixed_effects)
    beta_i, gamma_i = coefficient_intervals(g, h, cols, (beta, gamma), n_boot, seed)
    return HazardFit(beta_i, gamma_i, fixed_effects, judgments, n, share)


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


_STACK = 8
"""Fits whose resamples `intervals_many` solves in one pass (8 × 1,000 matrices of 12²
floats: ~10 MB per array of the factorisation)."""


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
    `_CERTAIN` (far above `_RTOL`, the cut-off of `_identified`), X'X is full rank and
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
