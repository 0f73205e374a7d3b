"""Settings a worker process passes to the tasks it runs (never a module global)."""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass, field
from pathlib import Path

from core.bounds import MAX_CONCURRENCY, MAX_RETRIES, MAX_TIMEOUT_S
from core.models.declared import check_fields, setting

MAX_GRACE_S = 600.0
"""Longest `--grace` a worker takes: a stop must end in bounded time, and a call that has
not answered in ten minutes will not."""
STOP_MARGIN_S = 3.0
"""After its grace, how long a stopping worker process (parent or child) may take to
store and release what it holds before it exits regardless (`os._exit`)."""


WORKER_TYPES = ("thread", "process")
"""How a worker's Huey consumer runs its workers."""
_SECONDS = {"le": MAX_TIMEOUT_S, "unit": "seconds"}


def default_worker_id() -> str:
    """host:pid of this process."""
    return f"{socket.gethostname()}:{os.getpid()}"


def queue_path(db_path: Path) -> Path:
    """The Huey queue file beside lab.db: lab.db → lab.queue.db."""
    return db_path.with_name(db_path.stem + ".queue" + (db_path.suffix or ".db"))


@dataclass(frozen=True)
class WorkerSettings:
    """How a worker runs jobs; every number is checked when it is built (`core.bounds`:
    finite, within its declared range), and `lab worker`'s options take the same bounds.

    Attributes:
        db_path: lab.db.
        config_path: the model registry (lab.toml); missing means built-in sims only.
        concurrency: a further bound on the episodes of one model this worker process
            runs at once, across its jobs; None (the default): the model's own
            `concurrency` alone, so a model with a large batch is never held below it.
        lease_s: job lease; a job whose lease is not renewed for this long is
            re-enqueued by any worker.
        heartbeat_s: how often a running job renews its lease and checks for
            cancel/pause/stop.
        reconcile_s: how often the worker re-enqueues expired or lost jobs.
        max_attempts: a job that raised this many times is marked failed.
        worker_id: name of this worker (host:pid).
        worker_type: "thread" or "process".
        grace_s: on SIGTERM/SIGINT, how long model calls in flight may still answer
            before they are cut (their episodes stored errored, "interrupted"); the
            worker process and its children exit within grace_s + 3 s.
    """

    db_path: Path
    config_path: Path | None = None
    concurrency: int | None = setting(None, ge=1, le=MAX_CONCURRENCY)
    lease_s: float = setting(60.0, gt=0, **_SECONDS)
    heartbeat_s: float = setting(1.0, gt=0, **_SECONDS)
    reconcile_s: float = setting(2.0, gt=0, **_SECONDS)
    max_attempts: int = setting(3, ge=1, le=MAX_RETRIES)
    worker_id: str = field(default_factory=default_worker_id)
    worker_type: str = setting("thread", choices=WORKER_TYPES)
    grace_s: float = setting(5.0, ge=0, le=MAX_GRACE_S, unit="seconds")

    def __post_init__(self) -> None:
        check_fields(self)
