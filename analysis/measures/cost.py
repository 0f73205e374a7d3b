"""Stopping and cost, judgment rates and the dissociation count (docs/results.md).

TPC (tokens per correct answer, over-searching paper §3.2) is
Σ(output tokens + 0.25·input tokens + 500·tool calls) / Σ correct, +∞ with no
correct answer; tokens of judgment forks that only measure are left out
(``charged_tokens``). Utility is success − λ·calls, averaged over regimes like success
(mean6 when the arm ran all six mean6 regimes, else every regime it ran).

Calls charged to an arm (``charged_calls``) are its tool calls plus the model calls
the condition itself needs: the side-channel judgment calls of arms whose rule acts
on them (enforced_rule, combo) or that write them into the history (decide).
Judgment calls that only measure (``judge=true`` on any other arm, the sim's
always-recorded judgments) are measurement cost: reported in their own column,
never charged to utility. random_rule and lexical_rule make no model call for their
signal. The stated-judgment arms make no judgment call: their own calls are the
turns their rule discarded and re-asked (``discarded_turns``, each also counted in
``extra_calls``). switch_rule's own calls are its side-channel judgments of primary
results (``primary_judgments``); judgments of backup results only measure.
``extra_calls`` counts exactly the side-channel judgment calls and discarded turns
(core/react.py), so the split is exact per episode.

Two-source arms: a backup_search call is charged the arm's ``backup_price`` (default
0.10) instead of λ (``charged_cost``); the backup is the costlier source.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from analysis.base.arms import ArmKey, Grouping
from analysis.base.rows import Row, Table, interval_row, make_row
from analysis.measures.regime_boot import overall_intervals
from analysis.measures.results import TableInput, TablePart
from analysis.measures.success import (
    MEAN6_LABEL,
    QuestionMatrix,
    group_question_matrices,
)
from analysis.stats.bootstrap import N_BOOT, Interval
from analysis.stats.codes import sorted_codes
from core.conditions import LAMBDA, Condition, condition_from_spec, parse_condition
from core.regimes import MEAN6

TPC_INPUT, TPC_CALL = 0.25, 500.0


@dataclass(frozen=True)
class Rate:
    """k of n, with the share (NaN when n = 0).

    Attributes:
        k: the count; for a dissociation, questions answered with each question's
            seeds averaged (``analysis.measures.dissociation``), fractional only when a
            question's seeds disagree.
        n: the total (judgments, or questions for a dissociation).
    """

    k: float
    n: int

    @property
    def share(self) -> float:
        """k / n, NaN when n = 0."""
        return self.k / self.n if self.n else math.nan


@dataclass(frozen=True)
class StoppingCost:
    """Stopping and cost of one arm.

    Attributes:
        episodes: error-free episodes.
        answered: episodes that answered (finish).
        median_answer_action: median action of the answers (NaN without answers).
        final_action_share: share of answers given at the budget's final action.
        tool_calls: mean tool calls per episode.
        own_calls: mean model calls per episode that the condition itself needs
            besides acting turns (its judgment calls; ``own_calls``).
        measurement_calls: mean calls per episode made only to measure
            (``judge=true`` judgments; never charged).
        success: success over `scope`.
        utility: success − λ·tool calls over `scope` (a backup call costs the arm's
            backup_price instead of λ: ``charged_cost``).
        utility_all: success − λ·(tool calls + own calls) over `scope` (all calls
            the arm needs charged, the paper's A19 E3 "all calls counted").
        input_tokens: mean input tokens per episode.
        output_tokens: mean output tokens per episode.
        cache_read_tokens: mean prompt tokens read from a prompt cache per episode.
        cache_write_tokens: mean prompt tokens written to a prompt cache per episode.
        dollars: total cost in USD.
        tpc: tokens per correct answer (+∞ with no correct answer).
            The tokens, dollars and TPC are NaN where an episode counted no token (its
            calls were made elsewhere: imported episodes).
        scope: "mean6" or "all regimes" (what success and utility average over).
        lam: λ used.
    """

    episodes: int
    answered: int
    median_answer_action: float
    final_action_share: float
    tool_calls: float
    own_calls: float
    measurement_calls: float
    success: Interval
    utility: Interval
    utility_all: Interval
    input_tokens: float
    output_tokens: float
    cache_read_tokens: float
    cache_write_tokens: float
    dollars: float
    tpc: float
    scope: str
    lam: float


def parse_condition_of(spec: str | None, name: str) -> Condition:
    """An episode's condition: from its stored spec, else from its name or arm label.

    Args:
        spec: the cell's condition spec JSON, or None / "" where none is stored.
        name: the condition name or arm label (``enforced_rule:k=7``).

    Returns:
        The Condition.
    """
    return condition_from_spec(spec) if isinstance(spec, str) and spec else parse_condition(name)


def needs_judgment_calls(condition: Condition) -> bool:
    """Whether the condition itself needs the side-channel judgment call after each
    observation (its rule acts on it, or decide writes it into the history)."""
    return condition.arm.rule == "side_channel" or condition.arm.decide


def own_call_column(condition: Condition) -> str | None:
    """Which episode column holds the model calls the condition itself needs.

    Args:
        condition: the episode's condition.

    Returns:
        "extra_calls" (every judgment call: rules on the side channel, decide),
        "discarded_turns" (stated-judgment arms: re-asked turns), "primary_judgments"
        (switch_rule: judgments of primary results) or None (no own calls).
    """
    if needs_judgment_calls(condition):
        return "extra_calls"
    if condition.arm.rule == "stated":
        return "discarded_turns"
    if condition.arm.switch:
        return "primary_judgments"
    return None


def own_calls(episodes: pd.DataFrame) -> pd.Series:
    """Model calls besides acting turns that each episode's condition needs.

    Args:
        episodes: episode frame with ``extra_calls`` and ``condition_spec`` (or
            ``condition``, a name or arm label).

    Returns:
        Integer Series aligned with `episodes`: per `own_call_column` of its condition
        (a frame without that column falls back to ``extra_calls``), else 0.
    """
    return _own_calls(episodes, _conditions(episodes))


def _own_calls(episodes: pd.DataFrame, conds: tuple[np.ndarray, list[Condition]]) -> pd.Series:
    """`own_calls` given the episodes' `_conditions`."""
    codes, conditions = conds
    extra = episodes["extra_calls"].to_numpy(dtype=np.int64)
    out = np.zeros(len(episodes), dtype=np.int64)
    for k, condition in enumerate(conditions):
        column = own_call_column(condition)
        if column is None:
            continue
        mask = codes == k
        values = episodes[column].to_numpy(dtype=np.int64) if column in episodes else extra
        out[mask] = values[mask]
    return pd.Series(out, index=episodes.index)


def _conditions(episodes: pd.DataFrame) -> tuple[np.ndarray, list[Condition]]:
    """Each episode's index among the distinct (spec, name) pairs, and their conditions
    (each parsed once)."""
    names, name_values = sorted_codes(episodes["condition"])
    if "condition_spec" in episodes:
        specs, spec_values = sorted_codes(episodes["condition_spec"])
    else:
        specs, spec_values = np.zeros(len(episodes), dtype=np.int64), np.array([None])
    n_names = max(len(name_values), 1)
    codes, pairs = pd.factorize(specs.astype(np.int64) * n_names + names)
    conditions = [parse_condition_of(spec_values[spec], name_values[name])
                  for spec, name in (divmod(int(p), n_names) for p in pairs)]
    return codes.astype(np.int64), conditions


def _condition_map(episodes: pd.DataFrame, fn: Callable[[Condition], Any],
                   conds: tuple[np.ndarray, list[Condition]] | None = None) -> pd.Series:
    """`fn(condition)` per episode, computed once per distinct (spec, name) (`conds`: the
    episodes' `_conditions`, when already known)."""
    codes, conditions = conds if conds is not None else _conditions(episodes)
    values = np.empty(len(conditions), dtype=object)
    for k, condition in enumerate(conditions):
        values[k] = fn(condition)
    return pd.Series(values[codes], index=episodes.index, dtype=object)


def charged_cost(episodes: pd.DataFrame, lam: float, own: bool = True) -> pd.Series:
    """What utility subtracts per episode: λ per charged call, and the arm's
    ``backup_price`` instead of λ for each backup_search call (two-source arms).

    Args:
        episodes: episode frame (``tool_calls``, ``extra_calls``, optional
            ``backup_calls``, ``condition_spec`` or ``condition``).
        lam: price per call in units of a correct answer.
        own: also charge the condition's own calls (``charged_calls``); False charges
            tool calls only.

    Returns:
        Float Series aligned with `episodes`.
    """
    calls = (charged_calls(episodes) if own else episodes["tool_calls"].astype(np.int64))
    return _charged_cost(episodes, lam, calls)


def _charged_cost(episodes: pd.DataFrame, lam: float, calls: pd.Series,
                  conds: tuple[np.ndarray, list[Condition]] | None = None) -> pd.Series:
    """`charged_cost` given the calls charged at λ (before the backup price) and,
    optionally, the episodes' `_conditions`."""
    if "backup_calls" not in episodes or episodes.empty:
        return lam * calls.astype(float)
    backup = episodes["backup_calls"].fillna(0).astype(float)
    price = _condition_map(episodes, lambda c: c.backup_price if c.arm.two_source else lam,
                           conds)
    return lam * (calls.astype(float) - backup) + price.astype(float) * backup


def charged_calls(episodes: pd.DataFrame) -> pd.Series:
    """Calls charged to each episode's arm: tool calls + the condition's own needed calls.

    Judgment calls that only measure (``judge=true``, the sim's recorded judgments)
    are not charged (see ``measurement_calls``).

    Args:
        episodes: episode frame (``tool_calls``, ``extra_calls``, ``condition_spec``
            or ``condition``).

    Returns:
        Integer Series aligned with `episodes`.
    """
    return episodes["tool_calls"].astype(np.int64) + own_calls(episodes)


def measurement_calls(episodes: pd.DataFrame) -> pd.Series:
    """Extra calls made only to measure (judgments the condition does not act on).

    Args:
        episodes: episode frame as for ``charged_calls``.

    Returns:
        Integer Series aligned with `episodes`.
    """
    return episodes["extra_calls"].astype(np.int64) - own_calls(episodes)


def charged_tokens(episodes: pd.DataFrame) -> tuple[pd.Series, pd.Series]:
    """Input and output tokens charged to each episode's arm.

    Judgment forks that only measure (``judge=true``, the sim's recorded judgments)
    are not the arm's cost: for those episodes only the acting turns' tokens (the
    sum over its steps) count. Episodes whose condition needs its judgments are
    charged everything. Frames without the ``acting_*`` columns are charged in full.

    Args:
        episodes: episode frame (``input_tokens``, ``output_tokens``, optionally
            ``acting_input_tokens``, ``acting_output_tokens``; see ``own_calls``).

    Returns:
        (input tokens, output tokens), float Series aligned with `episodes`.
    """
    return _charged_tokens(episodes, measurement_calls)


def _charged_tokens(episodes: pd.DataFrame, measure: Callable[[pd.DataFrame], pd.Series]
                    ) -> tuple[pd.Series, pd.Series]:
    """`charged_tokens` with the measurement calls from `measure` (asked only when the
    frame has the acting columns)."""
    tin = episodes["input_tokens"].astype(float)
    tout = episodes["output_tokens"].astype(float)
    if "acting_input_tokens" not in episodes or episodes.empty:
        return tin, tout
    measuring = (measure(episodes) > 0).to_numpy()
    tin = tin.where(~measuring, episodes["acting_input_tokens"].astype(float))
    tout = tout.where(~measuring, episodes["acting_output_tokens"].astype(float))
    return tin, tout


def tpc(episodes: pd.DataFrame) -> float:
    """Tokens per correct answer: Σ(output + 0.25·input + 500·tool calls) / Σ correct.

    Tokens are the ones charged to the arm (``charged_tokens``): judgment forks that
    only measure are left out.

    Args:
        episodes: error-free episodes.

    Returns:
        TPC; +∞ when nothing is correct, NaN with no episodes.
    """
    if episodes.empty:
        return math.nan
    tin, tout = charged_tokens(episodes)
    return _tpc(tin.to_numpy(), tout.to_numpy(), episodes["tool_calls"].to_numpy(),
                episodes["correct"].to_numpy())


def _tpc(tin: np.ndarray, tout: np.ndarray, tool_calls: np.ndarray, correct: np.ndarray
         ) -> float:
    """`tpc` from the charged tokens, tool calls and correctness of some episodes."""
    cost = (_column_sum(tout) + TPC_INPUT * _column_sum(tin)
            + TPC_CALL * _column_sum(tool_calls))
    right = _column_sum(correct)
    return float(cost / right) if right else math.inf


_COLUMNS = ("answered", "answer_action", "budget", "correct", "tool_calls", "extra_calls",
            "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens",
            "cost_usd")
"""Episode columns the stopping and cost measures read (besides the condition and
question/regime)."""


def _cost_frame(episodes: pd.DataFrame, lam: float) -> tuple[pd.DataFrame, list[pd.Series]]:
    """The per-episode quantities behind the stopping and cost measures, each derived once
    for a frame.

    Args:
        episodes: error-free episodes (any number of groups).
        lam: price per call.

    Returns:
        (frame of `_COLUMNS` present plus own, measure, tin, tout: aligned with
        `episodes`; the value columns whose question matrices give success, utility
        and utility with all calls).
    """
    conds = _conditions(episodes)
    own = _own_calls(episodes, conds)
    tool = episodes["tool_calls"].astype(np.int64)
    measure = episodes["extra_calls"].astype(np.int64) - own
    tin, tout = _charged_tokens(episodes, lambda _: measure)
    frame = pd.DataFrame({c: episodes[c] for c in _COLUMNS if c in episodes})
    frame = frame.assign(own=own, measure=measure, tin=tin, tout=tout)
    correct = episodes["correct"].astype(float)
    values = [correct, correct - _charged_cost(episodes, lam, tool, conds),
              correct - _charged_cost(episodes, lam, tool + own, conds)]
    return frame, values


def _stopping_costs(frame: pd.DataFrame, bounds: np.ndarray,
                    mats: Sequence[Sequence[QuestionMatrix]], lam: float, n_boot: int,
                    seed: int) -> list[StoppingCost]:
    """Stopping and cost of every group from `_cost_frame` sorted by group (group g in rows
    `bounds[g]` to `bounds[g + 1]`) and each group's question matrices of success,
    utility and utility with all calls.

    Each measure is the pandas reduction of the group's rows (one arm's reference:
    `tests.oracles.measures.stopping_cost`), in their order (`_column_mean`,
    `_column_sum`); the intervals of all groups are resampled together
    (`overall_intervals`).
    """
    scopes = [MEAN6_LABEL if set(MEAN6) <= set(m[0].regimes) else "all" for m in mats]
    intervals = overall_intervals(mats, scopes, n_boot, seed)
    answered_all = frame["answered"].to_numpy().astype(bool)
    action_all = frame["answer_action"].to_numpy()
    final_all = action_all >= frame["budget"].to_numpy()
    cols = {c: frame[c].to_numpy() for c in ("input_tokens", "output_tokens", "cost_usd",
                                             "tin", "tout", "tool_calls", "correct")}
    floats = {c: frame[c].to_numpy().astype(float) for c in ("tool_calls", "own", "measure")}
    caches = {c: frame[c].to_numpy() for c in ("cache_read_tokens", "cache_write_tokens")
              if c in frame}
    # an episode with no token counted made its calls elsewhere: the paper's released
    # episodes (imported) carry no tokens or dollars, and their zeros are not a cost
    unrecorded = (cols["input_tokens"] + cols["output_tokens"]) == 0
    out = []
    for g, ((success, utility, utility_all), scope) in enumerate(zip(intervals, scopes)):
        part = slice(int(bounds[g]), int(bounds[g + 1]))
        answered = answered_all[part]
        actions = action_all[part][answered].astype(float)
        final = final_all[part][answered]
        n = part.stop - part.start
        counted = bool(n) and not unrecorded[part].any()

        def mean(values: np.ndarray, part: slice = part, n: int = n) -> float:
            return _column_mean(values[part]) if n else math.nan

        def spent(values: np.ndarray, part: slice = part, counted: bool = counted) -> float:
            return _column_mean(values[part]) if counted else math.nan

        def cache(column: str, part: slice = part, counted: bool = counted) -> float:
            return (_column_mean(caches[column][part]) if column in caches else 0.0
                    ) if counted else math.nan

        out.append(StoppingCost(
            n, len(actions), float(np.median(actions)) if len(actions) else math.nan,
            float(final.mean()) if len(final) else math.nan,
            mean(floats["tool_calls"]), mean(floats["own"]), mean(floats["measure"]),
            success, utility, utility_all, spent(cols["input_tokens"]),
            spent(cols["output_tokens"]), cache("cache_read_tokens"),
            cache("cache_write_tokens"),
            float(_column_sum(cols["cost_usd"][part])) if counted else math.nan,
            _tpc(*(cols[c][part] for c in ("tin", "tout", "tool_calls", "correct")))
            if counted else math.nan,
            "mean6" if scope == MEAN6_LABEL else "all regimes", lam))
    return out


def _column_mean(values: np.ndarray) -> float:
    """`pd.Series(values).mean()`: NaN skipped, the sum taken in float64 in row order."""
    count = len(values)
    if values.dtype.kind == "f":
        missing = np.isnan(values)
        if missing.any():
            values = np.where(missing, 0.0, values)
            count -= int(missing.sum())
    return float(values.sum(dtype=np.float64) / np.float64(count)) if count else math.nan


def _column_sum(values: np.ndarray) -> Any:
    """`pd.Series(values).sum()`: NaN as 0, whole numbers summed as int64."""
    if values.dtype.kind == "f":
        missing = np.isnan(values)
        return (np.where(missing, 0.0, values) if missing.any() else values).sum(
            dtype=np.float64)
    return values.sum(dtype=np.uint64 if values.dtype.kind == "u" else np.int64)


def answer_actions(episodes: pd.DataFrame) -> tuple[tuple[int, int], ...]:
    """How many answers each action received: ((action, count), …) for 1 … budget.

    Args:
        episodes: error-free episodes of one arm.

    Returns:
        Counts for every action from 1 to the largest budget (0 where none).
    """
    if episodes.empty:
        return ()
    top = int(episodes["budget"].max())
    acts = episodes.loc[episodes["answered"].astype(bool), "answer_action"].astype(int)
    counts = np.bincount(acts.to_numpy(), minlength=top + 1)
    return tuple((a, int(counts[a])) for a in range(1, len(counts)))


def group_answer_actions(episodes: pd.DataFrame, grouping: Grouping | None = None
                         ) -> tuple[tuple[tuple[ArmKey, tuple[tuple[int, int], ...]], ...],
                                    tuple[int, ...]]:
    """`answer_actions` and the episode count of every group of the cost table (split by
    regime family), without taking each group out of the frame.

    Args:
        episodes: error-free episodes.
        grouping: what rows pool and the errored episodes they count.

    Returns:
        (((group, answer_actions), …), (episodes per group, …)), in `arm_groups` order.
    """
    arms, code = (grouping or Grouping()).codes(episodes, families=True)
    sizes = np.bincount(code, minlength=len(arms)) if len(arms) else np.zeros(0, np.int64)
    tops = np.full(len(arms), -1, dtype=np.int64)
    np.maximum.at(tops, code, episodes["budget"].to_numpy(dtype=np.int64))
    answered = episodes["answered"].astype(bool).to_numpy()
    acts = episodes["answer_action"].to_numpy()[answered].astype(int)
    where = code[answered]
    actions = []
    for g, arm in enumerate(arms):
        counts = np.bincount(acts[where == g], minlength=int(tops[g]) + 1)
        actions.append((arm, tuple((a, int(counts[a])) for a in range(1, len(counts)))))
    return tuple(actions), tuple(int(n) for n in sizes)


@dataclass(frozen=True)
class JudgmentRates:
    """Side-channel judgment rates of one arm (paper App. C.3), and the dissociation.

    Attributes:
        useless_on_failed: USELESS among judged failed observations.
        useless_on_real: USELESS among judged real observations.
        useful_gold_first: USEFUL on a real gold page seen for the first time.
        useful_gold_repeat: USEFUL on a real gold page seen before in the episode.
        useful_distractor_first: USEFUL on a real distractor page, first time.
        useful_distractor_repeat: USEFUL on a real distractor page seen before.
        stated_useless_on_failed: stated "useless" among failed observations with a
            stated judgment.
        dissociation: in ``persistent``, questions whose own side-channel useless run
            reached 5 (n) and, of those, the ones that answered at any decision from
            then on (k; a question's seeds averaged, so k may be fractional)
            (``analysis.measures.dissociation``, paper A12 J1 / F5).
        stated_dissociation: the same from stated judgments (paper A18 T2).
    """

    useless_on_failed: Rate
    useless_on_real: Rate
    useful_gold_first: Rate
    useful_gold_repeat: Rate
    useful_distractor_first: Rate
    useful_distractor_repeat: Rate
    stated_useless_on_failed: Rate
    dissociation: Rate
    stated_dissociation: Rate


def _rate(mask: pd.Series, hit: pd.Series) -> Rate:
    return Rate(int((mask & hit).sum()), int(mask.sum()))


def cost_table(episodes: pd.DataFrame, lam: float = LAMBDA, n_boot: int = N_BOOT,
               seed: int = 0, grouping: Grouping | None = None) -> Table:
    """Stopping and cost of every group and regime family (wide: one line each).

    Args:
        episodes: error-free episodes.
        lam: price per call.
        n_boot: question-level resamples.
        seed: bootstrap seed.
        grouping: what rows pool and the errored episodes they count.

    Returns:
        Table "cost".
    """
    rows: list[Row] = []
    grouping = grouping or Grouping()
    arms, code = grouping.codes(episodes, families=True)
    frame, values = _cost_frame(episodes, lam)
    mats = group_question_matrices(episodes, code, len(arms), values)
    order = np.argsort(code, kind="stable")
    bounds = np.searchsorted(code[order], np.arange(len(arms) + 1))
    costs = _stopping_costs(frame.iloc[order], bounds, mats, lam, n_boot, seed)
    for arm, c in zip(arms, costs):

        def row(measure: str, value: float, n: int, unit: str = "episodes",
                arm: ArmKey = arm) -> Row:
            return make_row(arm, measure, "", value, n, unit)

        rows += [
            row("answered", float(c.answered), c.episodes),
            row("median action", c.median_answer_action, c.answered, "answers"),
            row("final share", c.final_action_share, c.answered, "answers"),
            row("tool calls", c.tool_calls, c.episodes),
            row("own calls", c.own_calls, c.episodes),
            row("measurement calls", c.measurement_calls, c.episodes),
            interval_row(arm, "success", c.success, c.scope),
            interval_row(arm, "utility", c.utility, c.scope, detail=f"λ={lam:g}"),
            interval_row(arm, "utility (all calls)", c.utility_all, c.scope,
                         detail=f"λ={lam:g}, the condition's own calls charged"),
            row("input tokens", c.input_tokens, c.episodes),
            row("output tokens", c.output_tokens, c.episodes),
            row("cache read tokens", c.cache_read_tokens, c.episodes),
            row("cache write tokens", c.cache_write_tokens, c.episodes),
            row("dollars", c.dollars, c.episodes),
            row("TPC", c.tpc, c.episodes),
        ]
    notes = ((f"utility = success − {lam:g}·tool calls (utility (all calls) also charges the "
             "calls the condition itself needs: the judgment calls of enforced_rule, combo "
             "and decide; judgment calls that only measure, e.g. judge=true, are shown as "
             "measurement calls and never charged), averaged like success (mean6 when all six "
             "ran); tokens are means per episode (cache reads and writes are part of tok.in); "
             "dollars are totals; TPC = Σ(output + "
             "0.25·input + 500·tool calls)/Σ correct, without the tokens of judgments that "
             "only measure; inf when no episode is correct (over-searching §3.2). Tokens, "
             "dollars and TPC are empty without episodes, and where an episode counted no "
             "token: it made its calls elsewhere (the paper's released episodes, imported, "
             "carry no tokens or dollars)."),)
    return Table("cost", "Stopping and cost", tuple(rows), notes, "wide", ("utility",),
                 (("answered", "d"), ("median action", ".1f"), ("final share", ".2f"),
                  ("tool calls", ".2f"), ("own calls", ".2f"), ("measurement calls", ".2f"),
                  ("success", ".3f"), ("utility (all calls)", ".3f"), ("input tokens", ".0f"),
                  ("output tokens", ".0f"), ("cache read tokens", ".0f"),
                  ("cache write tokens", ".0f"), ("dollars", ".2f"), ("TPC", ".0f")),
                 (("answered", "answ."), ("median action", "med.act"), ("final share", "final"),
                  ("tool calls", "calls"), ("own calls", "own"),
                  ("measurement calls", "meas."), ("success", "succ."),
                  ("utility (all calls)", "util.all"), ("input tokens", "tok.in"),
                  ("output tokens", "tok.out"), ("cache read tokens", "c.read"),
                  ("cache write tokens", "c.write"), ("dollars", "$")), grouping.pooled)


JUDGMENT_MEASURES = (
    ("useless_on_failed", "USELESS on failed"), ("useless_on_real", "USELESS on real"),
    ("useful_gold_first", "USEFUL on gold, first"),
    ("useful_gold_repeat", "USEFUL on gold, repeat"),
    ("useful_distractor_first", "USEFUL on distractor, first"),
    ("useful_distractor_repeat", "USEFUL on distractor, repeat"),
    ("stated_useless_on_failed", "stated useless on failed"),
    ("dissociation", "answered after 5 own useless"),
    ("stated_dissociation", "answered after 5 stated useless"))
"""(JudgmentRates attribute, measure name) of the judgments table."""


def cost_results(inp: TableInput) -> TablePart:
    """The "cost" results table and when each group answers (`analysis.tables.registry`)."""
    actions, counts = group_answer_actions(inp.episodes, inp.grouping)
    return TablePart((cost_table(inp.episodes, inp.lam, inp.n_boot, inp.seed, inp.grouping),),
                     actions=actions, counts=counts)
