"""Model servers started by `lab serve`: what ran where, with which version and flags.

An episode's `server` column holds the endpoint URL that served it; the newest row
of this table for that endpoint started before the episode says what was behind it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from sqlite_utils import Database

from core.episode import utc_now
from core.store.base import write


def record_server(db: Database, *, model: str, served_model: str, endpoint: str,
                  version: str | None, command: Sequence[str], flags: Mapping[str, Any],
                  pid: int | None = None, started_at: str | None = None) -> int:
    """Store one started server; returns its id.

    One server listens on an endpoint at a time: an older record of the endpoint still
    open (its server killed without `lab serve` seeing it) is closed now.

    Args:
        model: registry name.
        served_model: the model the server loads.
        endpoint: base URL as written in the registry (…/v1).
        version: the server's reported version (None when it has no /version).
        command: the command line it was started with.
        flags: the settings behind the command (port, max_model_len, …).
        pid: its process id.
        started_at: when it became healthy (default: now).
    """
    now = started_at or utc_now()
    with write(db):
        db.conn.execute("UPDATE servers SET stopped_at = ? WHERE endpoint = ? AND "
                        "stopped_at IS NULL", (now, endpoint))
        cur = db.conn.execute(
            "INSERT INTO servers (model, served_model, endpoint, version, command, flags, pid, "
            "started_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (model, served_model, endpoint, version, json.dumps(list(command)),
             json.dumps(dict(flags), sort_keys=True), pid, now))
        return int(cur.lastrowid or 0)


def mark_stopped(db: Database, server_id: int) -> None:
    """Record that a server stopped."""
    with write(db):
        db.conn.execute("UPDATE servers SET stopped_at = ? WHERE id = ?", (utc_now(), server_id))


def servers(db: Database, endpoint: str | None = None) -> list[dict[str, Any]]:
    """Recorded servers, newest first (optionally for one endpoint); JSON columns decoded."""
    sql = ("SELECT * FROM servers" + (" WHERE endpoint = ?" if endpoint else "")
           + " ORDER BY id DESC")
    rows = [dict(r) for r in db.query(sql, [endpoint] if endpoint else [])]
    for r in rows:
        r["command"], r["flags"] = json.loads(r["command"]), json.loads(r["flags"])
    return rows


def running_endpoints(db: Database, model: str) -> list[str]:
    """The endpoints of `model` whose servers `lab serve` started and has not seen stop,
    oldest first (redacted, as recorded)."""
    rows = db.query("SELECT endpoint FROM servers WHERE model = ? AND stopped_at IS NULL "
                    "ORDER BY id", [model])
    return list(dict.fromkeys(r["endpoint"] for r in rows))
