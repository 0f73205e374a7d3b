"""lab.db migration 0017: endpoints a worker found down (the `endpoint_health` table)."""

from __future__ import annotations

from sqlite_utils import Database

NAME = "0017_endpoint_health"


def migrate(db: Database) -> None:
    """An endpoint that stopped answering pauses its model's episodes; the workers that
    saw it say so here, so that `lab status` and the console can show it.

    - endpoint_health: one row per (endpoint, worker): the endpoint's state as that
      worker last saw it ("down" or "up"), since when (ISO UTC), the models it serves
      there (a JSON list) and, when down, the last failure's message.
    """
    db.executescript(
        """
        CREATE TABLE endpoint_health (
            endpoint TEXT NOT NULL,          -- base URL (redacted), as in episodes.server
            worker TEXT NOT NULL,            -- host:pid of the worker that saw it
            models TEXT NOT NULL,            -- JSON list of registry names served there
            state TEXT NOT NULL,             -- down, up
            since TEXT NOT NULL,             -- ISO UTC of the change
            error TEXT,                      -- the last failure, when down
            PRIMARY KEY (endpoint, worker)
        );
        """
    )
