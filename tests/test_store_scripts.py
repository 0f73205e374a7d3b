"""`core.store.scripts.statements` splits a script as sqlite_utils does, in linear time."""

from __future__ import annotations

import sqlite3

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlite_utils.db import _iter_complete_sql_statements as sqlite_utils_split

from core.store.scripts import LabDatabase, statements

SCRIPTS = [
    "",
    "   \n",
    "CREATE TABLE a (x TEXT);",
    "CREATE TABLE a (x TEXT DEFAULT ';');\nINSERT INTO a VALUES ('1;2');  ",
    "-- a comment; with a semicolon\nCREATE TABLE b (y);\n/* block; */ CREATE TABLE c (z);",
    "CREATE TABLE t (v);\nCREATE TRIGGER tr AFTER INSERT ON t BEGIN\n"
    "  UPDATE t SET v = v + 1; DELETE FROM t WHERE v > 9;\nEND;\nSELECT 1",
    'CREATE TABLE "odd;name" ("col;umn" INTEGER);',
    "SELECT ';' || \"x;\" ; ; SELECT 2;",
]


@pytest.mark.parametrize("sql", SCRIPTS)
def test_the_same_statements_as_sqlite_utils(sql: str) -> None:
    assert list(statements(sql)) == list(sqlite_utils_split(sql))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["SELECT 1", ";", " ", "\n", "'", '"', "--", "/*", "*/",
                                 "x", "BEGIN", "END", "CREATE TRIGGER t AFTER INSERT ON a",
                                 "UPDATE a SET b = 1", "[", "]"]), max_size=30).map("".join))
def test_the_same_statements_as_sqlite_utils_on_any_script(sql: str) -> None:
    assert list(statements(sql)) == list(sqlite_utils_split(sql))


def test_a_script_inside_a_transaction_is_not_committed() -> None:
    conn = sqlite3.connect(":memory:", isolation_level=None)
    db = LabDatabase(conn)
    conn.execute("BEGIN")
    db.executescript("CREATE TABLE a (x); INSERT INTO a VALUES (1);")
    assert conn.in_transaction
    conn.execute("ROLLBACK")
    assert conn.execute("SELECT name FROM sqlite_master").fetchall() == []
