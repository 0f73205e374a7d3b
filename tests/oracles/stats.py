"""References of the statistics the library batches: the hazard LPM of one sample from
its pandas design (dummies, point estimates, per-question cross-products and the
question-cluster bootstrap), the pooled and fixed-effects fits of one sample, and the
Mantel–Haenszel risk difference unbatched. The library fits every group's coded sample
at once (`analysis.stats.lpm_batch`)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from analysis.stats.bootstrap import Interval, cluster_sums, safe_ratio
from analysis.stats.codes import codes
from analysis.stats.lpm import COEFS, HAZARD_BOOT, HazardFit, point_estimates
from analysis.stats.lpm_boot import coefficient_intervals


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
        sample: `tests.oracles.measures.hazard_sample` output.
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


def _point_estimates(sample: pd.DataFrame, x: pd.DataFrame, within: bool
                     ) -> tuple[float, float]:
    """Point estimates (β, γ) on a design already built (demeaned by question when
    `within`)."""
    y = sample["answer"].to_numpy(dtype=float)
    if within:
        by_q = sample["question_id"].to_numpy()
        x = x - x.groupby(by_q).transform("mean")
        y = y - pd.Series(y).groupby(by_q).transform("mean").to_numpy()
    return point_estimates(x.to_numpy(), y, tuple(x.columns.get_loc(c) for c in COEFS))


def _crossproducts(sample: pd.DataFrame, x: pd.DataFrame, fixed_effects: bool
                   ) -> tuple[np.ndarray, np.ndarray, tuple[int, ...]]:
    """Per-question X'X and X'y of the LPM on the design without question dummies, already
    built; within-question when `fixed_effects`."""
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


def fit_hazard(sample: pd.DataFrame, judgments: str = "side_channel",
               fixed_effects: bool = False, n_boot: int = HAZARD_BOOT, seed: int = 0
               ) -> HazardFit:
    """The hazard LPM on a sample already drawn (`analysis.measures.hazard_sample.sample_frame`; the
    hazard table fits the same sample with and without question fixed effects).

    Args:
        sample: `tests.oracles.measures.hazard_sample` output.
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


def fit_statsmodels(sample: pd.DataFrame, fixed_effects: bool = False,
                    dummies: bool = False) -> tuple[float, float]:
    """Point estimates (β, γ) of statsmodels OLS on the full sample (`ols_params`).

    With question fixed effects the default fit is the within estimator: y and the
    regressors demeaned by question (identical to question dummies by
    Frisch–Waugh–Lovell, and far cheaper with hundreds of questions).

    Args:
        sample: `tests.oracles.measures.hazard_sample` output.
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


def question_crossproducts(sample: pd.DataFrame, fixed_effects: bool = False
                           ) -> tuple[np.ndarray, np.ndarray, tuple[int, ...]]:
    """Per-question X'X and X'y of the LPM, within-question when `fixed_effects`.

    With fixed effects each question's block is demeaned (X'X − s s'/n), which is
    what a resample that draws the question k times contributes k times.

    Args:
        sample: `tests.oracles.measures.hazard_sample` output.
        fixed_effects: within-question (fixed effects) version.

    Returns:
        (G of shape (questions, p, p), h of shape (questions, p), indices of run and
        earlier among the p columns).
    """
    return _crossproducts(sample, design_matrix(sample, intercept=not fixed_effects),
                          fixed_effects)


def fit_both(sample: pd.DataFrame, judgments: str = "side_channel",
             n_boot: int = HAZARD_BOOT, seed: int = 0) -> tuple[HazardFit, HazardFit]:
    """`fit_hazard` pooled and with question fixed effects, building the design once.

    Args:
        sample: `tests.oracles.measures.hazard_sample` output.
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


def mh_risk_difference(n_a: np.ndarray, y_a: np.ndarray, n_b: np.ndarray,
                       y_b: np.ndarray) -> np.ndarray:
    """Mantel–Haenszel risk difference over strata (last axis).

    RD = Σ_k w_k (y_ak/n_ak − y_bk/n_bk) / Σ_k w_k with w_k = n_ak n_bk / (n_ak + n_bk);
    a stratum missing either group has weight 0.

    Args:
        n_a: group (a) sizes, shape (..., strata).
        y_a: group (a) events.
        n_b: group (b) sizes.
        y_b: group (b) events.

    Returns:
        RD over the leading axes; NaN where every weight is 0.
    """
    n_a, y_a = np.asarray(n_a, dtype=float), np.asarray(y_a, dtype=float)
    n_b, y_b = np.asarray(n_b, dtype=float), np.asarray(y_b, dtype=float)
    w = safe_ratio(n_a * n_b, n_a + n_b)
    w = np.nan_to_num(w)
    diff = np.nan_to_num(safe_ratio(y_a, n_a) - safe_ratio(y_b, n_b))
    return safe_ratio((w * diff).sum(axis=-1), w.sum(axis=-1))


