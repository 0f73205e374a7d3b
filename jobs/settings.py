"""Settings a worker process passes to the tasks it runs (never a module global)."""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass, field
from pathlib import Path

from core.errors import ConfigError

MAX_GRACE_S = 600.0
"""Longest `--grace` a worker takes: a stop must end in bounded time, and a call that has
not answered in ten minutes will not."""
STOP_MARGIN_S = 3.0
"""After its grace, how long a stopping worker process (parent or child) may take to
store and release what it holds before it exits regardless (`os._exit`)."""


def default_worker_id() -> str:
    """host:pid of this process."""
    return f"{socket.gethostname()}:{os.getpid()}"


def queue_path(db_path: Path) -> Path:
    """The Huey queue file beside lab.db: lab.db → lab.queue.db."""
    return db_path.with_name(db_path.stem + ".queue" + (db_path.suffix or ".db"))


@dataclass(frozen=True)
class WorkerSettings:
    """How a worker runs jobs.

    Attributes:
        db_path: lab.db.
        config_path: the model registry (lab.toml); missing means built-in sims only.
        concurrency: upper bound on concurrent episodes inside one job (the model's
            own concurrency also applies).
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
    concurrency: int = 256
    lease_s: float = 60.0
    heartbeat_s: float = 1.0
    reconcile_s: float = 2.0
    max_attempts: int = 3
    worker_id: str = field(default_factory=default_worker_id)
    worker_type: str = "thread"
    grace_s: float = 5.0

    def __post_init__(self) -> None:
        if not 0 <= self.grace_s <= MAX_GRACE_S:  # nan fails too: a stop must be bounded
            raise ConfigError(f"grace must be 0 to {MAX_GRACE_S:g} seconds, not "
                              f"{self.grace_s}")
