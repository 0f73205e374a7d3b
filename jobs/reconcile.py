"""Re-enqueue jobs that Huey lost (dead workers' jobs, expired leases, lost messages) and
remove the live rows of episodes that no longer run (docs/queue.md)."""

from __future__ import annotations

import logging
import time
from datetime import datetime

from huey import SqliteHuey
from huey.api import TaskWrapper
from sqlite_utils import Database

from core.store import jobs as ledger
from core.store.episodes import remove_stale_live
from core.store.monitor import pid_alive, process_gone
from jobs.queue import enqueue_job, pending_job_ids

GRACE_S = 2.0
"""A queued job younger than this may still be on its way into the queue."""

log = logging.getLogger("lab.worker")


def dead_workers(workers: set[str], host: str | None = None) -> list[str]:
    """Worker ids ("host:pid") of this host whose process no longer exists.

    A worker on another host, or with an id that is not host:pid, is never judged
    dead here: its jobs wait for their lease to expire.
    """
    return [w for w in sorted(workers) if process_gone(w, host, pid_alive)]


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


def reconcile_live(db: Database, now: float | None = None) -> dict[int, str]:
    """Remove leftover live rows: a dead, stopped or lease-less worker's, or a stored episode's.

    Returns:
        The removed rows: live id → why.
    """
    removed = remove_stale_live(db, now=now)
    if removed:
        log.info("removed %d leftover live row(s): %s", len(removed),
                 "; ".join(sorted(set(removed.values()))))
    return removed


def reconcile(db: Database, huey: SqliteHuey, task: TaskWrapper) -> list[int]:
    """Make every queued job runnable again; returns the job ids re-enqueued.

    Jobs of a worker on this host whose process is gone become queued at once,
    jobs whose lease expired (their worker died elsewhere or hung) too; queued
    jobs with no pending message (the message was taken by a worker that died, or
    an enqueue was interrupted) get a new one. Then the live rows of episodes that
    no longer run go (`reconcile_live`). A duplicate message is harmless: a
    job runs only under its lease and episodes are unique per (cell, question).
    """
    revived = set(recover_dead(db)) | set(ledger.expired(db))
    reconcile_live(db)
    return send_missing(db, huey, task, GRACE_S, revived)


def send_missing(db: Database, huey: SqliteHuey, task: TaskWrapper, grace_s: float,
                 revived: set[int] | frozenset[int] = frozenset()) -> list[int]:
    """Send a message for each queued job that has none and is at least `grace_s` old
    (or in `revived`); returns their ids.

    A worker's reconcile waits `GRACE_S`: a job stored a moment ago may be on its way
    into the queue. A stopping worker sends at once (grace 0) for the jobs it and its
    threads put back: their messages were taken, and the next worker would otherwise
    wait for its reconcile to see them old enough."""
    pending = pending_job_ids(huey)
    now = time.time()
    out = []
    for job in ledger.queued(db):
        age = now - datetime.fromisoformat(job["updated_at"]).timestamp()
        if job["id"] not in pending and (age >= grace_s or job["id"] in revived):
            enqueue_job(huey, task, job["id"], job["priority"])
            out.append(job["id"])
    return out
