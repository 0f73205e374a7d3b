"""The hazard linear probability model (the main paper, App. C.2; exploratory).

answer ~ α_action + α_regime + β·run + γ·earlier useful (+ question fixed effects) on
every decision after a result judged useless, after 1–6 results, in the five failure
regimes, the final action excluded. statsmodels gives the point estimates; the
question-cluster bootstrap (`analysis.stats.lpm_boot`) solves each resample from
per-question cross-products X'X and X'y (a resample that draws a question k times adds
its block k times), in batches, with no loop over rows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis.stats.bootstrap import Interval, cluster_sums
from analysis.stats.codes import codes
from analysis.stats.lpm_boot import coefficient_intervals, identified

HAZARD_BOOT = 1000
COEFS = ("run", "earlier")


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
    _, ok = identified((x.T @ x)[None], cols)
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
