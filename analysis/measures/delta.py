"""The time-matched contrast Δ and the design-label contrast (the main paper, App. C.1).

After t observations let s be the current run judged useless. At decisions with
3 ≤ t ≤ 6, the final action excluded, group (a) has s = t and group (b)
1 ≤ s ≤ t − 2 (s = t − 1 is in neither). Δ is the Mantel–Haenszel risk difference
in answering between (a) and (b), stratified by t (or by question × action, or by
regime × action), with a question-cluster bootstrap interval. The design-label
contrast compares `persistent` with `late_onset_from_3` decisions at the same action.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from itertools import islice

import numpy as np
import pandas as pd

from analysis.base.arms import ArmKey, Grouping
from analysis.base.rows import Row, Table, interval_row
from analysis.measures.decisions import REPLAYED, judgment_columns, judgment_sources
from analysis.measures.results import TableInput, TablePart
from analysis.stats.blas import worker_threads
from analysis.stats.bootstrap import (
    N_BOOT,
    UNDEFINED,
    Interval,
    resample_weights,
    safe_ratio,
    summarize,
    summarize_columns,
)

# sorted_codes: `codes`' sorted codes (the frame's question ids and regimes are never
# missing, so no missing-value code)
from analysis.stats.codes import sorted_codes
from core.regimes import DELTA_FAILURE, DELTA_REGIMES, FAILURE_REGIMES, MAIN_FAMILY

T_MIN, T_MAX = 3, 6
STRATA = ("t", "question_action", "regime_action", "action")
DESIGN_A, DESIGN_B = "persistent", "late_onset_from_3"
_ROWS = 32
"""Resamples whose MH terms are computed together (a few hundred KB per temporary)."""
_DENSE_PAIRS = 1 << 24
"""Up to this many (group, question) pairs, questions are coded through a dense table."""


@dataclass(frozen=True)
class Contrast:
    """A Mantel–Haenszel contrast between two groups of decisions.

    Attributes:
        interval: risk difference (a) − (b) with its question-cluster interval.
        n_a: decisions in group (a).
        n_b: decisions in group (b).
        answered_a: answers in group (a).
        answered_b: answers in group (b).
        strata: what the risk difference is stratified by.
    """

    interval: Interval
    n_a: int
    n_b: int
    answered_a: int
    answered_b: int
    strata: str

    @property
    def detail(self) -> str:
        """Group sizes as text, e.g. "a 12/40, b 3/55" (answers/decisions)."""
        return f"a {self.answered_a}/{self.n_a}, b {self.answered_b}/{self.n_b}"


@dataclass(frozen=True)
class Counts:
    """One contrast before resampling: its decisions counted per question and stratum.

    Attributes:
        counts: (questions, strata, 4) floats: decisions in (a), answers in (a),
            decisions in (b), answers in (b).
        per_question: strata are nested in questions.
        strata: label recorded in the result.
        n_a: decisions in group (a).
        n_b: decisions in group (b).
        answered_a: answers in group (a).
        answered_b: answers in group (b).
    """

    counts: np.ndarray
    per_question: bool
    strata: str
    n_a: int
    n_b: int
    answered_a: int
    answered_b: int

    @classmethod
    def of(cls, q: np.ndarray, n_q: int, s: np.ndarray, n_s: int, a: np.ndarray, b: np.ndarray,
           y: np.ndarray, per_question: bool, strata: str) -> Counts:
        """Count the decisions in (a) or (b), given as cluster and stratum codes.

        Equal to ``cluster_sums(q, s, [a, a·y, b, b·y])`` (integer sums), in two
        bincounts: decisions at slot 0 or 2 of their (question, stratum), answers at 1 or 3.
        """
        either = np.asarray(a, dtype=bool) | np.asarray(b, dtype=bool)
        if not either.all():
            q, s, a, y = q[either], s[either], a[either], y[either]
        size = n_q * n_s * 4
        at = (np.asarray(q, dtype=np.int64) * n_s + np.asarray(s, dtype=np.int64)) * 4 \
            + np.where(a, 0, 2)
        counts = (np.bincount(at, minlength=size).astype(np.float64)
                  + np.bincount(at + 1, weights=y, minlength=size + 1)[:size])
        counts = counts.reshape(n_q, n_s, 4)
        n_a, y_a, n_b, y_b = (int(counts[..., k].sum()) for k in range(4))
        return cls(counts, per_question, strata, n_a, n_b, y_a, y_b)


def contrasts(items: Sequence[Counts], n_boot: int = N_BOOT, seed: int = 0) -> list[Contrast]:
    """The Contrasts of many counted contrasts, resampled together.

    Each contrast gets the interval it would get alone (same resample weights, same
    arithmetic); contrasts with the same number of questions share each batch of
    weights, and their stratified counts are resampled in one matrix product.

    Args:
        items: the counted contrasts (e.g. every arm's five).
        n_boot: question-level resamples.
        seed: bootstrap seed.

    Returns:
        One Contrast per item, in order.
    """
    intervals: list[Interval] = [UNDEFINED] * len(items)
    same = _first_equal(items)
    by_questions: dict[int, list[int]] = {}
    for i, item in enumerate(items):
        if same[i] == i:
            by_questions.setdefault(item.counts.shape[0], []).append(i)
    for n_q, positions in by_questions.items():
        found = _same_questions([items[i] for i in positions], n_q, n_boot, seed)
        for i, interval in zip(positions, found):
            intervals[i] = interval
    return [Contrast(intervals[same[i]], it.n_a, it.n_b, it.answered_a, it.answered_b,
                     it.strata) for i, it in enumerate(items)]


def _first_equal(items: Sequence[Counts]) -> list[int]:
    """For each counted contrast, the first item with equal counts (itself if none before).

    A contrast's interval is a function of its counts alone (and of whether its strata
    are nested in questions): groups whose decisions count alike, such as arms a
    simulated model answers the same way, get the same interval, so each distinct
    contrast is resampled once. Candidates are found by their four totals and shape,
    then compared in full.
    """
    seen: dict[tuple[object, ...], list[int]] = {}
    out: list[int] = []
    for i, it in enumerate(items):
        alike = seen.setdefault((it.per_question, it.counts.shape, it.n_a, it.n_b,
                                 it.answered_a, it.answered_b), [])
        found = next((j for j in alike if np.array_equal(items[j].counts, it.counts)), None)
        if found is None:
            alike.append(i)
            found = i
        out.append(found)
    return out


class _PerQuestion:
    """The statistic of a contrast whose strata are nested in questions."""

    def __init__(self, counts: np.ndarray) -> None:
        n_a, y_a, n_b, y_b = (counts[..., i] for i in range(4))
        w = np.nan_to_num(safe_ratio(n_a * n_b, n_a + n_b))
        d = np.nan_to_num(safe_ratio(y_a, n_a) - safe_ratio(y_b, n_b))
        self.num, self.den = (w * d).sum(axis=1), w.sum(axis=1)

    def __call__(self, wts: np.ndarray) -> np.ndarray:
        return safe_ratio(wts @ self.num, wts @ self.den)


class _Stratified:
    """The statistics of many contrasts with shared strata, from one matrix product.

    A resample's stratum counts are ``wts @ counts``. Counts and weights are integers,
    so every product is exact in any order and in any precision that holds the totals:
    all contrasts' columns go into one matrix. Only the strata where both (a) and (b)
    occur are multiplied: elsewhere the MH weight and the weighted difference are 0 in
    every resample, whatever the counts. The two MH sums then run over each
    contrast's full row of strata, zeros included, in the same order as
    `tests.oracles.stats.mh_risk_difference`, so every digit is the same.
    """

    def __init__(self, counts: Sequence[np.ndarray], n_q: int) -> None:
        by_strata: dict[int, list[int]] = {}
        for i, c in enumerate(counts):
            by_strata.setdefault(c.shape[1], []).append(i)
        active = [np.flatnonzero(c[..., 0].any(axis=0) & c[..., 2].any(axis=0))
                  for c in counts]
        order = [i for items in by_strata.values() for i in items]
        start = np.cumsum([0] + [active[i].size for i in order])
        self.n_active = int(start[-1])
        # columns: every active stratum's n_a, then its answers in (a) where there are
        # any, n_b, answers in (b) where there are any (the others are 0 in every resample);
        # written block by block into the one matrix, in its final dtype (no float64 copy
        # of every contrast's counts first: 45 MB less at 198,000 episodes)
        answered: dict[int, list[np.ndarray]] = {1: [], 3: []}
        top = 0.0
        for i in order:
            chosen = counts[i][:, active[i]]
            if chosen.size:
                top = max(top, float(chosen.max()))
            for k in (1, 3):
                answered[k].append(np.asarray(chosen[..., k].any(axis=0)))
        flags = {k: np.concatenate(v) if v else np.zeros(0, dtype=bool)
                 for k, v in answered.items()}
        self.answered = [np.flatnonzero(flags[k]) for k in (1, 3)]
        widths = [self.n_active, self.answered[0].size, self.n_active, self.answered[1].size]
        self.cuts = np.cumsum([0] + widths)
        # a resampled total is at most n_q times the largest count: float32 holds it
        # exactly below 2**24, and multiplies twice as fast
        exact32 = top * n_q < 2.0 ** 24
        self.dense = np.empty((n_q, int(self.cuts[-1])), np.float32 if exact32 else np.float64)
        filled = [int(self.cuts[k]) for k in range(4)]
        for j, i in enumerate(order):
            chosen = counts[i][:, active[i]]
            for k in range(4):
                block = chosen[..., k] if k in (0, 2) else chosen[..., k][:, flags[k][
                    start[j]:start[j + 1]]]
                self.dense[:, filled[k]:filled[k] + block.shape[1]] = block
                filled[k] += block.shape[1]
        # per class of contrasts with n_s strata: each of its strata's column among the
        # active ones (n_active: a zero column for the strata left out)
        self.classes: list[tuple[list[int], int, np.ndarray]] = []
        at = dict(zip(order, start[:-1].tolist()))
        for n_s, items in by_strata.items():
            take = np.full((len(items), n_s), self.n_active, dtype=np.intp)
            for j, i in enumerate(items):
                take[j, active[i]] = at[i] + np.arange(active[i].size)
            self.classes.append((items, n_s, take.reshape(-1)))
        self.n = len(counts)

    def __call__(self, wts: np.ndarray) -> np.ndarray:
        totals = wts.astype(self.dense.dtype) @ self.dense
        out = np.empty((wts.shape[0], self.n))
        # the MH terms row block by row block: each block's temporaries stay in cache
        for lo in range(0, wts.shape[0], _ROWS):
            self._mh(totals[lo:lo + _ROWS], out[lo:lo + _ROWS])
        return out

    def _mh(self, totals: np.ndarray, out: np.ndarray) -> None:
        """Each contrast's MH risk difference from resampled totals, into `out`."""
        b, n = totals.shape[0], self.n_active
        n_a, y_a, n_b, y_b = (totals[:, self.cuts[k]:self.cuts[k + 1]] for k in range(4))
        n_a, n_b = n_a.astype(np.float64), n_b.astype(np.float64)
        y_a, y_b = self._spread(y_a, 0, b), self._spread(y_b, 1, b)
        # mh_risk_difference's terms with the same operations: w = n_a n_b / (n_a + n_b),
        # 0 for an empty stratum; w (y_a/n_a − y_b/n_b), 0 unless both groups occur
        both = n_a + n_b
        w = np.zeros((b, n + 1))
        np.multiply(n_a, n_b, out=w[:, :n])
        np.divide(w[:, :n], both, out=w[:, :n], where=both > 0)
        wd = np.zeros((b, n + 1))
        np.divide(y_a, n_a, out=y_a)
        np.divide(y_b, n_b, out=y_b)
        np.subtract(y_a, y_b, out=y_a)
        np.multiply(w[:, :n], y_a, out=wd[:, :n])
        np.nan_to_num(wd, copy=False, nan=0.0)
        for items, n_s, take in self.classes:
            shape = (b, len(items), n_s)
            out[:, items] = safe_ratio(np.take(wd, take, axis=1).reshape(shape).sum(axis=-1),
                                       np.take(w, take, axis=1).reshape(shape).sum(axis=-1))

    def _spread(self, answers: np.ndarray, kind: int, b: int) -> np.ndarray:
        out = np.zeros((b, self.n_active))
        out[:, self.answered[kind]] = answers
        return out


def _same_questions(items: Sequence[Counts], n_q: int, n_boot: int,
                    seed: int) -> list[Interval]:
    """`analysis.stats.bootstrap.bootstrap_intervals` of each item, all on `n_q` questions."""
    if n_q == 0:
        return [summarize(math.nan, np.empty(0), 0) for _ in items]
    strat = [i for i, it in enumerate(items) if not it.per_question]
    stratified = _Stratified([items[i].counts for i in strat], n_q) if strat else None
    nested = [(i, _PerQuestion(it.counts)) for i, it in enumerate(items) if it.per_question]

    def statistic(wts: np.ndarray) -> np.ndarray:
        out = np.empty((wts.shape[0], len(items)))
        if stratified is not None:
            out[:, strat] = stratified(wts)
        for i, stat in nested:
            out[:, i] = stat(wts)
        return out

    def quiet(wts: np.ndarray) -> np.ndarray:  # numpy's error state is per thread
        with np.errstate(divide="ignore", invalid="ignore"):
            return statistic(wts)

    est = quiet(np.ones((1, n_q)))[0]
    # the weight batches on the worker threads: each batch's numbers are its own, and the
    # matrix products and most of the MH terms' arithmetic run without the GIL
    # (as many batches at a time as threads: memory stays that of a few batches)
    batches, threads = iter(resample_weights(n_q, n_boot, seed)), worker_threads()
    parts: list[np.ndarray] = []
    with ThreadPoolExecutor(threads, thread_name_prefix="delta") as pool:
        for chunk in iter(lambda: list(islice(batches, threads)), []):
            parts += pool.map(quiet, chunk) if len(chunk) > 1 else [quiet(chunk[0])]
    boot = np.vstack(parts) if parts else np.empty((0, len(items)))
    return list(summarize_columns(est, boot, n_q))


@dataclass(frozen=True)
class _Window:
    """One arm's decisions after 3–6 observations, the final action excluded, as arrays.

    The arm's questions are coded once (sorted; every question with a decision point
    is a resampling unit), so the five contrasts of an arm share one factorisation.

    Attributes:
        q: question code per decision.
        n_q: questions of the arm.
        n_obs: observations so far per decision.
        action: action index per decision.
        answer: 1.0 where the decision was to answer.
        regime: regime code per decision (index into `regimes`).
        regimes: the regimes of the frame the window was cut from, sorted.
        own_run: failed run, side-channel judgments.
        stated_run: failed run, stated judgments.
        stated_known: the stated run is known.
        replayed: the latest side-channel judgment was replayed, not asked in-run
            (`analysis.measures.decisions.REPLAYED`).
    """

    q: np.ndarray
    n_q: int
    n_obs: np.ndarray
    action: np.ndarray
    answer: np.ndarray
    regime: np.ndarray
    regimes: np.ndarray
    own_run: np.ndarray
    stated_run: np.ndarray
    stated_known: np.ndarray
    replayed: np.ndarray

    @classmethod
    def of(cls, dec: pd.DataFrame) -> _Window:
        """The window of one arm's decision rows."""
        return cls.split(dec, np.zeros(len(dec), dtype=np.int64), 1)[0]

    @classmethod
    def split(cls, dec: pd.DataFrame, group: np.ndarray, n_groups: int,
              include: np.ndarray | None = None,
              coded: Mapping[str, tuple[np.ndarray, np.ndarray]] | None = None
              ) -> list[_Window]:
        """The window of every group of decision rows, read from the frame once.

        Args:
            dec: decision table rows.
            group: group code per row (0 … n_groups − 1, e.g. `Grouping.codes`).
            n_groups: number of groups.
            include: which rows count (None: all), as if the others were not in `dec`:
                a question only they hold is no resampling unit of its group.
            coded: `sorted_codes` of ``question_id`` and ``regime`` of `dec`, when the
                caller has them (else computed here).

        Returns:
            One window per group, its rows in frame order.
        """
        # each group's questions coded in sorted order, as `codes` codes a group's rows:
        # a question's code in its group is its rank among the (group, question) pairs
        coded = coded or _coded(dec)
        question, _ = coded["question_id"]
        width = int(question.max()) + 1 if len(question) else 1
        pair = group * width + question
        if include is not None:
            # rows left out mark no pair present (their codes are never read)
            pair = np.where(include, pair, n_groups * width)
        if n_groups * width <= _DENSE_PAIRS:
            present = np.zeros(n_groups * width + 2, dtype=np.int64)
            present[pair + 1] = 1
            present = present[:-1]
            rank = np.cumsum(present)  # rank[p]: pairs present before pair p
            starts = rank[np.arange(n_groups + 1) * width]
            local = rank[pair] - starts[:-1][group]
        else:
            pairs, local = np.unique(pair, return_inverse=True)
            starts = np.searchsorted(pairs // width, np.arange(n_groups + 1))
            local = local.reshape(-1) - starts[:-1][group]
        regime, regimes = coded["regime"]
        n_obs = dec["n_obs"].to_numpy()
        keep = (n_obs >= T_MIN) & (n_obs <= T_MAX) & ~dec["final"].to_numpy(dtype=bool)
        if include is not None:
            keep &= include
        known = (dec["stated_known"].to_numpy(dtype=bool) if "stated_known" in dec
                 else np.ones(len(dec), dtype=bool))
        replayed = (dec[REPLAYED].to_numpy(dtype=bool) if REPLAYED in dec
                    else np.zeros(len(dec), dtype=bool))
        rows = np.flatnonzero(keep)
        rows = rows[np.argsort(group[rows], kind="stable")]
        bounds = np.searchsorted(group[rows], np.arange(n_groups + 1))
        columns = (local, n_obs, dec["action"].to_numpy(), dec["answer"].to_numpy(dtype=float),
                   regime, dec["own_run"].to_numpy(), dec["stated_run"].to_numpy(), known,
                   replayed)
        windows = []
        for g in range(n_groups):
            at = rows[bounds[g]:bounds[g + 1]]
            q, n, action, answer, r, own, stated, k, rp = (c[at] for c in columns)
            windows.append(cls(q, int(starts[g + 1] - starts[g]), n, action, answer, r, regimes,
                               own, stated, k, rp))
        return windows

    def groups(self, judgments: str) -> tuple[np.ndarray, np.ndarray]:
        """Membership in Δ's groups (a) s = t and (b) 1 ≤ s ≤ t − 2.

        Args:
            judgments: "side_channel" (recorded or replayed) or "stated".

        Returns:
            (in_a, in_b), boolean per decision.

        Raises:
            ValueError: for an unknown `judgments`.
        """
        judgment_columns(judgments)  # raises for an unknown source
        s = self.own_run if judgments == "side_channel" else self.stated_run
        in_a, in_b = s == self.n_obs, (s >= 1) & (s <= self.n_obs - 2)
        if judgments == "stated":  # A18: an unknown stated run is left out
            in_a, in_b = in_a & self.stated_known, in_b & self.stated_known
        return in_a, in_b

    def sources(self, judgments: str) -> str:
        """The ``judgments`` text of a Δ row: its decisions in (a) or (b) by where their
        latest side-channel judgment came from ("" for stated judgments)."""
        if judgments != "side_channel":
            return ""
        in_a, in_b = self.groups(judgments)
        used = in_a | in_b
        replayed = int(np.count_nonzero(self.replayed[used]))
        return judgment_sources(int(np.count_nonzero(used)) - replayed, replayed)

    def in_regime(self, name: str) -> np.ndarray:
        """Whether each decision is in regime `name`."""
        found = np.flatnonzero(self.regimes == name)
        return self.regime == found[0] if found.size else np.zeros(len(self.regime), bool)

    def counts(self, in_a: np.ndarray, in_b: np.ndarray, stratum: str,
               per_question: bool, strata: str) -> Counts:
        """The MH contrast (a) − (b) stratified by "t", "action" or "regime_action", counted.

        Strata are coded in the order of their text labels.
        """
        keep = in_a | in_b
        if stratum == "t":
            s_values, s = _small_codes(self.n_obs[keep])
        elif stratum == "action":
            s_values, s = _small_codes(self.action[keep])
        else:
            action = self.action[keep]
            width = int(action.max()) + 1 if action.size else 1
            pairs, pair = _small_codes(self.regime[keep] * width + action)
            labels = np.array([f"{self.regimes[p // width]}|{p % width}" for p in pairs],
                              dtype=object)
            s_values, label = np.unique(labels, return_inverse=True)
            s = label[pair]
        return Counts.of(self.q[keep], self.n_q, s.astype(np.int64), len(s_values), in_a[keep],
                          in_b[keep], self.answer[keep], per_question, strata)


def _small_codes(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(values, return_inverse=True)``, by counting when the values are small
    non-negative integers (decision counts, actions)."""
    if (values.size == 0 or values.dtype.kind not in "iu" or values.min() < 0
            or values.max() > 4 * values.size + 1024):
        return np.unique(values, return_inverse=True)
    present = np.bincount(values) > 0
    return np.flatnonzero(present), (np.cumsum(present) - 1)[values]


def time_matched_contrast(dec: pd.DataFrame, judgments: str = "side_channel",
                          strata: str = "t", n_boot: int = N_BOOT, seed: int = 0) -> Contrast:
    """Δ on one arm's decisions (the main paper, §2 and App. C.1).

    Args:
        dec: decision table rows of one arm.
        judgments: "side_channel" (recorded or replayed) or "stated".
        strata: "t" (the definition), "question_action" or "regime_action".
        n_boot: question-level resamples.
        seed: bootstrap seed.

    Returns:
        The Contrast; NaN when (a) and (b) never meet in a stratum.

    Raises:
        ValueError: for an unknown `strata` or `judgments`.
    """
    return contrasts([time_matched_counts(dec, judgments, strata)], n_boot, seed)[0]


def time_matched_counts(dec: pd.DataFrame | _Window, judgments: str = "side_channel",
                        strata: str = "t") -> Counts:
    """`time_matched_contrast` before resampling, for `contrasts` to resample with others.

    Args:
        dec: decision table rows of one arm (or their window).
        judgments: "side_channel" (recorded or replayed) or "stated".
        strata: "t" (the definition), "question_action" or "regime_action".

    Returns:
        The counted contrast.

    Raises:
        ValueError: for an unknown `strata` or `judgments`.
    """
    w = dec if isinstance(dec, _Window) else _Window.of(dec)
    in_a, in_b = w.groups(judgments)
    modes = {"t": ("t", False), "question_action": ("action", True),
             "regime_action": ("regime_action", False)}
    if strata not in modes:
        raise ValueError(f"strata must be one of {STRATA[:3]}, got {strata!r}")
    stratum, per_q = modes[strata]
    return w.counts(in_a, in_b, stratum, per_q, strata)


def time_matched_counts_by_group(dec: pd.DataFrame, group: np.ndarray, n_groups: int,
                                 judgments: str = "side_channel",
                                 strata: str = "t") -> list[Counts]:
    """`time_matched_counts` of every group of decision rows, the frame read once.

    Args:
        dec: decision table rows.
        group: group code per row (0 … n_groups − 1).
        n_groups: number of groups.
        judgments: "side_channel" (recorded or replayed) or "stated".
        strata: "t" (the definition), "question_action" or "regime_action".

    Returns:
        One counted contrast per group.
    """
    return [time_matched_counts(w, judgments, strata)
            for w in _Window.split(dec, group, n_groups)]


def design_contrast(dec: pd.DataFrame, n_boot: int = N_BOOT, seed: int = 0) -> Contrast:
    """Design-label contrast: persistent − late_onset_from_3 at the same action.

    Decisions after 3 to 6 observations, the final action excluded, MH-stratified by
    action; in late_onset_from_3 these decisions follow a failed run of 1 to t − 2.

    Args:
        dec: decision table rows of one arm.
        n_boot: question-level resamples.
        seed: bootstrap seed.

    Returns:
        The Contrast; NaN when either regime is missing.
    """
    return contrasts([_design(_Window.of(dec))], n_boot, seed)[0]


def _design(w: _Window) -> Counts:
    return w.counts(w.in_regime(DESIGN_A), w.in_regime(DESIGN_B), "action", False, "action")


VARIANTS = (
    ("delta", "side_channel", "t", "own judgments, by t"),
    ("delta", "side_channel", "question_action", "own, by question × action"),
    ("delta", "side_channel", "regime_action", "own, by regime × action"),
    ("delta", "stated", "t", "stated judgments, by t"),
)


def delta_regimes(family: str, present: Sequence[str], pool: str = DELTA_FAILURE
                  ) -> tuple[str, ...]:
    """The regimes of a group that its time-matched Δ pools.

    Args:
        family: the group's regime family (`core.regimes.regime_family`).
        present: the group's regimes.
        pool: "failure" or "mean6" (`core.regimes.DELTA_REGIMES`).

    Returns:
        `present` without clean for the main family under "failure", else `present`.

    Raises:
        ValueError: an unknown `pool`.
    """
    if pool not in DELTA_REGIMES:
        raise ValueError(f"delta regimes must be one of {', '.join(DELTA_REGIMES)}, "
                         f"got {pool!r}")
    if pool == DELTA_FAILURE and family == MAIN_FAMILY:
        return tuple(r for r in present if r in FAILURE_REGIMES)
    return tuple(present)


def _coded(dec: pd.DataFrame) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """`sorted_codes` of the columns `_Window.split` codes (coded once per table: each
    is a pass over every decision, 0.05-0.1 s at 886,000)."""
    return {c: sorted_codes(dec[c]) for c in ("question_id", "regime")}


def _delta_windows(decisions: pd.DataFrame, keys: Sequence[ArmKey], group: np.ndarray,
                   covered: Sequence[tuple[str, ...]], whole: list[_Window],
                   coded: Mapping[str, tuple[np.ndarray, np.ndarray]] | None = None
                   ) -> list[_Window]:
    """Every group's window on the regimes `covered` names (`whole` where that is all
    of the group's regimes), as if the other rows were not in `decisions`."""
    if all(c == tuple(k.regimes) for c, k in zip(covered, keys)):
        return whole
    coded = coded or _coded(decisions)
    regime, names = coded["regime"]
    allowed = np.array([[str(r) in c for r in names] for c in covered],
                       dtype=bool).reshape(len(keys), len(names))
    return _Window.split(decisions, group, len(keys), allowed[group, regime], coded)


def delta_table(decisions: pd.DataFrame, n_boot: int = N_BOOT, seed: int = 0,
                grouping: Grouping | None = None, pool: str = DELTA_FAILURE) -> Table:
    """Δ (four variants) and the design-label contrast for every group and regime family.

    Regimes of different families are never pooled (`core.regimes.regime_family`);
    within the main family Δ pools the regimes `delta_regimes` names (by default the
    five failure regimes: clean's decisions and questions are left out, as the main
    paper computes it); the design-label contrast exists only in the main family.

    Args:
        decisions: the decision table.
        n_boot: question-level resamples.
        seed: bootstrap seed.
        grouping: what rows pool and the errored episodes they count.
        pool: what the main family's Δ pools (`core.regimes.DELTA_REGIMES`).

    Returns:
        Table "delta" (long layout; unit: decisions in groups (a) and (b)).

    Raises:
        ValueError: an unknown `pool`.
    """
    grouping = grouping or Grouping()
    # every group's contrasts are counted first, then resampled together
    items: list[Counts] = []
    labels: list[tuple[ArmKey, str, str, Sequence[str] | None, str]] = []
    keys, group = grouping.codes(decisions, families=True)
    covered = [delta_regimes(arm.family, arm.regimes, pool) for arm in keys]
    coded = _coded(decisions)
    whole = _Window.split(decisions, group, len(keys), coded=coded)
    windows = _delta_windows(decisions, keys, group, covered, whole, coded)
    for arm, regimes, window, full in zip(keys, covered, windows, whole):
        sources = {j: window.sources(j) for j in ("side_channel", "stated")}
        for measure, judg, strata, scope in VARIANTS:
            items.append(time_matched_counts(window, judg, strata))
            labels.append((arm, measure, scope, regimes, sources[judg]))
        if arm.family != MAIN_FAMILY:
            continue
        items.append(_design(full))
        labels.append((arm, "design", "persistent − late_onset_from_3",
                       [r for r in arm.regimes if r in (DESIGN_A, DESIGN_B)], ""))
    # every contrast is counted: the windows' arrays (60 MB at 198,000 episodes) go before
    # the resampling builds its matrices, not after (the table's peak memory)
    del whole, windows
    rows: list[Row] = [
        replace(interval_row(arm, measure, c.interval, scope, "decisions", c.n_a + c.n_b,
                             c.detail, regimes=regimes), judgments=sources)
        for (arm, measure, scope, regimes, sources), c in zip(labels,
                                                               contrasts(items, n_boot, seed))]
    notes = (
        ("Δ: P(answer | every result so far judged useless) − P(answer | latest useless, an "
        "earlier one not; run 1…t−2), decisions after 3–6 results, final action excluded, "
        "Mantel–Haenszel weights n_a·n_b/(n_a+n_b); 95% question-cluster bootstrap."),
        ("Δ pools the main family's five failure regimes, clean left out, as the main paper "
         "does (--delta-regimes mean6 pools clean too)" if pool == DELTA_FAILURE else
         "Δ pools all six mean6 regimes, clean included (--delta-regimes mean6); the main "
         "paper's Δ leaves clean out"),
        "detail: answers/decisions in (a) and (b); – : the two groups never meet in a stratum.",
        ("judgments (side-channel variants): the decisions in (a) and (b) by where the "
         "judgment of their latest result came from: side_channel (asked in-run) or replay "
         "(lab replay judgments)."),
    )
    return Table("delta", "Time-matched contrast Δ and design-label contrast", tuple(rows),
                 notes, pooled=grouping.pooled)


def delta_results(inp: TableInput) -> TablePart:
    """The "delta" results table (`analysis.tables.registry`)."""
    return TablePart((delta_table(inp.decisions, inp.n_boot, inp.seed, inp.grouping,
                                  inp.delta_regimes),))
