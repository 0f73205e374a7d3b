"""Leaving a failing source in the two-source arms (paper A13–A14, App. D.5, Table 25).

Two-source arms (two_source, switch_rule) offer backup_search beside the primary
search. An episode *switches* at the first action that runs a backup tool call
(``tool_source`` = "backup", neither refused nor discarded); it *leaves* the
primary at its first exit: that switch or finish, whichever comes first.

Measures on a failing primary (the regimes where the primary never gives usable
results: persistent, plausible, answerless), per group:

- ``switched_by_4``: share of episodes whose first switch is at action ≤ 4;
- ``ever_switched``: share that ever switched;
- ``median_first_switch``: median action of the first switch, among those that did;
- ``answered_first``: share that answered before any switch;
- ``backup_first_share``: among episodes with an exit, the share whose first exit
  was the switch (A14's "backup share of first exits").

Leaving Δ (``leave_delta``) is the time-matched contrast of `analysis.measures.delta` with
the outcome "leaves" (the next valid action is backup_search or finish) instead of
"answers", on the own side-channel judgments, over every regime of the group's
family. Decision points after the first switch are dropped: by then the agent has
left the primary.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis.base.arms import Grouping
from analysis.base.rows import Row, Table, interval_row, make_row
from analysis.measures.decisions import arm_groups
from analysis.measures.delta import (
    Contrast,
    contrasts,
    time_matched_contrast,
    time_matched_counts_by_group,
)
from analysis.measures.results import TableInput, TablePart
from analysis.stats.bootstrap import N_BOOT
from core.conditions import TWO_SOURCE_ARMS

FAILING_PRIMARY = ("persistent", "plausible", "answerless")
"""Regimes whose primary never returns a usable page (the switching shares use these)."""
SWITCH_BY = 4
MEASURES = ("switched_by_4", "ever_switched", "median_first_switch", "answered_first",
            "backup_first_share", "leave_delta")
"""Every measure of the leaving table (and of the `leaving` registered-test kind)."""
_DECISION_COLUMNS = ("episode_id", "question_id", "regime", "n_obs", "action", "final", "answer",
                     "own_run", "stated_run", "stated_known")
"""The decision columns leaving Δ reads."""


@dataclass(frozen=True)
class Switching:
    """How one group's episodes left a failing primary.

    Attributes:
        episodes: episodes on a failing primary.
        switched_by: share switched by action SWITCH_BY.
        ever: share that ever switched.
        median_first: median action of the first switch (NaN when none switched).
        answered_first: share that answered before any switch.
        backup_first: share of first exits that were the switch (NaN without exits).
        exits: episodes that switched or answered.
    """

    episodes: int
    switched_by: float
    ever: float
    median_first: float
    answered_first: float
    backup_first: float
    exits: int

    def value(self, measure: str) -> float:
        """One measure by its name in MEASURES (leave_delta excluded)."""
        return {"switched_by_4": self.switched_by, "ever_switched": self.ever,
                "median_first_switch": self.median_first,
                "answered_first": self.answered_first,
                "backup_first_share": self.backup_first}[measure]


def two_source_mask(frame: pd.DataFrame) -> pd.Series:
    """Rows (episodes or decisions) of two-source arms."""
    return frame["condition"].isin(TWO_SOURCE_ARMS)


def first_switches(steps: pd.DataFrame) -> pd.Series:
    """Action of each episode's first executed backup tool call.

    Args:
        steps: step frame (``tool_source``, ``refused``, optional ``discarded``).

    Returns:
        Series indexed by episode_id (episodes that never switched are absent).
    """
    if steps.empty or "tool_source" not in steps:
        return pd.Series(dtype=float)
    ok = (steps["tool_source"] == "backup") & ~steps["refused"].fillna(0).astype(bool)
    if "discarded" in steps:
        ok &= ~steps["discarded"].fillna(0).astype(bool)
    return steps.loc[ok].groupby("episode_id")["t"].min().astype(float)


@dataclass(frozen=True)
class _Exits:
    """What the steps tell about leaving, read once for every group.

    Attributes:
        first: `first_switches` of the steps.
        leaves: (episode_id, t) of the backup_search actions, not discarded, as
            ``episode_id * width + t``.
        width: the key's multiplier (greater than every t).
    """

    first: pd.Series
    leaves: np.ndarray
    width: int

    @classmethod
    def of(cls, steps: pd.DataFrame) -> _Exits:
        """The exits of a step frame."""
        if steps.empty or "action" not in steps:
            return cls(first_switches(steps), np.empty(0, dtype=np.int64), 1)
        st = steps
        if "discarded" in st:
            st = st.loc[~st["discarded"].fillna(0).astype(bool)]
        # only whether the next action is backup_search matters: the steps may be just
        # `analysis.measures.frames.backup_step_mask`'s, and none at all when nobody switched
        st = st.loc[st["action"] == "backup_search", ["episode_id", "t"]]
        t = st["t"].to_numpy(dtype=np.int64)
        width = int(t.max()) + 1 if t.size else 1
        return cls(first_switches(steps), st["episode_id"].to_numpy(dtype=np.int64) * width + t,
                   width)

    def leaving(self, decisions: pd.DataFrame) -> pd.DataFrame:
        """`leaving_decisions` of these steps."""
        if decisions.empty:
            return decisions
        episode = decisions["episode_id"].to_numpy(dtype=np.int64)
        action = decisions["action"].to_numpy(dtype=np.int64)
        leaves = np.isin(episode * self.width + action, self.leaves) & (action < self.width)
        first = decisions["episode_id"].map(self.first).fillna(np.inf).to_numpy()
        keep = action <= first
        dec = decisions.loc[keep].copy()
        dec["answer"] = ((dec["answer"] == 1).to_numpy() | leaves[keep]).astype(np.int64)
        return dec.reset_index(drop=True)


def switching(episodes: pd.DataFrame, steps: pd.DataFrame) -> Switching:
    """Switching shares of one group on its failing-primary regimes.

    Args:
        episodes: error-free episodes of one group.
        steps: steps (of these or more episodes).

    Returns:
        The Switching (NaN shares with no failing-primary episode).
    """
    return _switching(episodes, first_switches(steps))


def _switching(episodes: pd.DataFrame, first_switch: pd.Series) -> Switching:
    ep = episodes.loc[episodes["regime"].isin(FAILING_PRIMARY)]
    n = len(ep)
    first = ep["episode_id"].map(first_switch).to_numpy(dtype=float)
    switched = ~np.isnan(first)
    answered = ep["answered"].astype(bool).to_numpy()
    action = ep["answer_action"].to_numpy(dtype=float)
    answered_first = answered & (~switched | (action < np.where(switched, first, np.inf)))
    exits = int((switched | answered).sum())

    def share(mask: np.ndarray) -> float:
        return float(mask.sum() / n) if n else math.nan

    return Switching(
        n, share(switched & (first <= SWITCH_BY)), share(switched),
        float(np.median(first[switched])) if switched.any() else math.nan,
        share(answered_first),
        float((switched & ~answered_first).sum() / exits) if exits else math.nan, exits)


def leaving_decisions(decisions: pd.DataFrame, steps: pd.DataFrame) -> pd.DataFrame:
    """Decision points while still on the primary, with ``answer`` replaced by "leaves".

    Args:
        decisions: decision table rows (`analysis.measures.decisions.decision_table`).
        steps: the step frame.

    Returns:
        The decisions at or before each episode's first switch; ``answer`` is 1 when
        the decision's action is finish or backup_search.
    """
    return _Exits.of(steps).leaving(decisions)


def leave_delta(decisions: pd.DataFrame, steps: pd.DataFrame, n_boot: int = N_BOOT,
                seed: int = 0) -> Contrast:
    """Δ for leaving (own side-channel judgments, stratified by t) on one group.

    Args:
        decisions: decision rows of one group.
        steps: the step frame.
        n_boot: question-level resamples.
        seed: bootstrap seed.

    Returns:
        The Contrast (NaN when the two groups never meet).
    """
    return time_matched_contrast(leaving_decisions(decisions, steps), "side_channel", "t",
                                 n_boot, seed)


def leaving_table(episodes: pd.DataFrame, steps: pd.DataFrame, decisions: pd.DataFrame,
                  n_boot: int = N_BOOT, seed: int = 0,
                  grouping: Grouping | None = None) -> Table:
    """The leaving measures of every two-source group, per regime family.

    Args:
        episodes: error-free episodes.
        steps: their steps.
        decisions: the decision table.
        n_boot: question-level resamples for leaving Δ.
        seed: bootstrap seed.
        grouping: what rows pool and the errored episodes they count.

    Returns:
        Table "leaving" (wide: one line per group and family).
    """
    exits = _Exits.of(steps)
    ep = episodes.loc[two_source_mask(episodes)] if len(episodes) else episodes
    groups = list(arm_groups(ep, grouping, families=True))
    # the two-source decisions are cut at the first switch once, then split by group
    # (each group's rows in their order) and every group's leaving Δ resampled together
    items = []
    if groups:
        group_of = pd.Series(np.repeat(np.arange(len(groups)), [len(g) for _, g in groups]),
                             index=np.concatenate([g["episode_id"].to_numpy() for _, g in groups]))
        dec = decisions.loc[:, [c for c in _DECISION_COLUMNS if c in decisions]]
        dec = exits.leaving(dec.loc[dec["episode_id"].isin(group_of.index)])
        which = dec["episode_id"].map(group_of).to_numpy(dtype=np.int64)
        items = time_matched_counts_by_group(dec, which, len(groups))
    rows: list[Row] = []
    for (arm, group), c in zip(groups, contrasts(items, n_boot, seed)):
        sw = _switching(group, exits.first)
        failing = [r for r in arm.regimes if r in FAILING_PRIMARY]
        for measure in MEASURES[:-1]:
            n = sw.exits if measure == "backup_first_share" else sw.episodes
            rows.append(make_row(arm, measure, "failing primary", sw.value(measure), n,
                                 "episodes", regimes=failing))
        rows.append(interval_row(arm, "leave_delta", c.interval, "own judgments, by t",
                                 "decisions", c.n_a + c.n_b, c.detail))
    notes = (
        (f"Two-source arms only. On a failing primary ({', '.join(FAILING_PRIMARY)}): "
         f"switched by {SWITCH_BY} = share whose first backup_search came by action "
         f"{SWITCH_BY}; median first = median action of the first switch among those that "
         "switched; answered first = share that answered before any switch; backup first = "
         "share of first exits that were the switch."),
        ("Δ leave: time-matched contrast (own side-channel judgments, by t) with the "
         "outcome 'leaves' = next action is backup_search or finish; decisions after the "
         "first switch are dropped."),
    )
    return Table("leaving", "Leaving a failing primary source (two sources)", tuple(rows),
                 notes, "wide", ("leave_delta",),
                 (("median_first_switch", ".1f"),),
                 (("switched_by_4", "by 4"), ("ever_switched", "ever"),
                  ("median_first_switch", "median first"), ("answered_first", "answered 1st"),
                  ("backup_first_share", "backup 1st"), ("leave_delta", "Δ leave")),
                 pooled=(grouping or Grouping()).pooled)


def leaving_results(inp: TableInput) -> TablePart:
    """The "leaving" results table (`analysis.tables.registry`): the decision frame is
    read only when an episode is of a two-source arm (`leaving_table` reads it for those
    arms' groups alone; at 198,000 episodes without any, 886,000 decisions read for an
    empty table)."""
    decisions = inp.decisions if two_source_mask(inp.episodes).any() else pd.DataFrame()
    return TablePart((leaving_table(inp.episodes, inp.frames.backup_steps, decisions,
                                    inp.n_boot, inp.seed, inp.grouping),))
