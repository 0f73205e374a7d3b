"""What the Results screen does for a visit, beyond what it shows: the first view is
computed once, asked for while the screen is composed (before its first read stamp, so
lab.db is read while Textual mounts and draws the screen), and the Δ grid's table is
never laid out as text it does not show (docs/performance.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import DataTable

from console.app import ConsoleConfig, LabApp, make_app
from console.screens.results.screen import ResultsScreen
from tests.helpers.console import FIXED_TS, copy_db, wait_workers
from tests.helpers.notices import said


@pytest.fixture
def lab_db(trajectories_db: Path, tmp_path: Path) -> Path:
    """A private copy of the fixture lab.db (two sims × two arms × three regimes)."""
    target = tmp_path / "lab.db"
    copy_db(trajectories_db, target)
    return target


def _app(db: Path, first: str = "dashboard") -> LabApp:
    return make_app(db, ConsoleConfig(warm_up=False, db_path=db, first_screen=first,
                                      clock=lambda: FIXED_TS, n_boot=50, hazard_boot=50))


async def _settle(pilot: Pilot[None]) -> None:
    await pilot.pause()
    await wait_workers(pilot.app)
    await pilot.pause()


@pytest.mark.asyncio
async def test_the_first_view_is_asked_once_while_the_screen_is_composed(
        lab_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[tuple[str, bool]] = []
    real = ResultsScreen._compute

    def counted(self: ResultsScreen, view: str, *args: Any) -> Any:
        asked.append((view, self.read_at is None))
        return real(self, view, *args)

    monkeypatch.setattr(ResultsScreen, "_compute", counted)
    app = _app(lab_db)
    async with app.run_test(size=(80, 24)) as pilot:
        await _settle(pilot)
        await pilot.press("7")
        await _settle(pilot)
        screen = app.screen
        assert isinstance(screen, ResultsScreen)
        assert asked == [("success", True)]  # once, before the screen's first read
        assert "success" in screen._computed and screen.read_at is not None
        assert "Success per regime" in str(screen.query_one("#results-text").render())
        await pilot.press("r")  # a reload asks again, once
        await _settle(pilot)
        assert asked == [("success", True), ("success", False)]


@pytest.mark.asyncio
async def test_the_delta_grid_is_not_laid_out_as_text(lab_db: Path) -> None:
    app = _app(lab_db, first="results")
    async with app.run_test(size=(80, 24)) as pilot:
        await _settle(pilot)
        screen = app.screen
        assert isinstance(screen, ResultsScreen)
        await pilot.press("right_square_bracket")
        await _settle(pilot)
        assert screen.view == "delta" and screen._body() == "results-delta"
        computed = screen._computed["delta"]
        assert computed.layout is None and computed.text == ""
        assert screen.query_one("#results-grid", DataTable).row_count == 2  # the grid is drawn
        await pilot.press("right_square_bracket")  # the next view is text, laid out
        await _settle(pilot)
        assert screen._computed["index"].layout is not None
        await pilot.resize_terminal(100, 30)  # back on the grid at another width: still not
        await _settle(pilot)
        await pilot.press("left_square_bracket")
        await _settle(pilot)
        assert screen._body() == "results-delta" and screen._computed["delta"].layout is None


@pytest.mark.asyncio
async def test_table_keys_are_dimmed_while_computing_then_lit_where_they_sit(
        lab_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import threading

    from textual.widgets._footer import FooterKey

    import analysis.tables.results as results_module
    from console.widgets.footer import LabFooter

    gate = threading.Event()
    real = results_module.results_for

    def held(*args: Any, **kwargs: Any) -> Any:
        gate.wait()  # the test looks at the footer while the table is being computed
        return real(*args, **kwargs)

    monkeypatch.setattr(results_module, "results_for", held)
    app = _app(lab_db)
    async with app.run_test(size=(80, 24)) as pilot:
        try:
            await _settle(pilot)
            await pilot.press("7")
            for _ in range(3):
                await pilot.pause()
            screen = app.screen
            assert isinstance(screen, ResultsScreen) and "success" not in screen._computed
            footer = screen.query_one(LabFooter)
            before = {k.key: k for k in footer.query(FooterKey)}
            assert {"slash", "s", "c"} <= before.keys()
            assert all(before[k].has_class("-disabled") for k in ("slash", "s", "c"))
        finally:
            gate.set()  # the worker never waits beyond the test
        await _settle(pilot)
        await pilot.pause()
        assert "success" in screen._computed
        after = {k.key: k for k in footer.query(FooterKey)}
        assert after.keys() == before.keys() and all(after[k] is before[k] for k in after)
        assert not any(after[k].has_class("-disabled") for k in ("slash", "s", "c"))


@pytest.mark.asyncio
async def test_hazard_shows_the_first_models_chart_then_every_models(
        lab_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first: list[int] = []
    real = ResultsScreen.on_results_screen_ready

    def ready(self: ResultsScreen, message: ResultsScreen.Ready) -> None:
        if message.computed.view == "hazard":
            first.append(len(message.computed.charts))
        real(self, message)

    monkeypatch.setattr(ResultsScreen, "on_results_screen_ready", ready)
    app = _app(lab_db, first="results")
    async with app.run_test(size=(80, 24)) as pilot:
        await _settle(pilot)
        screen = app.screen
        assert isinstance(screen, ResultsScreen)
        for _ in range(3):  # Success, Δ, I, then Hazard
            await pilot.press("right_square_bracket")
            await _settle(pilot)
        assert screen.view == "hazard"
        await _settle(pilot)
        assert first == [1]  # the first frame drew one chart (a screenful)
        computed = screen._computed["hazard"]
        charts = str(screen.query_one("#results-chart").render())
        assert len(computed.charts) == 2 and not computed.more_charts  # both sims, then
        assert "sim-never: P(answer)" in charts and "sim-own5: P(answer)" in charts


@pytest.mark.asyncio
async def test_a_first_view_that_fails_says_so_once(lab_db: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    import analysis.tables.results as results_module
    from core.errors import ConfigError

    calls: list[str] = []

    def failing(*args: Any, **kwargs: Any) -> Any:
        calls.append("results_for")
        raise ConfigError("no such table here")

    monkeypatch.setattr(results_module, "results_for", failing)
    app = _app(lab_db)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await _settle(pilot)
        await pilot.press("7")
        await _settle(pilot)
        await _settle(pilot)
        screen = app.screen
        assert isinstance(screen, ResultsScreen)
        assert "no such table here" in str(screen.query_one("#results-status").render())
        told = [n.message for n in said(app) if "no such table" in n.message]
        assert told == ["no such table here"] and calls == ["results_for"]
