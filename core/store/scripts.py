"""lab's sqlite_utils `Database`: the same, but a script run inside a transaction is split
into statements in linear time.

sqlite_utils runs a script inside an open transaction one statement at a time (Python's
`executescript` would commit first), finding each statement's end by joining the text
read so far after every character and asking SQLite whether it is complete: quadratic
in a statement's length. The first migration's script made that two thirds of creating a
lab.db (about 0.25 s in every test and `lab init`). `statements` asks only at each `;`,
the only character after which the answer can turn true, so the statements, and what
the migrations leave, are the same (`tests/test_schema_frozen.py`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from typing import Any

from sqlite_utils import Database


def statements(sql: str) -> Iterator[str]:
    """The complete SQL statements of `sql`, stripped, in order (the last one may lack its
    `;`): what sqlite_utils' own split yields, found by testing only at semicolons."""
    start = 0
    for end, char in enumerate(sql, start=1):
        if char == ";":
            piece = sql[start:end].strip()
            if piece and sqlite3.complete_statement(piece):
                yield piece
                start = end
    rest = sql[start:].strip()
    if rest:
        yield rest


class LabDatabase(Database):
    """sqlite_utils' Database, with `executescript` splitting by `statements` inside a
    transaction (lab sets no tracer, so none is called); outside one it is unchanged.

    Opened without sqlite-utils' plugins (`execute_plugins=False` unless asked): an
    installed sqlite-utils plugin adds its SQL functions to every connection it is
    given, and lab.db's connections run lab's SQL only; and loading them scanned the
    entry points of every installed package at each process's first connection
    (about 18 ms of every `lab` command's start).
    """

    def __init__(self, conn: sqlite3.Connection, **options: Any) -> None:
        options.setdefault("execute_plugins", False)
        super().__init__(conn, **options)

    def executescript(self, sql: str) -> sqlite3.Cursor:
        """Run each statement of `sql`; inside an open transaction without committing it."""
        if not self.conn.in_transaction:
            return super().executescript(sql)
        cursor = self.conn.cursor()
        for statement in statements(sql):
            cursor.execute(statement)
        return cursor
