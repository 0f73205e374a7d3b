"""The console's figures and report: `F` on Results writes the figure of the
table shown (its path in a toast), `W` on the Dashboard writes the report; both into the
console's export folder, the same files `lab figures` and `lab report` write."""

from __future__ import annotations

import json
from pathlib import Path
from typing import cast

import pytest
from textual.pilot import Pilot
from textual.widgets import Tabs

from console.app import ConsoleConfig, LabApp, make_app
from console.screens.results import ResultsScreen
from tests.helpers.console import FIXED_TS, copy_db, wait_workers
from tests.helpers.html_check import check_html
from tests.helpers.notices import said
from tests.helpers.report_study import RESAMPLES, results_json, study_db
from tests.helpers.waiting import pause_until


@pytest.fixture
def lab_db(tmp_path_factory: pytest.TempPathFactory, tmp_path: Path) -> Path:
    """A private copy of the figures study in the test's directory (the cwd)."""
    target = tmp_path / "lab.db"
    copy_db(study_db(tmp_path_factory), target)
    return target


def _app(db: Path, first: str) -> LabApp:
    return make_app(Path(db.name), ConsoleConfig(warm_up=False,
        db_path=Path(db.name), first_screen=first, export_dir=Path("exports"),
        clock=lambda: FIXED_TS, check_endpoints=False, n_boot=RESAMPLES,
        hazard_boot=RESAMPLES))


async def _settle(pilot: Pilot[None]) -> None:
    await pilot.pause()
    await wait_workers(pilot.app)
    await pilot.pause()


@pytest.mark.asyncio
async def test_f_on_results_writes_the_figure_of_the_table_shown(lab_db: Path) -> None:
    app = _app(lab_db, "results")
    async with app.run_test(size=(100, 30), notifications=True) as pilot:
        await _settle(pilot)
        await pilot.press("F")
        await _settle(pilot)
        (folder,) = Path("exports").glob("figures-success-*")
        notes = [n for n in said(app) if n.title == "export"]
        assert notes and notes[-1].message == f"success_by_regime.png\nwritten in {folder}/"
    assert sorted(p.name for p in folder.iterdir()) == [
        "success_by_regime.json", "success_by_regime.png", "success_by_regime.svg"]
    side = json.loads((folder / "success_by_regime.json").read_text(encoding="utf-8"))
    # the default selection: the primary budget (the study also ran sim-own5 · none at 12)
    assert side["rows"] == [r for r in results_json(lab_db, "success") if r["budget"] == 8]


@pytest.mark.asyncio
async def test_w_on_the_dashboard_writes_the_report(lab_db: Path) -> None:
    app = _app(lab_db, "dashboard")
    async with app.run_test(size=(100, 30), notifications=True) as pilot:
        await _settle(pilot)
        await pilot.press("W")
        await _settle(pilot)
        (report,) = Path("exports").glob("report-*.html")
        notes = [n for n in said(app) if n.title == "report"]
        assert notes and notes[-1].message.startswith(f"{report.name}\nwritten in exports/")
    assert check_html(report.read_text(encoding="utf-8")) == []


@pytest.mark.asyncio
async def test_f_on_a_table_without_a_figure_says_so_and_leaves_no_folder(
        lab_db: Path) -> None:
    """No figure draws the replication table: `F` on its tab says so in a toast and leaves
    no empty figures-VIEW-TIME folder (nor the export folder); a figure skipped for want of
    rows is test_figures' test_no_figure_drawn_leaves_no_empty_folder."""
    app = _app(lab_db, "results")
    async with app.run_test(size=(100, 30), notifications=True) as pilot:
        await _settle(pilot)
        screen = cast(ResultsScreen, app.screen)
        screen.query_one("#results-tabs", Tabs).active = "tab-replication"
        await pause_until(pilot, lambda: "replication" in screen._computed,
                          "the replication table")
        await pilot.press("F")
        await _settle(pilot)
        notes = [n.message for n in said(app)]
        assert "no figure for replication: no figure draws this table" in notes, notes
    assert not Path("exports").exists() or list(Path("exports").iterdir()) == []
