"""Re-enqueue jobs that Huey lost: dead workers' jobs, expired leases, lost messages."""

from __future__ import annotations

import logging
import os
import socket
import time
from datetime import datetime

from huey import SqliteHuey
from huey.api import TaskWrapper
from sqlite_utils import Database

from core.store import jobs as ledger
from jobs.queue import enqueue_job, pending_job_ids

GRACE_S = 2.0
"""A queued job younger than this may still be on its way into the queue."""

log = logging.getLogger("lab.worker")


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid runs on this host (a zombie counts as dead)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive
        return True
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rpartition(b")")[2].split()[0] != b"Z"
    except (OSError, IndexError):
        return True  # no /proc (not Linux): trust kill(pid, 0)


def dead_workers(workers: set[str], host: str | None = None) -> list[str]:
    """Worker ids ("host:pid") of this host whose process no longer exists.

    A worker on another host, or with an id that is not host:pid, is never judged
    dead here: its jobs wait for their lease to expire.
    """
    host = socket.gethostname() if host is None else host
    out = []
    for worker in sorted(workers):
        name, _, pid = worker.rpartition(":")
        if name == host and pid.isdigit() and int(pid) != os.getpid() and not pid_alive(int(pid)):
            out.append(worker)
    return out


def recover_dead(db: Database) -> list[int]:
    """Queue again, at once, the running jobs of this host's workers that died."""
    out = []
    for worker in dead_workers(ledger.running_workers(db)):
        ids = ledger.release_worker_jobs(db, worker, f"worker {worker} died; job recovered")
        if ids:
            log.warning("worker %s is dead: re-queued its jobs %s", worker, ids)
            ledger.log_event(db, "recover", f"worker {worker} died: jobs {ids} re-queued")
        out += ids
    return out


def reconcile(db: Database, huey: SqliteHuey, task: TaskWrapper) -> list[int]:
    """Make every queued job runnable again; returns the job ids re-enqueued.

    Jobs of a worker on this host whose process is gone become queued at once,
    jobs whose lease expired (their worker died elsewhere or hung) too; queued
    jobs with no pending message (the message was taken by a worker that died, or
    an enqueue was interrupted) get a new one. A duplicate message is harmless: a
    job runs only under its lease and episodes are unique per (cell, question).
    """
    revived = set(recover_dead(db)) | set(ledger.expired(db))
    pending = pending_job_ids(huey)
    now = time.time()
    out = []
    for job in ledger.queued(db):
        age = now - datetime.fromisoformat(job["updated_at"]).timestamp()
        if job["id"] not in pending and (age >= GRACE_S or job["id"] in revived):
            enqueue_job(huey, task, job["id"], job["priority"])
            out.append(job["id"])
    return out
