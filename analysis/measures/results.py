"""What computing results tables yields, and what an episode table's compute function
receives and returns (`analysis.tables.registry`).

`Results` is what `lab results` prints and the console shows: the tables asked for, plus
the data behind the charts and the selection's counts. An episode table's function takes
a `TableInput` (the loaded frames, the grouping, the spec and the results cache) and
returns a `TablePart`, the unit the results cache stores.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pandas as pd

from analysis.base.arms import ArmKey, Grouping
from analysis.base.rows import Table
from core.end_reasons import apart_counts

if TYPE_CHECKING:
    from analysis.base.cache import ResultsCache
    from analysis.measures.frames import Frames


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
        apart: (name, count) of the complete episodes that ended truncated or refused
            (`core.end_reasons.APART_FIELDS`, zeros included): in every estimate as not
            answering, and counted on each row.
        repaired: episodes whose stored answer repair replaced the raw answer (None:
            raw answers, repairs not asked for).
    """

    tables: tuple[Table, ...]
    hazard_curves: tuple[tuple[ArmKey, tuple[float, ...]], ...]
    answer_actions: tuple[tuple[ArmKey, tuple[tuple[int, int], ...]], ...]
    episodes_per_arm: tuple[int, ...]
    errored: int
    runs: tuple[str, ...]
    pooled: str = ""
    apart: tuple[tuple[str, int], ...] = ()
    repaired: int | None = None

    def table(self, name: str) -> Table | None:
        """The table called `name`, if computed."""
        return next((t for t in self.tables if t.name == name), None)


def apart_totals(frames: Frames) -> tuple[tuple[str, int], ...]:
    """(name, count) of the selection's complete episodes that ended with a truncated
    generation or a refusal (`core.end_reasons.APART_FIELDS`, zeros included)."""
    ended = frames.apart_episodes
    reasons = ended["end_reason"] if "end_reason" in ended else ()
    return tuple(apart_counts(reasons).items())


@dataclass(frozen=True)
class TablePart:
    """What one table name contributes to Results (the unit the results cache stores).

    Attributes:
        tables: its tables (success also yields the paired differences).
        curves: hazard curves (`Results.hazard_curves`), from the hazard table.
        actions: answer actions per group (`Results.answer_actions`), from the cost table.
        counts: episodes per group, aligned with `actions`.
    """

    tables: tuple[Table, ...]
    curves: tuple[tuple[ArmKey, tuple[float, ...]], ...] = ()
    actions: tuple[tuple[ArmKey, tuple[tuple[int, int], ...]], ...] = ()
    counts: tuple[int, ...] = ()


@dataclass(frozen=True)
class TableInput:
    """What an episode table's compute function receives.

    Attributes:
        frames: the selection's frames (read lazily; a table reads only what it needs).
        episodes: the episode frame its `Reads` declared: the keys, the keys with its
            columns, or the full frame.
        grouping: how rows split and pool.
        n_boot: question-level resamples.
        hazard_boot: resamples for the hazard model.
        seed: bootstrap seed.
        lam: price per call for utility.
        reference: arm label the paired differences subtract.
        cache: the results cache (None for frames built in memory).
        delta_regimes: what the main family's Δ pools, "failure" or "mean6"
            (`core.regimes.DELTA_REGIMES`).
    """

    frames: Frames
    episodes: pd.DataFrame
    grouping: Grouping
    n_boot: int
    hazard_boot: int
    seed: int
    lam: float
    reference: str
    cache: ResultsCache | None = field(default=None, repr=False)
    delta_regimes: str = "failure"

    @property
    def decisions(self) -> pd.DataFrame:
        """The decision table (read on first use)."""
        return self.frames.decisions
