"""The hazard LPM (`analysis.stats.lpm`) of many samples at once, from integer-coded columns.

The hazard table fits one sample per group, pooled and with question fixed effects.
`tests.oracles.stats.fit_both` does that from a DataFrame: dummies, a pandas group-by for the
within transformation and a text factorisation of the questions per fit. Here a sample
is a few arrays whose categories are already integer codes, and the fits' bootstrap
bootstraps (`analysis.stats.lpm_boot`) run on a few threads: numpy's LAPACK and BLAS calls
release the GIL, and each call is single-threaded, so its numbers do not depend on
which thread runs it.

Same numbers to the last digit: the design, its within-question version and the
per-question cross-products hold small integers or sums of them (0/1 dummies and
outcomes, runs of at most six), so every sum is exact whatever the order of additions;
the one division per mean and the cross-product corrections are the expressions
`analysis.stats.lpm` evaluates, and the least-squares steps are its own functions.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from analysis.stats.blas import worker_threads
from analysis.stats.bootstrap import Interval
from analysis.stats.lpm import HazardFit, point_estimates
from analysis.stats.lpm_boot import coefficient_intervals


@dataclass(frozen=True)
class CodedSample:
    """`tests.oracles.measures.hazard_sample` as arrays, one entry per decision.

    Attributes:
        answer: 1.0 where the decision answered, else 0.0.
        action: the action's rank among all actions by text (``str(action)``), the
            order `tests.oracles.stats.design_matrix` gives its dummies.
        regime: the regime's rank among all regimes by text.
        run: the judgment run (float).
        earlier: 1.0 after an earlier result judged useful, else 0.0.
        question: the question's rank among all questions by text.
    """

    answer: np.ndarray
    action: np.ndarray
    regime: np.ndarray
    run: np.ndarray
    earlier: np.ndarray
    question: np.ndarray


def fit_samples(samples: Sequence[CodedSample], judgments: str, n_boot: int, seed: int
                ) -> list[tuple[HazardFit, HazardFit]]:
    """`tests.oracles.stats.fit_both` of every sample (pooled, with question fixed effects),
    samples fitted on `analysis.stats.blas.worker_threads` threads.

    Args:
        samples: the samples.
        judgments: the judgment source they were drawn with.
        n_boot: resamples.
        seed: bootstrap seed.

    Returns:
        One (pooled fit, fit with question fixed effects) per sample, in their order.
    """
    return start_fits(samples, judgments, n_boot, seed)()


def start_fits(samples: Sequence[CodedSample], judgments: str, n_boot: int, seed: int
               ) -> Callable[[], list[tuple[HazardFit, HazardFit]]]:
    """`fit_samples` started on its threads, so that the caller can do other work
    meanwhile (the hazard table computes its curves): call the function it returns for
    the fits, in the samples' order (it waits for those not done). On one thread the
    fits are made when it is called.

    Args:
        samples: the samples.
        judgments: the judgment source they were drawn with.
        n_boot: resamples.
        seed: bootstrap seed.

    Returns:
        A function that returns `fit_samples`' list.
    """
    def fit(s: CodedSample) -> tuple[HazardFit, HazardFit]:
        return _fit_both(s, judgments, n_boot, seed)

    threads = min(worker_threads(), len(samples))
    if threads <= 1:
        return lambda: [fit(s) for s in samples]
    pool = ThreadPoolExecutor(threads, thread_name_prefix="lpm")
    futures = [pool.submit(fit, s) for s in samples]
    pool.shutdown(wait=False)  # its threads end once the fits submitted are made
    return lambda: [f.result() for f in futures]


def _fit_both(s: CodedSample, judgments: str, n_boot: int, seed: int
              ) -> tuple[HazardFit, HazardFit]:
    """`fit_samples` of one sample."""
    n = len(s.answer)
    if not n:
        nan = Interval(math.nan)
        return (HazardFit(nan, nan, False, judgments, 0, math.nan),
                HazardFit(nan, nan, True, judgments, 0, math.nan))
    share = float(s.earlier.sum() / n)  # pandas' mean: an exact sum of 0/1, divided
    fits = []
    for fe, (g, h, cols, estimates) in zip((False, True), _fit_inputs(s), strict=True):
        beta, gamma = coefficient_intervals(g, h, cols, estimates, n_boot, seed)
        fits.append(HazardFit(beta, gamma, fe, judgments, n, share))
    return fits[0], fits[1]


def _fit_inputs(s: CodedSample
                ) -> list[tuple[np.ndarray, np.ndarray, tuple[int, ...], tuple[float, float]]]:
    """(g, h, cols, point estimates) of the pooled fit and the fit with fixed effects
    (`tests.oracles.stats._fit`'s cross-products and estimates)."""
    z = _design(s)
    p = z.shape[1]
    q, n_q = _local(s.question)
    y = s.answer
    pooled = point_estimates(z, y, (p - 2, p - 1))
    g, h = _question_sums(z, y, q, n_q)
    n, sums, sy = g[:, 0, 0], g[:, 0, 1:], h[:, 0]
    # the within transformation: pandas' group mean is the exact sum over the count
    within = np.empty((len(y), p - 1), order="F")
    np.subtract(z[:, 1:], (sums / n[:, None])[q], out=within)
    fixed = point_estimates(within, y - (sy / n)[q], (p - 3, p - 2))
    g_fe = g[:, 1:, 1:] - sums[:, :, None] * sums[:, None, :] / n[:, None, None]
    h_fe = h[:, 1:] - sums * (sy / n)[:, None]
    return [(g, h, (p - 2, p - 1), pooled), (g_fe, h_fe, (p - 3, p - 2), fixed)]


def _design(s: CodedSample) -> np.ndarray:
    """`tests.oracles.stats.design_matrix` (with the constant) as a Fortran-ordered array, the
    layout of the DataFrame's values."""
    actions, regimes = np.unique(s.action)[1:], np.unique(s.regime)[1:]
    p = 3 + len(actions) + len(regimes)
    z = np.empty((len(s.answer), p), order="F")
    z[:, 0] = 1.0
    z[:, 1:1 + len(actions)] = s.action[:, None] == actions[None, :]
    z[:, 1 + len(actions):p - 2] = s.regime[:, None] == regimes[None, :]
    z[:, p - 2], z[:, p - 1] = s.run, s.earlier
    return z


def _local(question: np.ndarray) -> tuple[np.ndarray, int]:
    """Codes 0 … n−1 of the questions present, in their order."""
    present, local = np.unique(question, return_inverse=True)
    return local.reshape(-1).astype(np.int64), len(present)


def _question_sums(z: np.ndarray, y: np.ndarray, q: np.ndarray, n_q: int
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Per-question Σ z zᵀ (n_q, p, p) and Σ z·y (n_q, p): integer sums, exact."""
    p = z.shape[1]
    g = np.empty((n_q, p, p))
    for i in range(p):
        for j in range(i, p):
            g[:, i, j] = g[:, j, i] = np.bincount(q, weights=z[:, i] * z[:, j], minlength=n_q)
    h = np.stack([np.bincount(q, weights=z[:, i] * y, minlength=n_q) for i in range(p)],
                 axis=1)
    return g, h
