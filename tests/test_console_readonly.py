"""A read-only lab.db is a read-only console, never a crash.

Two ways to make lab.db read-only: a real one (`chattr +i` as root, a 0444 file
otherwise; skipped where neither takes) and SQLite's `query_only` on every connection
the console opens, which fails each write with the same "attempt to write a readonly
database" that a read-only file or mount gives. Detected at start, the header says
READ-ONLY and the write keys are dimmed and say why; undetected (lab.db became
read-only later), every write action turns the error into a toast, switches the
console to read-only and leaves lab.db as it was.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlite_utils import Database
from textual.app import App

import console.app
from console.screens.enqueue import EnqueueScreen
from console.screens.jobs import JobsScreen
from console.screens.prereg import PreregScreen
from console.widgets.confirm import Confirm
from core import prereg, store
from core.models.registry import load_registry
from core.store import jobs as ledger
from core.store import prereg as rows
from jobs.grid import GridRequest
from tests.helpers.console import build, console_app, copy_db, freeze_times, settle
from tests.helpers.notices import said

SCOPE = {"models": ["sim-never"], "conditions": ["none"], "regimes": ["clean"],
         "question_sets": ["demo"], "budgets": [8]}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A queued grid (run "fixture"), a draft with a scope (A2) and a frozen amendment (A1)."""
    path = build(tmp_path_factory.mktemp("readonly") / "lab.db", run=False)
    db = store.connect(path)
    frozen = prereg.create(db, "Frozen one", "body", [], SCOPE)
    prereg.freeze(db, frozen, load_registry(None))
    prereg.create(db, "A draft", "body", [], SCOPE)
    db.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.conn.close()
    freeze_times(path)
    return path


@pytest.fixture
def lab_db(built: Path, tmp_path: Path) -> Path:
    """A private copy of the module's lab.db."""
    copy_db(built, tmp_path / "lab.db")
    return tmp_path / "lab.db"


def _ids(path: Path) -> tuple[str, str]:
    db = store.connect(path)
    try:
        by_state = {a["state"]: a["id"] for a in rows.amendments(db)}
    finally:
        db.conn.close()
    return by_state["frozen"], by_state["draft"]


def _snapshot(path: Path) -> tuple[object, ...]:
    """What any console write would change: job states, grids, amendments, deviations."""
    db = store.connect(path)
    try:
        return (ledger.job_states(db), db.conn.execute("SELECT count(*) FROM grids").fetchone(),
                [(a["id"], a["state"], a["title"]) for a in rows.amendments(db)],
                len(rows.deviations(db)))
    finally:
        db.conn.close()


@pytest.fixture
def query_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every connection the console opens refuses writes, as on a read-only file."""
    connect = store.connect

    def read_only_connect(path: Path | str, create: bool = True, **options: bool) -> Database:
        db = connect(path, create, **options)
        db.conn.execute("PRAGMA query_only = ON")
        return db

    monkeypatch.setattr(store, "connect", read_only_connect)


@pytest.fixture
def undetected(monkeypatch: pytest.MonkeyPatch, query_only: None) -> None:
    """lab.db turns read-only after the start check (or the check missed it)."""
    monkeypatch.setattr(console.app, "check_writable", lambda db, path: None)


def _toasts(app: App[Any]) -> list[str]:
    return [str(n.message) for n in said(app)]


@pytest.fixture
def immutable(lab_db: Path) -> Iterator[Path]:
    """lab.db really read-only: `chattr +i` as root (root ignores file modes), else 0444."""
    if os.geteuid() == 0:
        if shutil.which("chattr") is None or subprocess.run(
                ["chattr", "+i", str(lab_db)], capture_output=True).returncode != 0:
            pytest.skip("chattr +i is not available here")
        undo = ["chattr", "-i", str(lab_db)]
    else:
        lab_db.chmod(0o444)
        undo = ["chmod", "644", str(lab_db)]
    try:
        try:
            os.close(os.open(lab_db, os.O_WRONLY))
        except PermissionError:
            pass
        else:
            pytest.skip("could not make lab.db read-only here")
        yield lab_db
    finally:
        subprocess.run(undo, check=True)


@pytest.mark.asyncio
async def test_a_really_read_only_file_is_a_read_only_console(immutable: Path) -> None:
    before = _snapshot(immutable)
    app = console_app(immutable)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert app.read_only is not None and "read-only" in app.read_only
        assert "READ-ONLY" in app.title
        assert any("read-only console" in t for t in _toasts(app))
        await pilot.press("4")
        await settle(pilot)
        assert app.screen.check_action("act", ("pause",)) is None  # dimmed in the footer
        await pilot.press("P")
        await settle(pilot)
        assert not isinstance(app.screen, Confirm)
        assert any(t.startswith("Pause: not possible, the console is read-only")
                   for t in _toasts(app))
        assert app.is_running
    assert _snapshot(immutable) == before


@pytest.mark.asyncio
async def test_detected_at_start_write_keys_refuse_with_the_reason(lab_db: Path,
                                                                   query_only: None) -> None:
    app = console_app(lab_db)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert "READ-ONLY" in app.title
        await pilot.press("2")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, PreregScreen)
        for action in ("new", "edit", "freeze", "deviation"):
            assert screen.check_action(action, ()) is None, action
        assert screen.check_action("verify", ()) is True  # reads still work
        for key in ("n", "e", "f", "d"):
            await pilot.press(key)
            await settle(pilot)
            assert app.screen is screen, key  # no prompt, no editor, no confirmation
        assert sum("not possible, the console is read-only" in t for t in _toasts(app)) == 4
        await pilot.press("3")
        await settle(pilot)
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert any(t.startswith("Queue it: not possible") for t in _toasts(app))
        assert app.is_running


@pytest.mark.asyncio
async def test_jobs_pause_yes_on_read_only_is_a_toast_not_a_traceback(lab_db: Path,
                                                                      undetected: None) -> None:
    """The path that once crashed: 4 → P → y on a lab.db that could not be written."""
    before = _snapshot(lab_db)
    app = console_app(lab_db)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert app.read_only is None
        await pilot.press("4")
        await settle(pilot)
        await pilot.press("P")
        await pilot.pause()
        assert isinstance(app.screen, Confirm)
        await pilot.press("y")
        await settle(pilot)
        assert app.is_running
        assert any("pause run fixture failed" in t and "read-only" in t for t in _toasts(app))
        assert app.read_only is not None and "READ-ONLY" in app.title
        assert app.screen.check_action("act", ("pause",)) is None
    assert _snapshot(lab_db) == before


JOBS_ACTIONS = ("pause", "resume", "cancel", "retry", "retry_errored")
PREREG_WRITES = ("create", "save", "freeze", "deviation")


def _start_write(screen: Any, what: str, frozen: str, draft: str) -> None:
    """Start the worker that the key (after its prompt or confirmation) would start."""
    if what in JOBS_ACTIONS:
        screen._control(what, "run", "fixture")
    elif what == "queue":
        screen._queue(GridRequest(models=("sim-own5",), conditions=("none",),
                                  regimes=("clean",), question_set="demo", run="ro"))
    elif what == "create":
        screen._create("a new draft")
    elif what == "save":
        screen._save(draft, {"title": "renamed"})
    elif what == "freeze":
        screen._freeze(draft)
    elif what == "deviation":
        screen._add_deviation(frozen, "a deviation")


@pytest.mark.asyncio
@pytest.mark.parametrize("what", [*JOBS_ACTIONS, "queue", *PREREG_WRITES])
async def test_every_write_action_fails_into_a_toast(lab_db: Path, undetected: None,
                                                     what: str) -> None:
    frozen, draft = _ids(lab_db)
    before = _snapshot(lab_db)
    mode, kind = (("jobs", JobsScreen) if what in JOBS_ACTIONS else
                  ("enqueue", EnqueueScreen) if what == "queue" else ("prereg", PreregScreen))
    app = console_app(lab_db, first_screen=mode)  # the write's screen: no other one shown
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, kind)
        _start_write(app.screen, what, frozen, draft)
        await settle(pilot)
        assert app.is_running
        assert app.read_only is not None
        assert any("read-only" in t for t in _toasts(app)), _toasts(app)
        # a second try is refused before lab.db is opened, with the same reason
        _start_write(app.screen, what, frozen, draft)
        await settle(pilot)
        assert app.is_running
    assert _snapshot(lab_db) == before
