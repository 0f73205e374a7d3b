"""lab.db migration 0002: the inference servers lab started (the `servers` table)."""

from __future__ import annotations

from sqlite_utils import Database

NAME = "0002_servers"


def migrate(db: Database) -> None:
    db.executescript(
        """
        CREATE TABLE servers (
            id INTEGER PRIMARY KEY,
            model TEXT NOT NULL,             -- registry name
            served_model TEXT NOT NULL,      -- what the server loads (e.g. Qwen/Qwen3-8B)
            endpoint TEXT NOT NULL,          -- base URL, as in the registry's endpoints
            version TEXT,                    -- the server's /version
            command TEXT NOT NULL,           -- JSON list: the exact command line
            flags TEXT NOT NULL,             -- JSON object: the settings it was started with
            pid INTEGER,
            started_at TEXT NOT NULL,
            stopped_at TEXT
        );
        CREATE INDEX servers_endpoint ON servers(endpoint);
        """
    )
