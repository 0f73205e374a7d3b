"""Results mounted unseen at the end of the warm-up (`console.warmup.PREMOUNT`): its first
visit shows exactly what a screen mounted on the visit shows, and it reads lab.db only
when shown, so episodes written after the warm-up are in its first numbers
(docs/performance.md, the Results screen's first visit)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, cast

import pytest
from textual.pilot import Pilot

from console.app import ConsoleConfig, LabApp, make_app
from console.screens.results.screen import ResultsScreen
from console.widgets.footer import LabFooter
from jobs.grid import GridRequest
from tests.helpers.console import FIXED_TS, build, copy_db, settle
from tests.helpers.waiting import pause_until


@pytest.fixture
def lab_db(trajectories_db: Path, tmp_path: Path) -> Path:
    """A private copy of the fixture lab.db (two sims × two arms × three regimes)."""
    target = tmp_path / "lab.db"
    copy_db(trajectories_db, target)
    return target


def _app(db: Path, warm_up: bool) -> LabApp:
    return make_app(db, ConsoleConfig(warm_up=warm_up, db_path=db, clock=lambda: FIXED_TS,
                                      check_endpoints=False, n_boot=50, hazard_boot=50))


async def _warm(pilot: Pilot[None]) -> ResultsScreen:
    """Wait for the warm-up; the Results screen it mounted unseen."""
    app = cast(LabApp, pilot.app)
    await pause_until(pilot, lambda: app.warm, "the warm-up")
    unseen = app.mode_screen("results")
    assert isinstance(unseen, ResultsScreen) and unseen.is_mounted
    assert app.screen is not unseen and unseen.premounted
    return unseen


def _screen_text(app: Any) -> str:
    """The whole screen as drawn (the SVG's terminal id made stable)."""
    return re.sub(r"terminal-\d+", "terminal", app.export_screenshot())


@pytest.mark.asyncio
async def test_results_mounted_unseen_shows_what_a_screen_mounted_on_the_visit_shows(
        lab_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[str] = []
    real = ResultsScreen._compute

    def counted(self: ResultsScreen, view: str, *args: Any) -> Any:
        asked.append(view)
        return real(self, view, *args)

    monkeypatch.setattr(ResultsScreen, "_compute", counted)
    shown: dict[bool, tuple[str, str]] = {}
    for warm_up in (False, True):
        app = _app(lab_db, warm_up)
        async with app.run_test(size=(80, 24)) as pilot:
            await settle(pilot)
            if warm_up:
                unseen = await _warm(pilot)
                # mounted, laid out, its footer built, but nothing read before it is shown
                assert unseen.read_at is None and asked == ["success"]  # the other console's
                assert str(unseen.query_one("#results-prov").render()) == "reading runs…"
                assert unseen.query_one("#results-text-view").has_focus
            await pilot.press("7")
            await settle(pilot)
            screen = app.screen
            assert isinstance(screen, ResultsScreen) and "success" in screen._computed
            assert not screen.premounted and screen.read_at == FIXED_TS
            shown[warm_up] = (_screen_text(app), screen.query_one(LabFooter).text())
    assert asked == ["success", "success"]  # once per console, on the visit
    assert shown[True][1] == shown[False][1]
    assert shown[True][0] == shown[False][0]


@pytest.mark.asyncio
async def test_results_mounted_unseen_reads_the_episodes_written_before_its_first_visit(
        lab_db: Path) -> None:
    app = _app(lab_db, warm_up=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await _warm(pilot)
        build(lab_db, GridRequest(models=("sim-never",), conditions=("none",),
                                  regimes=("clean",), question_set="demo", run="later"))
        await pilot.press("7")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, ResultsScreen)
        provenance = str(screen.query_one("#results-prov").render())
        assert "later: EXPLORATORY" in provenance
        assert "later" in screen._computed["success"].text


@pytest.mark.asyncio
async def test_footer_keys_rebuilt_by_the_apps_message_pump_keep_the_console_up(lab_db: Path
                                                                               ) -> None:
    """The warm-up rebuilds a premounted screen's footer keys from the app's message pump,
    not the footer's; a key bound to the footer's `compact` (Textual's Footer does so)
    raised ReactiveError there whenever the keys had changed since they were mounted, and
    the console ended after its first frame (seen once in a bench run)."""
    app = _app(lab_db, warm_up=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        footer = app.screen.query_one(LabFooter)
        shown = footer.text()
        footer._planned = ()  # the keys changed since they were mounted

        async def rebuild() -> None:
            await footer.recompose()

        app.call_later(rebuild)  # run as the app's message pump, as the warm-up does
        await settle(pilot)
        assert app.is_running and app._exception is None
        assert footer.text() == shown and "Help" in shown
