"""The bootstrap of overall regime means for many groups at once (the cost table's
success, utility and utility with all calls).

A group's statistic is the overall mean (the last column of
`analysis.measures.success.resample_means`) of each of its question matrices. Groups with the
same number of questions resample with the same weights, so each weight batch is
used once for all of them: every matrix keeps its own product with the batch (the
same shapes as `resample_means`, so the same digits), and the divisions, the means
over regimes and the percentiles run once for all matrices of the batch. Matrices
equal to the last bit (an arm without own calls has the same utility with and
without them) are resampled once: the same inputs give the same numbers.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from analysis.measures.success import MEAN6_LABEL, QuestionMatrix, resample_means
from analysis.stats.bootstrap import (
    N_BOOT,
    Interval,
    bootstrap_intervals,
    resample_weights,
    safe_ratio,
    summarize_columns,
)
from core.regimes import MEAN6


def overall_intervals(groups: Sequence[Sequence[QuestionMatrix]], scopes: Sequence[str],
                      n_boot: int = N_BOOT, seed: int = 0) -> list[tuple[Interval, ...]]:
    """The Interval of each matrix's overall regime mean, for every group.

    Group by group the same numbers, to the last digit, as
    ``bootstrap_intervals(lambda w: np.column_stack([resample_means(m, w, scope)[:, -1]
    for m in mats]), len(mats[0].questions), n_boot, seed)``.

    Args:
        groups: per group, its question matrices (all on the same questions).
        scopes: per group, "mean6" or "all" (as for `analysis.measures.success.regime_means`).
        n_boot: question-level resamples.
        seed: bootstrap seed.

    Returns:
        Per group, one Interval per matrix.
    """
    out: list[tuple[Interval, ...]] = [()] * len(groups)
    buckets: dict[int, list[int]] = {}
    for g, mats in enumerate(groups):
        buckets.setdefault(len(mats[0].questions), []).append(g)
    for n_q, members in buckets.items():
        if n_q == 0:
            for g in members:
                out[g] = _one_group(groups[g], scopes[g], n_boot, seed)
            continue
        column: dict[tuple[object, ...], int] = {}
        parts: list[_Part] = []
        where = []
        for g in members:
            for m in groups[g]:
                key = (m.value.tobytes(), m.present.tobytes(), m.value.shape, m.regimes,
                       scopes[g])
                if key not in column:
                    column[key] = len(parts)
                    parts.append(_Part(m, scopes[g]))
                where.append(column[key])
        with np.errstate(divide="ignore", invalid="ignore"):
            est = _overall(parts, np.ones((1, n_q)), n_q)[0]
            boot = [_overall(parts, w, n_q) for w in resample_weights(n_q, n_boot, seed)]
        intervals = summarize_columns(est, np.vstack(boot) if boot else np.empty((0, len(est))),
                                      n_q)
        start = 0
        for g in members:
            out[g] = tuple(intervals[k] for k in where[start:start + len(groups[g])])
            start += len(groups[g])
    return out


def _one_group(mats: Sequence[QuestionMatrix], scope: str, n_boot: int, seed: int
               ) -> tuple[Interval, ...]:
    """`overall_intervals` of one group, resampled on its own."""
    def stat(w: np.ndarray) -> np.ndarray:
        return np.column_stack([resample_means(m, w, scope)[:, -1] for m in mats])

    return bootstrap_intervals(stat, len(mats[0].questions), n_boot, seed)


class _Part:
    """One matrix's factors of `analysis.measures.success.resample_means`, formed once."""

    def __init__(self, m: QuestionMatrix, scope: str) -> None:
        self.product = m.value * m.present
        self.full = bool(m.present.all())
        self.present = None if self.full else m.present.astype(float)
        self.width = len(m.regimes)
        if scope == MEAN6_LABEL:
            cols = [m.regimes.index(r) for r in MEAN6 if r in m.regimes]
            self.cols = cols if len(cols) == len(MEAN6) else []
        else:
            self.cols = list(range(self.width))


def _overall(parts: Sequence[_Part], w: np.ndarray, n_q: int) -> np.ndarray:
    """(b, parts): each part's overall mean under the weights `w`."""
    nums = [w @ p.product for p in parts]
    if all(p.full for p in parts):
        den: np.ndarray = np.array(float(n_q))
    else:
        den = np.concatenate([np.broadcast_to(float(n_q), num.shape) if p.full
                              else w @ p.present for p, num in zip(parts, nums)], axis=1)
    per = safe_ratio(np.concatenate(nums, axis=1), den)
    width = parts[0].width
    if all(p.width == width and p.cols == list(range(width)) for p in parts) and width:
        return per.reshape(len(w), len(parts), width).mean(axis=2)
    starts = np.cumsum([0] + [p.width for p in parts])
    out = np.full((len(w), len(parts)), np.nan)
    by_width: dict[int, list[int]] = {}
    for i, p in enumerate(parts):
        if p.cols:
            by_width.setdefault(len(p.cols), []).append(i)
    for members in by_width.values():
        cols = np.array([[starts[i] + c for c in parts[i].cols] for i in members])
        out[:, members] = per[:, cols].mean(axis=2)
    return out
