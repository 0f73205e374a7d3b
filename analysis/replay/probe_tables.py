"""`lab results policies|controllers`: the tables that read answer-now branches;
`lab results trace_*`: the second seed's tables on stored traces (docs/traces.md)."""

from __future__ import annotations

import pandas as pd
from sqlite_utils import Database

from analysis.base.arms import Grouping
from analysis.base.rows import Table
from analysis.measures.frames import Frames
from analysis.measures.results import Results
from analysis.replay.controllers import Gate, controller_table
from analysis.replay.policies import policy_table
from analysis.replay.trace_tables import TRACE_TABLES, TraceSettings, trace_tables
from core.errors import StoreError
from core.probes import ANSWER_NOW, BRANCH_KINDS
from core.store.probes import probes_frame
from core.store.selection import Selection

PROBE_TABLES = ("policies", "controllers")
__all__ = ["PROBE_TABLES", "TRACE_TABLES", "probe_results", "trace_results"]


def probe_results(db: Database, frames: Frames, name: str, n_boot: int, seed: int = 0,
                  gate: Gate | None = None, fit_depths: str = "0", split_seed: int = 0
                  ) -> Results:
    """One of PROBE_TABLES on the frames' episodes and their stored answer-now branches.

    Args:
        db: an open lab.db.
        frames: the selection's frames.
        name: "policies" or "controllers".
        n_boot: question-level resamples.
        seed: bootstrap seed.
        gate: the controllers' π thresholds and budget (default (0.3, 0.7), 3).
        fit_depths: the controllers' isotonic fit: "0" (first point) or "all".
        split_seed: the controllers' calibration split seed.

    Returns:
        Results holding the one table.

    Raises:
        ValueError: another name.
    """
    if name not in PROBE_TABLES:
        raise ValueError(f"unknown probe table {name!r}; choose from {', '.join(PROBE_TABLES)}")
    grouping = Grouping(frames.selection.pool, frames.errored_episodes, frames.apart_episodes)
    # policies read the paper's branch; controllers each group's confidence-request
    # branches where it has any (`analysis.replay.controllers.branch_kind`)
    probes = probes_frame(db, frames.selection,
                          kinds=(ANSWER_NOW,) if name == "policies" else BRANCH_KINDS)
    if name == "policies":
        table = policy_table(frames.episodes, frames.steps, probes, n_boot, seed, grouping)
    else:
        table = controller_table(frames.episodes, frames.steps, probes, n_boot, seed, grouping,
                                 gate, split_seed, fit_depths)
    return Results((table,), (), (), (), frames.errored, frames.runs, grouping.pooled)


def question_texts(db: Database, question_ids: list[str]) -> dict[str, str] | None:
    """Question id → text for the Adaptive proxy, or None when one is not in lab.db."""
    from core.store.questions import load_questions

    try:
        return {q.id: q.question for q in load_questions(db, ids=question_ids)}
    except StoreError:
        return None


def trace_results(db: Database, names: tuple[str, ...], selection: Selection,
                  settings: TraceSettings | None = None, n_boot: int = 2000, seed: int = 0
                  ) -> tuple[Table, ...]:
    """The named TRACE_TABLES on the stored traces of the selection's runs, sets, models.

    Args:
        db: an open lab.db.
        names: tables from TRACE_TABLES.
        selection: filters (runs, sets, models are read).
        settings: π, split, fit and label.
        n_boot: question resamples.
        seed: bootstrap seed.

    Returns:
        The tables.

    Raises:
        ConfigError: no traces match (`trace_tables`).
    """
    from core.store.traces import load_traces

    frame = load_traces(db, runs=selection.runs, sets=selection.sets, models=selection.models)
    ids = sorted(map(str, frame["question_id"].unique())) if len(frame) else []
    frame = with_new_evidence(db, frame)
    return trace_tables(frame, names, question_texts(db, ids), settings, n_boot, seed)


def with_new_evidence(db: Database, frame: pd.DataFrame) -> pd.DataFrame:
    """The traces with a ``new_evidence`` column: 1 where the state's depth revealed a
    non-empty slice of its stored plan (by plan_sha256), 0 where that slice is empty
    (a copied state, no transition in Table 3), missing where the plan is not stored."""
    from core.plans import SIMILARITIES
    from core.store.plans import load_plans

    sizes: dict[str, tuple[int, ...]] = {}
    for dataset, rows in frame.groupby("dataset"):
        qids = sorted(map(str, rows["question_id"].unique()))
        for similarity in SIMILARITIES:
            for plan in load_plans(db, str(dataset), qids, similarity).values():
                sizes[plan.sha256] = tuple(len(plan.slice_passages(k)) for k in (1, 2, 3))
    depth = frame["depth"].to_numpy()
    new = [None if sha not in sizes else int(d > 0 and sizes[sha][d - 1] > 0)
           for sha, d in zip(frame["plan_sha256"], depth)]
    return frame.assign(new_evidence=pd.array(new, dtype="Int64"))
