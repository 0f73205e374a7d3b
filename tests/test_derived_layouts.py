"""Derived tables record their layout; a pack of another layout is refused or rederived,
never decoded as garbage (`core.store.layouts`, `core.store.derived`)."""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from sqlite_utils import Database

from core import store
from core.errors import StoreError
from core.store import decisions as D
from core.store import episode_packs as P
from core.store import frames as F
from core.store.judgment_counts import judgment_counts
from core.store.layouts import TABLES, code_layout, recorded_layouts, require_layout
from tests.golden_study import GRID, build_study
from tests.helpers.console import copy_db

SMALL = GRID[:1] + GRID[-2:]
"""own-judgment, stated and two-source arms: every derived table has rows."""


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("layouts") / "lab.db"
    build_study(path, SMALL)
    return path


@pytest.fixture
def path(template: Path, tmp_path: Path) -> Path:
    """A copy of the template lab.db (checkpointed: one file)."""
    store.connect(template).conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    copy_db(template, tmp_path / "lab.db")
    return tmp_path / "lab.db"


def _rows(db: Database) -> dict[str, list]:
    return {t: db.conn.execute(f"SELECT * FROM {t} ORDER BY 1, 2").fetchall() for t in TABLES}


def test_a_lab_db_records_the_layouts_of_this_code(path: Path) -> None:
    db = store.connect(path)
    assert recorded_layouts(db.conn) == {t: code_layout(t) for t in TABLES}
    for table in TABLES:
        require_layout(db, table)  # no error


def test_reordering_episode_words_is_another_layout(monkeypatch: pytest.MonkeyPatch) -> None:
    before = code_layout("episode_packs")
    words = list(P.EPISODE_WORDS)
    words[2] = words[2][::-1]  # answered, correct, em, placeholder -> the other way round
    monkeypatch.setattr(P, "EPISODE_WORDS", tuple(words))
    assert code_layout("episode_packs") != before
    monkeypatch.setattr(P, "EPISODE_WORDS", tuple(reversed(words)))
    assert code_layout("episode_packs") != before
    monkeypatch.undo()
    assert code_layout("episode_packs") == before


def test_packs_of_another_layout_are_refused_then_rederived_on_open(
        path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    db = store.connect(path)
    want = F.episode_keys_frame(db, values=("correct", "cost_usd"))
    changes = D.changes(db)
    words = list(P.EPISODE_WORDS)
    words[2] = words[2][::-1]
    monkeypatch.setattr(P, "EPISODE_WORDS", tuple(words))  # as a later lab would have it
    with pytest.raises(StoreError) as refused:
        F.episode_keys_frame(db, values=("correct",))
    message = str(refused.value)
    assert "\n" not in message and "episode_packs was written in layout 1:" in message
    assert f"reads layout {code_layout('episode_packs')}" in message
    judgment_counts(db)  # the other tables' layouts did not change: read as before
    with caplog.at_level(logging.WARNING, logger="lab.store"):
        reopened = store.connect(path)
    assert [r.getMessage().split(" (")[0] for r in caplog.records] == [
        f"{path}: rederived episode_packs of {store.count(reopened, 'episodes'):,} episodes "
        "with this lab's layouts"]
    assert recorded_layouts(reopened.conn)["episode_packs"] == code_layout("episode_packs")
    assert D.changes(reopened) == changes + 1  # results caches recompute
    got = F.episode_keys_frame(reopened, values=("correct", "cost_usd"))
    assert got.equals(want)


@pytest.mark.parametrize("table, version, rebuilt", [
    ("decisions", "DECISIONS_LAYOUT_VERSION", ("decisions", "decision_packs", "episode_packs")),
    ("decision_packs", "PACKS_LAYOUT_VERSION", ("decision_packs",)),
])
def test_a_new_layout_version_rederives_that_table_and_those_built_from_it(
        path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
        table: str, version: str, rebuilt: tuple[str, ...]) -> None:
    db = store.connect(path)
    before, layouts = _rows(db), recorded_layouts(db.conn)
    with db.conn:  # what an older lab left: wrong rows (its layout)
        if table == "decisions":
            db.conn.execute("UPDATE decisions SET own_run = own_run + 1")
        db.conn.execute("UPDATE decision_packs SET words = zeroblob(length(words))")
    monkeypatch.setattr(D, version, getattr(D, version) + 1)
    with pytest.raises(StoreError, match=f"{table} was written in layout"):
        F.decisions_frame(db, episode_ids=[r[0] for r in before["decision_packs"]])
    with caplog.at_level(logging.WARNING, logger="lab.store"):
        db = store.connect(path)
    assert caplog.records[0].getMessage().startswith(f"{path}: rederived {', '.join(rebuilt)} ")
    after = recorded_layouts(db.conn)
    assert {t for t in TABLES if after[t] != layouts[t]} == {table}
    assert {t for t in TABLES if after[t] == code_layout(t)} == set(TABLES)
    assert _rows(db) == before  # the same code: the same rows again


def test_an_unchanged_lab_db_is_not_rederived(path: Path,
                                              caplog: pytest.LogCaptureFixture) -> None:
    db = store.connect(path)
    at = {t: db.conn.execute("SELECT derived_at FROM derived_layouts WHERE name = ?",
                             (t,)).fetchone() for t in TABLES}
    changes = D.changes(db)
    with caplog.at_level(logging.WARNING, logger="lab.store"):
        db = store.connect(path)
    assert not caplog.records and D.changes(db) == changes
    assert at == {t: db.conn.execute("SELECT derived_at FROM derived_layouts WHERE name = ?",
                                     (t,)).fetchone() for t in TABLES}


def test_a_read_only_lab_db_of_another_layout_is_refused_in_one_line(path: Path) -> None:
    """Nothing may be written, so nothing is rederived: `lab results` says what to do."""
    if os.geteuid() == 0 and shutil.which("setpriv") is None:
        pytest.skip("running as root without setpriv: file modes cannot be enforced")
    with store.connect(path).conn as conn:
        conn.execute("UPDATE derived_layouts SET layout = '0:older' WHERE name = 'episode_packs'")
    path.chmod(0o444)
    prefix = ["setpriv", "--bounding-set=-all", "--inh-caps=-all", "--"] \
        if os.geteuid() == 0 else []
    try:
        result = subprocess.run([*prefix, sys.executable, "-m", "console.cli", "--db", str(path),
                                 "results", "success", "--format", "json", "--resamples", "10"],
                                capture_output=True, text=True, timeout=120)
    finally:
        path.chmod(0o644)
    assert result.returncode == 1, result.stderr
    assert result.stderr.count("\n") == 1 and result.stderr.startswith(
        f"error: {path}: episode_packs was written in layout 0:older and this lab reads "
        f"layout {code_layout('episode_packs')}; open the file once with write access"), \
        result.stderr
    assert recorded_layouts(store.connect(path).conn)["episode_packs"] == \
        code_layout("episode_packs")  # writable again: rederived on open
