"""`lab demo`: the whole pipeline on the bundled demo data, from nothing."""

from __future__ import annotations

from pathlib import Path

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from core import store
from core.data import ids_hash
from core.demo_data import demo_questions
from core.errors import StoreError
from core.models.registry import load_registry
from core.regimes import MEAN6
from jobs.control import enqueue_grid, status
from jobs.grid import GridRequest
from jobs.settings import WorkerSettings
from jobs.worker import run_worker

DEMO_SET = "demo"
DEMO_RUN = "demo"
DEMO_MODELS = ("sim-never", "sim-deadline", "sim-clock6", "sim-own5", "sim-hazard-own")
DEMO_CONDITIONS = ("none", "budget", "stated_rule", "enforced_rule", "lexical_rule")


def ensure_demo_set(db) -> None:
    """Load the demo questions and create the demo question set (all of them) once."""
    questions = demo_questions()
    store.insert_questions(db, questions)
    ids = [q.id for q in questions]
    try:
        store.question_set(db, DEMO_SET)
    except StoreError:
        store.save_question_set(db, DEMO_SET, "demo", ids, 0, [], False, ids_hash(ids))


def demo_request() -> GridRequest:
    """The demo grid: several sim policies × conditions × the six mean6 regimes."""
    return GridRequest(models=DEMO_MODELS, conditions=DEMO_CONDITIONS, regimes=MEAN6,
                       question_set=DEMO_SET, run=DEMO_RUN)


def run_demo(db_path: Path, config_path: Path, workers: int = 2) -> None:
    """Create, enqueue and run the demo grid with an embedded worker and a progress bar."""
    db = store.connect(db_path)
    ensure_demo_set(db)
    settings = WorkerSettings(db_path=db_path, config_path=config_path)
    plan, grid_id, njobs = enqueue_grid(db, settings, demo_request(), load_registry(config_path))
    total = len(plan.cells) * len(plan.question_ids)
    if grid_id is None:
        click.echo(f"demo: all {total} episodes of {len(plan.cells)} cells already stored")
    else:
        click.echo(f"demo grid {grid_id}: {len(plan.cells)} cells; {plan.episodes} new "
                   f"episodes in {njobs} jobs")
    remaining = sum(g.expected - g.stored for g in status(db) if g.run == DEMO_RUN)
    if remaining == 0:
        return
    console = Console(stderr=True)
    with Progress(TextColumn("running"), BarColumn(), MofNCompleteColumn(),
                  TimeRemainingColumn(), console=console) as progress:
        bar = progress.add_task("episodes", total=remaining)
        start = store.count(db, "episodes")

        def tick() -> None:
            progress.update(bar, completed=store.count(db, "episodes") - start)

        run_worker(settings, workers=workers, until_idle=True, on_tick=tick)
        tick()
