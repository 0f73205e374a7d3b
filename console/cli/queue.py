"""Queue commands: enqueue, worker, status, cancel/pause/resume/retry, tail."""

from __future__ import annotations

import json
import logging
import shutil
import sys
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

import click
from sqlite_utils import Database

from console.cli.options import IntList, bounded, number, open_db
from console.cli.output import echo
from console.render import imported_summary, step_lines, summary_lines
from core import store
from core.bounds import MAX_BUDGET, MAX_TIMEOUT_S, MAX_WORKERS, Bounds
from core.data import task_for_type
from core.end_reasons import apart_text
from core.errors import ConfigError
from core.models.registry import load_registry
from core.regimes import MEAN6, expand_mean6
from core.store import jobs as ledger
from core.store import monitor
from core.store.base import check_writable
from core.store.endpoints import endpoints_down
from core.store.imports import NO_TEXT, episode_imported
from core.store.questions import title_resolver
from core.wording import plural
from jobs.control import control, enqueue_grid, rate_text, status
from jobs.grid import GridRequest, plan
from jobs.retry import retry
from jobs.settings import WorkerSettings
from jobs.worker import run_worker, tune_collector

LOW_DISK_BYTES = 16 * 1024 * 1024
"""Free space under lab.db below which `lab status` says the disk is full."""


def _split(text: str) -> tuple[str, ...]:
    return tuple(p.strip() for p in text.split(",") if p.strip())


def split_conditions(text: str) -> tuple[str, ...]:
    """Comma-separated conditions; a condition's own knob commas stay inside it
    (`none,enforced_rule:k=7,judge=true` is two conditions)."""
    out: list[str] = []
    for part in _split(text):
        if out and "=" in part and ":" not in part:
            out[-1] += "," + part
        else:
            out.append(part)
    return tuple(out)


def split_regimes(text: str) -> tuple[str, ...]:
    """Regime names from a comma list, ``mean6`` expanded to `core.regimes.MEAN6` (a
    name given twice is left to the grid, which queues it once with a note)."""
    return expand_mean6(_split(text))


def settings_for(ctx: click.Context, **kw: object) -> WorkerSettings:
    """WorkerSettings from the global options plus overrides."""
    return WorkerSettings(db_path=Path(ctx.obj["db"]), config_path=Path(ctx.obj["config"]),
                          **kw)  # type: ignore[arg-type]


@click.command("enqueue")
@click.option("--models", required=True,
              help="Comma-separated model names (a name given twice is queued once).")
@click.option("--conditions", required=True,
              help="Comma-separated conditions with knobs, e.g. none,enforced_rule:k=7,judge=true.")
@click.option("--regimes", required=True,
              help="Comma-separated regimes; mean6 stands for the six of the paper's mean ("
                   + ", ".join(MEAN6) + ").")
@click.option("--set", "question_set", required=True, help="Question set name.")
@click.option("--budget", "--budgets", "budget", type=IntList(1, MAX_BUDGET, "8,16"), default="8",
              show_default=True, help=f"Budget(s), comma-separated, each 1 to {MAX_BUDGET}, "
                                      f"e.g. --budgets 8,16.")
@click.option("--seeds", type=IntList(), default="0", show_default=True,
              help="Seeds, comma-separated.")
@click.option("--replicate", type=bounded(), default=0, show_default=True)
@click.option("--run", "run_name", default="default", show_default=True, help="Run name.")
@click.option("--amendment", default=None, help="Governing pre-registration amendment.")
@click.option("--priority", type=bounded(None), default=0, show_default=True)
@click.option("--dry-run", is_flag=True,
              help="Only print what would be queued (every check of a real enqueue runs).")
@click.option("--json", "as_json", is_flag=True, help="Print the counts as JSON.")
@click.pass_context
def enqueue_cmd(ctx: click.Context, models: str, conditions: str, regimes: str,
                question_set: str, budget: tuple[int, ...], seeds: tuple[int, ...],
                replicate: int, run_name: str,
                amendment: str | None, priority: int, dry_run: bool, as_json: bool) -> None:
    """Queue a grid: models × conditions × regimes × set × budgets × seeds.

    Cells that already exist resume: only their missing episodes are queued.

    \b
    Example:
      lab enqueue --models sim-own5,sim-clock6 --conditions none,enforced_rule \\
          --regimes clean,persistent --set dev100 --seeds 0,1 --run pilot --dry-run
    """
    request = GridRequest(models=_split(models), conditions=split_conditions(conditions),
                          regimes=split_regimes(regimes), question_set=question_set,
                          budgets=budget, seeds=seeds,
                          replicate=replicate, run=run_name, amendment=amendment,
                          priority=priority)
    db = open_db(ctx)
    registry = load_registry(ctx.obj["config"])
    if dry_run:
        summary = plan(db, request, registry).summary()
    else:
        grid_plan, grid_id, njobs = enqueue_grid(db, settings_for(ctx), request, registry)
        summary = grid_plan.summary() | {"grid": grid_id, "jobs": njobs}
    for note in summary["notes"]:
        echo(f"note: {note}", err=True)
    if not dry_run:
        if summary["grid"] is None and not as_json:
            echo(f"nothing to queue: all {summary['already_stored_or_queued']:,} episodes "
                       f"of {plural(summary['cells'], 'cell')} are already stored or queued")
            return
    if as_json:
        echo(json.dumps(summary, indent=2))
        return
    head = "would queue" if dry_run else f"grid {summary['grid']}: queued"
    echo(f"{head} {plural(summary['cells'], 'cell')}, "
               f"{plural(summary['new_episodes'], 'episode')} in "
               f"{plural(summary['jobs'], 'job')} (≤ {summary['max_model_calls']:,} model calls"
               + (f", {summary['sim_episodes']:,} episodes simulated" if summary["sim_episodes"]
                  else "") + f"); {summary['already_stored_or_queued']:,} already stored or queued")
    for model, est in summary["estimate"].items():
        echo(f"  {model}: ≤ {est['calls']:,} calls, ≈ {est['input_tokens']:,.0f} input "
                   f"tokens ({est['cache_read_tokens']:,.0f} cache reads, "
                   f"{est['cache_write_tokens']:,.0f} cache writes), ≈ "
                   f"{est['output_tokens']:,.0f} output tokens, ≈ ${est['dollars']:,.2f}")


@click.command("worker")
@click.option("--workers", type=bounded(1, MAX_WORKERS), default=1, show_default=True,
              help="Huey workers (threads or processes).")
@click.option("--concurrency", type=number(cls=WorkerSettings, key="concurrency"),
              default=None,
              help="At most this many episodes of a model at once in this worker "
                   "[default: the model's concurrency].")
@click.option("--type", "worker_type", type=click.Choice(["thread", "process"]),
              default="thread", show_default=True)
@click.option("--until-idle", is_flag=True, help="Exit when no queued or running job is left.")
@click.option("--lease", type=number(cls=WorkerSettings, key="lease_s", gt=None, ge=1),
              default=60.0, show_default=True,
              help="Job lease in seconds (a dead worker's jobs are retaken after it).")
@click.option("--grace", type=number(cls=WorkerSettings, key="grace_s"), default=5.0,
              show_default=True,
              metavar="SECONDS",
              help="On SIGINT/SIGTERM, how long model calls in flight may still answer; then "
                   "they are cut (episodes stored errored: interrupted) and the worker exits "
                   "within SECONDS + 3 s.")
@click.option("--log-file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Also append the worker's log (start, re-queued jobs, warnings, stop), "
                   "time-stamped, to this file; the console's workers log to "
                   "<lab.db>.logs/worker-N.log.")
@click.pass_context
def worker_cmd(ctx: click.Context, workers: int, concurrency: int | None, worker_type: str,
               until_idle: bool, lease: float, grace: float, log_file: Path | None) -> None:
    """Run jobs from the queue. SIGINT/SIGTERM stop in bounded time (jobs are released).

    After a signal no model call or retry starts; calls in flight get --grace seconds,
    then their episodes are stored errored (interrupted, re-run by the next worker or
    `lab retry --errored`); the worker and its children exit within grace + 3 s.

    \b
    Example:
      lab worker --workers 2 --concurrency 64 --until-idle
    """
    settings = settings_for(ctx, concurrency=concurrency, worker_type=worker_type,
                            lease_s=lease, heartbeat_s=min(1.0, lease / 4), grace_s=grace)
    db = store.connect(settings.db_path)
    check_writable(db, settings.db_path)  # a read-only lab.db: one line, before any banner
    db.conn.close()
    banner = (f"worker {settings.worker_id}: {workers} {worker_type} worker(s) on "
              f"{ctx.obj['db']}")
    if log_file is not None:
        log_to(log_file)
        logging.getLogger("lab.worker").info(
            "%s, concurrency %s", banner, concurrency or "the model's")
    else:
        echo(banner, err=True)
    tune_collector()
    run_worker(settings, workers=workers, until_idle=until_idle)
    logging.getLogger("lab.worker").info("worker %s stopped", settings.worker_id)


def log_to(path: Path) -> None:
    """Append the `lab` loggers' records (INFO and up), time-stamped, to `path`.

    Raises:
        ConfigError: the file cannot be opened for appending.
    """
    try:
        handler = logging.FileHandler(path, encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"--log-file {path}: cannot write it ({exc.strerror})") from None
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logger = logging.getLogger("lab")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)


def _bar(done: int, total: int, width: int = 24) -> str:
    filled = int(width * done / total) if total else width
    return "█" * filled + "░" * (width - filled)


@click.command("status")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def status_cmd(ctx: click.Context, as_json: bool) -> None:
    """Progress per run and grid: episodes stored/errored/running, rate and ETA; a grid of
    `lab replay`/`lab repair` jobs counts its probes (stored/expected/errored, ETA).

    \b
    Example:
      lab status --json
    """
    db = open_db(ctx, create=False)
    grids = status(db)
    now = time.time()
    lease_s = settings_for(ctx).lease_s
    workers = monitor.workers(db, lease_s, now=now)
    live = monitor.live_rows(db, now=now, limit=-1)
    down = endpoints_down(db, now=now, stale_s=lease_s)  # outages the workers wait out
    if as_json:
        states = {w.id: w.state for w in workers}
        echo(json.dumps({"grids": [g.to_dict() for g in grids],
                               "jobs": ledger.job_states(db),
                               "workers": [w | {"state": states.get(w["id"], w["state"])}
                                           for w in ledger.workers(db)],
                               "live": [{"id": r.id, "cell_id": r.cell_id,
                                         "question_id": r.question_id, "worker": r.worker,
                                         "state": r.state, "why": r.why} for r in live],
                               "endpoints_down": [asdict(d) for d in down]},
                              indent=2))
        return
    for d in down:
        echo(d.line())
    low = low_disk(Path(ctx.obj["db"]))
    if low is not None:
        echo(low)
    if not grids:
        echo("nothing queued yet (lab enqueue …)")
        return
    tty = sys.stdout.isatty()
    for g in grids:
        jobs = " ".join(f"{k} {v:,}" for k, v in g.jobs.items() if v)
        if g.stale:
            jobs += f" ({g.stale:,} stale (worker lost?))"
        bar = f"{_bar(g.stored, g.expected, 16)} " if tty else ""
        unit = "episodes" if g.unit == "episodes" else f"{g.kind} {g.unit}"
        rate = rate_text(g.rate, g.active)
        echo(f"grid {g.grid:<3} {g.run:<12} {bar}{g.stored:,}/{g.expected:,} {unit}, "
                   + (f"{rate}, " if rate else "") + g.when)
        running = f"{g.running:,} running; " if g.unit == "episodes" else ""
        apart = apart_text({"truncated": g.truncated, "refused": g.refused})
        rerun = f"{g.rerun:,} queued to run again after an error, " if g.rerun else ""
        echo(f"    {g.errored:,} errored, {rerun}{running}{apart + ', ' if apart else ''}"
                   f"jobs: {jobs or '-'}")
        if g.retry:
            echo(f"    retry errored: {g.retry}")
    lost = [r for r in live if r.state == "lost"]
    if lost:
        whys = sorted({r.why or "" for r in lost})
        echo(f"{plural(len(lost), 'live episode')} of lost workers, not running (removed "
                   f"by the next worker's reconcile): {'; '.join(whys[:3])}"
                   + (f"; … {len(whys) - 3} more" if len(whys) > 3 else ""))
    for w in workers:
        if w.state != "stopped" and w.age_s < 30:
            shown = "lost (process gone)" if w.state == "lost" else w.state
            echo(f"worker {w.id}: {shown}, heartbeat {w.age_s:.0f}s ago")


def low_disk(db_path: Path) -> str | None:
    """A line when the disk under lab.db is (nearly) full: workers pause their jobs then."""
    try:
        free = shutil.disk_usage(db_path.resolve().parent).free
    except OSError:
        return None
    if free >= LOW_DISK_BYTES:
        return None
    return (f"lab.db's disk is full ({free / 1e6:.1f} MB free): workers pause their jobs "
            f"(finished episodes wait in memory) and resume when space is freed")


def _target(action: str, run_name: str | None, grid: int | None,
            job: int | None) -> tuple[str, str | int]:
    given = [(k, v) for k, v in (("run", run_name), ("grid", grid), ("job", job))
             if v is not None]
    if len(given) != 1:
        raise ConfigError(f"lab {action}: give exactly one of --run, --grid, --job")
    return given[0]


def _target_options(action: str) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """--run/--grid/--job (give exactly one) with help text naming the action."""
    options = (
        click.option("--run", "run_name", default=None,
                     help=f"{action.capitalize()} every job of this run (a --run name of "
                          f"lab enqueue)."),
        click.option("--grid", type=bounded(1), default=None,
                     help=f"{action.capitalize()} every job of this grid id (lab status)."),
        click.option("--job", type=bounded(1), default=None,
                     help=f"{action.capitalize()} this one job id (lab status --json)."),
    )

    def apply(command: Callable[..., None]) -> Callable[..., None]:
        for option in reversed(options):
            command = option(command)
        return command

    return apply


def _control_command(action: str) -> click.Command:
    @click.command(action, help=f"{action.capitalize()} the jobs of a run, grid or job "
                   f"(give exactly one of --run, --grid, --job).\n\n"
                   f"\b\nExample:\n  lab {action} --run pilot\n  lab {action} --job 17")
    @_target_options(action)
    @click.pass_context
    def command(ctx: click.Context, run_name: str | None, grid: int | None,
                job: int | None) -> None:
        target, value = _target(action, run_name, grid, job)
        moved = control(open_db(ctx), settings_for(ctx), action, target, value)
        echo(f"{action}: {len(moved)} job(s) of {target} {value}")

    return command


@click.command("retry")
@_target_options("retry")
@click.option("--errored", "errored_only", is_flag=True,
              help="Only the errored episodes, probes and trace states (leave "
                   "failed/cancelled jobs as they are).")
@click.pass_context
def retry_cmd(ctx: click.Context, run_name: str | None, grid: int | None, job: int | None,
              errored_only: bool) -> None:
    """Queue again failed/cancelled jobs and errored episodes (and errored probes of
    `lab replay`/`lab repair` jobs, errored trace states of `lab traces collect` jobs)
    of a run, grid or job.

    An errored episode (refused connection, 5xx after retries, context overflow)
    keeps its record; its question is queued again in a new job of the same grid.
    After a context overflow, raise the model's max_context in lab.toml first: the
    retried cells take it (a deviation is logged when an amendment governs the run).

    \b
    Example:
      lab retry --run pilot --errored
      lab retry --job 17
    """
    target, value = _target("retry", run_name, grid, job)
    result = retry(open_db(ctx), settings_for(ctx), target, value,
                   errored_only=errored_only)
    for note in result.notes:
        echo(f"cell re-specced: {note}")
    for amendment, dev_id, _ in result.deviations:
        echo(f"deviation {dev_id} logged on {amendment} (lab prereg show {amendment})")
    echo(f"retry {target} {value}: " + ", ".join(k.text for k in result.kinds)
               + ("" if errored_only else f", {len(result.reopened)} failed/cancelled job(s) "
                                          f"re-opened"))


CONTROL_COMMANDS = (*(_control_command(a) for a in ("cancel", "pause", "resume")), retry_cmd)


@click.command("tail")
@click.argument("episode", type=bounded(1), required=False)
@click.option("--follow", "-f", is_flag=True, help="Keep following newer live episodes.")
@click.option("--timeout", type=number(Bounds(gt=0, le=MAX_TIMEOUT_S, unit="seconds")),
              default=None, help="Give up after this many seconds.")
@click.pass_context
def tail_cmd(ctx: click.Context, episode: int | None, follow: bool,
             timeout: float | None) -> None:
    """Print the steps of a running episode as they are committed.

    EPISODE is a live episode id (see `lab status --json`); by default the newest
    running one. A finished episode id prints its stored steps. An episode whose
    worker died or stopped is lost: the tail says so in one line and stops (exit 1
    for an EPISODE asked for; --follow moves on to the next running one).

    \b
    Example:
      lab tail --follow
    """
    db = open_db(ctx, create=False)
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        live_id = episode if episode is not None else monitor.newest_running(db)
        if live_id is None:
            if not follow or (deadline and time.monotonic() > deadline):
                raise ConfigError("no running episode to tail (use --follow to wait for one)")
            time.sleep(0.2)
            continue
        info = ledger.live_info(db, live_id)
        if info is None and episode is not None:
            _print_finished(db, episode)
            return
        if info is not None:
            ended = _tail_one(db, live_id, info, deadline)
            if ended == "lost" and episode is not None:
                ctx.exit(1)  # the episode asked for will never finish
            if ended == "timeout":
                return
        if not follow or episode is not None:
            return


def _tail_one(db: Database, live_id: int, info: dict[str, Any], deadline: float | None) -> str:
    """Print a live episode's steps until it ends; returns "stored", "ended", "lost" or
    "timeout". A dead or stopped worker's episode ends the tail at once with one line."""
    echo(f"live episode {live_id}: {info['label']} · question {info['question_id']}")
    title_of = title_resolver(db)
    seen = 0
    while True:
        for step in store.live_steps(db, live_id, after_t=seen):
            echo("\n".join(step_lines(step, title_of)))
            seen = step.t
        now = ledger.live_info(db, live_id)
        rows = monitor.live_rows(db, live_id=live_id) if _same_live(now, info) else []
        if rows and rows[0].state == "lost":
            echo(f"live episode {live_id} is lost: {rows[0].why}; it was not stored "
                       f"(its job runs the question again)")
            return "lost"
        if not rows:  # stored, or ended without a record
            row = ledger.finished_episode(db, info["cell_id"], info["question_id"])
            if row is not None:
                _print_finished(db, row, header=False, after_t=seen)
                return "stored"
            echo(f"live episode {live_id} ended without being stored")
            return "ended"
        if deadline and time.monotonic() > deadline:
            return "timeout"
        time.sleep(0.1)


def _same_live(now: dict | None, then: dict) -> bool:
    """The live row is still the episode first shown (ids are reused once rows go)."""
    return (now is not None and now["cell_id"] == then["cell_id"]
            and now["question_id"] == then["question_id"])


def _print_finished(db: Database, episode_id: int, header: bool = True, after_t: int = 0) -> None:
    from core.episode import EpisodeResult

    row = ledger.episode_row(db, episode_id)
    if row is None:
        raise ConfigError(f"no episode {episode_id} (live or finished)")
    if header:
        echo(f"episode {episode_id}: {row['model']} / {row['condition']} / {row['regime']}"
                   f" · question {row['question_id']}")
    imported = episode_imported(db, episode_id)
    if header and imported:
        echo(f"{NO_TEXT}: its actions, judgments and success only")
    title_of = title_resolver(db)
    for step in store.episode_steps(db, episode_id):
        if step.t > after_t:
            echo("\n".join(step_lines(step, title_of, imported=imported)))
    fields = {k: row[k] for k in ("answered", "answer", "answer_action", "correct", "f1",
                                  "placeholder", "tool_calls", "extra_calls", "forced_turns",
                                  "refused_calls", "format_failures", "input_tokens",
                                  "output_tokens", "reasoning_tokens", "end_reason", "error")}
    result = EpisodeResult(question_id=row["question_id"], **fields)
    echo("\n".join(imported_summary(result) if imported else
                          summary_lines(result, row["gold"],
                                        task_for_type(row["question_type"] or ""))))


COMMANDS = (enqueue_cmd, worker_cmd, status_cmd, tail_cmd, *CONTROL_COMMANDS)
"""The commands to register on the `lab` group."""
