"""Prompt packs in lab.db: the imported packs, the active one, and each cell's pack.

A pack is a set of prompt pieces (piece name -> exact file text) that replaces the
built-in wording of those pieces (docs/prompts.md). Packs are immutable and keyed by
their sha256; the active pack is the one new cells are enqueued with, and a cell
keeps the pack it was enqueued with (cells.prompt_pack).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

from sqlite_utils import Database

from core.episode import utc_now
from core.errors import StoreError
from core.store.base import write


@dataclass(frozen=True)
class StoredPack:
    """One prompt pack as stored."""

    sha256: str
    pieces: dict[str, str]
    """Piece name (file stem) -> the piece's exact text."""
    source: str | None
    """The folder it was imported from."""
    created_at: str


def save_and_activate(db: Database, sha256: str, pieces: Mapping[str, str],
                      source: str | None) -> None:
    """Store a pack (once per sha256) and make it the active pack, in one transaction."""
    with write(db):
        db.conn.execute("INSERT OR IGNORE INTO prompt_packs (sha256, pieces, source, created_at) "
                        "VALUES (?, ?, ?, ?)",
                        (sha256, json.dumps(dict(sorted(pieces.items())), ensure_ascii=False),
                         source, utc_now()))
        _set_active(db, sha256)


def deactivate(db: Database) -> None:
    """Go back to the built-in wording for cells enqueued from now on."""
    with write(db):
        _set_active(db, None)


def _set_active(db: Database, sha256: str | None) -> None:
    db.conn.execute("INSERT INTO prompt_pack_active (id, sha256, changed_at) VALUES (1, ?, ?) "
                    "ON CONFLICT(id) DO UPDATE SET sha256 = excluded.sha256, "
                    "changed_at = excluded.changed_at", (sha256, utc_now()))


def active_sha(db: Database) -> str | None:
    """The sha256 of the active pack (None: the built-in wording)."""
    row = db.conn.execute("SELECT sha256 FROM prompt_pack_active WHERE id = 1").fetchone()
    return row[0] if row else None


def pack(db: Database, sha256: str) -> StoredPack:
    """The stored pack with this sha256.

    Raises:
        StoreError: no such pack in lab.db.
    """
    row = db.conn.execute("SELECT sha256, pieces, source, created_at FROM prompt_packs "
                          "WHERE sha256 = ?", (sha256,)).fetchone()
    if row is None:
        raise StoreError(f"no prompt pack {sha256[:12]}… in lab.db")
    return StoredPack(row[0], json.loads(row[1]), row[2], row[3])


def active(db: Database) -> StoredPack | None:
    """The active pack (None: the built-in wording)."""
    sha = active_sha(db)
    return pack(db, sha) if sha else None


def active_pieces(db: Database) -> dict[str, str] | None:
    """The active pack's pieces (None: the built-in wording)."""
    found = active(db)
    return found.pieces if found else None


