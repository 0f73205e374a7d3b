"""`lab results policies|controllers|beliefs`: the tables that read stored probes
(answer-now branches, belief probes), each a function of a `ProbeInput` registered by
name in `analysis.tables.registry`; and the
readers of the trace tables' input: stored trace states, their plans, question texts
(docs/traces.md)."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
from sqlite_utils import Database

from analysis.base.arms import Grouping
from analysis.base.rows import Table
from analysis.measures.frames import Frames
from analysis.replay.controllers import Gate, controller_table
from analysis.replay.policies import policy_table
from core.errors import StoreError
from core.probes import ANSWER_NOW, BRANCH_KINDS
from core.store.probes import probes_frame
from core.store.selection import Selection


@dataclass(frozen=True)
class ProbeInput:
    """What a probe table's function takes.

    Attributes:
        db: an open lab.db (the table reads the stored branches it needs).
        frames: the selection's frames.
        grouping: what rows pool and the errored episodes they count.
        n_boot: question-level resamples.
        seed: bootstrap seed.
        gate: the controllers' π thresholds and budget (None: (0.3, 0.7), 3).
        fit_depths: the controllers' isotonic fit: "0" (first point) or "all".
        split_seed: the controllers' calibration split seed.
    """

    db: Database
    frames: Frames
    grouping: Grouping
    n_boot: int
    seed: int = 0
    gate: Gate | None = None
    fit_depths: str = "0"
    split_seed: int = 0


EPISODE_VALUES = ("correct", "tool_calls")
"""The episode columns the probe tables read beside the keys (`Frames.episode_columns`):
the branches' episodes need their outcome and calls, the grouping their keys (budget,
regime and question among them); never the full episode frame."""


def branch_inputs(db: Database, frames: Frames, probes: pd.DataFrame
                  ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The episodes and steps a branch table reads for `probes`.

    The steps serve only to place each stored branch at its decision point: with no
    probe stored for the selection, every group is left out for want of branches
    whatever its steps, so none are read (an empty step frame; at 198,000 episodes
    reading the million steps took most of the table's 17 s of CPU for a table of
    notes). The episodes are their keys with `EPISODE_VALUES`.

    Args:
        db: an open lab.db.
        frames: the selection's frames.
        probes: the probes the table reads (`core.store.probes.probes_frame`).

    Returns:
        (episodes, steps).
    """
    from core.store.frames import steps_frame

    episodes = frames.episode_columns(EPISODE_VALUES)
    if len(probes) or frames.source is None:
        return episodes, frames.steps
    return episodes, steps_frame(db, selection=frames.selection, where=("0",))


def policies_results(inp: ProbeInput) -> Table:
    """Simple stopping policies on the paper's answer-now branches."""
    probes = probes_frame(inp.db, inp.frames.selection, kinds=(ANSWER_NOW,))
    episodes, steps = branch_inputs(inp.db, inp.frames, probes)
    return policy_table(episodes, steps, probes, inp.n_boot, inp.seed, inp.grouping)


def controllers_results(inp: ProbeInput) -> Table:
    """Confidence-gated controllers on each group's confidence-request branches where it
    has any, else the paper's (`analysis.replay.controllers.branch_kind`)."""
    probes = probes_frame(inp.db, inp.frames.selection, kinds=BRANCH_KINDS)
    episodes, steps = branch_inputs(inp.db, inp.frames, probes)
    return controller_table(episodes, steps, probes, inp.n_boot, inp.seed, inp.grouping,
                            inp.gate, inp.split_seed, inp.fit_depths)


def beliefs_results(inp: ProbeInput) -> Table:
    """Self-reported values of continuing and answering now beside their realized values
    and the ideal observer (`analysis.replay.beliefs`), on repaired answers where stored."""
    from analysis.replay.beliefs import BELIEF, REPAIR, belief_table

    probes = probes_frame(inp.db, inp.frames.selection, kinds=(BELIEF, ANSWER_NOW, REPAIR))
    return belief_table(inp.frames.episodes, inp.frames.steps, inp.frames.decisions, probes,
                        inp.grouping)


def question_texts(db: Database, question_ids: list[str]) -> dict[str, str] | None:
    """Question id → text for the Adaptive proxy, or None when one is not in lab.db."""
    from core.store.questions import load_questions

    try:
        return {q.id: q.question for q in load_questions(db, ids=question_ids)}
    except StoreError:
        return None


def load_trace_frame(db: Database, selection: Selection
                     ) -> tuple[pd.DataFrame, dict[str, str] | None]:
    """The stored trace states of the selection's runs, sets and models, with their
    ``new_evidence`` column, and their questions' texts (None when one is missing).

    Args:
        db: an open lab.db.
        selection: filters (runs, sets, models are read).
    """
    from core.store.traces import load_traces

    frame = load_traces(db, runs=selection.runs, sets=selection.sets, models=selection.models)
    ids = sorted(map(str, frame["question_id"].unique())) if len(frame) else []
    return with_new_evidence(db, frame), question_texts(db, ids)


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
