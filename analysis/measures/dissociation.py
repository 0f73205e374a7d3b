"""Dissociation: answering after k consecutive own useless judgments (paper A12 J1, F5, T2).

The paper's definition, per question: among the questions of an arm whose own
useless run reached k (default 5) in a regime (default ``persistent``), how many
answered at any later action ("answers on 3 of 122 questions", App. C.1). "Any later
action" means any decision at or after the first decision point where the run
reached k, the budget's final action included (the paper counts answers there too;
an unaided agent is not told which action is its last).

The unit is the question, as in the paper. The paper ran each question once per
arm and regime; here a question may run under several seeds (or runs, or
replicates: every episode of the question in the arm's rows). Its seeds are averaged
into a per-question share: a question counts in ``questions`` when the run reached k
in at least one of its episodes, and adds to ``answered`` the share of those
episodes that answered (1 when all did, 0.5 when one of two did). So ``answered`` is
a question count with seeds averaged, fractional only when a question's seeds
disagree, and ``share`` is the mean over questions of the per-question shares. With
one episode per question this is exactly the paper's count. Episodes whose run did
not reach k say nothing about answering after k and are left out of the question's
share. The episode counts are kept too (``episodes``, ``episodes_answered``).

With ``judgments="stated"`` the run is the stated run of the decision table, which
is unknown (−1) wherever an observation since the last reset had no explicit
stated judgment (``analysis.measures.decisions``): an unknown run never counts as reaching k.

Example: an episode in ``persistent`` whose own judgments are USELESS on
observations 1–6 reaches s = 5 at the decision after observation 5 (action 6); it
counts as answered if it answers at action 6, 7 or 8. If the same question's other
seed also reaches s = 5 but never answers, the question adds 0.5 to ``answered``
and 1 to ``questions``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis.measures.decisions import judgment_columns
from analysis.stats.codes import in_rows
from core.errors import LabError

DISSOCIATION_RUN = 5
DISSOCIATION_REGIME = "persistent"
_ARM_COLUMNS = ("model", "condition", "budget", "condition_hash", "arm")


def question_count(value: float) -> float:
    """A count of questions with seeds averaged: an int when whole to 9 decimals (so
    "3/4" prints as the paper writes it, and sums of shares such as 1/3 + 2/3 are
    whole), else the float."""
    rounded = round(float(value), 9)
    return int(rounded) if rounded.is_integer() else float(value)


@dataclass(frozen=True)
class Dissociation:
    """How often an arm answered once its own useless run reached k, per question.

    Attributes:
        questions: questions of the arm whose useless run reached k in the regime (in
            at least one of their episodes).
        answered: of those, the questions that answered at or after the first
            decision where the run reached k, each question's episodes (seeds)
            averaged: a question counts as the share of its reaching episodes that
            answered, so this is fractional only when a question's seeds disagree
            (`question_count`: an int when whole).
        k: the run length required.
        regime: the regime counted.
        judgments: the judgment source ("side_channel" or "stated").
        episodes: episodes whose run reached k (questions × their reaching seeds).
        episodes_answered: of those, the episodes that answered.
    """

    questions: int
    answered: float
    k: int = DISSOCIATION_RUN
    regime: str = DISSOCIATION_REGIME
    judgments: str = "side_channel"
    episodes: int = 0
    episodes_answered: int = 0

    @property
    def share(self) -> float:
        """answered / questions (the mean per-question share), NaN when no question
        reached k."""
        return self.answered / self.questions if self.questions else math.nan

    @property
    def counts(self) -> str:
        """The counts as text: "3/4 questions", plus the episodes when a question ran
        more than once ("2.5/3 questions (5/6 episodes)")."""
        text = f"{self.answered:g}/{self.questions} questions"
        if self.episodes != self.questions:
            text += f" ({self.episodes_answered}/{self.episodes} episodes)"
        return text


def dissociation(decisions: pd.DataFrame, judgments: str = "side_channel",
                 k: int = DISSOCIATION_RUN, regime: str = DISSOCIATION_REGIME) -> Dissociation:
    """Dissociation of one arm: questions answered after their own useless run reached k.

    Args:
        decisions: decision-table rows (``analysis.measures.decisions.decision_table``) of
            ONE arm, with ``question_id``; rows of other regimes are ignored.
        judgments: "side_channel" (recorded or replayed) or "stated".
        k: the run length (≥ 1).
        regime: the regime whose episodes count.

    Returns:
        The Dissociation (0 of 0 when no episode of the regime reached k).

    Raises:
        LabError: k < 1, or the rows span more than one arm (different specs are
            never pooled).
        ValueError: an unknown judgment source.
    """
    for col in _ARM_COLUMNS:
        if col in decisions and decisions[col].nunique(dropna=False) > 1:
            values = ", ".join(sorted(map(str, decisions[col].unique())))
            raise LabError(f"dissociation is per arm, but the rows span several {col} values "
                           f"({values}); pass one arm's decisions")
    return group_dissociations(decisions, np.zeros(len(decisions), dtype=np.int64), 1,
                               judgments, k, regime)[0]


def group_dissociations(decisions: pd.DataFrame, groups: np.ndarray, n_groups: int,
                        judgments: str = "side_channel", k: int = DISSOCIATION_RUN,
                        regime: str = DISSOCIATION_REGIME) -> list[Dissociation]:
    """`dissociation` of every group at once (one pass over the decision table).

    Args:
        decisions: decision-table rows with ``episode_id``, ``question_id``,
            ``regime``, ``action``, ``answer`` and the judgment source's run column.
        groups: the group (0 … n_groups − 1) of each decision row, −1 for rows that
            belong to no group; an episode's rows share one group.
        n_groups: number of groups.
        judgments: "side_channel" or "stated".
        k: the run length (≥ 1).
        regime: the regime whose episodes count.

    Returns:
        One Dissociation per group, in group order.

    Raises:
        LabError: k < 1.
        ValueError: an unknown judgment source.
    """
    run_col = judgment_columns(judgments)[0]
    if k < 1:
        raise LabError(f"dissociation needs a run length k ≥ 1, got k={k}")
    rows = in_rows(decisions["regime"], [regime]) & (np.asarray(groups) >= 0)

    def column(name: str) -> np.ndarray:
        return decisions[name].to_numpy()[rows]

    action = column("action").astype(np.int64)
    episode, inverse = np.unique(column("episode_id").astype(np.int64), return_inverse=True)
    never = np.iinfo(np.int64).max
    reached = column(run_col) >= k
    first = np.full(len(episode), never, dtype=np.int64)
    np.minimum.at(first, inverse[reached], action[reached])
    answered = np.zeros(len(episode), dtype=bool)
    answered[inverse[column("answer").astype(bool) & (action >= first[inverse])]] = True
    keep = first < never
    group = np.zeros(len(episode), dtype=np.int64)
    group[inverse] = np.asarray(groups)[rows]
    question = np.zeros(len(episode), dtype=np.int64)
    question[inverse] = pd.factorize(column("question_id"))[0]
    # one slot per (group, question) among the episodes that reached k
    width = int(question.max(initial=0)) + 1
    pair, slot = np.unique(group[keep] * width + question[keep], return_inverse=True)
    seeds = np.bincount(slot, minlength=len(pair))
    hits = np.bincount(slot, weights=answered[keep].astype(float), minlength=len(pair))
    pair_group = pair // width
    questions = np.bincount(pair_group, minlength=n_groups)
    shares = np.bincount(pair_group, weights=hits / np.maximum(seeds, 1), minlength=n_groups)
    n_eps = np.bincount(group[keep], minlength=n_groups)
    n_ans = np.bincount(group[keep & answered], minlength=n_groups)
    return [Dissociation(int(questions[g]), question_count(shares[g]), k, regime, judgments,
                         int(n_eps[g]), int(n_ans[g])) for g in range(n_groups)]
