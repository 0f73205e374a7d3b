"""Migrations are frozen: no application import, and the schema each one leaves
is the schema that version always had.

`tests/data/schema_versions.json` holds, per migration, the sha256 of lab.db's schema
(sqlite_master) after applying migrations 1..N to an empty file; versions 1-12 were
computed with the migrations as they were before they were frozen (the same DDL).
A new migration adds its line; an existing line never changes.
"""

from __future__ import annotations

import ast
import hashlib
import json
import sqlite3
import sys
from pathlib import Path

import pytest
from sqlite_utils import Database

from core.schema import MIGRATIONS, SCHEMA_VERSION, STEPS
from core.store.scripts import LabDatabase

SCHEMA_DIR = Path(__file__).resolve().parent.parent / "core" / "schema"
FINGERPRINTS = Path(__file__).parent / "data" / "schema_versions.json"
ALLOWED = {"__future__", "sqlite_utils", *sys.stdlib_module_names}
"""Top-level packages a migration may import: the standard library and sqlite_utils."""


def _imports(path: Path) -> list[str]:
    """Every module `path` imports, anywhere in it (functions included); a relative import
    as the package it reaches into (``core.schema…``)."""
    names = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            relative = "core.schema" + (f".{node.module}" if node.module else "")
            names.append(relative if node.level else str(node.module))
    return names


def test_no_migration_imports_application_code() -> None:
    bad = {}
    for path in sorted(SCHEMA_DIR.glob("*.py")):
        own = path.name == "__init__.py"  # lists the migration modules, nothing else
        found = [n for n in _imports(path) if n.split(".")[0] not in ALLOWED
                 and not (own and n.startswith("core.schema"))]
        if found:
            bad[path.name] = found
    assert not bad, f"migrations importing application or third-party code: {bad}"


def test_the_import_check_sees_an_import_inside_a_function(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("def migrate(db):\n    from core.store.decisions import derive_all\n"
                      "    from . import sibling\n")
    assert _imports(module) == ["core.store.decisions", "core.schema"]


def test_every_migration_module_is_registered_in_order() -> None:
    files = sorted(p.stem for p in SCHEMA_DIR.glob("m[0-9]*.py"))
    assert files == [f"m{s.NAME}" for s in STEPS] == [s.__name__.rsplit(".", 1)[1]
                                                        for s in STEPS]
    assert [int(s.NAME[:4]) for s in STEPS] == list(range(1, SCHEMA_VERSION + 1))
    assert [m.name for m in MIGRATIONS._migrations] == [s.NAME for s in STEPS]


def schema_fingerprint(version: int, database: type[Database] = LabDatabase) -> str:
    """sha256 of the schema that migrations 1..version leave in an empty database, run
    through `database` (lab's, by default)."""
    conn = sqlite3.connect(":memory:", isolation_level=None)
    names = [s.NAME for s in STEPS]
    MIGRATIONS.apply(database(conn), stop_before=names[version:])
    rows = conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master WHERE name "
                        "NOT LIKE '\\_sqlite%' ESCAPE '\\' ORDER BY type, name").fetchall()
    conn.close()
    text = "\n".join(f"{kind} {name} {table}\n{sql}" for kind, name, table, sql in rows)
    return hashlib.sha256(text.encode()).hexdigest()


@pytest.mark.parametrize("version", range(1, SCHEMA_VERSION + 1))
def test_the_schema_of_every_version_is_frozen(version: int) -> None:
    want = json.loads(FINGERPRINTS.read_text(encoding="utf-8"))
    assert list(want) == [s.NAME for s in STEPS], "add the new migration's line, change none"
    assert schema_fingerprint(version) == want[STEPS[version - 1].NAME], (
        f"migration {STEPS[version - 1].NAME} (or an earlier one) now builds another schema: "
        "a migration is frozen once released; append a new one instead")


def test_lab_and_sqlite_utils_run_the_migrations_to_the_same_schema() -> None:
    """lab's Database splits scripts its own (linear) way: every migration leaves the
    schema sqlite_utils' own split leaves."""
    assert schema_fingerprint(SCHEMA_VERSION) == schema_fingerprint(SCHEMA_VERSION, Database)
