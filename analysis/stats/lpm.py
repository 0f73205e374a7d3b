"""The hazard linear probability model (the main paper, App. C.2; exploratory).

answer ~ α_action + α_regime + β·run + γ·earlier useful (+ question fixed effects) on
every decision after a result judged useless, after 1–6 results, in the five failure
regimes, the final action excluded. This module holds the fit (`HazardFit`) and its
point estimates by least squares; `analysis.stats.lpm_batch` fits every group's sample
at once, and the question-cluster bootstrap (`analysis.stats.lpm_boot`) solves each
resample from per-question cross-products X'X and X'y (a resample that draws a
question k times adds its block k times), in batches, with no loop over rows. The
one-sample pandas fit they are checked against is `tests/oracles/stats.py`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from analysis.stats.bootstrap import Interval
from analysis.stats.lpm_boot import identified

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


