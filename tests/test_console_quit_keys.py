"""q, ctrl+c and ctrl+z behave as in other terminal programs: q inside a drill-down goes
back one level (never quits), ctrl+c quits cleanly with the same question as q when text
is unsaved (not Textual's "press ctrl+q" notice), ctrl+z suspends the console or says
why it cannot."""

from __future__ import annotations

import os
import shutil
import signal
from pathlib import Path

import pytest
from textual.geometry import Offset
from textual.selection import Selection
from textual.widgets import DataTable, OptionList, Static, TextArea

from console.screens.sets import SetsScreen
from console.widgets.confirm import Choose
from core import prereg, store
from tests.helpers.console import build, console_app, settle


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A lab.db with a run sim grid and a draft amendment A1."""
    path = build(tmp_path_factory.mktemp("quit") / "lab.db", run=True)
    db = store.connect(path)
    prereg.create(db, "A draft", "Its body.")
    db.conn.close()
    return path


@pytest.fixture
def lab_db(built: Path, tmp_path: Path) -> Path:
    for suffix in ("", "-wal", "-shm"):
        if Path(str(built) + suffix).exists():
            shutil.copy(str(built) + suffix, str(tmp_path / "lab.db") + suffix)
    return tmp_path / "lab.db"


@pytest.mark.asyncio
async def test_q_in_an_episode_goes_back_to_the_list_then_quits(lab_db: Path) -> None:
    app = console_app(lab_db, first_screen="trajectories")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        screen = app.screen
        screen.query_one("#traj-list", DataTable).focus()
        await pilot.press("enter")
        await settle(pilot)
        assert screen.view == "traj-episode"
        await pilot.press("q")
        await settle(pilot)
        assert app.return_code is None and screen.view == "traj-list"
        await pilot.press("q")
        await pilot.pause()
        assert app.return_code == 0


@pytest.mark.asyncio
async def test_q_in_the_sets_view_goes_back_to_enqueue(lab_db: Path) -> None:
    app = console_app(lab_db, first_screen="enqueue")
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        enqueue = app.screen
        await pilot.press("escape", "s")
        await settle(pilot)
        assert isinstance(app.screen, SetsScreen)
        await pilot.press("q")
        await settle(pilot)
        assert app.return_code is None and app.screen is enqueue


@pytest.mark.asyncio
async def test_ctrl_c_quits_without_textuals_notice(lab_db: Path) -> None:
    app = console_app(lab_db)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+c")
        await pilot.pause()
        assert app.return_code == 0
        assert not any("to quit" in n.message for n in app._notifications)


@pytest.mark.asyncio
async def test_ctrl_c_with_a_selection_copies_it_then_quits(lab_db: Path) -> None:
    """Text selected with the mouse: ctrl+c copies it and says so (the console stays);
    the selection is then cleared, so the next ctrl+c quits as before."""
    app = console_app(lab_db)
    copied: list[str] = []
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        app.copy_to_clipboard = copied.append
        queue = app.screen.query_one("#queue-text", Static)
        app.screen.selections = {queue: Selection.from_offsets(Offset(0, 0), Offset(4, 0))}
        await pilot.press("ctrl+c")
        await pilot.pause()
        assert app.return_code is None and copied == ["jobs"]
        assert any("copied 4 characters" in n.message for n in app._notifications)
        await pilot.press("ctrl+c")
        await pilot.pause()
        assert app.return_code == 0 and copied == ["jobs"]


@pytest.mark.asyncio
async def test_ctrl_c_with_unsaved_text_asks_like_q(lab_db: Path) -> None:
    app = console_app(lab_db, first_screen="prereg")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("e")
        await settle(pilot)
        body = app.screen.query_one("#editor-body", TextArea)
        body.move_cursor(body.document.end)
        await pilot.press("x")
        app.screen.query_one("#prereg-list", OptionList).focus()
        await pilot.press("ctrl+c")
        await settle(pilot)
        assert app.return_code is None and isinstance(app.screen, Choose)
        await pilot.press("d")
        await settle(pilot)
        assert app.return_code == 0


@pytest.mark.asyncio
async def test_ctrl_z_suspends_or_says_why_not(lab_db: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    app = console_app(lab_db)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+z")  # the test's terminal cannot suspend
        await pilot.pause()
        assert any("cannot suspend" in n.message for n in app._notifications)
        sent: list[tuple[int, int]] = []
        monkeypatch.setattr(type(app._driver), "can_suspend", property(lambda self: True))
        monkeypatch.setattr(os, "kill", lambda pid, sig: sent.append((pid, sig)))
        monkeypatch.setattr(app, "_suspend_signal", lambda: None)
        await pilot.press("ctrl+z")
        await pilot.pause()
        assert sent == [(os.getpid(), signal.SIGTSTP)]
        assert app.return_code is None
