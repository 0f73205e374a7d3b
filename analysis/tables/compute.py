"""Every episode results table from lab.db in one call, one row per group
(`analysis.base.arms`); which tables there are, and what each reads, is
`analysis.tables.registry`.

`load_frames` (`analysis.measures.frames`) reads each part of the data only when a table
needs it: success, cost and budgets read episodes; Δ, I, hazard and dissociation
read lab.db's compact decision table; judgment rates are counted by SQLite
(`analysis.measures.judgments`); leaving reads only backup steps. `compute`
serves every table it computed before for the same data and spec from the results
cache (`analysis.base.cache`). The tables themselves are computed by the functions
the registry names (`analysis.measures.success`, `analysis.measures.delta`, …); this
module only orders, caches and gathers them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from analysis.base.arms import ArmKey, Grouping
from analysis.base.cache import REFERENCE, ResultsCache
from analysis.base.rows import Table
from analysis.measures.frames import Frames
from analysis.measures.results import Results, TableInput, TablePart, apart_totals
from analysis.stats.blas import single_thread
from analysis.stats.bootstrap import N_BOOT
from analysis.stats.lpm import HAZARD_BOOT
from analysis.tables.registry import EPISODES, table_def, table_names
from core.conditions import LAMBDA
from core.regimes import DELTA_FAILURE, DELTA_REGIMES

if TYPE_CHECKING:
    import pandas as pd


def compute(frames: Frames, names: Sequence[str] | None = None, n_boot: int = N_BOOT,
            hazard_boot: int = HAZARD_BOOT, seed: int = 0, lam: float = LAMBDA,
            reference: str = REFERENCE, delta_regimes: str = DELTA_FAILURE) -> Results:
    """Compute the requested tables.

    Signature: ``compute(load_frames(db, selection), ("success", "delta"), n_boot=2000)``.
    Rows split by model, arm (full spec), budget, dataset, question set, run, seed and
    replicate unless `frames.selection.pool` merges some; each row counts the errored
    episodes of its group.

    Args:
        frames: loaded frames.
        names: episode tables of the registry (default: every one, in registry order;
            "success" also adds the paired differences).
        n_boot: question-level resamples (2,000 by default).
        hazard_boot: resamples for the hazard model (1,000 by default).
        seed: bootstrap seed.
        lam: price per call for utility.
        reference: arm label the paired differences subtract (default "none").
        delta_regimes: what the main family's Δ pools: "failure" (its five failure
            regimes, the default) or "mean6" (`core.regimes.DELTA_REGIMES`).

    Returns:
        The Results.

    Raises:
        ValueError: for an unknown table name or `delta_regimes`.
    """
    known = table_names(EPISODES)
    names = known if names is None else tuple(names)
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ValueError(f"unknown table {unknown[0]!r}; choose from {', '.join(known)}")
    if delta_regimes not in DELTA_REGIMES:
        raise ValueError(f"delta regimes must be one of {', '.join(DELTA_REGIMES)}, "
                         f"got {delta_regimes!r}")
    single_thread()
    grouping = Grouping(frames.selection.pool, frames.errored_episodes, frames.apart_episodes)
    cache = ResultsCache(frames.source.path) if frames.source is not None else None
    tables: list[Table] = []
    curves: tuple[tuple[ArmKey, tuple[float, ...]], ...] = ()
    actions: tuple[tuple[ArmKey, tuple[tuple[int, int], ...]], ...] = ()
    counts: tuple[int, ...] = ()
    keys = {n: cache.table_key(frames.source, n, table_def(n).options, n_boot, hazard_boot,
                               seed, lam, reference, delta_regimes)
            if cache and frames.source else "" for n in names}
    parts = {n: cache.get(keys[n]) if cache else None for n in names}
    pending = [n for n in names if parts[n] is None]
    reading = [n for n in pending if table_def(n).reads.decisions]
    ahead = [n for n in reading if not table_def(n).reads.two_source_only]
    if ahead:  # the packs' SQL runs while the episodes are read (`_memory_order`'s too)
        frames.prefetch_decisions()
    order, full = _memory_order(pending, frames)
    if reading and not ahead and _two_source(frames.episode_keys):
        frames.prefetch_decisions()  # a two-source table's decisions, once there are some
    if full:
        frames.episodes  # noqa: B018  (loaded first: success and budgets read it too)
    for name in order:
        if name == _RELEASE:
            frames.release_episodes()
            continue
        parts[name] = _compute_one(frames, name, grouping, n_boot, hazard_boot, seed, lam,
                                   reference, cache, delta_regimes)
        if cache:
            cache.put(keys[name], parts[name])
    for name in names:
        part = parts[name]
        assert part is not None
        tables += part.tables
        curves = part.curves or curves
        actions, counts = (part.actions, part.counts) if part.actions else (actions, counts)
    return Results(tuple(tables), curves, actions, counts, frames.errored, frames.runs,
                   grouping.pooled, apart_totals(frames))


def _memory_order(names: list[str], frames: Frames) -> tuple[list[str], bool]:
    """The tables to compute, in an order that bounds memory, and whether any of them
    reads the full episode frame: the tables that read episode columns come first (the
    one reading the most columns first, so `Frames.episode_columns` serves the others
    from its frame; all of them from the full frame when one needs it), then `_RELEASE`
    (the episode columns are dropped, their keys kept), then the decision tables; so the
    episodes' columns and the decision table are never in memory together."""
    if frames.source is None:
        return names, False
    # only leaving with two-source arms reads the full frame (switching reads answered
    # and answer_action)
    full = [n for n in names if table_def(n).reads.two_source_episodes]
    if full and not _two_source(frames.episode_keys):
        full = []
    first = sorted((n for n in names if table_def(n).reads.columns or n in full),
                   key=lambda n: -len(table_def(n).reads.columns))
    if not first:
        return names, False
    rest = [n for n in names if n not in first]
    return [*first, *([_RELEASE] if rest else []), *rest], bool(full)


def _two_source(frame: pd.DataFrame) -> bool:
    """Whether any row is of a two-source arm (`analysis.measures.leaving.two_source_mask`,
    imported here only when a table that reads them is asked for)."""
    from analysis.measures.leaving import two_source_mask

    return bool(two_source_mask(frame).any())


_RELEASE = "<release episodes>"
"""Marker in `_memory_order`'s list: drop the full episode frame here."""


def _compute_one(frames: Frames, name: str, grouping: Grouping, n_boot: int,
                 hazard_boot: int, seed: int, lam: float, reference: str,
                 cache: ResultsCache | None = None, delta_regimes: str = DELTA_FAILURE
                 ) -> TablePart:
    """One table name, reading only the frames its `Reads` declare (the tables that only
    group episodes get their key columns, `Frames.episode_keys`, not the full episodes);
    the hazard table's fits of unchanged group samples come from `cache`."""
    table = table_def(name)
    reads = table.reads
    if reads.columns:  # keys and a few integer columns, not the full frame
        ep = frames.episode_columns(reads.columns)
    else:
        ep = frames.episode_keys
    if reads.two_source_episodes and _two_source(ep):
        ep = frames.episodes  # switching reads answered and answer_action
    part: TablePart = table.function()(TableInput(frames, ep, grouping, n_boot, hazard_boot,
                                                  seed, lam, reference, cache,
                                                  delta_regimes))
    return part
