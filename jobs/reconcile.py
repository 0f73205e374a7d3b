"""Re-enqueue jobs that Huey lost: expired leases and queued jobs with no message."""

from __future__ import annotations

import time
from datetime import datetime

from huey import SqliteHuey
from huey.api import TaskWrapper
from sqlite_utils import Database

from core.store import jobs as ledger
from jobs.queue import enqueue_job, pending_job_ids

GRACE_S = 2.0
"""A queued job younger than this may still be on its way into the queue."""


def reconcile(db: Database, huey: SqliteHuey, task: TaskWrapper) -> list[int]:
    """Make every queued job runnable again; returns the job ids re-enqueued.

    Jobs whose lease expired (their worker died or hung) become queued; queued
    jobs with no pending message (the message was taken by a worker that died, or
    an enqueue was interrupted) get a new one. A duplicate message is harmless: a
    job runs only under its lease and episodes are unique per (cell, question).
    """
    revived = set(ledger.expired(db))
    pending = pending_job_ids(huey)
    now = time.time()
    out = []
    for job in ledger.queued(db):
        age = now - datetime.fromisoformat(job["updated_at"]).timestamp()
        if job["id"] not in pending and (age >= GRACE_S or job["id"] in revived):
            enqueue_job(huey, task, job["id"], job["priority"])
            out.append(job["id"])
    return out
