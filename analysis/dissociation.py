"""Dissociation: answering after k consecutive own useless judgments (paper A12 J1, F5, T2).

The paper's definition, per question: among the questions of an arm whose own
useless run reached k (default 5) in a regime (default ``persistent``), the share
that answered at any later action. "Any later action" means any decision at or
after the first decision point where the run reached k, the budget's final action
included (the paper counts answers there too; an unaided agent is not told which
action is its last).

The unit is the episode: a question run under several seeds (or in several runs)
counts once per episode, so ``questions`` is the number of (run, seed, question)
episodes that reached k. That keeps each count a set of independent trajectories
and matches the paper whenever a question ran once.

With ``judgments="stated"`` the run is the stated run of the decision table, which
is unknown (−1) wherever an observation since the last reset had no explicit
stated judgment (``analysis.decisions``): an unknown run never counts as reaching k.

Example: an episode in ``persistent`` whose own judgments are USELESS on
observations 1–6 reaches s = 5 at the decision after observation 5 (action 6); it
counts as answered if it answers at action 6, 7 or 8.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from analysis.decisions import judgment_columns
from core.errors import LabError

DISSOCIATION_RUN = 5
DISSOCIATION_REGIME = "persistent"
_ARM_COLUMNS = ("model", "condition", "budget", "condition_hash", "arm")


@dataclass(frozen=True)
class Dissociation:
    """How often an arm answered once its own useless run reached k.

    Attributes:
        questions: episodes (question × seed × run) of the arm whose useless run
            reached k in the regime.
        answered: of those, the ones that answered at or after the first decision
            where the run reached k.
        k: the run length required.
        regime: the regime counted.
        judgments: the judgment source ("side_channel" or "stated").
    """

    questions: int
    answered: int
    k: int = DISSOCIATION_RUN
    regime: str = DISSOCIATION_REGIME
    judgments: str = "side_channel"

    @property
    def share(self) -> float:
        """answered / questions, NaN when no question reached k."""
        return self.answered / self.questions if self.questions else math.nan


def dissociation(decisions: pd.DataFrame, judgments: str = "side_channel",
                 k: int = DISSOCIATION_RUN, regime: str = DISSOCIATION_REGIME) -> Dissociation:
    """Dissociation of one arm: answered after its own useless run reached k.

    Args:
        decisions: decision-table rows (``analysis.decisions.decision_table``) of
            ONE arm; rows of other regimes are ignored.
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
    run_col, _, _ = judgment_columns(judgments)
    if k < 1:
        raise LabError(f"dissociation needs a run length k ≥ 1, got k={k}")
    for col in _ARM_COLUMNS:
        if col in decisions and decisions[col].nunique(dropna=False) > 1:
            values = ", ".join(sorted(map(str, decisions[col].unique())))
            raise LabError(f"dissociation is per arm, but the rows span several {col} values "
                           f"({values}); pass one arm's decisions")
    rows = decisions.loc[decisions["regime"] == regime, ["episode_id", "action", run_col,
                                                         "answer"]]
    reached = rows.loc[rows[run_col] >= k]
    first = reached.groupby("episode_id", sort=False)["action"].min()
    after = rows.loc[rows["episode_id"].isin(first.index)]
    after = after.loc[after["action"].to_numpy() >= first.reindex(after["episode_id"]).to_numpy()]
    answered = after.loc[after["answer"].astype(bool), "episode_id"].nunique()
    return Dissociation(int(len(first)), int(answered), k, regime, judgments)
