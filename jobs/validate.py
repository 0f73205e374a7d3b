"""`lab validate-measures`' running part: the simulated policies through the real
pipeline into lab.db (run "validate-measures"), then their answer-now branches.

What the episodes mean is computed by `analysis.validate`; this module only runs them
(episodes and probes already stored are reused, so a rerun adds nothing).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

from sqlite_utils import Database

from analysis import validate as measures
from analysis.stats.bootstrap import N_BOOT
from core import store
from core.conditions import parse_condition
from core.data import Question
from core.models.registry import builtin_models, make_client
from core.probes import decision_points, run_probe, view_at
from core.regimes import FAILURE_REGIMES, ForeignPool, parse_regime
from core.runner import CellSpec
from core.store.probes import probed, recorded_episode, write_probes
from core.store.trajectories import question_lookup
from jobs.kinds.episodes import run_questions


async def _run_cells(db: Database, questions: Sequence[Question], pool: ForeignPool,
                     seeds: Sequence[int], cells: Sequence[tuple[str, str]],
                     question_set: str | None, progress: Callable[[int], None] | None) -> int:
    specs = builtin_models()
    run_id = store.ensure_run(db, measures.RUN)
    stored = 0
    for seed in seeds:
        for name, condition in cells:
            for regime in FAILURE_REGIMES:
                cell = CellSpec(specs[name], parse_condition(condition), parse_regime(regime),
                                question_set, measures.BUDGET, seed)
                cell_id = store.ensure_cell(db, run_id, cell.columns())
                stored += await run_questions(db, cell_id, cell, questions, pool,
                                              make_client(cell.model))
                if progress is not None:
                    progress(1)
    return stored


async def _answer_now(db: Database, episode_ids: Sequence[int]) -> None:
    """Store the answer-now branch at every decision point of these sim episodes (once)."""
    done = probed(db, list(episode_ids), "answer_now")
    specs = builtin_models()
    records = []
    question_of = question_lookup(db)
    for eid in episode_ids:
        ep = recorded_episode(db, eid, question_of)
        client = make_client(specs[ep.model])
        for t in decision_points(ep):
            if (eid, t) not in done:
                records.append(await run_probe(client.start(view_at(ep, t)), ep, t,
                                               "answer_now"))
    write_probes(db, records)


def validate_measures(db: Database, questions: Sequence[Question], seeds: Sequence[int] = (0,),
                      models: Sequence[str] | None = None, pool: ForeignPool | None = None,
                      question_set: str | None = None, n_boot: int = N_BOOT,
                      seed: int = 0, progress: Callable[[int], None] | None = None
                      ) -> measures.Validation:
    """Run the sim policies through the real pipeline, then compute I, design contrast and Δ.

    Args:
        db: an open lab.db (episodes are stored under the run "validate-measures").
        questions: the questions to run.
        seeds: cell seeds (each seed is one simulation of every question).
        models: built-in sims to run (default: all of EXPECTED and LEAVING_EXPECTED).
        pool: source of failed observations (default: `questions`).
        question_set: question set name recorded on the cells.
        n_boot: question-level resamples.
        seed: bootstrap seed.
        progress: called with 1 after each cell (model × regime × seed) is done.

    Returns:
        The Validation (`analysis.validate.compute_validation`).

    Raises:
        ValueError: for a model that is not a built-in sim of EXPECTED or LEAVING_EXPECTED.
    """
    names, cells = measures.validation_cells(models)
    new = asyncio.run(_run_cells(db, questions, pool or ForeignPool(questions), seeds, cells,
                                 question_set, progress))
    eps, steps = measures.validation_frames(db, questions, seeds, cells)
    asyncio.run(_answer_now(db, measures.probe_episode_ids(eps, names)))
    return measures.compute_validation(db, eps, steps, names, len({q.id for q in questions}),
                                       seeds, new, n_boot, seed)
