"""The console shell: digit keys, help, palette, pause, quit, and how `lab` / `lab console`
open it (a missing lab.db only after a yes on the terminal; no terminal → help or an error)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from textual.widgets import DataTable

from console.app import LabApp
from console.cli import cli
from console.cli import console as console_cmd
from console.screens import SCREENS
from console.screens.help import HelpScreen
from core import store
from tests.helpers.console import build, console_app, copy_db, settle
from tests.helpers.queue import run_lab
from tests.helpers.waiting import pause_until


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A lab.db with a queued (not run) sim grid, built once per module."""
    return build(tmp_path_factory.mktemp("app") / "lab.db", run=False)


@pytest.fixture
def lab_db(built: Path, tmp_path: Path) -> Path:
    """A private copy of it in the test's directory."""
    return copy_db(built, tmp_path / "lab.db")


@pytest.mark.asyncio
async def test_digit_keys_switch_screens(lab_db: Path) -> None:
    app = console_app(lab_db)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        for i, info in enumerate(SCREENS, start=1):
            await pilot.press(str(i))
            await settle(pilot)
            assert app.current_mode == info.mode
            assert type(app.screen).__name__.lower().startswith(info.mode[:4])
        await pilot.press("1")
        assert app.current_mode == "dashboard"


@pytest.mark.asyncio
async def test_help_lists_the_screen_and_app_keys(lab_db: Path) -> None:
    app = console_app(lab_db, first_screen="jobs")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        table = app.screen.query_one("DataTable", DataTable)
        rows = [tuple(str(c) for c in table.get_row_at(i)) for i in range(table.row_count)]
        actions = {r[1] for r in rows}
        assert {"Pause", "Resume", "Cancel", "Retry", "Retry errored", "Filter",
                "Pause refresh", "back from a drill-down, else quit", "copy a selection, else quit",
                "switch screen (not while typing)"} <= actions
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpScreen)
        assert app.current_mode == "jobs"


@pytest.mark.asyncio
async def test_palette_has_every_screen_and_the_screens_actions(lab_db: Path) -> None:
    app = console_app(lab_db, first_screen="live")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        titles = [c.title for c in app.get_system_commands(app.screen)]
        for i, info in enumerate(SCREENS, start=1):
            assert f"{i} {info.title}" in titles
        assert "Live: Follow on/off" in titles and "Live: Pick episode" in titles


@pytest.mark.asyncio
async def test_pause_stops_refresh_and_says_so(lab_db: Path) -> None:
    app = console_app(lab_db, poll_s=0.05)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert app.sub_title == "lab.db"
        await pilot.press("p")
        assert app.paused and "PAUSED" in app.sub_title
        reloads: list[int] = []
        app.screen.__setattr__("reload", lambda: reloads.append(1))  # `screen.reload = ...`
        db = store.connect(lab_db)
        store.jobs.log_event(db, "note", "a commit while paused")
        await pilot.pause(0.3)
        assert reloads == []  # paused: no re-read on commits
        await pilot.press("p")
        await pause_until(pilot, lambda: reloads, "a re-read once refresh resumes")
        assert not app.paused and app.sub_title == "lab.db"


@pytest.mark.asyncio
async def test_q_quits_at_top_level_and_closes_a_modal_first(lab_db: Path) -> None:
    app = console_app(lab_db)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("question_mark")
        await pilot.pause()
        await pilot.press("q")  # closes help, does not quit
        await pilot.pause()
        assert app.is_running and not isinstance(app.screen, HelpScreen)
        await pilot.press("q")
        await pilot.pause()
    assert not app.is_running


def _no_terminal_then(monkeypatch: pytest.MonkeyPatch, stdin: bool, stdout: bool) -> list:
    """Pretend stdin/stdout are (not) terminals; record the app instead of running it."""
    ran: list[LabApp] = []
    monkeypatch.setattr(console_cmd, "is_tty",
                        lambda stream: stdin if stream == "stdin" else stdout)
    monkeypatch.setattr(LabApp, "run", lambda self, *a, **k: ran.append(self))
    return ran


def test_missing_db_created_only_after_yes(tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "new.db"
    ran = _no_terminal_then(monkeypatch, stdin=True, stdout=True)
    no = CliRunner().invoke(cli, ["--db", str(db), "console"], input="n\n")
    assert "new.db does not exist; create it? [y/N]" in no.output
    assert no.exit_code != 0 and not db.exists() and ran == []
    yes = CliRunner().invoke(cli, ["--db", str(db), "console", "--export-dir", "out"],
                             input="y\n")
    assert yes.exit_code == 0, yes.output
    assert db.exists() and "created" in yes.output
    assert len(ran) == 1 and ran[0].config.db_path == db
    assert ran[0].config.export_dir == Path("out")
    assert store.question_set(store.connect(db), "demo")["n"] > 0
    again = CliRunner().invoke(cli, ["--db", str(db)], input="")  # `lab` alone: no question
    assert again.exit_code == 0 and "create it?" not in again.output and len(ran) == 2


def test_missing_db_without_a_terminal_is_one_error_line(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "new.db"
    ran = _no_terminal_then(monkeypatch, stdin=False, stdout=True)
    result = CliRunner().invoke(cli, ["--db", str(db), "console"])
    assert result.exit_code != 0 and not db.exists() and ran == []
    assert "does not exist" in str(result.exception)


def test_no_terminal_on_stdout(tmp_path: Path) -> None:
    db = tmp_path / "lab.db"
    config = tmp_path / "lab.toml"
    config.write_text("")  # no models beyond the built-in sims
    alone = run_lab(db, config)
    assert alone.returncode == 0
    assert "Usage:" in alone.stdout and "the console needs a terminal" in alone.stdout
    console = run_lab(db, config, "console")
    assert console.returncode != 0
    assert console.stderr.strip().startswith("error: the console needs a terminal")
    assert len(console.stderr.strip().splitlines()) == 1 and not db.exists()


@pytest.mark.asyncio
async def test_switching_screens_for_long_keeps_no_dead_footer_keys(lab_db: Path) -> None:
    """Found by a soak run: each switch rebuilt the footer's keys and Textual kept the old ones
    alive through the footer's watcher list (the console grew ~0.3 MB per switch)."""
    import gc

    from textual.widgets._footer import FooterKey

    def footer_keys() -> int:
        gc.collect()
        return sum(isinstance(o, FooterKey) for o in gc.get_objects())

    app = console_app(lab_db)
    async with app.run_test(size=(80, 24)) as pilot:
        for i in range(4):
            await pilot.press(str(1 + i % 4))
            await settle(pilot)
        before = footer_keys()
        for i in range(8):
            await pilot.press(str(1 + i % 4))
            await settle(pilot)
        assert footer_keys() <= before


@pytest.mark.asyncio
async def test_footer_rebuilds_only_when_its_keys_change(lab_db: Path) -> None:
    """A screen's first show asked the footer for eight rebuilds of the same keys (a third
    of the visit); it rebuilds only when what it shows changes (here: a wider terminal)."""
    from textual.widgets._footer import FooterKey

    from console.widgets.footer import LabFooter

    app = console_app(lab_db, first_screen="jobs")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        footer = app.screen.query_one(LabFooter)
        keys = list(footer.query(FooterKey))
        assert keys
        await footer.recompose()
        await pilot.pause()
        assert list(footer.query(FooterKey)) == keys  # the same widgets: nothing rebuilt
        await pilot.resize_terminal(160, 24)
        await settle(pilot)
        await pilot.pause(0.1)
        wider = list(footer.query(FooterKey))
        assert len(wider) > len(keys) and "Reload" in footer.text()
