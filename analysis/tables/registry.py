"""Every results table, declared once: its name, family, label, what it reads, the
function that computes it and the Results screen's views of it.

`lab results`, `lab export`, `lab figures`, the report and the console's Results screen
all list tables from here, so they cannot disagree. The module imports only the
standard library (`lab --help` lists the table names without loading pandas); a
table's compute function is named as ``"module:function"`` and imported on first use.

Four families, each computed its own way (`analysis.tables.results.results_for`):

- ``episodes``: measures on the selection's finished episodes, computed together by
  `analysis.tables.compute.compute` and kept in the results cache. The function takes
  an `analysis.measures.results.TableInput` and returns a `TablePart`.
- ``probes``: tables on stored answer-now branches. The function takes an
  `analysis.replay.probe_tables.ProbeInput` and returns a `Table`.
- ``traces``: the second paper's tables on stored trace states. The function takes an
  `analysis.replay.trace_tables.TraceInput` (every model's split and map, prepared once)
  and returns a `Table`.
- ``replication``: lab's episode tables beside a reference's (imported published
  values or another run; `analysis.tables.replication`). The function takes the db,
  the selection, the `ResultsSpec` (its ``against``) and the frames, and returns a
  `Results`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

EPISODES, PROBES, TRACES, REPLICATION = "episodes", "probes", "traces", "replication"
FAMILIES = (EPISODES, PROBES, TRACES, REPLICATION)


@dataclass(frozen=True)
class Reads:
    """What an episode table reads, so `compute` loads each part once and bounds memory.

    Attributes:
        decisions: the decision table (`Frames.decisions`).
        columns: episode columns besides the grouping keys (`Frames.episode_columns`);
            () reads the keys only.
        two_source_episodes: the full episode frame when an arm has two sources.
        two_source_only: its rows are the two-source arms' alone: without such an arm
            among the episodes' keys it reads nothing more (no decisions).
    """

    decisions: bool = False
    columns: tuple[str, ...] = ()
    two_source_episodes: bool = False
    two_source_only: bool = False


@dataclass(frozen=True)
class View:
    """One tab of the Results screen.

    Attributes:
        id: the view's id (its tab is ``tab-<id>``).
        label: the tab's label.
    """

    id: str
    label: str


@dataclass(frozen=True)
class TableDef:
    """One results table.

    Attributes:
        name: what `lab results NAME` takes; also the CSV's name in `lab export`.
        family: EPISODES, REPLICATION, PROBES or TRACES (how it is computed).
        label: what the table holds, in a few words.
        compute: ``"module:function"`` computing it (see the module docstring).
        reads: what an episode table reads (the other families read their own data).
        views: the Results screen's tabs showing it (none: CLI, export and report only).
        options: the `ResultsSpec` options an episode table reads besides resamples and
            seed (e.g. ``delta_regimes``); they join its results-cache key, so rows
            computed under different options never share an entry.
        probe_kinds: the probe kinds a ``probes`` table reads (`core.probes.KINDS`):
            `lab export`, `lab figures` and the report compute it only when lab.db holds
            a probe of one of them (none: always).
    """

    name: str
    family: str
    label: str
    compute: str
    reads: Reads = Reads()
    views: tuple[View, ...] = ()
    options: tuple[str, ...] = ()
    probe_kinds: tuple[str, ...] = ()

    def function(self) -> Callable[..., Any]:
        """The compute function, imported now."""
        module, _, attr = self.compute.partition(":")
        return getattr(importlib.import_module(module), attr)


_EPISODE_COLUMNS = ("answered", "answer_action", "correct", "tool_calls")
_COST_COLUMNS = (*_EPISODE_COLUMNS, "extra_calls", "input_tokens", "output_tokens",
                 "cache_read_tokens", "cache_write_tokens", "cost_usd",
                 "acting_input_tokens", "acting_output_tokens", "discarded_turns",
                 "backup_calls", "primary_judgments")
"""The cost table's episode columns: `analysis.measures.cost._COLUMNS`, the own-call
columns (`own_call_column`), the backup calls and the acting tokens."""

_BRANCHES = ("answer_now", "answer_now_confidence")
"""The answer-now branch kinds (`core.probes.BRANCH_KINDS`)."""

_TABLES: dict[str, TableDef] = {t.name: t for t in (
    TableDef("success", EPISODES, "success per arm, with paired differences",
             "analysis.measures.success:success_results", Reads(columns=("correct",)),
             (View("success", "Success"),)),
    TableDef("delta", EPISODES, "time-matched contrast Δ and design-label contrast",
             "analysis.measures.delta:delta_results", Reads(decisions=True),
             (View("delta", "Δ grid"),), options=("delta_regimes",)),
    TableDef("index", EPISODES, "the stopping index I",
             "analysis.measures.hazard:index_results", Reads(decisions=True),
             (View("index", "I"),)),
    TableDef("hazard", EPISODES, "hazard model: β, γ and the curve P(answer | j)",
             "analysis.measures.hazard:hazard_results", Reads(decisions=True),
             (View("hazard", "Hazard"),)),
    TableDef("cost", EPISODES, "calls, tokens, cost, utility and when episodes answer",
             "analysis.measures.cost:cost_results", Reads(columns=_COST_COLUMNS),
             (View("answering", "Answering"), View("cost", "Cost"))),
    TableDef("judgments", EPISODES, "judgment rates by source",
             "analysis.measures.judgments:judgments_results", Reads(decisions=True)),
    TableDef("budgets", EPISODES, "success and answering action by budget",
             "analysis.measures.budgets:budgets_results", Reads(columns=_EPISODE_COLUMNS)),
    TableDef("leaving", EPISODES, "leaving a failing source for a backup",
             "analysis.measures.leaving:leaving_results",
             Reads(decisions=True, two_source_episodes=True, two_source_only=True)),
    TableDef("policies", PROBES, "simple stopping policies on answer-now branches",
             "analysis.replay.probe_tables:policies_results",
             views=(View("policies", "Policies"),), probe_kinds=_BRANCHES),
    TableDef("controllers", PROBES, "confidence-gated controllers on answer-now branches",
             "analysis.replay.probe_tables:controllers_results",
             views=(View("controllers", "Controllers"),), probe_kinds=_BRANCHES),
    TableDef("beliefs", PROBES, "beliefs about continuing and answering now vs realized",
             "analysis.replay.probe_tables:beliefs_results", probe_kinds=("belief",)),
    TableDef("trace_table1", TRACES, "second paper Table 1: systems' OA, CA, coverage, cost",
             "analysis.replay.trace_tables:table1", views=(View("trace_table1", "Trace T1"),)),
    TableDef("trace_table2", TRACES, "second paper Table 2: calibration error by depth",
             "analysis.replay.trace_tables:table2", views=(View("trace_table2", "Trace T2"),)),
    TableDef("trace_table3", TRACES, "second paper Table 3: helpful and harmful transitions",
             "analysis.replay.trace_tables:table3", views=(View("trace_table3", "Trace T3"),)),
    TableDef("trace_sweeps", TRACES, "second paper's threshold and budget sweeps",
             "analysis.replay.trace_tables:sweeps", views=(View("trace_sweeps", "Trace sweeps"),)),
    TableDef("trace_calibration", TRACES, "second paper's split, fit records and map",
             "analysis.replay.trace_tables:calibration_record",
             views=(View("trace_calibration", "Trace calib."),)),
    TableDef("replication", REPLICATION, "lab's Δ and mean6 beside published values or a run",
             "analysis.tables.replication:replication_results",
             views=(View("replication", "Replication"),)),
)}


def table_names(*families: str) -> tuple[str, ...]:
    """The tables' names in registry order, only those of `families` when given."""
    return tuple(n for n, t in _TABLES.items() if not families or t.family in families)


def table_def(name: str) -> TableDef:
    """The table called `name`.

    Raises:
        KeyError: no such table.
    """
    return _TABLES[name]


def views() -> tuple[tuple[View, TableDef], ...]:
    """Every Results screen view with its table, in registry order."""
    return tuple((v, t) for t in _TABLES.values() for v in t.views)


def register(table: TableDef) -> None:
    """Add a table (after the others of its family, so `lab results all` keeps its order).

    Raises:
        ValueError: the name is taken, or the family unknown.
    """
    if table.name in _TABLES or table.name == "all":
        raise ValueError(f"results table {table.name!r} already exists")
    if table.family not in FAMILIES:
        raise ValueError(f"unknown family {table.family!r}; choose from {', '.join(FAMILIES)}")
    order = [*_TABLES.values()]
    last = max((i for i, t in enumerate(order) if t.family == table.family), default=-1)
    order.insert(last + 1, table)
    _TABLES.clear()
    _TABLES.update((t.name, t) for t in order)


