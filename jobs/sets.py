"""Question sets loaded once per worker process, and a job's questions read from them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sqlite_utils import Database

from core import store
from core.data import Question
from core.regimes import ForeignPool
from core.runner import CellSpec


@dataclass(frozen=True)
class LoadedSet:
    """A question set's questions by id and its pool of foreign pages, loaded once."""

    questions: dict[str, Question]
    pool: ForeignPool


PoolCache = dict[tuple[str, str], LoadedSet]
"""Loaded question sets by (name, sha256); owned by one worker's Huey instance or engine."""


def loaded_set(db: Database, cell: CellSpec, pools: PoolCache | None) -> LoadedSet | None:
    """The cell's question set, loaded (and validated) once per worker process.

    Sets never change once made and a stored question never changes either, so a
    worker keys each set by its sha256 instead of re-reading and re-validating every
    question for every job. None when the cell runs on a whole dataset.
    """
    if not cell.question_set:
        return None
    qs = store.question_set(db, cell.question_set)
    key = (cell.question_set, qs["sha256"])
    if pools is not None and key in pools:
        return pools[key]
    questions = store.load_questions(db, ids=qs["ids"])
    loaded = LoadedSet({q.id: q for q in questions}, ForeignPool(questions))
    if pools is not None:
        pools[key] = loaded
    return loaded


def job_questions(db: Database, job: Mapping[str, Any], loaded: LoadedSet | None
                  ) -> list[Question]:
    """The job's questions in its order, from the loaded set when it holds them all."""
    ids = job["question_ids"]
    if loaded is not None and all(q in loaded.questions for q in ids):
        return [loaded.questions[q] for q in ids]
    return store.load_questions(db, ids=ids)
