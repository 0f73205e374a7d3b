"""q, ctrl+c and ctrl+z behave as in other terminal programs: q inside a drill-down goes
back one level (never quits), ctrl+c quits cleanly with the same question as q when text
is unsaved (not Textual's "press ctrl+q" notice), ctrl+z suspends the console or says
why it cannot."""

from __future__ import annotations

import os
import shutil
import signal
from collections.abc import Callable
from pathlib import Path
from typing import cast

import pytest
from rich.text import Text
from textual.geometry import Offset
from textual.pilot import Pilot
from textual.screen import Screen
from textual.selection import Selection
from textual.widgets import DataTable, OptionList, Select, Static, TextArea

from console.screens.help import HelpScreen
from console.screens.prereg.modals import FreezeConfirm, TitlePrompt
from console.screens.results import ResultsScreen
from console.screens.sets import SetsScreen
from console.screens.trajectories import TrajectoriesScreen
from console.widgets.confirm import Choose, Confirm
from console.widgets.sets_forms import ImportForm, SetForm
from console.widgets.workers import StartForm, WorkerLogs
from core import prereg, store
from tests.helpers.console import build, console_app, settle
from tests.helpers.notices import said
from tests.helpers.waiting import pause_until


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
        screen = cast(TrajectoriesScreen, app.screen)
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
async def test_q_on_a_delta_cells_decisions_goes_back_to_the_grid(lab_db: Path) -> None:
    app = console_app(lab_db, first_screen="results")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        screen = cast(ResultsScreen, app.screen)
        await pilot.press("right_square_bracket")
        await pause_until(pilot, lambda: screen._body() == "results-delta", "the Δ grid")
        await settle(pilot)
        await pilot.press("enter")
        await pause_until(pilot, lambda: screen._body() == "results-drill", "the decisions")
        await pilot.press("q")
        await settle(pilot)
        assert app.return_code is None and screen._body() == "results-delta"


@pytest.mark.asyncio
async def test_q_in_lives_pick_list_closes_it_then_quits(lab_db: Path) -> None:
    app = console_app(lab_db, first_screen="live")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        pick = app.screen.query_one("#live-pick", DataTable)
        await pilot.press("o")
        await settle(pilot)
        assert not pick.has_class("hidden")
        await pilot.press("q")
        await settle(pilot)
        assert app.return_code is None and pick.has_class("hidden")
        await pilot.press("q")
        await pilot.pause()
        assert app.return_code == 0


@pytest.mark.asyncio
async def test_ctrl_c_quits_without_textuals_notice(lab_db: Path) -> None:
    app = console_app(lab_db)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+c")
        await pilot.pause()
        assert app.return_code == 0
        assert not any("to quit" in n.message for n in said(app))


@pytest.mark.asyncio
async def test_ctrl_c_with_a_selection_copies_it_then_quits(lab_db: Path) -> None:
    """Text selected with the mouse: ctrl+c copies it and says so (the console stays);
    the selection is then cleared, so the next ctrl+c quits as before."""
    app = console_app(lab_db)
    copied: list[str] = []
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        app.__setattr__("copy_to_clipboard", copied.append)  # mypy refuses assigning a method
        queue = app.screen.query_one("#queue-text", Static)
        app.screen.selections = {queue: Selection.from_offsets(Offset(0, 0), Offset(4, 0))}
        await pilot.press("ctrl+c")
        await pilot.pause()
        assert app.return_code is None and copied == ["jobs"]
        assert any("copied 4 characters" in n.message for n in said(app))
        await pilot.press("ctrl+c")
        await pilot.pause()
        assert app.return_code == 0 and copied == ["jobs"]


async def _unsaved_editor_text(pilot: Pilot[None]) -> None:
    """On Pre-registration: open the editor, type into the body, focus the list (the
    text stays unsaved)."""
    await settle(pilot)
    await pilot.press("e")
    await settle(pilot)
    body = pilot.app.screen.query_one("#editor-body", TextArea)
    body.move_cursor(body.document.end)
    await pilot.press("x")
    pilot.app.screen.query_one("#prereg-list", OptionList).focus()


@pytest.mark.asyncio
async def test_ctrl_c_with_unsaved_text_asks_like_q(lab_db: Path) -> None:
    app = console_app(lab_db, first_screen="prereg")
    async with app.run_test(size=(80, 24)) as pilot:
        await _unsaved_editor_text(pilot)
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
        assert any("cannot suspend" in n.message for n in said(app))
        sent: list[tuple[int, int]] = []
        monkeypatch.setattr(type(app._driver), "can_suspend", property(lambda self: True))
        monkeypatch.setattr(os, "kill", lambda pid, sig: sent.append((pid, sig)))
        monkeypatch.setattr(app, "_suspend_signal", lambda: None)
        await pilot.press("ctrl+z")
        await pilot.pause()
        assert sent == [(os.getpid(), signal.SIGTSTP)]
        assert app.return_code is None


def _dialogs(tmp: Path) -> dict[str, Callable[[], Screen]]:
    """Every kind of dialog, form and panel the console pushes over a screen."""
    return {
        "confirm": lambda: Confirm("Pause grid 1 of run fixture?", "16 jobs"),
        "choose": lambda: Choose("Which?", "", [("a", "a", "one"), ("b", "b", "two")], "a"),
        "freeze": lambda: FreezeConfirm("A1", Text("models: sim-never"), "no"),
        "title": lambda: TitlePrompt("Title of the new draft amendment:"),
        "set form": lambda: SetForm([("demo", "demo")], ["demo"]),
        "import form": ImportForm,
        "start workers": StartForm,
        "worker logs": lambda: WorkerLogs(tmp, {}),
        "help": lambda: HelpScreen("1 Dashboard", "", [("r", "Reload", "this screen")]),
    }


@pytest.mark.asyncio
@pytest.mark.parametrize("kind", ["confirm", "choose", "freeze", "title", "set form",
                                  "import form", "start workers", "worker logs", "help",
                                  "palette", "picker"])
async def test_ctrl_c_on_a_dialog_quits_as_on_a_screen(lab_db: Path, tmp_path: Path,
                                                       kind: str) -> None:
    """A dialog, a form, the help or the command palette over a screen: ctrl+c quits
    (Textual stops the key at the topmost modal screen, where it did nothing). A form
    whose first field selects its text on focus (the workers' count) copies that first
    and says so, as a text field on a screen does; the next ctrl+c quits."""
    app = console_app(lab_db)
    copied: list[str] = []
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        app.__setattr__("copy_to_clipboard", copied.append)  # mypy refuses assigning a method
        if kind == "palette":
            await pilot.press("ctrl+p")
        elif kind == "picker":  # Enqueue's set picker, opened over the form
            await pilot.press("3")
            await settle(pilot)
            picker = app.screen.query_one("#enq-set", Select)
            picker.focus()
            await pilot.press("enter")
            await settle(pilot)
            assert picker.expanded
        else:
            app.push_screen(_dialogs(tmp_path)[kind]())
        await settle(pilot)
        assert app.screen.is_modal or kind == "picker"
        await pilot.press("ctrl+c")
        await pilot.pause()
        if kind == "start workers":
            assert app.return_code is None and copied == ["1"]
            assert any("copied 1 character " in n.message for n in said(app))
            await pilot.press("ctrl+c")
            await pilot.pause()
        assert app.return_code == 0


@pytest.mark.asyncio
async def test_ctrl_c_on_a_dialog_copies_its_selection_and_says_so(lab_db: Path) -> None:
    app = console_app(lab_db)
    copied: list[str] = []
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        app.__setattr__("copy_to_clipboard", copied.append)  # mypy refuses assigning a method
        app.push_screen(Confirm("Pause grid 1 of run fixture?", "16 jobs"))
        await settle(pilot)
        question = app.screen.query_one("#ask-question", Static)
        app.screen.selections = {question: Selection.from_offsets(Offset(0, 0),
                                                                  Offset(5, 0))}
        await pilot.press("ctrl+c")
        await pilot.pause()
        assert app.return_code is None and copied == ["Pause"]
        assert any("copied 5 characters" in n.message for n in said(app))
        assert isinstance(app.screen, Confirm)


@pytest.mark.asyncio
async def test_ctrl_c_on_the_help_over_unsaved_text_asks_once(lab_db: Path) -> None:
    """Unsaved editor text under the help: ctrl+c asks save / discard / stay as on the
    screen, and a second ctrl+c on that question keeps the one question (never a second
    one over it); d then quits."""
    app = console_app(lab_db, first_screen="prereg")
    async with app.run_test(size=(80, 24)) as pilot:
        await _unsaved_editor_text(pilot)
        await pilot.press("question_mark")
        await settle(pilot)
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("ctrl+c")
        await settle(pilot)
        assert app.return_code is None and isinstance(app.screen, Choose)
        await pilot.press("ctrl+c")
        await settle(pilot)
        assert app.return_code is None
        assert sum(isinstance(s, Choose) for s in app.screen_stack) == 1
        await pilot.press("d")
        await settle(pilot)
        assert app.return_code == 0
