"""One scripted episode stored in a fresh lab.db, and the replies that script it."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from core import store
from core.conditions import parse_condition
from core.models.registry import builtin_models
from core.regimes import ForeignPool, parse_regime
from core.runner import CellSpec
from jobs.kinds.episodes import run_questions
from tests.helpers.builders import make_pool
from tests.helpers.scripted import ScriptedClient

SEARCH = "Thought: I need the band.\nAction: search\nAction Input: Vellmore Quartet"
LOOKUP = "Thought: look it up.\nAction: lookup\nAction Input: founded"
GARBLED = "I am not sure what to do."
FINISH = "Thought: done.\nAction: finish\nAction Input: Lake Orrin"


def scripted_episode(db_path: Path, condition: str, regime: str, acts: Sequence[str],
                     judgments: Sequence[str] = (), budget: int = 8
                     ) -> tuple[Any, int, ScriptedClient]:
    """Run one scripted episode into a fresh lab.db; returns (db, episode id, client)."""
    db = store.connect(db_path)
    pool = make_pool(3)
    store.insert_questions(db, pool)
    cell = CellSpec(builtin_models()["sim-own5"], parse_condition(condition),
                    parse_regime(regime), None, budget, 0)
    cell_id = store.ensure_cell(db, store.ensure_run(db, "r"), cell.columns())
    client = ScriptedClient(acts=acts, judgments=judgments)
    asyncio.run(run_questions(db, cell_id, cell, pool[:1], ForeignPool(pool), client))
    (eid,) = [r[0] for r in db.conn.execute("SELECT id FROM episodes")]
    return db, eid, client
