"""The time-matched contrast Δ and the design-label contrast (SPEC §13.2, paper App. C.1).

After t observations let s be the current run judged useless. At decisions with
3 ≤ t ≤ 6, the final action excluded, group (a) has s = t and group (b)
1 ≤ s ≤ t − 2 (s = t − 1 is in neither). Δ is the Mantel–Haenszel risk difference
in answering between (a) and (b), stratified by t (or by question × action, or by
regime × action), with a question-cluster bootstrap interval. The design-label
contrast compares `persistent` with `late_onset_from_3` decisions at the same action.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis.arms import Grouping
from analysis.decisions import arm_groups, codes, judgment_columns
from analysis.rows import Row, Table, interval_row
from analysis.stats import (
    N_BOOT,
    Interval,
    bootstrap_intervals,
    cluster_sums,
    mh_risk_difference,
    safe_ratio,
)
from core.regimes import MAIN_FAMILY

T_MIN, T_MAX = 3, 6
STRATA = ("t", "question_action", "regime_action", "action")
DESIGN_A, DESIGN_B = "persistent", "late_onset_from_3"


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


def mh_contrast(question: pd.Series, stratum: pd.Series, in_a: np.ndarray,
                in_b: np.ndarray, answer: np.ndarray, per_question: bool = False,
                n_boot: int = N_BOOT, seed: int = 0, strata: str = "",
                clusters: np.ndarray | None = None) -> Contrast:
    """MH risk difference of answering, (a) − (b), with a question-cluster bootstrap.

    Resampling a question multiplies its decision counts; MH weights are linear in
    the counts, so a question drawn twice counts as two strata (question-level
    strata) or doubles its share of a shared stratum.

    Args:
        question: question id per decision (the cluster).
        stratum: stratum label per decision (within the question when
            `per_question`).
        in_a: membership in group (a).
        in_b: membership in group (b) (disjoint from (a)).
        answer: outcome per decision (0/1).
        per_question: strata are nested in questions (e.g. question × action).
        n_boot: resamples.
        seed: bootstrap seed.
        strata: label recorded in the result.
        clusters: every question of the arm (the resampling units); default: the
            questions with a decision in (a) or (b).

    Returns:
        The Contrast (NaN interval when no stratum has both groups).
    """
    in_a, in_b = np.asarray(in_a, dtype=bool), np.asarray(in_b, dtype=bool)
    keep = in_a | in_b
    kept = pd.Series(np.asarray(question)[keep])
    if clusters is None:
        q, universe = codes(kept)
    else:
        universe = np.asarray(clusters)
        q = pd.Categorical(kept, categories=universe).codes.astype(np.int64)
    s, s_values = codes(pd.Series(np.asarray(stratum)[keep]))
    return _contrast(q, len(universe), s, len(s_values), in_a[keep], in_b[keep],
                     np.asarray(answer, dtype=float)[keep], per_question, n_boot, seed, strata)


def _contrast(q: np.ndarray, n_q: int, s: np.ndarray, n_s: int, a: np.ndarray, b: np.ndarray,
              y: np.ndarray, per_question: bool, n_boot: int, seed: int,
              strata: str) -> Contrast:
    """`mh_contrast` on the kept decisions, given as cluster and stratum codes."""
    counts = cluster_sums(q, s, np.column_stack([a, a * y, b, b * y]), n_q, n_s)
    if per_question:
        n_a, y_a, n_b, y_b = (counts[..., i] for i in range(4))
        w = np.nan_to_num(safe_ratio(n_a * n_b, n_a + n_b))
        d = np.nan_to_num(safe_ratio(y_a, n_a) - safe_ratio(y_b, n_b))
        num, den = (w * d).sum(axis=1), w.sum(axis=1)

        def stat(wts: np.ndarray) -> np.ndarray:
            return safe_ratio(wts @ num, wts @ den)
    else:
        flat = counts.reshape(n_q, n_s * 4)
        # Counts and resample weights are integers, so every product below is exact in
        # any order: multiplying only the columns that are not all zero (a stratum
        # where (a) or (b) never occurs) changes no digit, and saves most of the work
        # when strata are regime × action.
        used = np.flatnonzero(flat.any(axis=0))
        dense = flat[:, used]

        def stat(wts: np.ndarray) -> np.ndarray:
            c: np.ndarray = np.zeros((wts.shape[0], n_s * 4))
            c[:, used] = wts @ dense
            c = c.reshape(wts.shape[0], n_s, 4)
            return mh_risk_difference(c[..., 0], c[..., 1], c[..., 2], c[..., 3])

    (interval,) = bootstrap_intervals(stat, n_q, n_boot, seed)
    return Contrast(interval, int(a.sum()), int(b.sum()), int((a * y).sum()),
                    int((b * y).sum()), strata)


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
        regime: regime per decision.
        own_run: failed run, side-channel judgments.
        stated_run: failed run, stated judgments.
        stated_known: the stated run is known.
    """

    q: np.ndarray
    n_q: int
    n_obs: np.ndarray
    action: np.ndarray
    answer: np.ndarray
    regime: np.ndarray
    own_run: np.ndarray
    stated_run: np.ndarray
    stated_known: np.ndarray

    @classmethod
    def of(cls, dec: pd.DataFrame) -> _Window:
        """The window of one arm's decision rows."""
        q, universe = codes(dec["question_id"])
        n_obs = dec["n_obs"].to_numpy()
        keep = (n_obs >= T_MIN) & (n_obs <= T_MAX) & ~dec["final"].to_numpy(dtype=bool)
        known = (dec["stated_known"].to_numpy(dtype=bool) if "stated_known" in dec
                 else np.ones(len(dec), dtype=bool))
        return cls(q[keep], len(universe), n_obs[keep], dec["action"].to_numpy()[keep],
                   dec["answer"].to_numpy(dtype=float)[keep],
                   np.asarray(dec["regime"].to_numpy(dtype=object))[keep],
                   dec["own_run"].to_numpy()[keep], dec["stated_run"].to_numpy()[keep],
                   known[keep])

    def contrast(self, in_a: np.ndarray, in_b: np.ndarray, stratum: str,
                 per_question: bool, n_boot: int, seed: int, strata: str) -> Contrast:
        """The MH contrast (a) − (b) stratified by "t", "action" or "regime_action".

        Strata are coded in the order of their text labels, as `mh_contrast` codes them.
        """
        keep = in_a | in_b
        if stratum == "t":
            s_values, s = np.unique(self.n_obs[keep], return_inverse=True)
        elif stratum == "action":
            s_values, s = np.unique(self.action[keep], return_inverse=True)
        else:
            r_values, r = np.unique(self.regime[keep], return_inverse=True)
            a_values, act = np.unique(self.action[keep], return_inverse=True)
            pairs, pair = np.unique(r * len(a_values) + act, return_inverse=True)
            labels = np.array([f"{r_values[p // len(a_values)]}|{a_values[p % len(a_values)]}"
                               for p in pairs], dtype=object)
            s_values, label = np.unique(labels, return_inverse=True)
            s = label[pair]
        return _contrast(self.q[keep], self.n_q, s.astype(np.int64), len(s_values), in_a[keep],
                         in_b[keep], self.answer[keep], per_question, n_boot, seed, strata)


def time_matched_contrast(dec: pd.DataFrame, judgments: str = "side_channel",
                          strata: str = "t", n_boot: int = N_BOOT, seed: int = 0) -> Contrast:
    """Δ on one arm's decisions (SPEC §13.2).

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
    return _time_matched(_Window.of(dec), judgments, strata, n_boot, seed)


def _time_matched(w: _Window, judgments: str, strata: str, n_boot: int, seed: int) -> Contrast:
    judgment_columns(judgments)  # raises for an unknown source
    s = w.own_run if judgments == "side_channel" else w.stated_run
    in_a, in_b = s == w.n_obs, (s >= 1) & (s <= w.n_obs - 2)
    if judgments == "stated":  # A18: an unknown stated run is left out
        in_a, in_b = in_a & w.stated_known, in_b & w.stated_known
    modes = {"t": ("t", False), "question_action": ("action", True),
             "regime_action": ("regime_action", False)}
    if strata not in modes:
        raise ValueError(f"strata must be one of {STRATA[:3]}, got {strata!r}")
    stratum, per_q = modes[strata]
    return w.contrast(in_a, in_b, stratum, per_q, n_boot, seed, strata)


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
    return _design(_Window.of(dec), n_boot, seed)


def _design(w: _Window, n_boot: int, seed: int) -> Contrast:
    return w.contrast(w.regime == DESIGN_A, w.regime == DESIGN_B, "action", False, n_boot,
                      seed, "action")


VARIANTS = (
    ("delta", "side_channel", "t", "own judgments, by t"),
    ("delta", "side_channel", "question_action", "own, by question × action"),
    ("delta", "side_channel", "regime_action", "own, by regime × action"),
    ("delta", "stated", "t", "stated judgments, by t"),
)


def delta_table(decisions: pd.DataFrame, n_boot: int = N_BOOT, seed: int = 0,
                grouping: Grouping | None = None) -> Table:
    """Δ (four variants) and the design-label contrast for every group and regime family.

    Regimes of different families are never pooled (`core.regimes.regime_family`);
    the design-label contrast exists only in the main family.

    Args:
        decisions: the decision table.
        n_boot: question-level resamples.
        seed: bootstrap seed.
        grouping: what rows pool and the errored episodes they count.

    Returns:
        Table "delta" (long layout; unit: decisions in groups (a) and (b)).
    """
    grouping = grouping or Grouping()
    rows: list[Row] = []
    for arm, dec in arm_groups(decisions, grouping, families=True):
        window = _Window.of(dec)
        for measure, judg, strata, scope in VARIANTS:
            c = _time_matched(window, judg, strata, n_boot, seed)
            rows.append(interval_row(arm, measure, c.interval, scope, "decisions",
                                     c.n_a + c.n_b, c.detail))
        if arm.family != MAIN_FAMILY:
            continue
        c = _design(window, n_boot, seed)
        rows.append(interval_row(arm, "design", c.interval, "persistent − late_onset_from_3",
                                 "decisions", c.n_a + c.n_b, c.detail,
                                 regimes=[r for r in arm.regimes if r in (DESIGN_A, DESIGN_B)]))
    notes = (
        ("Δ: P(answer | every result so far judged useless) − P(answer | latest useless, an "
        "earlier one not; run 1…t−2), decisions after 3–6 results, final action excluded, "
        "Mantel–Haenszel weights n_a·n_b/(n_a+n_b); 95% question-cluster bootstrap."),
        "detail: answers/decisions in (a) and (b); – : the two groups never meet in a stratum.",
    )
    return Table("delta", "Time-matched contrast Δ and design-label contrast", tuple(rows),
                 notes, pooled=grouping.pooled)
