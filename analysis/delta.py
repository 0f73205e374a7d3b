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
    answer = np.asarray(answer, dtype=float)
    keep = in_a | in_b
    kept = pd.Series(np.asarray(question)[keep])
    if clusters is None:
        q, universe = codes(kept)
    else:
        universe = np.asarray(clusters)
        q = pd.Categorical(kept, categories=universe).codes.astype(np.int64)
    s, s_values = codes(pd.Series(np.asarray(stratum)[keep]))
    a, b, y = in_a[keep], in_b[keep], answer[keep]
    n_q, n_s = len(universe), len(s_values)
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


def _universe(dec: pd.DataFrame) -> np.ndarray:
    """The arm's questions with at least one decision point, sorted (the clusters)."""
    return np.sort(np.asarray(dec["question_id"].unique(), dtype=object))


def _window(dec: pd.DataFrame) -> pd.DataFrame:
    return dec.loc[dec["n_obs"].between(T_MIN, T_MAX) & ~dec["final"].astype(bool)]


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
    run_col, _, _ = judgment_columns(judgments)
    d = _window(dec)
    if judgments == "stated" and "stated_known" in d:
        d = d.loc[d["stated_known"].astype(bool)]  # A18: an unknown stated run is left out
    s, t = d[run_col].to_numpy(), d["n_obs"].to_numpy()
    in_a, in_b = s == t, (s >= 1) & (s <= t - 2)
    if strata == "t":
        stratum, per_q = d["n_obs"], False
    elif strata == "question_action":
        stratum, per_q = d["action"], True
    elif strata == "regime_action":
        stratum, per_q = d["regime"].astype(str) + "|" + d["action"].astype(str), False
    else:
        raise ValueError(f"strata must be one of {STRATA[:3]}, got {strata!r}")
    return mh_contrast(d["question_id"], stratum, in_a, in_b, d["answer"].to_numpy(), per_q,
                       n_boot, seed, strata, _universe(dec))


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
    d = _window(dec)
    regime = d["regime"].to_numpy()
    return mh_contrast(d["question_id"], d["action"], regime == DESIGN_A, regime == DESIGN_B,
                       d["answer"].to_numpy(), False, n_boot, seed, "action", _universe(dec))


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
        for measure, judg, strata, scope in VARIANTS:
            c = time_matched_contrast(dec, judg, strata, n_boot, seed)
            rows.append(interval_row(arm, measure, c.interval, scope, "decisions",
                                     c.n_a + c.n_b, c.detail))
        if arm.family != MAIN_FAMILY:
            continue
        c = design_contrast(dec, n_boot, seed)
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
