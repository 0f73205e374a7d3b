"""References of the statistics the library batches: the LPM's point estimates by
statsmodels, its per-question cross-products one sample at a time, the pooled and
fixed-effects fits of one sample, and the Mantel–Haenszel risk difference unbatched."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from analysis.stats.bootstrap import safe_ratio
from analysis.stats.lpm import (
    HAZARD_BOOT,
    HazardFit,
    _crossproducts,
    _fit,
    _point_estimates,
    design_matrix,
    fit_hazard,
)


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


