"""Every results table from lab.db in one call (SPEC §13.1–13.5), one row per group
(`analysis.base.arms`).

`load_frames` (`analysis.measures.frames`) reads each part of the data only when a table
needs it: success, cost and budgets read episodes; Δ, I, hazard and dissociation
read lab.db's compact decision table; judgment rates are counted by SQLite
(`analysis.measures.judgments`); leaving reads only backup steps. `compute`
serves every table it computed before for the same data and spec from the results
cache (`analysis.base.cache`). The individual measures live in
`analysis.measures.success`, `analysis.measures.delta`, `analysis.measures.hazard` and
`analysis.measures.cost`; this module only wires them together.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from types import MappingProxyType

from analysis.base.arms import ArmKey, Grouping
from analysis.stats.blas import single_thread
from analysis.measures.budgets import budget_table
from analysis.base.cache import ResultsCache
from analysis.measures.cost import cost_table, group_answer_actions
from analysis.measures.frames import Frames, frames_from, load_frames  # noqa: F401  (re-exported)
from analysis.measures.delta import delta_table
from analysis.measures.judgments import frame_counts, judgments_table
from analysis.measures.leaving import leaving_table, two_source_mask
from analysis.measures.hazard import hazard_table, index_table
from analysis.stats.lpm import HAZARD_BOOT
from analysis.base.rows import Table
from analysis.stats.bootstrap import N_BOOT
from analysis.measures.success import REFERENCE, paired_table, success_table
from core.conditions import LAMBDA
from core.end_reasons import apart_counts

TABLES = ("success", "delta", "index", "hazard", "cost", "judgments", "budgets",
          "leaving")
"""Names accepted by `compute` (and `lab results`)."""


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
    """

    tables: tuple[Table, ...]
    hazard_curves: tuple[tuple[ArmKey, tuple[float, ...]], ...]
    answer_actions: tuple[tuple[ArmKey, tuple[tuple[int, int], ...]], ...]
    episodes_per_arm: tuple[int, ...]
    errored: int
    runs: tuple[str, ...]
    pooled: str = ""
    apart: tuple[tuple[str, int], ...] = ()

    def table(self, name: str) -> Table | None:
        """The table called `name`, if computed."""
        return next((t for t in self.tables if t.name == name), None)


def compute(frames: Frames, names: Sequence[str] = TABLES, n_boot: int = N_BOOT,
            hazard_boot: int = HAZARD_BOOT, seed: int = 0, lam: float = LAMBDA,
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
    single_thread()
    grouping = Grouping(frames.selection.pool, frames.errored_episodes, frames.apart_episodes)
    cache = ResultsCache(frames.source.path) if frames.source is not None else None
    spec = {"n_boot": n_boot, "hazard_boot": hazard_boot, "seed": seed, "lam": lam,
            "reference": reference}
    tables: list[Table] = []
    curves: tuple = ()
    actions: tuple = ()
    counts: tuple[int, ...] = ()
    keys = {n: cache.key(frames.source, n, spec) if cache and frames.source else ""
            for n in names}
    parts = {n: cache.get(keys[n]) if cache else None for n in names}
    order, full = _memory_order([n for n in names if parts[n] is None], frames)
    if any(n in _READS_DECISIONS for n in order):
        frames.prefetch_decisions()  # the packs' SQL runs while the episodes are read
    if full:
        frames.episodes  # noqa: B018  (loaded first: success and budgets read it too)
    for name in order:
        if name == _RELEASE:
            frames.release_episodes()
            continue
        parts[name] = _compute_one(frames, name, grouping, n_boot, hazard_boot, seed, lam,
                                   reference, cache)
        if cache:
            cache.put(keys[name], parts[name])
    for name in names:
        part = parts[name]
        assert part is not None
        tables += part.tables
        curves = part.curves or curves
        actions, counts = (part.actions, part.counts) if name == "cost" else (actions, counts)
    return Results(tuple(tables), curves, actions, counts, frames.errored, frames.runs,
                   grouping.pooled, apart_totals(frames))


def apart_totals(frames: Frames) -> tuple[tuple[str, int], ...]:
    """(name, count) of the selection's complete episodes that ended with a truncated
    generation or a refusal (`core.end_reasons.APART_FIELDS`, zeros included)."""
    ended = frames.apart_episodes
    reasons = ended["end_reason"] if "end_reason" in ended else ()
    return tuple(apart_counts(reasons).items())


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
    full = ["leaving"] if "leaving" in names and two_source_mask(frames.episode_keys).any() \
        else []
    first = sorted((n for n in names if n in _READS_VALUES or n in full),
                   key=lambda n: -len(_READS_VALUES.get(n, ())))
    if not first:
        return names, False
    rest = [n for n in names if n not in first]
    return [*first, *([_RELEASE] if rest else []), *rest], bool(full)


_RELEASE = "<release episodes>"
"""Marker in `_memory_order`'s list: drop the full episode frame here."""


@dataclass(frozen=True)
class _Part:
    """What one table name contributes to Results (the unit the cache stores)."""

    tables: tuple[Table, ...]
    curves: tuple = ()
    actions: tuple = ()
    counts: tuple[int, ...] = ()


FITS_KEPT = 4096
"""Hazard-model fits the results cache keeps across selections (the most recently
used; ~0.4 KB each)."""
_READS_DECISIONS = frozenset({"delta", "index", "hazard", "judgments", "leaving"})
"""Tables that read the decision table (the others never load it)."""
_READS_VALUES = MappingProxyType({
    "success": ("correct",), "budgets": ("answered", "answer_action", "correct", "tool_calls"),
    "cost": ("answered", "answer_action", "correct", "tool_calls", "extra_calls",
             "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens",
             "cost_usd", "acting_input_tokens", "acting_output_tokens", "discarded_turns",
             "backup_calls", "primary_judgments")})
"""Tables that read the episodes' keys and only these columns (`Frames.episode_columns`):
cost reads `analysis.measures.cost._COLUMNS`, the own-call columns (`own_call_column`), the
backup calls and the acting tokens."""


def _compute_one(frames: Frames, name: str, grouping: Grouping, n_boot: int,
                 hazard_boot: int, seed: int, lam: float, reference: str,
                 cache: ResultsCache | None = None) -> _Part:
    """One table name, reading only the frames it needs (the tables that only group
    episodes get their key columns, `Frames.episode_keys`, not the full episodes); the
    hazard table's fits of unchanged group samples come from `cache`."""
    if name in _READS_VALUES:  # keys and a few integer columns, not the full frame
        ep = frames.episode_columns(_READS_VALUES[name])
    else:
        ep = frames.episode_keys
    if name == "leaving" and two_source_mask(ep).any():
        ep = frames.episodes  # switching reads answered and answer_action
    dec = frames.decisions if name in _READS_DECISIONS else None
    tables: list[Table] = []
    curves: tuple = ()
    actions: tuple = ()
    counts: tuple[int, ...] = ()
    if name == "success":
        tables += [success_table(ep, n_boot, seed, grouping),
                   paired_table(ep, reference, n_boot, seed, grouping)]
    elif name == "delta":
        tables.append(delta_table(dec, n_boot, seed, grouping))
    elif name == "index":
        tables.append(index_table(dec, n_boot, seed, grouping))
    elif name == "hazard":
        key = cache.shared_key("hazard fits", {"hazard_boot": hazard_boot, "seed": seed}
                               ) if cache else ""
        fitted = cache.get(key) if cache else None
        fitted = fitted if isinstance(fitted, dict) else {}
        table = hazard_table(dec, n_boot, hazard_boot, seed, grouping, fitted)
        if cache:
            cache.put(key, dict(list(fitted.items())[-FITS_KEPT:]))
        tables.append(table)
        curves = _curves(table)
    elif name == "cost":
        tables.append(cost_table(ep, lam, n_boot, seed, grouping))
        actions, counts = group_answer_actions(ep, grouping)
    elif name == "judgments":
        tables.append(judgments_table(frame_counts(frames), dec, ep, grouping))
    elif name == "budgets":
        tables.append(budget_table(ep, n_boot, seed, grouping))
    elif name == "leaving":
        tables.append(leaving_table(ep, frames.backup_steps, dec, n_boot, seed, grouping))
    return _Part(tuple(tables), curves, actions, counts)


def _curves(table: Table) -> tuple[tuple[ArmKey, tuple[float, ...]], ...]:
    out: dict[ArmKey, list[float]] = {}
    for r in table.rows:
        if r.measure == "hazard":
            out.setdefault(r.key(), []).append(r.estimate)
    return tuple((arm, tuple(h)) for arm, h in out.items())
