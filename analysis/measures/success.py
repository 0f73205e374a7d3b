"""Success per regime and mean6, and paired differences between arms (docs/results.md).

A question's success in a regime is the mean of `correct` over its episodes there
(seeds and replicates); a regime's success is the mean over its questions; mean6
is the equal-weight mean of the six mean6 regimes. Intervals resample questions,
and a paired difference resamples the same questions for both arms.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis.base.arms import ArmKey, Grouping
from analysis.base.cache import REFERENCE
from analysis.base.rows import Row, Table, interval_row, with_holm
from analysis.measures.results import TableInput, TablePart
from analysis.stats.bootstrap import N_BOOT, Interval, bootstrap_intervals, noninferior, safe_ratio
from analysis.stats.codes import sorted_codes
from analysis.stats.ties import paired_tolerance
from core.regimes import MEAN6

MEAN6_LABEL = "mean6"


NI_MARGIN = -0.05
"""The paired table's non-inferiority margin (its detail says whether the lower bound
is above it)."""


@dataclass(frozen=True)
class QuestionMatrix:
    """Per-question, per-regime means of one episode column.

    Attributes:
        questions: question ids (rows).
        regimes: regime names (columns), mean6 regimes first in the paper's order.
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
        The mean6 regimes present in the paper's order, then any others sorted.
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


def group_question_matrices(episodes: pd.DataFrame, code: np.ndarray, n_groups: int,
                            columns: Sequence[pd.Series | np.ndarray]
                            ) -> list[tuple[QuestionMatrix, ...]]:
    """`question_matrix` of several columns for every group, in one grouped pass.

    One groupby over (group, question, regime) averages each cell's episodes in
    their frame order, the arithmetic `question_matrix` applies to a group's own
    frame, so every matrix equals `question_matrix(group episodes, column)` to the
    last digit.

    Args:
        episodes: episodes of every group.
        code: group code per episode (`analysis.base.arms.Grouping.codes`; -1: in no group).
        n_groups: number of groups.
        columns: value columns aligned with `episodes`.

    Returns:
        Per group, one QuestionMatrix per column (questions sorted, regimes in
        `regime_order`).
    """
    keep = code >= 0
    q_names, q_code = _sorted_codes(episodes["question_id"], keep)
    r_names, r_code = _sorted_codes(episodes["regime"], keep)
    n_q, n_r = len(q_names), len(r_names)
    cell = (code[keep] * n_q + q_code) * n_r + r_code
    frame = pd.DataFrame({i: np.asarray(c, dtype=float)[keep] for i, c in enumerate(columns)})
    means = frame.groupby(cell, sort=True).mean()
    cells = means.index.to_numpy(dtype=np.int64)
    values = means.to_numpy(dtype=float)
    c_group, rest = np.divmod(cells, n_q * n_r)
    c_q, c_r = np.divmod(rest, n_r)
    bounds = np.searchsorted(c_group, np.arange(n_groups + 1))
    all_regimes = regime_order(r_names.tolist())
    rank = {r: i for i, r in enumerate(all_regimes)}
    r_rank = np.array([rank[r] for r in r_names.tolist()], dtype=np.int64)
    out: list[tuple[QuestionMatrix, ...]] = []
    for g in range(n_groups):
        part = slice(bounds[g], bounds[g + 1])
        qs, qi = np.unique(c_q[part], return_inverse=True)
        rs, ri = np.unique(r_rank[c_r[part]], return_inverse=True)
        order = tuple(all_regimes[k] for k in rs)
        questions = tuple(q_names[qs].tolist())
        mats = []
        for j in range(values.shape[1]):
            grid = np.full((len(qs), len(rs)), np.nan)
            grid[qi, ri] = values[part, j]
            mats.append(QuestionMatrix(questions, order, np.nan_to_num(grid), ~np.isnan(grid)))
        out.append(tuple(mats))
    return out


def _sorted_codes(values: pd.Series, keep: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct values as strings in sorted order, and each kept row's index among them."""
    codes, uniques = sorted_codes(values)
    names = np.array([str(u) for u in uniques], dtype=object)
    merged, rank = np.unique(names, return_inverse=True)
    return merged, rank[codes[keep]]


def restrict(m: QuestionMatrix, questions: Sequence[str], regimes: Sequence[str]
             ) -> QuestionMatrix:
    """The matrix on other questions and regimes (0 and absent where `m` has none).

    Args:
        m: a question matrix.
        questions: row order.
        regimes: column order.

    Returns:
        The QuestionMatrix `question_matrix` would give with these questions and regimes.
    """
    qi, ri = _positions(m.questions, questions), _positions(m.regimes, regimes)
    value = np.zeros((len(qi), len(ri)))
    present = np.zeros((len(qi), len(ri)), dtype=bool)
    rows, cols = np.flatnonzero(qi >= 0), np.flatnonzero(ri >= 0)
    value[np.ix_(rows, cols)] = m.value[np.ix_(qi[rows], ri[cols])]
    present[np.ix_(rows, cols)] = m.present[np.ix_(qi[rows], ri[cols])]
    return QuestionMatrix(tuple(questions), tuple(regimes), value, present)


def _positions(have: tuple[str, ...], want: Sequence[str]) -> np.ndarray:
    """Where each of `want` is in `have` (-1: absent), as ``pd.Index.get_indexer``; without
    building an index when the two are the same (a group that ran every question)."""
    if len(have) == len(want) and have == tuple(want):
        return np.arange(len(have))
    return pd.Index(have).get_indexer(list(want))


def _matrix_key(m: QuestionMatrix) -> tuple[object, ...]:
    """Everything a question matrix's intervals are computed from: matrices with equal
    keys are equal, so their intervals are too (groups whose episodes score alike, such
    as arms a simulated model answers the same way)."""
    return (m.questions, m.regimes, m.value.shape, m.value.tobytes(), m.present.tobytes())


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
    return _regime_means(m, weights, scope, weights @ m.present.astype(float))


def resample_means(m: QuestionMatrix, weights: np.ndarray, scope: str = MEAN6_LABEL
                   ) -> np.ndarray:
    """`regime_means` under resample counts: whole numbers, each row summing to the
    number of questions (every batch of `analysis.stats.bootstrap.resample_weights`, and the
    all-ones row of the point estimate).

    A regime's weight total ``weights @ present`` is then a sum of whole numbers,
    exact in any order, and where every question ran in the regime it is that row
    sum, the number of questions: one product per batch instead of two, the same
    numbers to the last digit.

    Args:
        m: the question matrix.
        weights: (b, questions) resample counts.
        scope: as for `regime_means`.

    Returns:
        `regime_means(m, weights, scope)`.
    """
    if not m.present.all():
        return regime_means(m, weights, scope)
    return _regime_means(m, weights, scope, np.array(float(len(m.questions))))


class _Means:
    """`resample_means` of one matrix with what does not depend on the weights formed
    once (a group's bootstrap calls it for every batch of resamples): the same
    operations on the same arrays, so the same numbers to the last digit."""

    def __init__(self, m: QuestionMatrix, scope: str = MEAN6_LABEL) -> None:
        self.m, self.scope = m, scope
        self.full = bool(m.present.all())
        self.product = m.value * m.present
        self.den = np.array(float(len(m.questions)))
        self.cols: list[int] | slice | None = slice(None) if m.regimes else None  # "all"
        if scope == MEAN6_LABEL:
            cols = [m.regimes.index(r) for r in MEAN6 if r in m.regimes]
            self.cols = cols if len(cols) == len(MEAN6) else None

    def __call__(self, weights: np.ndarray) -> np.ndarray:
        if not self.full or not len(self.m.questions):
            return resample_means(self.m, weights, self.scope)
        # safe_ratio's division where the denominator (the number of questions) is > 0
        per = np.divide(weights @ self.product, self.den)
        out = np.empty((len(per), per.shape[1] + 1))
        out[:, :-1] = per
        out[:, -1] = per[:, self.cols].mean(axis=1) if self.cols is not None else np.nan
        return out


def _regime_means(m: QuestionMatrix, weights: np.ndarray, scope: str, den: np.ndarray
                  ) -> np.ndarray:
    """`regime_means` given each regime's weight total `den` (broadcast to the means)."""
    num = weights @ (m.value * m.present)
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
    return _regime_intervals(question_matrix(episodes), n_boot, seed)


def _regime_intervals(m: QuestionMatrix, n_boot: int, seed: int
                      ) -> tuple[tuple[str, Interval], ...]:
    """`success_by_regime` from the arm's question matrix."""
    res = bootstrap_intervals(_Means(m), len(m.questions), n_boot, seed)
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
    return paired_matrices([(question_matrix(a), question_matrix(b), 0)], n_boot, seed)[0]


def paired_regime_mean(a: pd.DataFrame, b: pd.DataFrame, regimes: Sequence[str],
                       n_boot: int = N_BOOT, seed: int = 0) -> tuple[Interval | None, str]:
    """Arm A minus arm B, each the equal-weight mean of its success over `regimes`
    (e.g. the paper's mean3), paired by question: only questions both arms ran, each
    resample drawing the same questions for both. With `regimes` = the six mean6
    regimes this is `paired_success`'s mean6.

    Args:
        a: error-free episodes of arm A.
        b: error-free episodes of arm B.
        regimes: the regimes averaged; each must have been run by both arms.
        n_boot: question-level resamples.
        seed: bootstrap seed.

    Returns:
        (Interval with both shares for `analysis.stats.bootstrap.bootstrap_p`, "n questions"),
        or (None, why) when a regime is missing from either arm.
    """
    ma, mb = question_matrix(a), question_matrix(b)
    missing = [r for r in regimes if r not in ma.regimes or r not in mb.regimes]
    if missing:
        return None, f"{missing[0]} not run by both arms"
    common = tuple(sorted(set(ma.questions) & set(mb.questions)))
    ma, mb = restrict(ma, common, regimes), restrict(mb, common, regimes)

    def stat(w: np.ndarray) -> np.ndarray:
        return resample_means(ma, w, "all")[:, -1] - resample_means(mb, w, "all")[:, -1]

    ties = paired_tolerance(ma.value, ma.present, mb.value, mb.present,
                            [range(len(regimes))])
    iv = bootstrap_intervals(stat, len(common), n_boot, seed, with_p=True, ties=ties)[0]
    return (iv if iv.defined else None), f"{len(common)} questions"


def paired_matrices(pairs: Sequence[tuple[QuestionMatrix, QuestionMatrix, object]],
                    n_boot: int = N_BOOT, seed: int = 0
                    ) -> list[tuple[tuple[str, Interval], ...]]:
    """`paired_success` from question matrices: each pair on the questions both ran
    (sorted) and the regimes both ran (`regime_order`).

    Pairs with the same reference, questions and regimes see the same resample
    weights anyway (they depend only on the number of questions and the seed); here
    each weight batch is used once for all of them and the reference's means are
    computed once per batch, so the numbers are those of `paired_success`, pair by
    pair, to the last digit.

    Args:
        pairs: (arm matrix, reference matrix, reference identity) per pair; the
            identity (any hashable) tells which pairs share a reference.
        n_boot: question-level resamples.
        seed: bootstrap seed.

    Returns:
        One ((regime, Interval), …, ("mean6", Interval)) per pair, in order.
    """
    batches: dict[tuple[object, tuple[str, ...], tuple[str, ...]], list[int]] = {}
    for i, (ma, mb, ref) in enumerate(pairs):
        common = tuple(sorted(set(ma.questions) & set(mb.questions)))
        regimes = regime_order(sorted(set(ma.regimes) & set(mb.regimes)))
        batches.setdefault((ref, common, regimes), []).append(i)
    out: list[tuple[tuple[str, Interval], ...]] = [()] * len(pairs)
    for (_, common, regimes), all_members in batches.items():
        mb = restrict(pairs[all_members[0]][1], common, regimes)
        # arms with equal matrices have equal differences: each is resampled once
        alike: dict[tuple[object, ...], list[int]] = {}
        for i in all_members:
            alike.setdefault(_matrix_key(pairs[i][0]), []).append(i)
        members = [same[0] for same in alike.values()]
        mas = [restrict(pairs[i][0], common, regimes) for i in members]

        ref_means, arm_means = _Means(mb), [_Means(ma) for ma in mas]

        def stat(w: np.ndarray, ref_means: _Means = ref_means,
                 arm_means: list[_Means] = arm_means) -> np.ndarray:
            ref = ref_means(w)
            return np.column_stack([means(w) - ref for means in arm_means])

        columns = _tie_columns(regimes)
        ties = np.concatenate([paired_tolerance(ma.value, ma.present, mb.value, mb.present,
                                                columns) for ma in mas])
        res = bootstrap_intervals(stat, len(common), n_boot, seed, with_p=True, ties=ties)
        width = len(regimes) + 1
        for k, same in enumerate(alike.values()):
            for i in same:
                out[i] = tuple(zip((*regimes, MEAN6_LABEL), res[k * width:(k + 1) * width]))
    return out


def _tie_columns(regimes: Sequence[str]) -> list[list[int]]:
    """The regime indices behind each column of `resample_means` (each regime, then
    mean6's six), for `analysis.stats.ties.paired_tolerance`."""
    mean6 = [regimes.index(r) for r in MEAN6 if r in regimes]
    return [[i] for i in range(len(regimes))] + [mean6]


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
    return _success_table(_arm_matrices(episodes, grouping), n_boot, seed, grouping)


def _arm_matrices(episodes: pd.DataFrame, grouping: Grouping
                  ) -> tuple[list[ArmKey], list[QuestionMatrix]]:
    """Every group's ArmKey and its success question matrix (what the success and the
    paired tables both read: computed once for the two)."""
    keys, code = grouping.codes(episodes)
    mats = group_question_matrices(episodes, code, len(keys), [episodes["correct"]])
    return keys, [m for (m,) in mats]


def _success_table(arms: tuple[list[ArmKey], list[QuestionMatrix]], n_boot: int, seed: int,
                   grouping: Grouping) -> Table:
    """`success_table` from `_arm_matrices`."""
    keys, mats = arms
    rows: list[Row] = []
    done: dict[tuple[object, ...], tuple[tuple[str, Interval], ...]] = {}
    for arm, m in zip(keys, mats):
        key = _matrix_key(m)  # equal matrices are resampled once
        if key not in done:
            done[key] = _regime_intervals(m, n_boot, seed)
        for regime, iv in done[key]:
            rows.append(interval_row(arm, "success", iv, regime,
                                     regimes=_covers(regime, arm.regimes)))
    notes = (("Share of questions answered correctly (HotpotQA: token F1 ≥ the threshold; FEVER: "
              "the exact label), raw; mean6 = equal-weight mean of clean, persistent, "
              "recover_after_1–3, late_onset_from_3 (– if one is missing); 95% question "
              "bootstrap."),)
    return Table("success", "Success per regime and mean6", tuple(rows), notes, "wide",
                 (MEAN6_LABEL,), pooled=grouping.pooled)


def paired_table(episodes: pd.DataFrame, reference: str = REFERENCE, n_boot: int = N_BOOT,
                 seed: int = 0, grouping: Grouping | None = None,
                 margin: float = NI_MARGIN) -> Table:
    """Every arm minus the `reference` arm of the same group, paired by question.

    An arm is paired only with the reference arm (label exactly `reference`) of the
    same model, budget, dataset, question set(s), run(s), seed(s) and replicate(s).
    Holm adjusts p across models within each `analysis.base.rows.holm_family` (arm ×
    budget × dataset × set × scope × what the row covers × amendment); detail says whether
    non-inferiority at `margin` holds (lower bound > margin).

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
    return _paired_table(_arm_matrices(episodes, grouping), reference, n_boot, seed, grouping,
                         margin)


def _paired_table(groups: tuple[list[ArmKey], list[QuestionMatrix]], reference: str,
                  n_boot: int, seed: int, grouping: Grouping, margin: float) -> Table:
    """`paired_table` from `_arm_matrices`."""
    arms, mats = groups
    refs = {k.pair_key(): i for i, k in enumerate(arms) if k.is_arm(reference)}
    pairs = [(arm, i, refs[arm.pair_key()]) for i, arm in enumerate(arms)
             if not arm.is_arm(reference) and arm.pair_key() in refs]
    differences = paired_matrices([(mats[i], mats[r], r) for _, i, r in pairs], n_boot, seed)
    raw: list[Row] = []
    for (arm, _, r), intervals in zip(pairs, differences):
        ref_key = arms[r]
        for scope, iv in intervals:
            ni = noninferior(iv, margin)
            detail = "" if ni is None else f"NI({margin:+.2f}) {'yes' if ni else 'no'}"
            covers = _covers(scope, sorted(set(arm.regimes) & set(ref_key.regimes)))
            raw.append(interval_row(arm, f"success − {reference}", iv, scope, detail=detail,
                                    with_p=True, regimes=covers))
    rows = with_holm(raw)
    notes = ((f"Arm − {reference} on the same questions, within the same model, budget, "
             "dataset, question set(s), run(s), seed(s) and replicate(s); p = share of "
             "resampled differences ≤ 0 (one-sided), at least 1/(resamples+1); p_holm: Holm "
             "across models within arm × budget × dataset × set × scope × amendment "
             "(holm_m); NI: "
             f"non-inferiority (lower bound > {margin:+.2f})."),)
    return Table("paired", f"Paired success differences against '{reference}'", rows, notes,
                 "wide", (MEAN6_LABEL,), pooled=grouping.pooled)


def success_results(inp: TableInput) -> TablePart:
    """The "success" results table with the paired differences (`analysis.tables.registry`)."""
    arms = _arm_matrices(inp.episodes, inp.grouping)
    return TablePart((_success_table(arms, inp.n_boot, inp.seed, inp.grouping),
                      _paired_table(arms, inp.reference, inp.n_boot, inp.seed, inp.grouping,
                                    NI_MARGIN)))
