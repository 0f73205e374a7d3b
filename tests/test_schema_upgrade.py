"""A lab.db of every earlier schema version upgrades to the same results as a fresh one.

The old files are made here, not committed: the frozen migrations 1..N (they import no
application code, `tests/test_schema_frozen.py`, and build the schema each version
always had) applied to an empty file, then the golden study's rows (`tests/golden_study.py`)
copied in, each column the version has. An arm whose steps that version cannot hold
(two-source searches before 0004, a discarded turn beside its re-ask before 0005) is
left out of that file. Derived data the version already had (decisions, step totals,
packs) is copied wrong on purpose, as a lab.db written by an older layout would hold
it: opening the file with today's code (`lab results all`) must migrate it and rederive
every derived table, and print the same bytes as a fresh lab.db holding the same
episodes.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from sqlite_utils import Database

from core import store
from core.schema import MIGRATIONS, SCHEMA_VERSION, STEPS
from core.store.layouts import TABLES, code_layout, recorded_layouts
from tests.golden_study import GRID, REGIMES, build_study, results_all

BASE_TABLES = ("questions", "prompt_sets", "runs", "cells")
"""Copied whole (as far as the version has them)."""
PROVENANCE_ONLY = {"prompts_sha256", "attempt", "decision_raw"}
"""Episode and step columns an older version lacks without changing any result (the
decide arm's decision reply is text for probes and the trajectory view)."""
SCRAMBLED = {
    "episodes": {c: f"{c} + 1" for c in ("acting_input_tokens", "acting_output_tokens",
                                         "discarded_turns", "backup_calls",
                                         "primary_judgments")},
    "decisions": {"own_run": "own_run + 1", "action": "action + 1"},
    "decision_packs": {"words": "zeroblob(length(words))"},
    "judgment_packs": {"words": "zeroblob(length(words))"},
    "episode_packs": {"words": "zeroblob(length(words))"},
}
"""Derived columns copied wrong (an older layout's values): SQL per column."""


def _columns(conn: sqlite3.Connection, table: str, schema: str = "main") -> list[str]:
    return [r[1] for r in conn.execute(f"PRAGMA {schema}.table_info({table})")]


def _copy(conn: sqlite3.Connection, table: str, where: str = "") -> None:
    """Copy `table`'s rows from the attached study (columns the old file has)."""
    old = _columns(conn, table)
    if not old:
        return  # the version has no such table
    cols = [c for c in old if c in _columns(conn, table, "src")]
    values = [SCRAMBLED.get(table, {}).get(c, c) for c in cols]
    conn.execute(f"INSERT INTO main.{table} ({', '.join(cols)}) "
                 f"SELECT {', '.join(values)} FROM src.{table} {where}")


def _holds(conn: sqlite3.Connection, cells: str) -> bool:
    """Whether every value of the cells' episodes and steps in a column the old file
    lacks is that column's default (else the old version could not have stored them)."""
    for table, key in (("episodes", "cell_id"), ("steps", "episode_id")):
        old = set(_columns(conn, table))
        info = conn.execute(f"PRAGMA src.table_info({table})").fetchall()
        lost = [(r[1], r[4]) for r in info if r[1] not in old and r[1] not in PROVENANCE_ONLY
                and r[1] not in SCRAMBLED["episodes"]]
        where = (f"cell_id IN ({cells})" if key == "cell_id" else
                 f"episode_id IN (SELECT id FROM src.episodes WHERE cell_id IN ({cells}))")
        for column, default in lost:
            same = f"{column} IS NULL" if default is None else f"{column} = {default}"
            if conn.execute(f"SELECT count(*) FROM src.{table} WHERE {where} "
                            f"AND NOT ({same})").fetchone()[0]:
                return False
    return True


def old_lab_db(path: Path, version: int, study: Path) -> tuple[tuple[str, str, int], ...]:
    """Write at `path` a lab.db of schema `version` holding the study's rows it can hold.

    Returns:
        The GRID entries (model, arm, budget) whose episodes it holds.
    """
    conn = sqlite3.connect(path, isolation_level=None)
    MIGRATIONS.apply(Database(conn), stop_before=[s.NAME for s in STEPS[version:]])
    conn.execute(f"PRAGMA user_version = {version}")
    conn.execute("ATTACH DATABASE ? AS src", (str(study),))
    conn.execute("BEGIN")
    for table in BASE_TABLES:
        _copy(conn, table)
    cell_ids = [r[0] for r in conn.execute("SELECT id FROM src.cells ORDER BY id")]
    kept = []
    for at, entry in enumerate(GRID):  # build_study's cells: GRID × REGIMES, in order
        cells = ", ".join(map(str, cell_ids[at * len(REGIMES):(at + 1) * len(REGIMES)]))
        if not _holds(conn, cells):
            continue
        conn.execute("SAVEPOINT entry")
        try:
            _copy(conn, "episodes", f"WHERE cell_id IN ({cells})")
            _copy(conn, "steps", "WHERE episode_id IN (SELECT id FROM main.episodes "
                                 f"WHERE cell_id IN ({cells}))")
        except sqlite3.IntegrityError:  # e.g. two steps with one t before 0005
            conn.execute("ROLLBACK TO entry")
        else:
            kept.append(entry)
        conn.execute("RELEASE entry")
    held = "WHERE episode_id IN (SELECT id FROM main.episodes)"
    for table in ("decisions", "decision_packs", "judgment_packs", "episode_packs"):
        _copy(conn, table, held)
    conn.execute("COMMIT")
    conn.execute("DETACH DATABASE src")
    conn.close()
    return tuple(kept)


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The golden study in a lab.db of today's schema (the rows every old file copies)."""
    path = tmp_path_factory.mktemp("study") / "lab.db"
    build_study(path)
    return path


@pytest.fixture(scope="module")
def fresh_results(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """`results_all` of a fresh lab.db holding the study's episodes of some GRID entries,
    by entries (computed once each)."""
    cache: dict[tuple, str] = {}

    def get(entries: tuple[tuple[str, str, int], ...]) -> str:
        if entries not in cache:
            path = tmp_path_factory.mktemp("fresh") / "lab.db"
            build_study(path, entries)
            cache[entries] = results_all(path)
        return cache[entries]

    return {"get": get}


@pytest.mark.parametrize("version", range(1, SCHEMA_VERSION))
def test_an_old_lab_db_upgrades_to_the_results_of_a_fresh_one(
        version: int, study: Path, fresh_results: dict, tmp_path: Path,
        caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "lab.db"
    kept = old_lab_db(path, version, study)
    assert kept[0] == GRID[0] and len(kept) >= 4
    if version >= 5:
        assert kept == GRID
    got = results_all(path)
    assert got == fresh_results["get"](kept)
    db = store.connect(path)
    assert store.schema_version(db) == SCHEMA_VERSION
    assert recorded_layouts(db.conn) == {t: code_layout(t) for t in TABLES}
    episodes = db.conn.execute("SELECT count(*) FROM episodes").fetchone()[0]
    said = [r.getMessage() for r in caplog.records if r.name == "lab.store"]
    assert len(said) == 1 and said[0].startswith(
        f"{path}: rederived {', '.join(TABLES)} of {episodes:,} episodes"), said
