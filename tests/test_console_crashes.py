"""The console never shows a traceback: caught errors are a notice and a log line.

- The Sets race: `s Escape Escape` on Enqueue (3) replayed `ROUNDS` times while every
  footer rebuild is slowed (an `asyncio.sleep` before it, as on a loaded machine), so the
  rebuild asked for by the Sets view runs after Escape removed it: no error, none logged.
  Each round stays on Enqueue at 40x12: going to the Dashboard and back between rounds
  and a larger screen only added drawing (with the footer's guard gone, every round of
  this cheaper replay still ends in NoScreen, so a few rounds find what 50 did: the
  guard removed is red at 3 rounds as at 50, and each of its three checks removed
  alone passes at both).
- Any exception in a message handler or a thread worker is one line in a notice and in
  the error log beside lab.db (or under `$XDG_STATE_HOME/lab/` when lab.db's folder
  cannot be written), and the console stays up; one it cannot go on after ends
  `lab console` with that line, non-zero.
- A lab.db in a read-only folder with no `-wal`/`-shm` beside it opens READ-ONLY.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import cast

import pytest

from console import logs
from console.app import LabApp
from console.cli.console import open_console
from console.screens.base import LabScreen
from console.screens.dashboard import DashboardScreen
from console.screens.enqueue import EnqueueScreen
from console.screens.sets import SetsScreen
from console.widgets.footer import LabFooter
from core import store
from core.demo_set import ensure_demo_set
from core.errors import LabError, StoreError
from tests.helpers.console import build, console_app, copy_db, settle
from tests.helpers.waiting import pause_until

ROUNDS = 5


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo questions and set, built once."""
    path = tmp_path_factory.mktemp("crashes") / "lab.db"
    db = store.connect(path)
    ensure_demo_set(db)
    db.conn.close()
    return path


@pytest.fixture
def lab_db(built: Path, tmp_path: Path) -> Path:
    """A private copy of it in the test's directory."""
    return copy_db(built, tmp_path / "lab.db")


@pytest.fixture
def slow_footer(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every footer rebuild waits a little first: the screen it was asked for may be gone."""
    rebuild = LabFooter.recompose

    async def slow(self: LabFooter) -> None:
        await asyncio.sleep(0.02)
        await rebuild(self)

    monkeypatch.setattr(LabFooter, "recompose", slow)


@pytest.mark.asyncio
async def test_leaving_sets_at_once_round_after_round_under_a_slow_loop(
        lab_db: Path, slow_footer: None) -> None:
    app = console_app(lab_db)
    async with app.run_test(size=(40, 12)) as pilot:
        await pilot.press("3")
        for _ in range(ROUNDS):
            for key in ("s", "escape", "escape"):
                await pilot.press(key)
            await asyncio.sleep(0.03)  # the slowed rebuilds run now, their screen gone
            await pilot.pause()
            assert isinstance(app.screen, EnqueueScreen), app.errors
        await settle(pilot)
        assert app.errors == [] and app.is_running
    assert not (logs.log_dir(lab_db) / logs.ERROR_LOG).exists()


@pytest.mark.asyncio
@pytest.mark.parametrize("key", list("234567"))
async def test_a_screen_opened_by_the_last_key_closes_cleanly(lab_db: Path, key: str) -> None:
    """The console closes right after the key that opened a screen: the footer, asking
    the screen for its keys once more, must not find it without its views (the
    Trajectories screen raised NoMatches there)."""
    app = console_app(lab_db)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press(key)
        await pilot.pause()
    assert app.errors == []
    assert not (logs.log_dir(lab_db) / logs.ERROR_LOG).exists()


@pytest.fixture
def toasts(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every notice the console shows (kept: a loaded machine may outlast its timeout)."""
    shown: list[str] = []
    notify = LabApp.notify

    def keep(self: LabApp, message: str, **kwargs: object) -> None:
        shown.append(str(message))
        notify(self, message, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(LabApp, "notify", keep)
    return shown


def _logged(db: Path) -> str:
    return (logs.log_dir(db) / logs.ERROR_LOG).read_text(encoding="utf-8")


@pytest.mark.asyncio
async def test_an_error_in_a_handler_is_a_notice_and_a_log_line(
        lab_db: Path, monkeypatch: pytest.MonkeyPatch, toasts: list[str]) -> None:
    def broken(self: DashboardScreen, message: object) -> None:
        raise RuntimeError("the queue panel broke\nsecond line")

    monkeypatch.setattr(DashboardScreen, "on_dashboard_screen_read", broken)
    app = console_app(lab_db)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        # one line per failed read, its first line only; a loaded machine may let the
        # Dashboard read twice before the test looks, so count lines, not reads
        assert app.errors and set(app.errors) == {"RuntimeError: the queue panel broke"}
        assert any(t.startswith("RuntimeError: the queue panel broke (details in ")
                   for t in toasts)
        await pilot.press("4")  # the console goes on
        await settle(pilot)
        assert app.is_running and cast(LabScreen, app.screen).screen_name() == "4 Jobs"
        app._exception = None  # caught on purpose: the harness must not re-raise it
    text = _logged(lab_db)
    assert "error: RuntimeError: the queue panel broke\n" in text
    assert "    Traceback (most recent call last):" in text and "in broken" in text


@pytest.mark.asyncio
async def test_an_error_in_a_thread_worker_is_a_notice(lab_db: Path,
                                                       monkeypatch: pytest.MonkeyPatch,
                                                       toasts: list[str]) -> None:
    import console.screens.dashboard as dashboard

    def broken(*args: object) -> None:
        raise sqlite3.DatabaseError("database disk image is malformed")

    monkeypatch.setattr(dashboard, "read_spend", broken)
    app = console_app(lab_db)
    async with app.run_test(size=(80, 24)) as pilot:
        await pause_until(pilot, lambda: app.errors, "the worker's error")
        await pause_until(pilot, lambda: "queued" in str(
            app.screen.query_one("#queue-text").render()), "the queue panel")
        assert app.errors == ["DatabaseError: database disk image is malformed"]
        assert any(t.startswith("DatabaseError: database disk image is malformed (details ")
                   for t in toasts), toasts
        await pilot.press("4")
        await pause_until(pilot, lambda: cast(LabScreen, app.screen).screen_name() == "4 Jobs",
                          "Jobs")
        app._exception = None
    assert "error: DatabaseError: database disk image is malformed" in _logged(lab_db)


def test_an_error_it_cannot_go_on_after_ends_lab_console_non_zero(
        lab_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(self: LabApp) -> None:
        raise RuntimeError("no first screen")

    monkeypatch.setattr(LabApp, "on_mount", broken)
    seen: list[LabApp] = []

    def run(app: object) -> None:
        assert isinstance(app, LabApp)
        seen.append(app)
        app.run(headless=True, size=(80, 24))

    with pytest.raises(LabError) as caught:
        open_console(lab_db, Path("lab.toml"), Path("exports"), run=run)
    assert str(caught.value).startswith("the console stopped: RuntimeError: no first screen "
                                        "(details in ")
    assert "\n" not in str(caught.value)
    assert seen[0].return_code == 1
    assert "error: RuntimeError: no first screen" in _logged(lab_db)


def test_the_log_moves_to_the_state_folder_when_lab_db_s_folder_is_read_only(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setattr(logs, "_writable", lambda folder: False)
    folder = logs.log_dir(tmp_path / "ro" / "lab.db")
    assert folder.parent == tmp_path / "state" / "lab" and folder.is_dir()
    assert logs.record_error(folder, "ValueError: x") == folder / logs.ERROR_LOG


# --- a read-only folder ---------------------------------------------------------------------

@pytest.fixture
def read_only_folder(tmp_path: Path) -> Iterator[Path]:
    """A lab.db with a grid in a folder nothing can be created in, no -wal/-shm beside it:
    `chattr +i` on the folder as root (root ignores modes), mode 0555 otherwise."""
    folder = tmp_path / "ro"
    folder.mkdir()
    path = build(folder / "lab.db", run=False)
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    for extra in folder.iterdir():
        if extra != path:
            shutil.rmtree(extra) if extra.is_dir() else extra.unlink()
    if os.geteuid() == 0:
        if shutil.which("chattr") is None or subprocess.run(
                ["chattr", "+i", str(folder)], capture_output=True).returncode != 0:
            pytest.skip("chattr +i is not available here")
        undo = ["chattr", "-i", str(folder)]
    else:
        folder.chmod(0o555)
        undo = ["chmod", "755", str(folder)]
    try:
        try:
            (folder / "probe").touch()
        except OSError:
            pass
        else:
            pytest.skip("could not make the folder read-only here")
        yield path
    finally:
        subprocess.run(undo, check=True)


def test_the_store_falls_back_to_read_only_only_when_asked(read_only_folder: Path) -> None:
    with pytest.raises(StoreError, match="cannot open the database"):
        store.connect(read_only_folder, create=False)  # `lab status`: one line, as before
    db = store.connect(read_only_folder, read_only_fallback=True)
    try:
        assert db.conn.execute("SELECT count(*) FROM jobs").fetchone()[0] > 0
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            db.conn.execute("DELETE FROM jobs")
    finally:
        db.conn.close()


@pytest.mark.asyncio
async def test_a_read_only_folder_opens_read_only(read_only_folder: Path,
                                                  monkeypatch: pytest.MonkeyPatch,
                                                  tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    app = console_app(read_only_folder)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert app.read_only is not None and "READ-ONLY" in app.title
        assert "queued" in str(app.screen.query_one("#queue-text").render())
        for key in ("4", "3", "s", "escape", "7", "1"):
            await pilot.press(key)
            await settle(pilot)
        assert isinstance(app.screen, DashboardScreen) and app.errors == []
    assert not SetsScreen().is_attached
