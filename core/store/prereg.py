"""Amendments and deviations: rows of the append-only pre-registration document."""

from __future__ import annotations

import json
from typing import Any

from sqlite_utils import Database

from core.episode import utc_now
from core.errors import StoreError
from core.store.base import write

_JSON = ("tests", "scope", "pins", "data_existed")


def _decode(row: dict[str, Any]) -> dict[str, Any]:
    for key in _JSON:
        if row.get(key) is not None:
            row[key] = json.loads(row[key])
    return row


def amendments(db: Database) -> list[dict[str, Any]]:
    """All amendments in document order (seq), JSON fields decoded."""
    cur = db.conn.execute("SELECT * FROM amendments ORDER BY seq")
    cols = [d[0] for d in cur.description]
    return [_decode(dict(zip(cols, r))) for r in cur.fetchall()]


def amendment(db: Database, amendment_id: str) -> dict[str, Any]:
    """One amendment.

    Raises:
        StoreError: no such amendment.
    """
    cur = db.conn.execute("SELECT * FROM amendments WHERE id = ?", (amendment_id,))
    row = cur.fetchone()
    if row is None:
        known = [r[0] for r in db.conn.execute("SELECT id FROM amendments ORDER BY seq")]
        raise StoreError(f"no amendment '{amendment_id}'"
                         + (f"; existing: {', '.join(known)}" if known else
                            " (create one with `lab prereg new`)"))
    return _decode(dict(zip([d[0] for d in cur.description], row)))


def insert_draft(db: Database, amendment_id: str, seq: int, title: str, body: str,
                 tests: list[Any], scope: dict[str, Any]) -> None:
    """Append a draft amendment."""
    with write(db):
        db.conn.execute(
            "INSERT INTO amendments (id, seq, title, body, tests, scope, state, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?, 'draft', ?)",
            (amendment_id, seq, title, body, json.dumps(tests), json.dumps(scope), utc_now()))


def update_draft(db: Database, amendment_id: str, fields: dict[str, Any]) -> None:
    """Change a draft's title/body/tests/scope.

    Raises:
        StoreError: the amendment is frozen (nothing is written).
    """
    unknown = set(fields) - {"title", "body", "tests", "scope"}
    if unknown:
        raise StoreError(f"cannot edit {', '.join(sorted(unknown))} of an amendment")
    with write(db):
        row = db.conn.execute("SELECT state FROM amendments WHERE id = ?",
                              (amendment_id,)).fetchone()
        if row is None:
            raise StoreError(f"no amendment '{amendment_id}'")
        if row[0] != "draft":
            raise StoreError(f"{amendment_id} is frozen and can never change; "
                             f"log a deviation or write a new amendment")
        for key, value in fields.items():
            value = json.dumps(value) if key in _JSON else value
            db.conn.execute(f"UPDATE amendments SET {key} = ? WHERE id = ? AND state = 'draft'",
                            (value, amendment_id))


def freeze(db: Database, amendment_id: str, record: dict[str, Any]) -> None:
    """Store what freezing computed and make the row frozen (draft → frozen only); any
    unsaved editor text kept for it goes."""
    with write(db):
        cur = db.conn.execute(
            "UPDATE amendments SET state = 'frozen', frozen_at = ?, content_sha256 = ?, "
            "prev_sha256 = ?, pins = ?, version = ?, data_existed = ? "
            "WHERE id = ? AND state = 'draft'",
            (record["frozen_at"], record["content_sha256"], record["prev_sha256"],
             json.dumps(record["pins"]), record["version"], json.dumps(record["data_existed"]),
             amendment_id))
        if cur.rowcount == 0:
            raise StoreError(f"{amendment_id} is already frozen")
        # a frozen amendment is never edited again: unsaved editor text has no use
        db.conn.execute("DELETE FROM draft_texts WHERE amendment_id = ?", (amendment_id,))


def add_deviation(db: Database, amendment_id: str, text: str) -> int:
    """Log a deviation from a frozen amendment; returns its id."""
    with write(db):
        cur = db.conn.execute("INSERT INTO deviations (amendment_id, text, created_at) "
                              "VALUES (?, ?, ?)", (amendment_id, text, utc_now()))
        return int(cur.lastrowid or 0)


def deviations(db: Database, amendment_id: str | None = None) -> list[dict[str, Any]]:
    """Deviations, of one amendment or all, oldest first."""
    sql, args = "SELECT * FROM deviations", tuple[str, ...]()
    if amendment_id is not None:
        sql, args = sql + " WHERE amendment_id = ?", (amendment_id,)
    cur = db.conn.execute(sql + " ORDER BY id", args)
    cols = [d[0] for d in cur.description]
    return [dict(zip(cols, r)) for r in cur.fetchall()]


def scoped_cells(db: Database) -> list[dict[str, Any]]:
    """Every cell with its run and episode count and earliest episode start."""
    cur = db.conn.execute(
        "SELECT c.id, r.name AS run, c.model, c.condition_spec, c.condition_hash, c.regime, "
        "c.question_set, c.budget, c.seed, c.replicate, count(e.id) AS episodes, "
        "min(e.started_at) AS first_started "
        "FROM cells c JOIN runs r ON r.id = c.run_id LEFT JOIN episodes e ON e.cell_id = c.id "
        "GROUP BY c.id ORDER BY c.id")
    cols = [d[0] for d in cur.description]
    return [dict(zip(cols, r)) for r in cur.fetchall()]


def run_provenance(db: Database, runs: list[str] | tuple[str, ...]) -> list[dict[str, Any]]:
    """For each run: its amendment (or exploratory) and the deviations logged on it."""
    out = []
    for name in runs:
        row = db.conn.execute("SELECT amendment_id FROM runs WHERE name = ?", (name,)).fetchone()
        amendment_id = row[0] if row else None
        devs = deviations(db, amendment_id) if amendment_id else []
        out.append({"run": name, "amendment": amendment_id,
                    "deviations": [f"deviation {d['id']} on {amendment_id}: {d['text']}"
                                   for d in devs]})
    return out


def governed_runs(db: Database, amendment_ids: list[str] | tuple[str, ...]) -> list[str]:
    """Names of the runs enqueued under any of these amendments, in creation order."""
    if not amendment_ids:
        return []
    marks = ", ".join("?" * len(amendment_ids))
    cur = db.conn.execute(f"SELECT name FROM runs WHERE amendment_id IN ({marks}) ORDER BY id",
                          tuple(amendment_ids))
    return [r[0] for r in cur.fetchall()]


DRAFT_TEXT_FIELDS = ("title", "body", "tests", "scope")
"""What the console's editor keeps of a draft's unsaved text (`draft_texts`)."""


def keep_draft_text(db: Database, amendment_id: str, texts: dict[str, str]) -> None:
    """Keep the editor's unsaved text of a draft (replacing what was kept before).

    Raises:
        StoreError: the amendment is not a draft (nothing is kept).
    """
    with write(db):
        row = db.conn.execute("SELECT state FROM amendments WHERE id = ?",
                              (amendment_id,)).fetchone()
        if row is None or row[0] != "draft":
            raise StoreError(f"{amendment_id} is not a draft: its text is not kept")
        db.conn.execute(
            "INSERT OR REPLACE INTO draft_texts (amendment_id, title, body, tests, scope, "
            "kept_at) VALUES (?, ?, ?, ?, ?, ?)",
            (amendment_id, *(texts[k] for k in DRAFT_TEXT_FIELDS), utc_now()))


def kept_draft_text(db: Database, amendment_id: str) -> dict[str, str] | None:
    """The unsaved text kept for a draft (with `kept_at`), or None."""
    cur = db.conn.execute("SELECT title, body, tests, scope, kept_at FROM draft_texts "
                          "WHERE amendment_id = ?", (amendment_id,))
    row = cur.fetchone()
    return dict(zip([d[0] for d in cur.description], row)) if row else None


def drop_draft_text(db: Database, amendment_id: str) -> None:
    """Forget a draft's kept text (it was saved or discarded)."""
    with write(db):
        db.conn.execute("DELETE FROM draft_texts WHERE amendment_id = ?", (amendment_id,))
