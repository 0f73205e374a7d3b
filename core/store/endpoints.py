"""Endpoints a worker found down: written when one goes down or up, read by the status views.

A worker's breakers (`core.models.health`) tell it when an endpoint stops answering
and when it answers again; the worker records each change here (one row per endpoint
and worker) and as an event. Readers show "endpoint down since HH:MM" for every
endpoint that a live worker (heartbeat within `stale_s`, not stopped) sees down.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from sqlite_utils import Database

from core.redaction import redact, redact_optional
from core.store.base import write


@dataclass(frozen=True)
class EndpointDown:
    """An endpoint down as the live workers see it.

    Attributes:
        endpoint: the URL (redacted).
        models: registry names served there.
        since: ISO UTC time it went down (the earliest among the workers).
        workers: how many live workers see it down.
        error: the newest failure message.
    """

    endpoint: str
    models: tuple[str, ...]
    since: str
    workers: int
    error: str

    def since_local(self) -> str:
        """HH:MM in local time."""
        return datetime.fromisoformat(self.since).astimezone().strftime("%H:%M")

    def line(self) -> str:
        """One line of plain text: "endpoint URL down since HH:MM (models): …"."""
        models = f" ({', '.join(self.models)})" if self.models else ""
        return (f"endpoint {self.endpoint} down since {self.since_local()}{models}: its new "
                f"episodes wait, calls in flight wait for it (up to outage_wait_s)")


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="seconds")


def record_change(db: Database, worker: str, endpoint: str, state: str, since: float,
                  models: Sequence[str] = (), error: str = "") -> None:
    """Store what `worker` saw: `endpoint` went `state` ("down" or "up") at `since`
    (seconds since the epoch); also one line in the events table."""
    when = _iso(since)
    detail = (redact(f"{endpoint} down: {error}")[:500] if state == "down"
              else f"{endpoint} answers again")
    with write(db):
        db.conn.execute(
            "INSERT INTO endpoint_health (endpoint, worker, models, state, since, error) "
            "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(endpoint, worker) DO UPDATE SET "
            "models = excluded.models, state = excluded.state, since = excluded.since, "
            "error = excluded.error",
            (endpoint, worker, json.dumps(sorted(models)), state, when,
             redact_optional(error or None)))
        db.conn.execute("INSERT INTO events (at, kind, detail) VALUES (?, ?, ?)",
                        (datetime.now(UTC).isoformat(timespec="microseconds"),
                         f"endpoint_{state}", detail))


def forget_worker(db: Database, worker: str) -> None:
    """Remove a stopping worker's rows (what it saw no longer holds anything)."""
    with write(db):
        db.conn.execute("DELETE FROM endpoint_health WHERE worker = ?", (worker,))


def endpoints_down(db: Database, now: float | None = None,
                   stale_s: float = 60.0) -> list[EndpointDown]:
    """Endpoints that a live worker sees down, by URL.

    Args:
        now: the clock (seconds since the epoch; default time.time()).
        stale_s: a worker whose heartbeat is older than this is not believed (it
            died without clearing its rows).
    """
    now = time.time() if now is None else now
    rows = db.conn.execute(
        "SELECT h.endpoint, h.models, h.since, h.error FROM endpoint_health h "
        "JOIN workers w ON w.id = h.worker WHERE h.state = 'down' AND w.state != 'stopped' "
        "AND w.heartbeat_at >= ? ORDER BY h.endpoint, h.since", (now - stale_s,)).fetchall()
    out: dict[str, EndpointDown] = {}
    for endpoint, models, since, error in rows:
        prev = out.get(endpoint)
        names = tuple(sorted(set(json.loads(models)) | set(prev.models if prev else ())))
        out[endpoint] = EndpointDown(endpoint, names, prev.since if prev else since,
                                     (prev.workers if prev else 0) + 1,
                                     error or (prev.error if prev else ""))
    return list(out.values())
