"""Calibration of verbalized confidence: isotonic fit, ECE, risk–coverage (docs/replay.md).

Pure functions over arrays. Isotonic regression is pool-adjacent-violators on the
calibration split only (`calibration_split` assigns whole questions, so no question
is on both sides); the fitted step function is applied to the disjoint evaluation
split (`Isotonic.predict`, linear between the fitted points, flat outside them).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from core.canonical import keyed_uniform

N_BINS = 10
"""Equal-width confidence bins of the ECE."""


@dataclass(frozen=True)
class Isotonic:
    """A fitted non-decreasing map from confidence to P(correct).

    Attributes:
        x: the distinct confidences of the fit, ascending.
        y: the fitted value at each.
    """

    x: np.ndarray
    y: np.ndarray

    def predict(self, confidence: np.ndarray) -> np.ndarray:
        """Calibrated confidence (NaN stays NaN)."""
        c = np.asarray(confidence, dtype=float)
        out = np.interp(c, self.x, self.y) if len(self.x) else np.full(c.shape, np.nan)
        return np.where(np.isnan(c), np.nan, out)


def fit_isotonic(confidence: np.ndarray, correct: np.ndarray) -> Isotonic:
    """Pool-adjacent-violators fit of correct ~ confidence (non-decreasing), by
    `scipy.optimize.isotonic_regression`.

    Args:
        confidence: stated confidences in [0, 1] (NaN rows are dropped).
        correct: 0/1 outcomes.

    Returns:
        The fitted map.
    """
    # imported here: scipy.optimize costs 0.5-1 s in a fresh process, and every `lab
    # results` call imports this module for the controllers' Gate
    from scipy.optimize import isotonic_regression

    c = np.asarray(confidence, dtype=float)
    y = np.asarray(correct, dtype=float)
    keep = ~np.isnan(c) & ~np.isnan(y)
    c, y = c[keep], y[keep]
    if not len(c):
        return Isotonic(np.zeros(0), np.zeros(0))
    xs, inverse = np.unique(c, return_inverse=True)
    counts = np.bincount(inverse).astype(float)
    means = np.bincount(inverse, weights=y) / counts
    # scipy's pool-adjacent-violators on the distinct confidences, weighted by their counts
    fitted = isotonic_regression(means, weights=counts, increasing=True).x
    return Isotonic(xs, fitted)


def ece(confidence: np.ndarray, correct: np.ndarray, bins: int = N_BINS) -> float:
    """Expected calibration error with `bins` equal-width bins on [0, 1].

    Bin i holds confidences in [i/bins, (i+1)/bins) (the last bin includes 1.0).
    ECE = Σ_bins (n_bin / n) · |mean correct − mean confidence|; NaN when empty.
    """
    c = np.asarray(confidence, dtype=float)
    y = np.asarray(correct, dtype=float)
    keep = ~np.isnan(c) & ~np.isnan(y)
    c, y = c[keep], y[keep]
    if not len(c):
        return float("nan")
    idx = np.minimum((c * bins).astype(int), bins - 1)
    n = np.bincount(idx, minlength=bins).astype(float)
    gap = np.abs(np.bincount(idx, weights=y, minlength=bins)
                 - np.bincount(idx, weights=c, minlength=bins))
    return float(gap.sum() / n.sum())


@dataclass(frozen=True)
class RiskCoverage:
    """Selective risk as coverage grows (answers sorted by confidence, highest first).

    Attributes:
        coverage: k / n for k = 1 … n.
        risk: error rate among the k most confident answers.
        aurc: area under the risk–coverage curve (mean of `risk`).
    """

    coverage: np.ndarray
    risk: np.ndarray
    aurc: float


def risk_coverage(confidence: np.ndarray, correct: np.ndarray) -> RiskCoverage:
    """Risk–coverage curve and AURC; ties in confidence are ordered by their mean.

    Answers with the same confidence enter together: within a tie the risk is the
    tie's average, so the curve does not depend on row order.
    """
    c = np.asarray(confidence, dtype=float)
    y = np.asarray(correct, dtype=float)
    keep = ~np.isnan(c) & ~np.isnan(y)
    c, y = c[keep], y[keep]
    n = len(c)
    if not n:
        return RiskCoverage(np.zeros(0), np.zeros(0), float("nan"))
    order = np.argsort(-c, kind="stable")
    c, err = c[order], 1.0 - y[order]
    # spread each tie's errors evenly over its positions (order-free)
    _, start, counts = np.unique(-c, return_index=True, return_counts=True)
    tie_err = np.repeat(np.add.reduceat(err, start) / counts, counts)
    k = np.arange(1, n + 1)
    risk = np.cumsum(tie_err) / k
    return RiskCoverage(k / n, risk, float(risk.mean()))


def calibration_split(question_ids: np.ndarray, share: float = 0.5, seed: int = 0
                      ) -> np.ndarray:
    """Whether each question is in the calibration split (whole questions, seeded hash).

    Args:
        question_ids: one id per row (rows of one question land on the same side).
        share: target share of questions in the calibration split.
        seed: split seed.

    Returns:
        Boolean mask, True = calibration split.
    """
    ids = np.asarray(question_ids).astype(str)
    uniq, inverse = np.unique(ids, return_inverse=True)
    draw = np.array([keyed_uniform(seed, q) for q in uniq])
    return (draw < share)[inverse]
