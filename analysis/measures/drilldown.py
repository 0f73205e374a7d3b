"""The decision points behind one Δ cell, in groups (a) and (b) (docs/results.md).

Δ compares answering at decisions after t = 3…6 observations, the budget's final
action excluded, between group (a), where every observation so far was judged
useless (s = t), and group (b), where the latest was but an earlier one was not
(1 ≤ s ≤ t − 2). The design-label contrast compares decisions of the persistent
regime (a) with those of late_onset_from_3 (b) in the same window. This module lists
those decisions so a researcher can open the trajectories behind a number; the
counts equal the `detail` of the Δ row (a test checks it against `analysis.measures.delta`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis.measures.decisions import judgment_columns
from analysis.measures.delta import DESIGN_A, DESIGN_B, T_MAX, T_MIN, VARIANTS

SOURCES = ("side_channel", "stated", "design")
"""How the groups are formed: own side-channel judgments, stated judgments, or design labels."""


@dataclass(frozen=True)
class DecisionPoint:
    """One decision of group (a) or (b).

    Attributes:
        group: "a" or "b".
        episode_id: the episode.
        run: its run.
        question_id: its question.
        regime: its regime.
        seed: its seed.
        t: observations seen before deciding.
        s: the useless run at the decision (design contrast: failed run).
        action: the action the decision is about (the step to open).
        answered: whether the agent answered at that action.
    """

    group: str
    episode_id: int
    run: str
    question_id: str
    regime: str
    seed: int
    t: int
    s: int
    action: int
    answered: bool


@dataclass(frozen=True)
class CellDecisions:
    """The decision points of one Δ cell.

    Attributes:
        source: one of SOURCES.
        a: group (a), ordered by episode and action.
        b: group (b), ordered by episode and action.
    """

    source: str
    a: tuple[DecisionPoint, ...]
    b: tuple[DecisionPoint, ...]

    @property
    def detail(self) -> str:
        """Group sizes as the Δ table writes them: "a 12/40, b 3/55" (answers/decisions)."""
        return (f"a {sum(p.answered for p in self.a)}/{len(self.a)}, "
                f"b {sum(p.answered for p in self.b)}/{len(self.b)}")


def source_of(measure: str, scope: str) -> str:
    """Which groups a Δ-table row compares.

    Args:
        measure: "delta" or "design".
        scope: the row's scope, e.g. "own judgments, by t".

    Returns:
        One of SOURCES.

    Raises:
        ValueError: for a row that is not a Δ or design-label contrast.
    """
    if measure == "design":
        return "design"
    for m, judgments, _, label in VARIANTS:
        if m == measure and label == scope:
            return judgments
    raise ValueError(f"no decision groups for measure {measure!r} scope {scope!r}")


def _window(dec: pd.DataFrame) -> pd.DataFrame:
    return dec.loc[dec["n_obs"].between(T_MIN, T_MAX) & ~dec["final"].astype(bool)]


def cell_decisions(decisions: pd.DataFrame, source: str = "side_channel") -> CellDecisions:
    """Split one cell's decisions into groups (a) and (b).

    Args:
        decisions: decision-table rows of one cell (see `select`).
        source: "side_channel", "stated" or "design".

    Returns:
        The CellDecisions.

    Raises:
        ValueError: for an unknown source.
    """
    d = _window(decisions)
    if source == "design":
        regime = d["regime"].to_numpy()
        in_a, in_b = regime == DESIGN_A, regime == DESIGN_B
        run = d["design_run"].to_numpy()
    elif source in SOURCES:
        run_col = judgment_columns(source)[0]
        known = (d[f"{source}_known"].to_numpy().astype(bool) if f"{source}_known" in d
                 else np.ones(len(d), dtype=bool))
        run = pd.to_numeric(d[run_col], errors="coerce").to_numpy()
        t = d["n_obs"].to_numpy()
        ok = known & ~np.isnan(run.astype(float))
        in_a = ok & (run == t)
        in_b = ok & (run >= 1) & (run <= t - 2)
    else:
        raise ValueError(f"source must be one of {', '.join(SOURCES)}, got {source!r}")

    def points(mask: np.ndarray, group: str) -> tuple[DecisionPoint, ...]:
        sub = d.loc[mask].assign(group_run=run[mask]).sort_values(["episode_id", "action"])
        return tuple(DecisionPoint(group, int(r.episode_id), str(r.run), str(r.question_id),
                                   str(r.regime), int(r.seed), int(r.n_obs), int(r.group_run),
                                   int(r.action), bool(r.answer))
                     for r in sub.itertuples(index=False))

    return CellDecisions(source, points(in_a, "a"), points(in_b, "b"))


def _values(value: object) -> list[str] | None:
    """A row field as the values it covers ("0,1" → ["0", "1"]); None when it covers all."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    text = str(value).strip()
    if not text:
        return None
    return [v.strip() for v in text.replace("+", ",").split(",") if v.strip()]


GROUP_FIELDS = ("model", "arm", "condition", "condition_hash", "budget", "dataset",
                "question_set", "runs", "seeds", "replicates", "regimes")
"""Row fields that say which decisions a row covers (others, e.g. amendment, do not)."""
_LISTS = {"runs": "run", "seeds": "seed", "replicates": "replicate", "regimes": "regime",
          "question_set": "question_set"}
"""Row fields that list every value they cover, and the decision column they name."""


def select(decisions: pd.DataFrame, keys: Mapping[str, object]) -> pd.DataFrame:
    """The decisions of one results row, by the row's own fields.

    Each of GROUP_FIELDS names a decision-table column (model, arm, condition,
    condition_hash, budget, dataset) or lists the values the row covers,
    comma-separated (runs, seeds, replicates, regimes; question sets joined by "+").

    Args:
        decisions: the decision table.
        keys: the row's fields (e.g. `Row.as_dict()`); absent or empty fields match all.

    Returns:
        The matching decisions.
    """
    mask = pd.Series(True, index=decisions.index)
    for field in GROUP_FIELDS:
        value = keys.get(field)
        column = _LISTS.get(field, field)
        if column not in decisions or value is None:
            continue
        if field in _LISTS:
            wanted = _values(value)
            if wanted is not None:
                mask &= decisions[column].astype(str).isin(wanted)
        elif not (isinstance(value, float) and math.isnan(value)) and str(value) != "":
            mask &= decisions[column].astype(str) == str(value)
    return decisions.loc[mask]
