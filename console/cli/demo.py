"""`lab demo`: the whole pipeline on the bundled demo data, from nothing."""

from __future__ import annotations

import textwrap
from collections.abc import Mapping
from pathlib import Path

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from sqlite_utils import Database

from console.cli.options import bounded, open_db
from console.cli.output import echo
from core import prereg, store
from core.bounds import MAX_WORKERS
from core.demo_set import DEMO_SET, ensure_demo_set
from core.errors import LabError
from core.models.registry import ModelSpec, load_registry
from core.models.sim import BUILTIN_SIMS, SimSpec
from core.regimes import MEAN6
from core.registered_tests import validate_scope
from core.store import jobs as ledger
from core.store import prereg as prereg_rows
from core.wording import plural
from jobs.control import enqueue_grid, status
from jobs.grid import GridPlan, GridRequest
from jobs.settings import WorkerSettings
from jobs.worker import run_worker

DEMO_RUN = "demo"
DEMO_MODELS = ("sim-never", "sim-deadline", "sim-clock6", "sim-own5", "sim-hazard-own")
DEMO_CONDITIONS = ("none", "enforced_rule:k=3", "lexical_rule:k=3", "random_rule:k=3,rate=0.5")
"""Only arms the harness enforces: the sims never read prompts (see SIMS_NOTE)."""
WIDTH = 100
"""Every line `lab demo` prints fits this many columns (tables split, text wrapped)."""
SIMS_NOTE = ("The simulated agents do not read prompts: each judges an observation from its "
             "design label (failed → USELESS w.p. 0.99, real → 0.45) and stops by its policy, "
             "so only arms the harness enforces change what they do (here with k = 3, so that "
             "the rule fires before every policy's own stop: enforced_rule, lexical_rule, and "
             "random_rule at a fixed USELESS rate of 0.5); prompt-only arms (permit, budget, "
             "stated_rule, call_cost, decide) would repeat `none` and are left out.")


DEMO_TITLE = "Demo: the enforced rule on simulated agents"
DEMO_BODY = """The demo grid runs five simulated policies with known stopping behaviour.

The rules stop after k = 3 consecutive useless observations.

- D1: for an agent that never stops on its own, the enforced rule raises mean6 success.
- D2: for agents that stop by the clock or the deadline, the time-matched contrast is
  not positive (its 95% upper bound stays below +0.06).
- D3: under the enforced rule, stopping follows the agent's own judgments (Δ > 0).
"""
DEMO_TESTS = (
    {"id": "D1", "kind": "paired_diff", "metric": "mean6", "a": "enforced_rule:k=3",
     "b": "none", "alternative": "greater", "correction": "holm", "models": ["sim-never"]},
    {"id": "D2", "kind": "delta_bound", "condition": "none", "bound": "upper",
     "threshold": 0.06, "models": ["sim-never", "sim-deadline", "sim-clock6"]},
    {"id": "D3", "kind": "delta_bound", "condition": "enforced_rule:k=3", "bound": "lower",
     "threshold": 0.0, "models": ["sim-never", "sim-deadline"]},
)


def policy_text(spec: SimSpec) -> str:
    """What a sim's stopping policy does, in a few words (from its parameters)."""
    texts = {
        "never": "never stops on its own: searches until the budget forces an answer",
        "deadline": "answers at the last action of its budget",
        "clock": f"answers at action {spec.c}, whatever it judged",
        "hazard_time": f"answers at action t with probability {spec.hazard_slope:g}·(t − 1)",
        "own_count": f"answers after {spec.k} of its own USELESS judgments in a row",
        "design_count": f"answers after {spec.k} failed observations in a row (design labels)",
        "hazard_own": f"answers with probability {spec.hazard_slope:g} × its current run of "
                      "own USELESS judgments",
    }
    return texts[spec.policy]


def sims_lines(models: tuple[str, ...] = DEMO_MODELS) -> list[str]:
    """The demo's sims, one line each with its policy, under what they all share."""
    width = max(len(m) for m in models)
    return (textwrap.wrap(SIMS_NOTE, WIDTH)
            + ["", f"The {len(models)} simulated agents (policies) in the tables below:"]
            + [f"  {m:<{width}}  {policy_text(BUILTIN_SIMS[m])}" for m in models]
            + ["  every sim also answers after a real observation it judged useful, "
               f"w.p. {BUILTIN_SIMS[models[0]].p_answer_useful:g}"])


def ensure_demo_amendment(db: Database, models: Mapping[str, ModelSpec]) -> str:
    """The frozen demo amendment (created and frozen before the demo runs, once)."""
    scope = {"models": list(DEMO_MODELS), "conditions": list(DEMO_CONDITIONS),
             "regimes": list(MEAN6), "question_sets": [DEMO_SET], "budgets": [8]}
    for row in prereg_rows.amendments(db):
        if (row["title"] == DEMO_TITLE and row["state"] == "frozen"
                and row["scope"] == validate_scope(scope)):
            return str(row["id"])
    amendment_id = prereg.create(db, DEMO_TITLE, DEMO_BODY, list(DEMO_TESTS), scope)
    prereg.freeze(db, amendment_id, models)
    return amendment_id


def demo_request(amendment: str | None = None) -> GridRequest:
    """The demo grid: several sim policies × conditions × the six mean6 regimes."""
    return GridRequest(models=DEMO_MODELS, conditions=DEMO_CONDITIONS, regimes=MEAN6,
                       question_set=DEMO_SET, run=DEMO_RUN, amendment=amendment)


def run_demo(db_path: Path, config_path: Path, workers: int = 2) -> str:
    """Create, freeze, enqueue and run the demo with an embedded worker and a progress bar.

    Returns:
        The id of the demo amendment governing the run.
    """
    db = store.connect(db_path)
    ensure_demo_set(db)
    models = load_registry(config_path)
    amendment = ensure_demo_amendment(db, models)
    echo(f"demo amendment {amendment} is frozen: {len(DEMO_TESTS)} registered tests")
    settings = WorkerSettings(db_path=db_path, config_path=config_path)
    plan, grid_id, njobs = enqueue_grid(db, settings, demo_request(amendment), models)
    stored = stored_episodes(db, plan)
    echo(progress_line(plan, grid_id, njobs, stored))
    remaining = len(plan.cells) * len(plan.question_ids) - stored
    if remaining == 0:
        return amendment
    console = Console(stderr=True)
    with Progress(TextColumn("running"), BarColumn(), MofNCompleteColumn(),
                  TimeRemainingColumn(), console=console) as progress:
        bar = progress.add_task("episodes", total=remaining)
        start = store.count(db, "episodes")

        def tick() -> None:
            progress.update(bar, completed=store.count(db, "episodes") - start)

        run_worker(settings, workers=workers, until_idle=True, on_tick=tick)
        tick()
    return amendment


def stored_episodes(db: Database, plan: GridPlan) -> int:
    """Episodes of the plan's cells and questions stored complete so far."""
    cells = store.cell_ids_by_hash(db, plan.request.run)
    ids = set(plan.question_ids)
    hashes = (cp.cell.columns()["spec_hash"] for cp in plan.cells)
    return sum(len(ledger.stored_questions(db, cells[h]) & ids) for h in hashes if h in cells)


def progress_line(plan: GridPlan, grid_id: int | None, njobs: int, stored: int) -> str:
    """What a (re)started demo says: how many episodes are stored, queued earlier and new."""
    total = len(plan.cells) * len(plan.question_ids)
    earlier = total - stored - plan.episodes  # held by jobs of an earlier, unfinished demo
    if stored == total:
        return f"demo: all {total:,} episodes of {len(plan.cells)} cells already stored"
    parts = [f"{stored:,} of {total:,} episodes already stored"] if stored else []
    if earlier:
        parts.append(f"{earlier:,} queued by an earlier run of the demo")
    if grid_id is not None:
        parts.append(f"{plural(plan.episodes, 'new episode')} in {plural(njobs, 'job')}")
    head = f"demo grid {grid_id}" if grid_id is not None else "demo"
    return "\n".join(textwrap.wrap(f"{head}: {len(plan.cells)} cells; " + "; ".join(parts)
                                   + f"; running the {total - stored:,} that remain", WIDTH,
                                   subsequent_indent="  ", break_on_hyphens=False))


MAIN_DELTA = "own judgments, by t"
"""The Δ variant the demo summary prints (`lab results delta` shows all of them)."""


def summary(db_path: Path, amendment: str, colour: bool = False) -> str:
    """The demo's tables for a reader: success, paired differences, the main Δ, cost,
    and the registered tests' outcomes, each a screen or less (no charts).

    Args:
        db_path: the demo's lab.db.
        amendment: the demo amendment's id.
        colour: keep ANSI colours (a terminal).
    """
    from dataclasses import replace

    from analysis.measures.frames import load_frames
    from analysis.prereg.outcomes import evaluate
    from analysis.tables.compute import compute
    from analysis.tables.fit import wrap_line
    from analysis.tables.text import render_results
    from console.cli.prereg import outcome_lines

    db = store.connect(db_path)
    try:
        frames = load_frames(db, runs=[DEMO_RUN])
        results = compute(frames, ("success", "delta", "cost"))
        tables = []
        for table in results.tables:
            if table.name == "delta":
                table = replace(
                    table, title="Time-matched contrast Δ (own judgments, by t)",
                    rows=tuple(r for r in table.rows if r.scope == MAIN_DELTA),
                    notes=table.notes + ("Other Δ variants and the design-label contrast: "
                                         "`lab results delta` or the console's Results (7).",))
            tables.append(table)
        text = render_results(replace(results, tables=tuple(tables)), charts=False,
                              colorless=not colour, width=WIDTH)
        outcomes = outcome_lines(evaluate(prereg_rows.amendment(db, amendment), frames))
    finally:
        db.conn.close()
    return "\n".join([*sims_lines(), "", text, "",
                      f"Registered tests of {amendment} (frozen before the demo runs)",
                      *(w for line in outcomes for w in wrap_line(line, WIDTH)),
                      "", "Charts (hazard, answering action) and every table: `lab` opens the "
                      "console (7 = Results)."])


def finish_demo(db_path: Path, config_path: Path, amendment: str, no_console: bool) -> None:
    """Open the console on the demo's results (a terminal), or print the summary."""
    from console.cli.console import is_tty

    if is_tty("stdout") and is_tty("stdin") and not no_console:
        from console.app import ConsoleConfig, make_app

        make_app(db_path, ConsoleConfig(db_path=db_path, config_path=config_path,
                                        first_screen="results")).run()
        echo(f"demo tables: lab --db {db_path} results   (or `lab demo --no-console`)")
        return
    echo(summary(db_path, amendment, colour=is_tty("stdout")))


class DemoInterrupted(LabError):
    """`lab demo` stopped by Ctrl-C before its grid finished (exit 130)."""

    exit_code = 130


@click.command("demo")
@click.option("--workers", type=bounded(1, MAX_WORKERS), default=2, show_default=True)
@click.option("--no-console", is_flag=True, help="Print the tables even on a terminal.")
@click.pass_context
def demo(ctx: click.Context, workers: int, no_console: bool) -> None:
    """Run the main job on the bundled demo data, from nothing, then open the console.

    Creates lab.db, loads the demo questions, creates the demo question set,
    freezes a demo amendment with registered tests, enqueues a sim grid (5 sim
    policies × none and the three harness-enforced arms × the six mean6 regimes),
    runs an embedded worker until done, then opens the console on a terminal or
    prints the success, Δ and cost tables and the registered tests' outcomes.
    Running it again reuses everything already stored.

    \b
    Example:
      lab --db demo.db demo
    """
    try:
        amendment = run_demo(Path(ctx.obj["db"]), Path(ctx.obj["config"]), workers=workers)
    except KeyboardInterrupt:  # a second Ctrl-C stops the worker at once
        amendment = ""
    grids = [g for g in status(open_db(ctx)) if g.run == DEMO_RUN]
    unfinished = sum(g.expected - g.stored - g.errored for g in grids)
    if not amendment or unfinished:
        raise DemoInterrupted(
            f"the demo stopped before its grid finished ({unfinished} of "
            f"{sum(g.expected for g in grids):,} episodes not run; interrupted?): its tables "
            f"would be partial, so none are shown; run `lab --db {ctx.obj['db']} demo` again "
            f"to finish it")
    finish_demo(Path(ctx.obj["db"]), Path(ctx.obj["config"]), amendment, no_console)


COMMANDS = (demo,)
"""The commands to register on the `lab` group."""
