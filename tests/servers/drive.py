"""Drive real episodes through core.runner into a temporary lab.db (for backend tests)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from core import store
from core.conditions import parse_condition
from core.demo_data import demo_questions
from core.models.registry import ModelSpec, make_client
from core.regimes import ForeignPool, parse_regime
from core.runner import CellSpec
from jobs.kinds.episodes import run_questions


def drive(spec: ModelSpec, db_path: Path, n: int = 6, condition: str = "enforced_rule",
          regime: str = "persistent", budget: int = 4) -> tuple[int, list[dict[str, Any]]]:
    """Run `n` demo questions of one cell; return (stored count, episode rows by id)."""
    db = store.connect(db_path)
    questions = demo_questions()
    store.insert_questions(db, questions)
    cell = CellSpec(spec, parse_condition(condition), parse_regime(regime), None, budget, 0)
    run_id = store.ensure_run(db, "backend-test")
    cell_id = store.ensure_cell(db, run_id, cell.columns())
    stored = asyncio.run(run_questions(db, cell_id, cell, questions[:n],
                                       ForeignPool(questions), make_client(spec)))
    rows = [dict(r) for r in db.query("SELECT * FROM episodes ORDER BY id")]
    return stored, rows
