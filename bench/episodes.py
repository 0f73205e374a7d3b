"""Sim episodes per second for one process writing lab.db (no queue). Target ≥ 500.

Runs a grid of simulated agents × conditions × the six mean6 regimes over the demo
questions through the real episode loop, parser and store (episodes and steps
committed to a fresh lab.db in batches), and prints the figure.

Usage: python bench/episodes.py [--episodes N] [--db PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from itertools import product
from pathlib import Path

from core import store
from core.conditions import parse_condition
from core.demo_data import demo_questions
from core.models.registry import builtin_models, make_client
from core.regimes import MEAN6, ForeignPool, parse_regime
from core.runner import CellSpec
from jobs.kinds.episodes import run_questions

MODELS = ("sim-own5", "sim-clock6", "sim-deadline", "sim-hazard-own")
CONDITIONS = ("none", "budget", "enforced_rule", "lexical_rule", "decide")


async def bench(db_path: Path, episodes: int) -> tuple[int, float]:
    """Run about `episodes` sim episodes into a fresh lab.db; return (stored, seconds)."""
    db = store.connect(db_path)
    questions = demo_questions()
    store.insert_questions(db, questions)
    pool = ForeignPool(questions)
    run_id = store.ensure_run(db, "bench")
    models = builtin_models()
    stored, seed = 0, 0
    start = time.perf_counter()
    while stored < episodes:
        for model, cond, regime in product(MODELS, CONDITIONS, MEAN6):
            cell = CellSpec(models[model], parse_condition(cond), parse_regime(regime), None, 8,
                            seed)
            cell_id = store.ensure_cell(db, run_id, cell.columns())
            stored += await run_questions(db, cell_id, cell, questions, pool,
                                          make_client(cell.model))
            if stored >= episodes:
                break
        seed += 1
    return stored, time.perf_counter() - start


def main() -> None:
    """Parse arguments, run the benchmark, print episodes/s."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=6000)
    parser.add_argument("--db", type=Path, default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = args.db or Path(tmp) / "lab.db"
        n, seconds = asyncio.run(bench(path, args.episodes))
        size = path.stat().st_size + (path.with_name(path.name + "-wal").stat().st_size
                                      if path.with_name(path.name + "-wal").exists() else 0)
        steps = store.count(store.connect(path), "steps")
    print(f"episodes: {n} in {seconds:.2f} s, {steps} steps, {size / max(steps, 1):.0f} B/step "
          f"(file incl. questions)")
    print(f"{n / seconds:.0f} episodes/s")


if __name__ == "__main__":
    main()
