"""Every results table from lab.db in one call: load the frames once (filtered in SQL by
a `Selection`), build the decision table once, then compute the requested tables (SPEC
§13.1–13.5), one row per group (`analysis.arms`).

The individual measures live in `analysis.success`, `analysis.delta`,
`analysis.hazard` and `analysis.cost`; this module only wires them together.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import pandas as pd
from sqlite_utils import Database

from analysis.arms import ArmKey, Grouping, with_keys
from analysis.budgets import budget_table
from analysis.cost import answer_actions, cost_table, judgments_table
from analysis.decisions import arm_groups, clean_episodes, decision_table, errored_episodes
from analysis.delta import delta_table
from analysis.hazard import hazard_table, index_table
from analysis.lpm import HAZARD_BOOT
from analysis.rows import Table
from analysis.stats import N_BOOT
from analysis.success import REFERENCE, paired_table, success_table
from core.store.frames import Selection

TABLES = ("success", "delta", "index", "hazard", "cost", "judgments", "budgets")
"""Names accepted by `compute` (and `lab results`)."""
_DECISION_KEYS = ("arm", "condition_hash", "dataset", "question_set", "run", "seed",
                  "replicate", "amendment")
"""Episode columns every decision row carries, so decisions group like episodes."""


@dataclass(frozen=True)
class Frames:
    """What analysis reads: error-free episodes, their steps and decisions.

    Attributes:
        episodes: finished episodes without an error.
        steps: their steps.
        decisions: the decision table (`analysis.decisions.decision_table`), with the
            episodes' grouping columns.
        errored: errored episodes left out that have no complete retry.
        runs: runs present in the selection.
        errored_episodes: those errored episodes (each is counted on its row).
        selection: the filters and pooling the frames were loaded with.
    """

    episodes: pd.DataFrame
    steps: pd.DataFrame
    decisions: pd.DataFrame
    errored: int
    runs: tuple[str, ...]
    errored_episodes: pd.DataFrame = field(default_factory=pd.DataFrame)
    selection: Selection = field(default_factory=Selection)


def frames_from(episodes: pd.DataFrame, steps: pd.DataFrame,
                selection: Selection | None = None) -> Frames:
    """Build Frames from episode and step frames (pure).

    Args:
        episodes: `core.store.episodes_frame` output (errors included).
        steps: `core.store.steps_frame` output.
        selection: the selection they were read with (its `pool` decides the rows).

    Returns:
        The Frames, with errored episodes counted and removed.
    """
    episodes = with_keys(episodes)
    clean, errored = clean_episodes(episodes)
    steps = steps.loc[steps["episode_id"].isin(clean["episode_id"])].reset_index(drop=True)
    runs = tuple(sorted(str(r) for r in episodes["run"].unique())) if len(episodes) else ()
    decisions = decision_table(clean, steps)
    extra = [c for c in _DECISION_KEYS if c not in decisions]
    if extra:
        decisions = decisions.merge(clean[["episode_id", *extra]], on="episode_id",
                                    how="left", validate="many_to_one")
    return Frames(clean, steps, decisions, errored, runs, errored_episodes(episodes),
                  selection or Selection())


def load_frames(db: Database, selection: Selection | None = None,
                runs: Sequence[str] | None = None,
                models: Sequence[str] | None = None) -> Frames:
    """Read finished episodes and steps from lab.db (filtered in SQL) and build the Frames.

    Signature: ``load_frames(db, Selection(runs=("main",), seeds=(0, 1),
    conditions=("enforced_rule:k=7",), pool=("seeds",)))``; ``runs`` and ``models``
    are shorthands that override the selection's.

    Args:
        db: an open lab.db.
        selection: filters (runs, sets, seeds, models, conditions as arm labels or
            bare names, regimes) and the dimensions rows pool (default: everything,
            nothing pooled).
        runs: run names to keep.
        models: model names to keep.

    Returns:
        The Frames.

    Raises:
        ConfigError: a condition in the selection that matches no stored arm.
    """
    from dataclasses import replace

    from core.store.frames import episodes_frame, steps_frame

    sel = selection or Selection()
    if runs:
        sel = replace(sel, runs=tuple(runs))
    if models:
        sel = replace(sel, models=tuple(models))
    return frames_from(episodes_frame(db, selection=sel), steps_frame(db, selection=sel), sel)


@dataclass(frozen=True)
class Results:
    """Computed tables plus the data behind the charts.

    Attributes:
        tables: the tables in the requested order.
        hazard_curves: (group, hazard at j = 0…7) per group and regime family, when
            "hazard" was asked.
        answer_actions: (group, ((action, answers), …)) per group and regime family,
            when "cost" was asked.
        episodes_per_arm: episodes per group, aligned with `answer_actions`.
        errored: errored episodes left out that have no complete retry.
        runs: runs in the selection.
        pooled: what rows pool ("" when nothing).
    """

    tables: tuple[Table, ...]
    hazard_curves: tuple[tuple[ArmKey, tuple[float, ...]], ...]
    answer_actions: tuple[tuple[ArmKey, tuple[tuple[int, int], ...]], ...]
    episodes_per_arm: tuple[int, ...]
    errored: int
    runs: tuple[str, ...]
    pooled: str = ""

    def table(self, name: str) -> Table | None:
        """The table called `name`, if computed."""
        return next((t for t in self.tables if t.name == name), None)


def compute(frames: Frames, names: Sequence[str] = TABLES, n_boot: int = N_BOOT,
            hazard_boot: int = HAZARD_BOOT, seed: int = 0, lam: float = 0.05,
            reference: str = REFERENCE) -> Results:
    """Compute the requested tables.

    Signature: ``compute(load_frames(db, selection), ("success", "delta"), n_boot=2000)``.
    Rows split by model, arm (full spec), budget, dataset, question set, run, seed and
    replicate unless `frames.selection.pool` merges some; each row counts the errored
    episodes of its group.

    Args:
        frames: loaded frames.
        names: tables among TABLES ("success" also adds the paired differences).
        n_boot: question-level resamples (SPEC: 2,000).
        hazard_boot: resamples for the hazard model (SPEC: 1,000).
        seed: bootstrap seed.
        lam: price per call for utility.
        reference: arm label the paired differences subtract (default "none").

    Returns:
        The Results.

    Raises:
        ValueError: for an unknown table name.
    """
    unknown = [n for n in names if n not in TABLES]
    if unknown:
        raise ValueError(f"unknown table {unknown[0]!r}; choose from {', '.join(TABLES)}")
    grouping = Grouping(frames.selection.pool, frames.errored_episodes)
    ep, dec = frames.episodes, frames.decisions
    tables: list[Table] = []
    curves: tuple = ()
    actions: tuple = ()
    counts: tuple[int, ...] = ()
    for name in names:
        if name == "success":
            tables += [success_table(ep, n_boot, seed, grouping),
                       paired_table(ep, reference, n_boot, seed, grouping)]
        elif name == "delta":
            tables.append(delta_table(dec, n_boot, seed, grouping))
        elif name == "index":
            tables.append(index_table(dec, n_boot, seed, grouping))
        elif name == "hazard":
            table = hazard_table(dec, n_boot, hazard_boot, seed, grouping)
            tables.append(table)
            curves = _curves(table)
        elif name == "cost":
            tables.append(cost_table(ep, lam, n_boot, seed, grouping))
            groups = list(arm_groups(ep, grouping, families=True))
            actions = tuple((a, answer_actions(g)) for a, g in groups)
            counts = tuple(len(g) for _, g in groups)
        elif name == "judgments":
            tables.append(judgments_table(frames.steps, dec, ep, grouping))
        elif name == "budgets":
            tables.append(budget_table(ep, n_boot, seed, grouping))
    return Results(tuple(tables), curves, actions, counts, frames.errored, frames.runs,
                   grouping.pooled)


def _curves(table: Table) -> tuple[tuple[ArmKey, tuple[float, ...]], ...]:
    out: dict[ArmKey, list[float]] = {}
    for r in table.rows:
        if r.measure == "hazard":
            out.setdefault(r.key(), []).append(r.estimate)
    return tuple((arm, tuple(h)) for arm, h in out.items())
