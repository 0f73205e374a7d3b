"""`lab replay judgments|beliefs|answer-now` and `lab repair` (docs/replay.md).

Thin commands: plan the missing probes (calls, tokens, dollars), then store replay
jobs in the ledger and put them on the queue; `lab worker` runs them like episodes.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import click

from console.cli.options import bounded, open_db
from console.cli.output import echo
from core.models.registry import load_registry
from core.probes import COMMANDS as PROBE_COMMANDS
from core.wording import plural
from jobs.kinds.replay import ReplayPlan, ReplayRequest, plan_replay, request_from

KIND_WORDS = {"judgment": "judgments", "belief": "belief probes",
              "answer_now": "answer-now branches", "repair": "answer repairs",
              "answer_now_confidence": "answer-now branches asking for a confidence"}


def _models(text: str | None) -> tuple[str, ...]:
    return tuple(m.strip() for m in (text or "").split(",") if m.strip())


def _run_request(ctx: click.Context, request: ReplayRequest, dry_run: bool,
                 as_json: bool) -> None:
    from console.cli.queue import settings_for
    from jobs.control import enqueue_request

    db = open_db(ctx)
    registry = load_registry(ctx.obj["config"])
    if dry_run:
        jobs: list[int] = []
        plan, grid_id = plan_replay(db, request, registry), None
    else:
        plan, grid_id, jobs = enqueue_request(
            db, settings_for(ctx), "replay", request, registry, request.priority, "replay",
            lambda plan, n: (f"run {request.run}: {plural(n, request.kind + ' job')}, "
                             f"{plural(plan.calls, 'call')}"))
    summary = plan.summary() | {"grid": grid_id, "jobs": len(jobs), "dry_run": dry_run}
    if as_json:
        echo(json.dumps(summary, indent=2))
        return
    echo(_plan_text(plan, grid_id, len(jobs), dry_run))


def _plan_text(plan: ReplayPlan, grid_id: int | None, jobs: int, dry_run: bool) -> str:
    what = KIND_WORDS[plan.request.kind]
    at = "" if plan.request.kind == "repair" else f" at {plan.request.at.text}"
    run = plan.request.run
    if plan.request.kind == "judgment" and not plan.request.refresh:
        recorded = f"recorded in-run by the side channel ({plan.recorded:,}; --refresh asks " \
                   f"them again), "
        kept = f"{plan.recorded:,} recorded in-run by the side channel: not asked again, " \
               f"--refresh asks them; "
    else:
        recorded = kept = ""
    if plan.calls == 0:
        return (f"nothing to queue for run {run}: its {what}{at} are {recorded}already "
                f"stored ({plan.stored:,}) or queued")
    head = "would queue" if dry_run else f"grid {grid_id}: queued {plural(jobs, 'job')},"
    lines = [f"{head} {plan.calls:,} {what}{at} on {plan.episodes:,} episodes of run "
             f"{run} ({kept}{plan.stored:,} already stored)"]
    for model, est in plan.summary()["per_model"].items():
        lines.append(f"  {model}: {est['calls']:,} calls, ≈ {est['input_tokens']:,.0f} input "
                     f"tokens, ≈ {est['output_tokens']:,.0f} output tokens, ≈ "
                     f"${est['dollars']:,.2f}"
                     + (" (Claude at batch price)" if plan.request.batch else ""))
    if not dry_run:
        lines.append("run them with `lab worker --until-idle`")
    return "\n".join(lines)


def _common(command: Callable[..., None]) -> Callable[..., None]:
    """The options every probe command shares."""
    options = (
        click.option("--run", "run_name", required=True, help="Run whose trajectories to probe."),
        click.option("--models", default=None,
                     help="Comma-separated models whose episodes to probe (default: all)."),
        click.option("--dry-run", is_flag=True, help="Print calls, tokens and dollars only."),
        click.option("--json", "as_json", is_flag=True, help="Print the plan as JSON."),
        click.option("--priority", type=bounded(None), default=0, show_default=True),
        click.option("--batch", is_flag=True,
                     help="Claude models: send the probes through the Message Batches API "
                          "(half price; results arrive within 24 h, stored as each batch "
                          "ends). Other backends are called as usual."),
    )
    for option in reversed(options):
        command = option(command)
    return command


@click.command("replay")
@click.argument("what", type=click.Choice(list(PROBE_COMMANDS)))
@_common
@click.option("--at", "at", default="every", show_default=True,
              help="Decision points: every, first-useless-5 (the first point where the "
                   "agent's judgments reach five USELESS in a row) or t=3,5.")
@click.option("--refresh", is_flag=True,
              help="Judgments only: ask also where the episode recorded its own judgment "
                   "in-run (judge = true, rule arms, sims); a replayed judgment already "
                   "stored is still never asked twice.")
@click.option("--confidence", is_flag=True,
              help="Answer-now only: append a request for a verbalized confidence "
                   "(0-100) to the branch, which `lab results controllers` reads. Off by "
                   "default (the main paper's branch has none); these branches are stored "
                   "apart from the plain ones and never pool with them.")
@click.pass_context
def replay_cmd(ctx: click.Context, what: str, run_name: str, models: str | None,
               dry_run: bool, as_json: bool, priority: int, batch: bool, at: str,
               refresh: bool, confidence: bool) -> None:
    """Probe recorded trajectories: side-channel judgments, beliefs or answer-now branches.

    Forks the history exactly as the agent saw it at each chosen decision point, asks
    one question and stores the reply in the `probes` table (source = replay);
    nothing is written back into the trajectory. Probes run as queue jobs (`lab
    worker`); already stored probes are never asked again, and judgments are asked
    only where the episode recorded none in-run (--refresh: there too). The
    answer-now branch is the main paper's; --confidence asks it with a confidence
    request for the confidence-gated controllers (stored as its own probe kind).

    \b
    Example:
      lab replay judgments --run pilot --dry-run
      lab replay judgments --run pilot --refresh --dry-run
      lab replay answer-now --run pilot --models qwen3-8b --at every
      lab replay answer-now --run pilot --confidence
      lab replay beliefs --run pilot --at t=3,5
      lab replay answer-now --run pilot --models claude-sonnet --batch
    """
    request = request_from(what, run_name, at, _models(models), batch, priority, refresh,
                           confidence)
    _run_request(ctx, request, dry_run, as_json)


@click.command("repair")
@_common
@click.pass_context
def repair_cmd(ctx: click.Context, run_name: str, models: str | None, dry_run: bool,
               as_json: bool, priority: int, batch: bool) -> None:
    """Repair placeholder answers (docs/replay.md): one fixed follow-up, one attempt.

    For every answered episode whose answer is a placeholder ("answer", "your best
    guess", empty, …), rebuilds the conversation with its finish turn, appends one
    message asking for the actual answer, and stores the reply beside the raw answer.
    Raw results stay primary; `lab results … --repaired` uses the repaired ones.

    \b
    Example:
      lab repair --run pilot --dry-run
      lab repair --run pilot && lab worker --until-idle && lab results success --repaired
    """
    request = request_from("repair", run_name, "every", _models(models), batch, priority)
    _run_request(ctx, request, dry_run, as_json)


COMMANDS = (replay_cmd, repair_cmd)
"""The commands to register on the `lab` group."""
