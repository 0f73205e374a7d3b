"""Small builders shared by tests (invented content only)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from core import store
from core.conditions import parse_condition
from core.data import Paragraph, Question
from core.demo_data import demo_questions
from core.models.registry import builtin_models, make_client
from core.regimes import ForeignPool, parse_regime
from core.runner import CellSpec
from jobs.kinds.episodes import run_questions


def make_question(qid: str = "q1", answer: str = "Lake Orrin") -> Question:
    """A two-hop question with 2 gold and 8 distractor pages."""
    gold = (
        Paragraph("Vellmore Quartet", ("The Vellmore Quartet is a string band.",
                                       "It was founded by Ada Brun.")),
        Paragraph("Ada Brun", ("Ada Brun is a violinist.", f"She was born in {answer}.")),
    )
    distractors = tuple(
        Paragraph(f"Page {qid} {i}", (f"Page {i} is about the town of Marrow {i}.",
                                      "It has a river and a mill."))
        for i in range(8)
    )
    return Question(
        id=qid, dataset="unit", question="Where was the founder of the Vellmore Quartet born?",
        answer=answer, type="bridge", level="hard", paragraphs=gold + distractors,
        supporting_facts=(("Vellmore Quartet", 1), ("Ada Brun", 1)),
    )


def make_pool(n: int = 5) -> list[Question]:
    """n questions with distinct ids and pages."""
    return [make_question(f"q{i}", answer=f"Lake {i}") for i in range(1, n + 1)]


def store_sim_grid(db: Any, run: str, arms: Iterable[tuple[str, str]],
                   regimes: Sequence[str], n_questions: int) -> None:
    """Store, in run `run` of `db`, the built-in sims of every (model, condition) arm ×
    regime (arms outer) on the first `n_questions` demo questions (budget 8, seed 0),
    the demo questions inserted first."""
    store.insert_questions(db, demo_questions())
    run_id = store.ensure_run(db, run)
    specs, pool = builtin_models(), ForeignPool(demo_questions())

    async def go() -> None:
        for model, cond in arms:
            for regime in regimes:
                cell = CellSpec(specs[model], parse_condition(cond), parse_regime(regime),
                                None, 8, 0)
                cell_id = store.ensure_cell(db, run_id, cell.columns())
                await run_questions(db, cell_id, cell, demo_questions()[:n_questions], pool,
                                    make_client(cell.model))

    asyncio.run(go())


def undo_migration(db: Any, name: str, table: str) -> Path:
    """Make a lab.db look as it did before migration `name` (e.g. "0010_episode_packs"):
    drop its table and triggers (named ``…_0010``), forget the migration and lower
    ``user_version`` below it; close the connection and return the file's path."""
    number = name.split("_")[0]
    path = Path(db.conn.execute("PRAGMA database_list").fetchone()[2])
    with db.conn:
        db.conn.execute(f"DROP TABLE {table}")
        for (trigger,) in db.conn.execute("SELECT name FROM sqlite_master WHERE type = "
                                          f"'trigger' AND name LIKE '%_{number}'").fetchall():
            db.conn.execute(f"DROP TRIGGER {trigger}")
        db.conn.execute("DELETE FROM _sqlite_migrations WHERE name = ?", (name,))
    db.conn.execute(f"PRAGMA user_version = {int(number) - 1}")
    db.conn.close()
    return path
