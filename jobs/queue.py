"""The Huey instance: SqliteHuey on its own file beside lab.db, one task (run a job).

Huey carries only "run job N" messages; the job ledger in lab.db is the record.
"""

from __future__ import annotations

import os
import threading
import time

from huey import SqliteHuey
from huey.api import TaskWrapper

from jobs.settings import WorkerSettings, queue_path
from jobs.tasks import PoolCache, execute_job

TASK_NAME = "run_job"


def make_huey(settings: WorkerSettings) -> tuple[SqliteHuey, TaskWrapper]:
    """Build the Huey instance for a lab.db and register the job task on it.

    Returns:
        (huey, run_job): call `run_job.s(job_id, priority=p)` and `huey.enqueue(...)`
        to queue a job.
    """
    huey = SqliteHuey(name="lab", filename=str(queue_path(settings.db_path)), results=False,
                      utc=True, timeout=60)

    pools: PoolCache = {}  # this worker's foreign-page pools, built once per question set

    def run_job(job_id: int) -> str:
        return execute_job(settings, job_id, pools)

    task = huey.task(name=TASK_NAME)(run_job)
    if settings.worker_type == "process":
        parent = os.getpid()

        @huey.on_startup()
        def _exit_with_parent() -> None:
            # A process-type worker whose consumer was killed would otherwise live on
            # as an orphan; leases make its abandoned job safe to re-run elsewhere.
            threading.Thread(target=_watch_parent, args=(parent,), daemon=True).start()

    return huey, task


def _watch_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(0.5)
    os._exit(1)


def enqueue_job(huey: SqliteHuey, task: TaskWrapper, job_id: int, priority: int = 0) -> None:
    """Put one 'run job N' message on the queue."""
    huey.enqueue(task.s(job_id, priority=priority or None))


def pending_job_ids(huey: SqliteHuey) -> set[int]:
    """Job ids with a message waiting in the queue."""
    return {int(t.args[0]) for t in huey.pending() if t.name.endswith(TASK_NAME) and t.args}
