"""`lab try`: run one episode and print every step as it happens (stores nothing)."""

from __future__ import annotations

import asyncio

import click

from console.cli.options import bounded, open_db
from console.cli.output import echo
from console.render import step_lines, summary_lines
from core import store
from core.bounds import MAX_BUDGET
from core.conditions import parse_condition
from core.demo_set import load_demo_questions
from core.errors import ConfigError, LabError
from core.kb import ref_title
from core.models.registry import load_registry, make_client, resolve_model
from core.regimes import ForeignPool, parse_regime
from core.runner import CellSpec, run_one, setup_for
from jobs.grid import resolve_rate


class EpisodeFailed(LabError):
    """`lab try`: the episode ran but ended in an error (exit 1 after printing it)."""


@click.command("try")
@click.option("--model", required=True, help="Model name (built-in sim-* or from lab.toml).")
@click.option("--condition", required=True,
              help="Condition, optionally with knobs: enforced_rule:k=5, random_rule:rate=0.6.")
@click.option("--regime", required=True, help="Failure regime, e.g. persistent, recover_after_2.")
@click.option("--question", required=True, help="Question id in lab.db (demo-001 … on the demo).")
@click.option("--budget", type=bounded(1, MAX_BUDGET), default=8, show_default=True)
@click.option("--seed", type=bounded(None), default=0, show_default=True)
@click.option("--judge", is_flag=True, help="Also ask side-channel judgments (recorded only).")
@click.option("--set", "question_set", default=None,
              help="Draw failed observations from this question set's pages, as its grid "
                   "cells do (default: the question's whole dataset).")
@click.pass_context
def try_(ctx: click.Context, model: str, condition: str, regime: str, question: str,
         budget: int, seed: int, judge: bool, question_set: str | None) -> None:
    """Run one episode and print every step as it happens.

    Nothing is stored in lab.db besides the demo data on first use.

    \b
    Example:
      lab try --model sim-own5 --condition enforced_rule --regime persistent --question demo-001
    """
    spec = resolve_model(load_registry(ctx.obj["config"]), model)
    cond = parse_condition(condition)
    if judge and not cond.judge:
        cond = parse_condition(condition + ("," if ":" in condition else ":") + "judge=true")
    reg = parse_regime(regime)
    db = open_db(ctx)
    load_demo_questions(db)
    cond = resolve_rate(db, spec.name, cond)
    (q,) = store.load_questions(db, ids=[question])
    if question_set:
        ids = store.question_set(db, question_set)["ids"]
        if q.id not in ids:
            raise ConfigError(f"question {q.id} is not in set {question_set}")
        pool_questions = store.load_questions(db, ids=ids)
    else:
        pool_questions = store.load_questions(db, dataset=q.dataset)
    by_id = {x.id: x for x in pool_questions}
    client = make_client(spec)
    cell = CellSpec(spec, cond, reg, question_set, budget, seed)

    def title_of(ref: str) -> str:
        return ref_title(ref, by_id.get)

    echo(f"{spec.name} · {cond.name} · {reg.name} · budget {budget} · seed {seed}")
    echo(f"question {q.id}: {q.question}")
    setup = setup_for(cell, q, ForeignPool(pool_questions), client)
    result = asyncio.run(run_one(setup, client, on_step=lambda s: echo(
        "\n".join(step_lines(s, title_of)))))
    echo("\n".join(summary_lines(result, q.answer, q.task)))
    if result.error:
        raise EpisodeFailed(f"the episode ended in an error: {result.error}")


COMMANDS = (try_,)
"""The commands to register on the `lab` group."""
