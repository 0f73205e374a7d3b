"""The Huey instance: SqliteHuey on its own file beside lab.db, one task (run a job).

Huey carries only "run job N" messages; the job ledger in lab.db is the record.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from huey import SqliteHuey
from huey.api import TaskWrapper

from jobs.settings import WorkerSettings, queue_path
from jobs.tasks import PoolCache, execute_job

if TYPE_CHECKING:
    from jobs.engine import Engine

TASK_NAME = "run_job"


def make_huey(settings: WorkerSettings,
              engine: Engine | None = None) -> tuple[SqliteHuey, TaskWrapper]:
    """Build the Huey instance for a lab.db and register the job task on it.

    Args:
        settings: lab.db, registry and worker identity.
        engine: a worker's episode engine (`lab worker`): tasks hand their jobs to it
            and return once the jobs' questions have started. Enqueueing needs none.

    Returns:
        (huey, run_job): call `run_job.s(job_id, priority=p)` and `huey.enqueue(...)`
        to queue a job.
    """
    huey = SqliteHuey(name="lab", filename=str(queue_path(settings.db_path)), results=False,
                      utc=True, timeout=60)

    pools: PoolCache = {} if engine is None else engine.pools  # built once per question set

    def run_job(job_id: int) -> str:
        return execute_job(settings, job_id, pools, engine)

    task = huey.task(name=TASK_NAME)(run_job)
    return huey, task


def enqueue_job(huey: SqliteHuey, task: TaskWrapper, job_id: int, priority: int = 0) -> None:
    """Put one 'run job N' message on the queue."""
    huey.enqueue(task.s(job_id, priority=priority or None))


def put_on_queue(settings: WorkerSettings, jobs: Iterable[tuple[int, int]]) -> None:
    """Put stored jobs on the queue: one 'run job N' message per (job id, priority)."""
    huey, task = make_huey(settings)
    for job_id, priority in jobs:
        enqueue_job(huey, task, job_id, priority)


def pending_job_ids(huey: SqliteHuey) -> set[int]:
    """Job ids with a message waiting in the queue."""
    return {int(t.args[0]) for t in huey.pending() if t.name.endswith(TASK_NAME) and t.args}
