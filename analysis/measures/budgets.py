"""The budget-scaling table (paper App. D.1 Table 16, D.2 Table 18): one arm at two
action budgets, paired by question.

For every group of episodes that differs only in its budget (same model, arm by its
full spec, dataset, question set, run, seed and replicate: `analysis.base.arms`, budget
left out of the key) and every two budgets a < b it ran, each regime both budgets
ran is compared on the questions both ran there:

- success: share of questions answered correctly;
- answered: share of episodes that answered (finish) rather than running out or
  failing to produce an action;
- median_action: median action at which the answers were given (1-based);
- final_share: share of those answers given at the budget's final action;
- tool_calls: mean tool calls (search and lookup) per episode.

Each is reported at a (``success@8``), at b (``success@16``) and as the paired
difference b − a (``success_diff``); the row's scope names the regime and the
two budgets ("persistent · 16 vs 8"). Intervals resample questions (2,000 by
default), drawing the same questions for both budgets; a question with several
episodes (seeds or replicates pooled) keeps them together. Regimes are never
pooled: each is its own scope.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from itertools import combinations

import numpy as np
import pandas as pd

from analysis.base.arms import ArmKey, Grouping, regime_order
from analysis.base.rows import Row, Table, interval_row, with_holm
from analysis.measures.results import TableInput, TablePart
from analysis.stats.bootstrap import N_BOOT, Interval, bootstrap_intervals, safe_ratio

MEASURES = ("success", "answered", "median_action", "final_share", "tool_calls")
"""What the table compares, in column order."""
_TOL = 1e-9


@dataclass(frozen=True)
class BudgetSide:
    """One budget's episodes in one regime, on the paired questions.

    Attributes:
        budget: the action budget.
        question: index of each episode's question among the paired questions.
        correct: per-episode correctness (0/1).
        answered: per-episode answered flag (0/1).
        action: per-episode answering action (NaN when unanswered).
        tool_calls: per-episode tool calls.
    """

    budget: int
    question: np.ndarray
    correct: np.ndarray
    answered: np.ndarray
    action: np.ndarray
    tool_calls: np.ndarray

    @classmethod
    def from_episodes(cls, episodes: pd.DataFrame, budget: int,
                      questions: Sequence[str]) -> BudgetSide:
        """The side of `budget` from error-free episodes of one regime.

        Args:
            episodes: episodes of one group at `budget` in one regime.
            budget: their budget.
            questions: the paired questions (episodes of other questions are dropped).

        Returns:
            The BudgetSide.
        """
        index = {q: i for i, q in enumerate(questions)}
        qs = episodes["question_id"].astype(str)
        ep = episodes.loc[qs.isin(index)]
        return cls.from_arrays(
            budget, ep["question_id"].astype(str).map(index).to_numpy(dtype=np.int64),
            ep["correct"].astype(float).to_numpy(), ep["answered"].astype(bool).to_numpy(),
            ep["answer_action"].to_numpy(dtype=float, na_value=np.nan),
            ep["tool_calls"].astype(float).to_numpy())

    @classmethod
    def from_arrays(cls, budget: int, question: np.ndarray, correct: np.ndarray,
                    answered: np.ndarray, action: np.ndarray, tool_calls: np.ndarray
                    ) -> BudgetSide:
        """The side of `budget` from per-episode arrays of the paired questions'
        episodes (`question` indexes the paired questions; `answered` as booleans,
        `action` NaN where missing)."""
        return cls(budget, question, correct, answered.astype(float),
                   np.where(answered, action, np.nan), tool_calls)

    @functools.cached_property
    def _per_question(self) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """Per question: (episodes, correct, answered, final answers, tool calls) as
        columns, the distinct answering actions ascending, and the answers at each
        (questions × actions); None when a value is not a whole number.

        Every measure is a ratio of weighted sums, and the median reads the answers'
        weights cumulated in the order of their actions. With whole-number values and
        resample counts as weights, every such sum is a whole number, exact in any
        order, so summing by question first gives the same floats as summing episode
        by episode, with a product over questions instead of over episodes.
        """
        mask = self.answered.astype(bool)
        values = np.stack([np.ones_like(self.correct), self.correct, self.answered,
                           self.answered * (self.action >= self.budget), self.tool_calls])
        answered_actions = self.action[mask]
        if (not np.isfinite(values).all() or (values != np.round(values)).any()
                or not np.isfinite(answered_actions).all()
                or (answered_actions != np.round(answered_actions)).any()):
            return None
        n_q = int(self.question.max()) + 1 if self.question.size else 0
        sums = np.zeros((n_q, values.shape[0]))
        for j in range(values.shape[0]):
            sums[:, j] = np.bincount(self.question, weights=values[j], minlength=n_q)
        actions, which = np.unique(answered_actions, return_inverse=True)
        at = np.zeros((n_q, actions.size))
        np.add.at(at, (self.question[mask], which.reshape(-1)), 1.0)
        return sums, actions, at

    def measures(self, w: np.ndarray) -> np.ndarray:
        """The five measures under question weights.

        Args:
            w: (b, questions) resample counts.

        Returns:
            (b, 5) array in MEASURES order; NaN where undefined (no answers).
        """
        grouped = self._per_question if w.shape[1] and self.question.size else None
        if grouped is not None and (w == np.round(w)).all():
            sums, actions, at = grouped
            s = w[:, :sums.shape[0]] @ sums
            total, answers = s[:, 0], s[:, 2]
            return np.column_stack([
                safe_ratio(s[:, 1], total), safe_ratio(answers, total),
                _median_of_counts(actions, w[:, :at.shape[0]] @ at),
                safe_ratio(s[:, 3], answers), safe_ratio(s[:, 4], total)])
        ew = w[:, self.question]  # each episode weighs as much as its question
        total = ew.sum(axis=1)
        answers = ew @ self.answered
        final = ew @ (self.answered * (self.action >= self.budget))
        mask = self.answered.astype(bool)
        return np.column_stack([
            safe_ratio(ew @ self.correct, total), safe_ratio(answers, total),
            weighted_median(self.action[mask], ew[:, mask]), safe_ratio(final, answers),
            safe_ratio(ew @ self.tool_calls, total)])


def _median_of_counts(values: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """`weighted_median` of distinct ascending `values` under whole-number `weights`
    (b, values): the weights of equal values summed first, which moves neither crossing
    of half the total (the first value reaching it is the value of the first episode
    reaching it), so the medians are the same floats."""
    b = weights.shape[0]
    if values.size == 0:
        return np.full(b, np.nan)
    cum = np.cumsum(weights, axis=1)
    half = cum[:, -1:] / 2
    lo = np.argmax(cum >= half - _TOL, axis=1)
    hi = np.argmax(cum > half + _TOL, axis=1)
    out = (values[lo] + values[hi]) / 2
    out[cum[:, -1] <= 0] = np.nan
    return out


def weighted_median(values: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Median of `values` under each row of `weights` (np.median when weights are 1).

    With an even total weight that splits exactly between two values, their mean is
    taken, as np.median does.

    Args:
        values: (n,) values.
        weights: (b, n) non-negative weights.

    Returns:
        (b,) medians; NaN for a row whose weights sum to 0.
    """
    b = weights.shape[0]
    if values.size == 0:
        return np.full(b, np.nan)
    order = np.argsort(values, kind="stable")
    v, cum = values[order], np.cumsum(weights[:, order], axis=1)
    half = cum[:, -1:] / 2
    lo = np.argmax(cum >= half - _TOL, axis=1)
    hi = np.argmax(cum > half + _TOL, axis=1)
    out = (v[lo] + v[hi]) / 2
    out[cum[:, -1] <= 0] = np.nan
    return out


@dataclass(frozen=True)
class BudgetComparison:
    """One group in one regime at budgets a < b, on the questions both ran.

    Attributes:
        regime: the regime.
        budget_a: the smaller budget.
        budget_b: the larger budget.
        at_a: the measures at a (MEASURES order).
        at_b: the measures at b.
        diff: paired differences b − a, with one-sided p (share of resampled
            differences ≤ 0).
        answers: (answers at a, answers at b).
        questions: paired questions.
    """

    regime: str
    budget_a: int
    budget_b: int
    at_a: tuple[Interval, ...]
    at_b: tuple[Interval, ...]
    diff: tuple[Interval, ...]
    answers: tuple[int, int]
    questions: int


def compare_budgets(a: pd.DataFrame, b: pd.DataFrame, budget_a: int, budget_b: int,
                    regime: str, n_boot: int = N_BOOT, seed: int = 0) -> BudgetComparison:
    """Compare one group's episodes at two budgets in one regime, paired by question.

    Args:
        a: error-free episodes at `budget_a` in `regime`.
        b: error-free episodes at `budget_b` in `regime`.
        budget_a: the smaller budget.
        budget_b: the larger budget.
        regime: the regime (recorded only).
        n_boot: question-level resamples.
        seed: bootstrap seed.

    Returns:
        The BudgetComparison over the questions both budgets ran.
    """
    questions = sorted(set(a["question_id"].astype(str)) & set(b["question_id"].astype(str)))
    side_a = BudgetSide.from_episodes(a, budget_a, questions)
    side_b = BudgetSide.from_episodes(b, budget_b, questions)
    return _compare(side_a, side_b, len(questions), regime, n_boot, seed)


def _compare(side_a: BudgetSide, side_b: BudgetSide, questions: int, regime: str,
             n_boot: int, seed: int) -> BudgetComparison:
    """`compare_budgets` of two sides on `questions` paired questions."""

    def stat(w: np.ndarray) -> np.ndarray:
        ma, mb = side_a.measures(w), side_b.measures(w)
        return np.column_stack([ma, mb, mb - ma])

    res = bootstrap_intervals(stat, questions, n_boot, seed, with_p=True)
    k = len(MEASURES)
    return BudgetComparison(regime, side_a.budget, side_b.budget, res[:k], res[k:2 * k],
                            res[2 * k:],
                            (int(side_a.answered.sum()), int(side_b.answered.sum())),
                            questions)


@dataclass(frozen=True)
class _EpisodeArrays:
    """The columns the table reads, once for the whole frame: each episode's question
    (coded in the sorted order of the ids as text), regime, correctness, answered flag,
    answering action and tool calls."""

    question: np.ndarray
    regime: np.ndarray
    correct: np.ndarray
    answered: np.ndarray
    action: np.ndarray
    tool_calls: np.ndarray

    @classmethod
    def of(cls, episodes: pd.DataFrame) -> _EpisodeArrays:
        ids = episodes["question_id"].astype(str).to_numpy()
        uniques = sorted(set(ids.tolist()))
        code = {q: i for i, q in enumerate(uniques)}
        return cls(np.fromiter((code[q] for q in ids), dtype=np.int64, count=len(ids)),
                   episodes["regime"].astype(str).to_numpy(),
                   episodes["correct"].astype(float).to_numpy(),
                   episodes["answered"].astype(bool).to_numpy(),
                   episodes["answer_action"].to_numpy(dtype=float, na_value=np.nan),
                   episodes["tool_calls"].astype(float).to_numpy())

    def side(self, rows: np.ndarray, budget: int, questions: np.ndarray) -> BudgetSide:
        """The BudgetSide of episodes `rows` on the paired `questions` (sorted codes),
        as `BudgetSide.from_episodes` builds it from their frame."""
        q = self.question[rows]
        keep = np.isin(q, questions)
        rows = rows[keep]
        return BudgetSide.from_arrays(budget, np.searchsorted(questions, q[keep]),
                                      self.correct[rows], self.answered[rows],
                                      self.action[rows], self.tool_calls[rows])


def budget_groups(episodes: pd.DataFrame, grouping: Grouping | None = None
                  ) -> Iterator[tuple[ArmKey, dict[int, tuple[ArmKey, np.ndarray]]]]:
    """Groups that differ only in their budget, with each budget's key and episodes.

    Args:
        episodes: error-free episodes.
        grouping: what rows pool and the errored episodes they count.

    Yields:
        (key with budget 0, {budget: (ArmKey, row positions of its episodes)}) for
        groups with two or more budgets, in a stable order.
    """
    keys, code = (grouping or Grouping()).codes(episodes)
    buckets: dict[ArmKey, dict[int, int]] = {}
    for g, key in enumerate(keys):
        buckets.setdefault(replace(key, budget=0), {})[key.budget] = g
    order = np.argsort(code, kind="stable")
    starts = np.searchsorted(code[order], np.arange(len(keys) + 1))
    for key, by_budget in buckets.items():
        if len(by_budget) > 1:
            yield key, {budget: (keys[g], order[starts[g]:starts[g + 1]])
                        for budget, g in by_budget.items()}


def _merged(a: ArmKey, b: ArmKey) -> ArmKey:
    """b's key counting the errored episodes of both budgets, and those that ended
    truncated or refused (for difference rows)."""
    counts: dict[str, int] = {}
    for regime, n in (*a.errored, *b.errored):
        counts[regime] = counts.get(regime, 0) + n
    ended: dict[tuple[str, str], int] = {}
    for regime, why, n in (*a.apart, *b.apart):
        ended[(regime, why)] = ended.get((regime, why), 0) + n
    return replace(b, errored=tuple(sorted(counts.items())),
                   apart=tuple((r, why, n) for (r, why), n in sorted(ended.items())))


def comparison_rows(key_a: ArmKey, key_b: ArmKey, c: BudgetComparison) -> list[Row]:
    """The rows of one comparison: each measure at a, at b, and b − a.

    Args:
        key_a: the group at the smaller budget.
        key_b: the group at the larger budget.
        c: the comparison.

    Returns:
        15 rows (5 measures × at a, at b, difference).
    """
    scope = f"{c.regime} · {c.budget_b} vs {c.budget_a}"
    regimes = (c.regime,)
    rows: list[Row] = []
    answers = dict(zip((c.budget_a, c.budget_b), c.answers))
    for i, m in enumerate(MEASURES):
        for key, iv in ((key_a, c.at_a[i]), (key_b, c.at_b[i])):
            detail = (f"{answers[key.budget]} answers" if m in ("median_action", "final_share")
                      else "")
            rows.append(replace(interval_row(key, f"{m}@{key.budget}", iv, scope,
                                             n=c.questions, detail=detail, regimes=regimes),
                                p=math.nan))
        rows.append(interval_row(_merged(key_a, key_b), f"{m}_diff", c.diff[i], scope,
                                 n=c.questions, detail=f"{c.budget_b} − {c.budget_a}, paired",
                                 with_p=True, regimes=regimes))
    return rows


def budget_pairs(budgets: Iterable[int]) -> list[tuple[int, int]]:
    """Every two budgets (a, b) with a < b, smallest first."""
    return list(combinations(sorted(set(budgets)), 2))


def budget_table(episodes: pd.DataFrame, n_boot: int = N_BOOT, seed: int = 0,
                 grouping: Grouping | None = None) -> Table:
    """The budget-scaling table: each arm at every two budgets it ran, paired by question.

    Args:
        episodes: error-free episodes.
        n_boot: question-level resamples.
        seed: bootstrap seed.
        grouping: what rows pool and the errored episodes they count.

    Returns:
        Table "budgets" (long: one line per measure × budget × regime).
    """
    grouping = grouping or Grouping()
    rows: list[Row] = []
    arrays: _EpisodeArrays | None = None
    for _, by_budget in budget_groups(episodes, grouping):
        arrays = arrays or _EpisodeArrays.of(episodes)  # only when a group has two budgets
        for a, b in budget_pairs(by_budget):
            (key_a, rows_a), (key_b, rows_b) = by_budget[a], by_budget[b]
            regime_a, regime_b = arrays.regime[rows_a], arrays.regime[rows_b]
            for regime in regime_order(set(regime_a.tolist()) & set(regime_b.tolist())):
                in_a, in_b = rows_a[regime_a == regime], rows_b[regime_b == regime]
                questions = np.intersect1d(arrays.question[in_a], arrays.question[in_b])
                c = _compare(arrays.side(in_a, a, questions), arrays.side(in_b, b, questions),
                             len(questions), regime, n_boot, seed)
                if c.questions:
                    rows += comparison_rows(key_a, key_b, c)
    notes = ("Each arm at two action budgets, paired by question (only questions both "
             "budgets ran in the regime); measure@N is the value at budget N, measure_diff "
             "the larger budget minus the smaller with a 95% question bootstrap (both budgets "
             "resampled together), p = share of resampled differences ≤ 0 (at least "
             "1/(resamples+1)) and p_holm across models (holm_m). success: share "
             "correct; answered: share that answered; median_action: median answering action "
             "(1-based); final_share: share of answers at the budget's final action; "
             "tool_calls: mean search and lookup calls. Groups with one budget have no rows.",)
    return Table("budgets", "Budget scaling: each arm at two budgets, paired by question",
                 with_holm(rows), notes, "long", pooled=grouping.pooled)


def budgets_results(inp: TableInput) -> TablePart:
    """The "budgets" results table (`analysis.tables.registry`)."""
    return TablePart((budget_table(inp.episodes, inp.n_boot, inp.seed, inp.grouping),))
