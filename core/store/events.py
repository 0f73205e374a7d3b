"""The events table: one line per thing a researcher may want to see happened (an enqueue,
a retry, a recovered worker, a replay's Message Batch), read by the dashboard
(`core.store.monitor.recent_events`) and by a resumed replay job
(`core.store.probes.open_batches`).

On its own: the job ledger (`core.store.jobs`, whose callers log through it as
`ledger.log_event`) and the replay probes (`core.store.probes`) both log events, and
neither needs to import the other for it.
"""

from __future__ import annotations

from sqlite_utils import Database

from core.episode import utc_now
from core.redaction import redact
from core.store.base import write


def log_event(db: Database, kind: str, detail: str) -> None:
    """Append one line to the events table."""
    with write(db):
        db.conn.execute("INSERT INTO events (at, kind, detail) VALUES (?, ?, ?)",
                        (utc_now(), kind, redact(detail)))
