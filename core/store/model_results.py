"""Writing the rows a model call produces beside episodes (probes, trace states): each
keeps a complete row already stored and replaces an errored one, records the prompt set
it was asked with, and stores its error text redacted."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

from sqlite_utils import Database

from core.redaction import redact_optional
from core.store.base import write


class ModelResult(Protocol):
    """A record with the prompt set it was asked with (its columns are its attributes)."""

    @property
    def prompt_files(self) -> Mapping[str, str] | None: ...

    @property
    def prompts_sha256(self) -> str | None: ...

    @property
    def created_at(self) -> str: ...


def upsert_sql(table: str, columns: Sequence[str], key: Sequence[str],
               updated: Sequence[str]) -> str:
    """INSERT of `columns` that, on a row with the same `key`, sets `updated` only when
    the stored row errored."""
    return (f"INSERT INTO {table} ({', '.join(columns)}) VALUES "
            f"({', '.join('?' * len(columns))}) ON CONFLICT ({', '.join(key)}) DO UPDATE "
            f"SET {', '.join(f'{c} = excluded.{c}' for c in updated)} "
            f"WHERE {table}.error IS NOT NULL")


def _value(record: ModelResult, column: str) -> Any:
    value = getattr(record, column)
    if column == "error":  # text from a server: never a credential (core.redaction)
        return redact_optional(value)
    return int(value) if isinstance(value, bool) else value


def write_results(db: Database, sql: str, columns: Sequence[str],
                  records: Iterable[ModelResult]) -> int:
    """Store records with `sql` (`upsert_sql`) in one transaction, each record's prompt
    set first.

    Returns:
        The number of rows inserted or (errored rows) replaced.
    """
    n = 0
    with write(db):
        for rec in records:
            if rec.prompt_files and rec.prompts_sha256:
                db.conn.execute("INSERT OR IGNORE INTO prompt_sets (sha256, files, created_at) "
                                "VALUES (?, ?, ?)", (rec.prompts_sha256, json.dumps(
                                    rec.prompt_files, sort_keys=True), rec.created_at))
            n += db.conn.execute(sql, tuple(_value(rec, c) for c in columns)).rowcount
    return n
