"""The Jobs tree's jobs as a table: the orders `s` steps through and the cells `C` and `T`
copy (console/widgets/table_ops.py writes them as tab-separated text).

A tree has no columns to put a cursor on, so `s` steps through the job row's fields
instead (job id, state, complete, errored, seed, cell) and sorts every opened grid's jobs
by it; the runs and grids stay in their order. Plain data: what a job has done
(complete, errored, last error) comes from the screen, which reads it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from core.store.progress import JobRow

Progress = Callable[[JobRow], tuple[int, int, str | None]]
"""A job's (complete, errored, last error line), as the Jobs screen shows them."""

JOB_HEADER = ("job", "state", "complete", "expected", "errored", "seed", "model", "arm",
              "regime", "budget", "attempts", "last error")
"""The columns `T` copies (and `C` a job's row of)."""

JOB_SORTS = ("job", "state", "complete", "errored", "seed", "cell")
"""The orders `s` steps through, the first being the ledger's (job id)."""

SORT_WORDS = {
    "job": "job id (the ledger's order)",
    "state": "state (running, failed, queued, paused, cancelled, done)",
    "complete": "share complete, least first",
    "errored": "errored, most first",
    "seed": "seed",
    "cell": "cell (model, arm, regime, budget)",
}
"""What the notice says each order is."""

_STATE_RANK = {"running": 0, "failed": 1, "queued": 2, "paused": 3, "cancelled": 4, "done": 5}


def next_job_sort(now: str) -> str:
    """The order after `now` (the last goes back to the ledger's)."""
    return JOB_SORTS[(JOB_SORTS.index(now) + 1) % len(JOB_SORTS)]


def sort_jobs(jobs: Sequence[JobRow], key: str, progress: Progress) -> list[JobRow]:
    """`jobs` in the order `key` names (stable; ties keep the ledger's order).

    Args:
        jobs: one grid's jobs, in the ledger's order.
        key: one of JOB_SORTS.
        progress: a job's (complete, errored, last error).

    Returns:
        The jobs sorted.
    """
    if key == "state":
        return sorted(jobs, key=lambda j: _STATE_RANK.get(j.state, len(_STATE_RANK)))
    if key == "complete":
        return sorted(jobs, key=lambda j: progress(j)[0] / j.expected if j.expected else 1.0)
    if key == "errored":
        return sorted(jobs, key=lambda j: -progress(j)[1])
    if key == "seed":
        return sorted(jobs, key=lambda j: j.seed)
    if key == "cell":
        return sorted(jobs, key=lambda j: (j.model, j.arm, j.regime, j.budget))
    return sorted(jobs, key=lambda j: j.id)


def job_cells(job: JobRow, progress: Progress) -> list[str]:
    """One job's cells under JOB_HEADER."""
    done, errored, last = progress(job)
    return [str(job.id), job.state, str(done), str(job.expected), str(errored),
            str(job.seed), job.model, job.arm, job.regime, str(job.budget),
            str(job.attempts), last or ""]
