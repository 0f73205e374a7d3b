"""`lab traces collect`: the second seed's depth-wise answer states as queue work
(docs/traces.md).

Thin command: validate, store the evidence plans, plan the missing states (calls,
tokens, dollars), then store trace jobs in the ledger and put them on the queue;
`lab worker` runs them like episodes.
"""

from __future__ import annotations

import json

import click

from console.cli.options import bounded, number, open_db
from console.cli.output import echo
from core.bounds import Bounds
from core.models.registry import load_registry
from core.plans import DEFAULT_SIMILARITY, SIMILARITIES
from core.scoring import DEFAULT_THRESHOLD
from core.traces import EMPTY_SLICE, EMPTY_SLICES
from core.wording import plural
from jobs.kinds.traces import TracePlan, TraceRequest, plan_traces


@click.group()
def traces() -> None:
    """The second seed's protocol: fixed evidence plans and answer states at depths 0-3.

    \b
    Example:
      lab traces collect --set musique-dev --models qwen3-8b --dry-run
    """


@traces.command("collect")
@click.option("--set", "question_set", required=True, help="Question set to ask.")
@click.option("--models", required=True, help="Comma-separated answering models.")
@click.option("--run", "run_name", default=None,
              help="Run to store the states under (default: traces-SET).")
@click.option("--judge", default=None,
              help="A registry model that also labels each parsed answer (the seed's judge "
                   "prompt); its label is stored beside the dataset scorer's.")
@click.option("--similarity", type=click.Choice(SIMILARITIES), default=DEFAULT_SIMILARITY,
              show_default=True, help="Lexical similarity that ranks the distractors.")
@click.option("--threshold", type=number(Bounds(ge=0, le=1)), default=DEFAULT_THRESHOLD,
              show_default=True,
              help="F1 at or above which a HotpotQA/MuSiQue answer is correct.")
@click.option("--empty-slice", type=click.Choice(EMPTY_SLICES), default=EMPTY_SLICE,
              show_default=True,
              help="A depth whose evidence slice is empty (a plan of under three passages): "
                   "copy the state before it without a call (the seed, App. B) or ask it "
                   "again.")
@click.option("--priority", type=bounded(None), default=0, show_default=True)
@click.option("--dry-run", is_flag=True, help="Print questions, calls and tokens only.")
@click.option("--json", "as_json", is_flag=True, help="Print the plan as JSON.")
@click.pass_context
def collect(ctx: click.Context, question_set: str, models: str, run_name: str | None,
            judge: str | None, similarity: str, threshold: float, empty_slice: str,
            priority: int, dry_run: bool, as_json: bool) -> None:
    """Ask each model every question of --set at depths 0-3 for {"answer", "confidence"}.

    Each question's fixed evidence plan (supporting passages interleaved with ranked
    distractors, cut into three slices) is made once and stored; depth t shows
    slices 1..t. States are stored in the `traces` table, one per (run, model,
    question, depth); a reply that is not the required JSON is stored as missing
    (parsed 0). A depth whose slice is empty copies the state before it (stored with
    copied_from, no call) unless --empty-slice ask. Only missing (or errored) states
    are asked: running it again queues nothing new. Run the jobs with `lab worker
    --until-idle`.

    \b
    Example:
      lab traces collect --set musique-dev --models qwen3-8b,llama-8b --dry-run
      lab traces collect --set hotpot-dev --models qwen3-8b --judge qwen3-32b
    """
    from console.cli.queue import settings_for
    from jobs.control import enqueue_request

    names = tuple(m.strip() for m in models.split(",") if m.strip())
    request = TraceRequest(question_set, names, run_name, judge, similarity, threshold, priority,
                           empty_slice)
    db = open_db(ctx)
    registry = load_registry(ctx.obj["config"])
    jobs: list[int] = []
    grid_id = None
    if dry_run:
        plan, _ = plan_traces(db, request, registry)
    else:
        plan, grid_id, jobs = enqueue_request(
            db, settings_for(ctx), "traces", request, registry, priority, "traces",
            lambda plan, n: (f"run {request.run_name}: {plural(n, 'trace job')}, "
                             f"{plural(plan.calls, 'call')}"))
    if as_json:
        echo(json.dumps(plan.summary() | {"grid": grid_id, "jobs": len(jobs),
                                                "dry_run": dry_run}, indent=2))
        return
    echo(plan_text(plan, grid_id, len(jobs), dry_run))


def plan_text(plan: TracePlan, grid_id: int | None, jobs: int, dry_run: bool) -> str:
    """What a collect (or its dry run) says it does."""
    s = plan.summary()
    shape = (f"{plural(s['questions'], 'question')} × {plural(s['models'], 'model')} × "
             f"{s['depths']} depths = {s['states']:,} states")
    if plan.calls + plan.copies == 0:
        return (f"nothing to queue for run {s['run']}: {shape}, all already stored "
                f"({s['already_stored']:,}) or queued")
    head = "would ask" if dry_run else f"grid {grid_id}: queued {plural(jobs, 'job')} to ask"
    lines = [f"{head} {plan.calls:,} states of run {s['run']} ({shape}; "
             f"{s['already_stored']:,} already stored; evidence plans: "
             f"{s['new_plans']:,} {'to make' if dry_run else 'made'}, {s['similarity']})"]
    if plan.copies:
        lines.append(f"  {plan.copies:,} states copied from the depth before (an empty "
                     f"evidence slice; no call)")
    for model, est in s["per_model"].items():
        lines.append(f"  {model}: {est['calls']:,} calls, ≈ {est['input_tokens']:,} input "
                     f"tokens, ≈ {est['output_tokens']:,} output tokens, ≈ "
                     f"${est['dollars']:,.2f}")
    if plan.request.judge:
        lines.append(f"  judge {plan.request.judge}: up to {s['max_judge_calls']:,} calls "
                     f"(one per parsed answer, retried when unparseable)")
    if not dry_run:
        lines.append("run them with `lab worker --until-idle`")
    return "\n".join(lines)


COMMANDS = (traces,)
"""The commands to register on the `lab` group."""
