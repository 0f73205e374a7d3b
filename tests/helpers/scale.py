"""The stored-data fixture behind tests/test_scale_equivalence.py.

`tests/fixtures/scale_equivalence.json.gz` holds a small sim grid AS DATA (cells,
episodes and their steps, one errored episode included) and the results every table
gave on it with the analysis path that read every step into pandas (before the fast reads).
Keeping the data, not the grid's recipe, makes the comparison independent of later
changes to the sims or the episode loop: the test writes the same rows through the
store's write path and must get the same numbers.

Regenerate (only when the definitions of a measure change on purpose):
``python -m tests.helpers.scale``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import gzip
import json
import math
import sys
import tempfile
from itertools import product
from pathlib import Path
from typing import Any

FIXTURE = Path(__file__).parents[1] / "fixtures" / "scale_equivalence.json.gz"
MODELS = ("sim-own5", "sim-clock6", "sim-hazard-own", "sim-design3")
CONDITIONS = ("none", "enforced_rule:k=3", "stated_rule", "none:judge=true")
EXTRA_REGIMES = ("plausible",)
N_QUESTIONS, SEEDS, BUDGET = 15, (0, 1), 8
N_BOOT, HAZARD_BOOT = 200, 100
POOLS: tuple[tuple[str, ...], ...] = ((), ("seeds",))
NAMES = ("success", "delta", "index", "hazard", "cost", "judgments")
"""The tables the fixture holds (the ones that existed when it was computed)."""
_STEP_SKIP = ("shown",)


def results_json(results: Any) -> dict[str, Any]:
    """Everything `analysis.tables.compute.compute` returns, as plain JSON values (NaN → None)."""
    def clean(value: Any) -> Any:
        if isinstance(value, float) and not math.isfinite(value):
            return None if math.isnan(value) else repr(value)
        if isinstance(value, (list, tuple)):
            return [clean(v) for v in value]
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            return clean(dataclasses.astuple(value))
        return value

    def key(arm: Any) -> list[Any]:
        # `apart` (episodes that ended truncated or refused) came after the fixture was
        # computed; a key without any is serialised as it was then
        values = list(dataclasses.astuple(arm))
        return values if arm.apart else values[:-1]

    return {"tables": [t.dicts() for t in results.tables],
            "hazard_curves": clean([[key(k), list(h)] for k, h in results.hazard_curves]),
            "answer_actions": clean([[key(k), list(a)] for k, a in results.answer_actions]),
            "episodes_per_arm": list(results.episodes_per_arm), "errored": results.errored,
            "runs": list(results.runs), "pooled": results.pooled}


def load_fixture() -> dict[str, Any]:
    """The stored fixture."""
    with gzip.open(FIXTURE, "rt", encoding="utf-8") as fh:
        return json.load(fh)


def write_rows(db: Any, data: dict[str, Any]) -> None:
    """Store the fixture's questions, runs, cells and episodes through the store."""
    from core import store
    from core.demo_data import demo_questions
    from core.episode import EpisodeResult, Step

    store.insert_questions(db, demo_questions())
    for cell in data["cells"]:
        run_id = store.ensure_run(db, cell["run"])
        cell_id = store.ensure_cell(db, run_id, cell["columns"])
        items = []
        for ep in cell["episodes"]:
            steps = [Step(**s) for s in ep.pop("steps")]
            items.append((cell_id, EpisodeResult(**ep, steps=steps), None))
            ep["steps"] = [dataclasses.asdict(s) for s in steps]
        store.write_episodes(db, items)


async def _generate(path: Path) -> dict[str, Any]:
    from core import store
    from core.conditions import parse_condition
    from core.demo_data import demo_questions
    from core.models.registry import builtin_models, make_client
    from core.regimes import MEAN6, ForeignPool, parse_regime
    from core.runner import CellSpec
    from jobs.kinds.episodes import run_questions

    db = store.connect(path)
    questions = demo_questions()
    store.insert_questions(db, questions)
    pool, specs = ForeignPool(questions), builtin_models()
    run_id = store.ensure_run(db, "scale-fixture")
    for seed, model, cond, regime in product(SEEDS, MODELS, CONDITIONS,
                                             (*MEAN6, *EXTRA_REGIMES)):
        cell = CellSpec(specs[model], parse_condition(cond), parse_regime(regime), None, BUDGET,
                        seed)
        cell_id = store.ensure_cell(db, run_id, cell.columns())
        await run_questions(db, cell_id, cell, questions[:N_QUESTIONS], pool,
                            make_client(cell.model))
    return {}


def _dump(path: Path) -> dict[str, Any]:
    """Cells with their episodes and steps, as stored."""
    from core import store
    from core.episode import EpisodeResult

    db = store.connect(path)
    ep_fields = [f.name for f in dataclasses.fields(EpisodeResult)
                 if f.name not in ("steps", "prompts")]
    cell_cols = ("model", "model_spec", "condition", "condition_spec", "condition_hash",
                 "regime", "regime_hash", "question_set", "budget", "seed", "replicate",
                 "spec_hash")
    cells = []
    for row in db.conn.execute(f"SELECT c.id, r.name, {', '.join(cell_cols)} FROM cells c "
                               "JOIN runs r ON r.id = c.run_id ORDER BY c.id").fetchall():
        episodes = []
        for ep in db.conn.execute(f"SELECT id, {', '.join(ep_fields)} FROM episodes WHERE "
                                  "cell_id = ? ORDER BY id", (row[0],)).fetchall():
            values = dict(zip(ep_fields, ep[1:]))
            for flag in ("answered", "em", "correct", "placeholder"):
                values[flag] = bool(values[flag])
            values["steps"] = [dataclasses.asdict(s) for s in store.episode_steps(db, ep[0])]
            for s in values["steps"]:  # free text no measure reads: kept small
                s.pop("shown", None)
                s.update(raw="", thought="", judgment_raw=None)
            episodes.append(values)
        cells.append({"run": row[1], "columns": dict(zip(cell_cols, row[2:])),
                      "episodes": episodes})
    return {"cells": cells}


def generate() -> dict[str, Any]:
    """Run the grid, add one errored episode, dump the rows and compute every table."""
    from analysis.measures.frames import load_frames
    from analysis.tables.compute import compute
    from core import store
    from core.episode import EpisodeResult
    from core.store.selection import Selection

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "lab.db"
        asyncio.run(_generate(path))
        db = store.connect(path)
        cell_id, question = db.conn.execute(
            "SELECT cell_id, question_id FROM episodes ORDER BY id LIMIT 1").fetchone()
        db.conn.execute("DELETE FROM steps WHERE episode_id IN (SELECT id FROM episodes WHERE "
                        "cell_id = ? AND question_id = ?)", (cell_id, question))
        db.conn.execute("DELETE FROM episodes WHERE cell_id = ? AND question_id = ?",
                        (cell_id, question))
        store.write_episodes(db, [(cell_id, EpisodeResult(
            question, error="model error: connection refused", end_reason="error",
            started_at="2026-01-01T00:00:00", finished_at="2026-01-01T00:00:01"), None)])
        data = _dump(path)
        data["results"] = {
            ",".join(pool) or "-": results_json(compute(
                load_frames(db, Selection(pool=pool)), NAMES, N_BOOT, HAZARD_BOOT, 0))
            for pool in POOLS}
    return data


def main() -> None:
    """Write the fixture file."""
    data = generate()
    FIXTURE.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(FIXTURE, "wt", encoding="utf-8", compresslevel=9) as fh:
        json.dump(data, fh, separators=(",", ":"))
    n = sum(len(c["episodes"]) for c in data["cells"])
    print(f"wrote {FIXTURE} ({FIXTURE.stat().st_size:,} bytes, {n} episodes)", file=sys.stderr)


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    main()
