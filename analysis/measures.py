"""Every results table from lab.db in one call: load the frames once, build the decision
table once, then compute the requested tables (SPEC §13.1–13.5).

The individual measures live in `analysis.success`, `analysis.delta`,
`analysis.hazard` and `analysis.cost`; this module only wires them together.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd
from sqlite_utils import Database

from analysis.cost import answer_actions, cost_table, judgments_table
from analysis.decisions import arm_groups, clean_episodes, decision_table
from analysis.delta import delta_table
from analysis.hazard import hazard_table, index_table
from analysis.lpm import HAZARD_BOOT
from analysis.rows import Table
from analysis.stats import N_BOOT
from analysis.success import paired_table, success_table

TABLES = ("success", "delta", "index", "hazard", "cost", "judgments")
"""Names accepted by `compute` (and `lab results`)."""


@dataclass(frozen=True)
class Frames:
    """What analysis reads: error-free episodes, their steps and decisions.

    Attributes:
        episodes: finished episodes without an error.
        steps: their steps.
        decisions: the decision table (`analysis.decisions.decision_table`).
        errored: episodes left out because they ended in an error.
        runs: runs present in the selection.
    """

    episodes: pd.DataFrame
    steps: pd.DataFrame
    decisions: pd.DataFrame
    errored: int
    runs: tuple[str, ...]


def frames_from(episodes: pd.DataFrame, steps: pd.DataFrame) -> Frames:
    """Build Frames from episode and step frames (pure).

    Args:
        episodes: `core.store.episodes_frame` output (errors included).
        steps: `core.store.steps_frame` output.

    Returns:
        The Frames, with errored episodes counted and removed.
    """
    clean, errored = clean_episodes(episodes)
    steps = steps.loc[steps["episode_id"].isin(clean["episode_id"])].reset_index(drop=True)
    runs = tuple(sorted(str(r) for r in episodes["run"].unique())) if len(episodes) else ()
    return Frames(clean, steps, decision_table(clean, steps), errored, runs)


def load_frames(db: Database, runs: Sequence[str] | None = None,
                models: Sequence[str] | None = None) -> Frames:
    """Read finished episodes and steps from lab.db and build the Frames.

    Args:
        db: an open lab.db.
        runs: run names to keep (default: all).
        models: model names to keep (default: all).

    Returns:
        The Frames.
    """
    from core.store import episodes_frame, steps_frame

    return frames_from(episodes_frame(db, runs, models), steps_frame(db, runs, models))


@dataclass(frozen=True)
class Results:
    """Computed tables plus the data behind the charts.

    Attributes:
        tables: the tables in the requested order.
        hazard_curves: (arm, hazard at j = 0…7) per arm, when "hazard" was asked; an
            arm is (model, condition, budget).
        answer_actions: (arm, ((action, answers), …)) per arm, when "cost" was asked.
        episodes_per_arm: episodes per arm, aligned with `answer_actions`.
        errored: episodes left out because they ended in an error.
        runs: runs pooled.
    """

    tables: tuple[Table, ...]
    hazard_curves: tuple[tuple[tuple[str, str, int], tuple[float, ...]], ...]
    answer_actions: tuple[tuple[tuple[str, str, int], tuple[tuple[int, int], ...]], ...]
    episodes_per_arm: tuple[int, ...]
    errored: int
    runs: tuple[str, ...]

    def table(self, name: str) -> Table | None:
        """The table called `name`, if computed."""
        return next((t for t in self.tables if t.name == name), None)


def compute(frames: Frames, names: Sequence[str] = TABLES, n_boot: int = N_BOOT,
            hazard_boot: int = HAZARD_BOOT, seed: int = 0, lam: float = 0.05) -> Results:
    """Compute the requested tables.

    Args:
        frames: loaded frames.
        names: tables among TABLES ("success" also adds the paired differences).
        n_boot: question-level resamples (SPEC: 2,000).
        hazard_boot: resamples for the hazard model (SPEC: 1,000).
        seed: bootstrap seed.
        lam: price per call for utility.

    Returns:
        The Results.

    Raises:
        ValueError: for an unknown table name.
    """
    unknown = [n for n in names if n not in TABLES]
    if unknown:
        raise ValueError(f"unknown table {unknown[0]!r}; choose from {', '.join(TABLES)}")
    ep, dec, runs = frames.episodes, frames.decisions, ", ".join(frames.runs)
    tables: list[Table] = []
    curves: tuple = ()
    actions: tuple = ()
    counts: tuple[int, ...] = ()
    for name in names:
        if name == "success":
            tables += [success_table(ep, n_boot, seed, runs),
                       paired_table(ep, n_boot=n_boot, seed=seed, runs=runs)]
        elif name == "delta":
            tables.append(delta_table(dec, n_boot, seed, runs))
        elif name == "index":
            tables.append(index_table(dec, n_boot, seed, runs))
        elif name == "hazard":
            table = hazard_table(dec, n_boot, hazard_boot, seed, runs)
            tables.append(table)
            curves = _curves(table)
        elif name == "cost":
            tables.append(cost_table(ep, lam, n_boot, seed, runs))
            groups = list(arm_groups(ep))
            actions = tuple((a, answer_actions(g)) for a, g in groups)
            counts = tuple(len(g) for _, g in groups)
        elif name == "judgments":
            tables.append(judgments_table(frames.steps, dec, ep, runs))
    return Results(tuple(tables), curves, actions, counts, frames.errored, frames.runs)


def _curves(table: Table) -> tuple[tuple[tuple[str, str, int], tuple[float, ...]], ...]:
    out: dict[tuple[str, str, int], list[float]] = {}
    for r in table.rows:
        if r.measure == "hazard":
            out.setdefault((r.model, r.condition, int(r.budget or 0)), []).append(r.estimate)
    return tuple((arm, tuple(h)) for arm, h in out.items())
