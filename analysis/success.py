"""Success per regime and mean6, and paired differences between arms (SPEC §5.3, §13.1).

A question's success in a regime is the mean of `correct` over its episodes there
(seeds and replicates); a regime's success is the mean over its questions; mean6
is the equal-weight mean of the six mean6 regimes. Intervals resample questions,
and a paired difference resamples the same questions for both arms.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from analysis.arms import Grouping
from analysis.decisions import arm_groups
from analysis.rows import Row, Table, interval_row
from analysis.stats import N_BOOT, Interval, bootstrap_intervals, holm, noninferior, safe_ratio
from core.regimes import MEAN6

MEAN6_LABEL = "mean6"
REFERENCE = "none"


@dataclass(frozen=True)
class QuestionMatrix:
    """Per-question, per-regime means of one episode column.

    Attributes:
        questions: question ids (rows).
        regimes: regime names (columns), mean6 regimes first in SPEC order.
        value: (questions, regimes) means; 0 where absent.
        present: (questions, regimes) whether the question ran in the regime.
    """

    questions: tuple[str, ...]
    regimes: tuple[str, ...]
    value: np.ndarray
    present: np.ndarray


def regime_order(regimes: Sequence[str]) -> tuple[str, ...]:
    """Order regimes for tables.

    Args:
        regimes: regime names (any order, repeats allowed).

    Returns:
        The mean6 regimes present in SPEC order, then any others sorted.
    """
    present = set(regimes)
    return tuple(r for r in MEAN6 if r in present) + tuple(sorted(present - set(MEAN6)))


def question_matrix(episodes: pd.DataFrame, column: pd.Series | str = "correct",
                    questions: Sequence[str] | None = None,
                    regimes: Sequence[str] | None = None) -> QuestionMatrix:
    """Average an episode column by question and regime.

    Args:
        episodes: episodes of one arm.
        column: a column name or a Series aligned with `episodes`.
        questions: row order (default: the arm's questions, sorted).
        regimes: column order (default: `regime_order` of the arm's regimes).

    Returns:
        The QuestionMatrix.
    """
    values = episodes[column] if isinstance(column, str) else column
    frame = pd.DataFrame({"q": episodes["question_id"].astype(str).to_numpy(),
                          "r": episodes["regime"].astype(str).to_numpy(),
                          "v": np.asarray(values, dtype=float)})
    means = frame.groupby(["q", "r"])["v"].mean().unstack("r")
    qs = tuple(sorted(means.index)) if questions is None else tuple(questions)
    rs = regime_order(list(means.columns)) if regimes is None else tuple(regimes)
    means = means.reindex(index=list(qs), columns=list(rs))
    present = means.notna().to_numpy()
    return QuestionMatrix(qs, rs, np.nan_to_num(means.to_numpy(dtype=float)), present)


def regime_means(m: QuestionMatrix, weights: np.ndarray, scope: str = MEAN6_LABEL
                 ) -> np.ndarray:
    """Per-regime means and their overall mean under question weights.

    Args:
        m: the question matrix.
        weights: (b, questions) resample counts.
        scope: "mean6" (NaN unless all six mean6 regimes are present) or "all"
            (equal-weight mean of every regime present).

    Returns:
        (b, regimes + 1) array: one column per regime, then the overall mean.
    """
    num = weights @ (m.value * m.present)
    den = weights @ m.present.astype(float)
    per = safe_ratio(num, den)
    if scope == MEAN6_LABEL:
        cols = [m.regimes.index(r) for r in MEAN6 if r in m.regimes]
        overall = per[:, cols].mean(axis=1) if len(cols) == len(MEAN6) else np.full(
            len(per), np.nan)
    else:
        overall = per.mean(axis=1) if per.shape[1] else np.full(len(per), np.nan)
    return np.column_stack([per, overall])


def success_by_regime(episodes: pd.DataFrame, n_boot: int = N_BOOT, seed: int = 0
                      ) -> tuple[tuple[str, Interval], ...]:
    """Success per regime and mean6 for one arm.

    Args:
        episodes: error-free episodes of one arm.
        n_boot: question-level resamples.
        seed: bootstrap seed.

    Returns:
        ((regime, Interval), …, ("mean6", Interval)); mean6 is NaN unless the arm ran
        all six mean6 regimes.
    """
    m = question_matrix(episodes)
    res = bootstrap_intervals(lambda w: regime_means(m, w), len(m.questions), n_boot, seed)
    return tuple(zip((*m.regimes, MEAN6_LABEL), res))


def paired_success(a: pd.DataFrame, b: pd.DataFrame, n_boot: int = N_BOOT, seed: int = 0
                   ) -> tuple[tuple[str, Interval], ...]:
    """Success of arm A minus arm B per regime and mean6, paired by question.

    Only questions both arms ran are used; each resample draws the same questions
    for both arms. p is the share of resampled differences <= 0 (one-sided, A > B).

    Args:
        a: error-free episodes of arm A.
        b: error-free episodes of arm B.
        n_boot: question-level resamples.
        seed: bootstrap seed.

    Returns:
        ((regime, Interval), …, ("mean6", Interval)) over the regimes both ran.
    """
    common = sorted(set(a["question_id"].astype(str)) & set(b["question_id"].astype(str)))
    regimes = regime_order(sorted(set(a["regime"]) & set(b["regime"])))
    ma = question_matrix(a, questions=common, regimes=regimes)
    mb = question_matrix(b, questions=common, regimes=regimes)

    def stat(w: np.ndarray) -> np.ndarray:
        return regime_means(ma, w) - regime_means(mb, w)

    res = bootstrap_intervals(stat, len(common), n_boot, seed, with_p=True)
    return tuple(zip((*regimes, MEAN6_LABEL), res))


def paired_differences(pairs: Sequence[tuple[pd.DataFrame, pd.DataFrame]],
                       n_boot: int = N_BOOT, seed: int = 0
                       ) -> list[tuple[tuple[str, Interval], ...]]:
    """`paired_success` of many (arm, reference) pairs, the pairs that share a reference,
    questions and regimes resampled together.

    Such pairs see the same resample weights anyway (they depend only on the number
    of questions and the seed); here each weight batch is drawn once for all of them
    and the reference's means are computed once per batch, so the numbers are those
    of `paired_success`, pair by pair, to the last digit.

    Args:
        pairs: (arm episodes, reference episodes) per pair.
        n_boot: question-level resamples.
        seed: bootstrap seed.

    Returns:
        One `paired_success` result per pair, in order.
    """
    batches: dict[tuple[int, tuple[str, ...], tuple[str, ...]], list[int]] = {}
    for i, (a, b) in enumerate(pairs):
        common = tuple(sorted(set(a["question_id"].astype(str))
                              & set(b["question_id"].astype(str))))
        regimes = regime_order(sorted(set(a["regime"]) & set(b["regime"])))
        batches.setdefault((id(b), common, regimes), []).append(i)
    out: list[tuple[tuple[str, Interval], ...]] = [()] * len(pairs)
    for (_, common, regimes), members in batches.items():
        mb = question_matrix(pairs[members[0]][1], questions=common, regimes=regimes)
        mas = [question_matrix(pairs[i][0], questions=common, regimes=regimes) for i in members]

        def stat(w: np.ndarray, mb: QuestionMatrix = mb,
                 mas: list[QuestionMatrix] = mas) -> np.ndarray:
            ref = regime_means(mb, w)
            return np.column_stack([regime_means(ma, w) - ref for ma in mas])

        res = bootstrap_intervals(stat, len(common), n_boot, seed, with_p=True)
        width = len(regimes) + 1
        for k, i in enumerate(members):
            out[i] = tuple(zip((*regimes, MEAN6_LABEL), res[k * width:(k + 1) * width]))
    return out


def _covers(scope: str, regimes: Sequence[str]) -> tuple[str, ...]:
    """The regimes behind a success row: its regime, or the mean6 ones for mean6."""
    return tuple(r for r in MEAN6 if r in regimes) if scope == MEAN6_LABEL else (scope,)


def success_table(episodes: pd.DataFrame, n_boot: int = N_BOOT, seed: int = 0,
                  grouping: Grouping | None = None) -> Table:
    """Success per regime and mean6 for every group (wide: one line per group).

    Each regime is its own column, so no estimate pools regimes; mean6 covers the six
    mean6 regimes only.

    Args:
        episodes: error-free episodes.
        n_boot: question-level resamples.
        seed: bootstrap seed.
        grouping: what rows pool and the errored episodes they count.

    Returns:
        Table "success".
    """
    grouping = grouping or Grouping()
    rows: list[Row] = []
    for arm, ep in arm_groups(episodes, grouping):
        for regime, iv in success_by_regime(ep, n_boot, seed):
            rows.append(interval_row(arm, "success", iv, regime,
                                     regimes=_covers(regime, arm.regimes)))
    notes = (("Share of questions answered correctly (F1 ≥ threshold), raw; mean6 = equal-weight "
             "mean of clean, persistent, recover_after_1–3, late_onset_from_3 (– if one is "
             "missing); 95% question bootstrap."),)
    return Table("success", "Success per regime and mean6", tuple(rows), notes, "wide",
                 (MEAN6_LABEL,), pooled=grouping.pooled)


def paired_table(episodes: pd.DataFrame, reference: str = REFERENCE, n_boot: int = N_BOOT,
                 seed: int = 0, grouping: Grouping | None = None,
                 margin: float = -0.05) -> Table:
    """Every arm minus the `reference` arm of the same group, paired by question.

    An arm is paired only with the reference arm (label exactly `reference`) of the
    same model, budget, dataset, question set(s), run(s), seed(s) and replicate(s).
    Holm adjusts p across models for each (arm, budget, scope, what
    the row covers) hypothesis; detail says whether non-inferiority at `margin` holds
    (lower bound > margin).

    Args:
        episodes: error-free episodes.
        reference: the comparator's arm label (default "none", not "none:judge=true").
        n_boot: question-level resamples.
        seed: bootstrap seed.
        grouping: what rows pool and the errored episodes they count.
        margin: non-inferiority margin.

    Returns:
        Table "paired" (empty when no group has `reference` and another arm).
    """
    grouping = grouping or Grouping()
    groups = list(arm_groups(episodes, grouping))
    refs = {k.pair_key(): (k, ep) for k, ep in groups if k.arm == reference}
    pairs = [(arm, ep, refs[arm.pair_key()]) for arm, ep in groups
             if arm.arm != reference and arm.pair_key() in refs]
    differences = paired_differences([(ep, ref_ep) for _, ep, (_, ref_ep) in pairs], n_boot,
                                     seed)
    raw: list[Row] = []
    for (arm, _, (ref_key, _)), intervals in zip(pairs, differences):
        for scope, iv in intervals:
            ni = noninferior(iv, margin)
            detail = "" if ni is None else f"NI({margin:+.2f}) {'yes' if ni else 'no'}"
            covers = _covers(scope, sorted(set(arm.regimes) & set(ref_key.regimes)))
            raw.append(interval_row(arm, f"success − {reference}", iv, scope, detail=detail,
                                    with_p=True, regimes=covers))
    adjusted: dict[int, float] = {}

    def hypothesis(r: Row) -> tuple[object, ...]:
        return (r.label, r.budget, r.scope, r.dataset, r.question_set, r.runs, r.seeds,
                r.replicates)

    keys = sorted({hypothesis(r) for r in raw}, key=str)
    for key in keys:
        idx = [i for i, r in enumerate(raw) if hypothesis(r) == key]
        for i, p in zip(idx, holm([raw[i].p for i in idx])):
            adjusted[i] = p
    rows = tuple(replace(r, p_holm=adjusted.get(i, math.nan)) for i, r in enumerate(raw))
    notes = ((f"Arm − {reference} on the same questions, within the same model, budget, "
             "dataset, question set(s), run(s), seed(s) and replicate(s); p = share of "
             "resampled differences ≤ 0 (one-sided); p_holm: Holm across models; NI: "
             f"non-inferiority (lower bound > {margin:+.2f})."),)
    return Table("paired", f"Paired success differences against '{reference}'", rows, notes,
                 "wide", (MEAN6_LABEL,), pooled=grouping.pooled)
