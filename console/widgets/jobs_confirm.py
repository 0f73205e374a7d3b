"""What a Jobs action (pause, resume, cancel, retry, retry errored) would change, in words.

Pure text from the Jobs screen's last read (`GridStatus` per grid, `JobRow` per
job): the confirmation names the action, its target (run / grid / job) and how many
jobs and episodes it moves, before `y`. The ledger decides at `y`; the toast after
it says what really moved (a worker may have finished a job in between).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from core.store.progress import JobRow
from core.wording import plural
from jobs.control import GridStatus


@dataclass(frozen=True)
class ActPrompt:
    """A confirmation's text; `empty`: nothing would change (say `question`, ask nothing)."""

    question: str
    detail: str
    yes: str
    empty: bool = False


def _states(counts: Counter[str], states: Sequence[str]) -> str:
    return ", ".join(f"{counts[s]:,} {s}" for s in states)


def act_prompt(action: str, kind: str, value: int | str, grids: Sequence[GridStatus],
               job: JobRow | None = None) -> ActPrompt:
    """The confirmation of `action` on run/grid/job `value`.

    Args:
        action: pause, resume, cancel, retry or retry_errored.
        kind: "run", "grid" or "job".
        value: the run's name or the grid's / job's id.
        grids: the target's grids as last read (for a job: its grid).
        job: the job, for kind "job".

    Returns:
        The question (action and target), the detail (jobs and episodes moved), the
        `y` label; `empty` when nothing would change.
    """
    if kind == "job" and job is not None:
        grid = grids[0].grid if grids else "?"
        target = (f"job {value} of grid {grid} ({job.model} · "
                  f"{job.arm} · {job.regime} · seed {job.seed})")
        states: Counter[str] = Counter({job.state: 1})
        expected, left, errored = job.expected, job.expected - job.stored, job.errored
        unit = job.unit.capitalize()  # "Probes" for a replay/repair job
    else:
        if kind == "run":
            target = f"run {value} ({plural(len(grids), 'grid')})"
        else:
            target = f"grid {value}" + (f" of run {grids[0].run}" if grids else "")
        states = Counter()
        unit = "Episodes"
        for g in grids:
            states.update(g.jobs)
        expected = sum(g.expected for g in grids)
        left = sum(g.expected - g.stored for g in grids)
        errored = sum(g.errored for g in grids)
    not_stored = f"{unit}: {left:,} of {expected:,} not stored yet"
    if action == "pause":
        moving = states["queued"] + states["running"]
        detail = (f"Jobs paused: {moving:,} ({_states(states, ('queued', 'running'))}; running "
                  f"ones stop at their next heartbeat)\n"
                  f"{not_stored}; they wait until u resumes them")
        return ActPrompt(f"Pause {target}?", detail, f"pause {plural(moving, 'job')}", moving == 0)
    if action == "resume":
        moving = states["paused"]
        detail = (f"Jobs queued again: {moving:,} (paused)\n"
                  f"{not_stored}")
        return ActPrompt(f"Resume {target}?", detail, f"resume {plural(moving, 'job')}",
                         moving == 0)
    if action == "cancel":
        moving = states["queued"] + states["running"] + states["paused"]
        detail = (f"Jobs cancelled: {moving:,} "
                  f"({_states(states, ('queued', 'running', 'paused'))}; running ones stop at "
                  f"their next heartbeat, stored episodes stay)\n"
                  f"{not_stored}; they will not run (t retries them later)")
        return ActPrompt(f"Cancel {target}?", detail, f"cancel {plural(moving, 'job')}",
                         moving == 0)
    if action == "retry":
        moving = states["failed"] + states["cancelled"]
        detail = (f"Jobs queued again: {moving:,} ({_states(states, ('failed', 'cancelled'))})\n"
                  f"Errored episodes re-run as new jobs: {errored:,}\n"
                  f"{not_stored}")
        return ActPrompt(f"Retry {target}?", detail,
                         f"retry {plural(moving, 'job')} + {plural(errored, 'errored episode')}",
                         moving == 0 and errored == 0)
    detail = (f"Errored episodes re-run as new jobs: {errored:,}\n"
              f"Failed and cancelled jobs stay as they are (t retries those)")
    return ActPrompt(f"Re-run the errored episodes of {target}?", detail,
                     f"re-run {plural(errored, 'episode')}", errored == 0)


def nothing_text(action: str, prompt: ActPrompt) -> str:
    """The notice shown instead of a confirmation when nothing would change."""
    what = {"retry_errored": "no errored episodes"}.get(action, f"no job to {action}")
    return f"{prompt.question.rstrip('?')}: {what} (as last read; r re-reads)"
