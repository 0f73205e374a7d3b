"""Results screen (key 7): every table, the Δ grid and its drill-down to a trajectory,
export equal to `lab results delta --format csv`, charts, selection, stale marker.

Runs on the Trajectories fixture (two sims × none / enforced_rule:k=2 × three regimes
through the real queue). The screen computes with 200 resamples here (ConsoleConfig's
n_boot; the researcher's default is the CLI's 2,000), the CLI comparisons likewise.
"""

from __future__ import annotations

import csv
import io
import sqlite3
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import cast

import pytest
from click.testing import CliRunner
from textual.dom import DOMNode
from textual.pilot import Pilot
from textual.widgets import DataTable, Tabs

from analysis.measures.delta import DESIGN_A, DESIGN_B
from analysis.measures.drilldown import cell_decisions, select, source_of
from analysis.measures.frames import load_frames
from analysis.tables.compute import compute
from analysis.tables.registry import TRACES, views
from console.app import ConsoleConfig, LabApp, make_app
from console.cli import cli
from console.messages import DbChanged
from console.screens.results import ResultsScreen
from console.screens.results.selection import parse_selection
from console.screens.trajectories import TrajectoriesScreen
from core import store
from core.errors import ConfigError
from core.models.registry import load_registry
from core.probes import ProbeRecord
from core.store.probes import write_probes
from core.store.selection import Selection
from jobs.control import enqueue_grid
from jobs.grid import GridRequest
from jobs.settings import WorkerSettings
from jobs.worker import run_worker
from tests.helpers.console import FIXED_TS, copy_db, wait_workers
from tests.helpers.notices import said
from tests.helpers.snapshots import SnapCompare

TRACE_VIEWS = tuple(v.id for v, t in views() if t.family == TRACES)
"""The views of the second paper's tables on trace states."""


@pytest.fixture
def lab_db(trajectories_db: Path, tmp_path: Path) -> Path:
    """A private copy of the fixture lab.db in the test's directory (the cwd)."""
    target = tmp_path / "lab.db"
    copy_db(trajectories_db, target)
    return target


RESAMPLES = 200
"""Resamples of the screen's and the CLI's intervals in these tests (fast, same numbers)."""


def _app(db: Path) -> LabApp:
    rel = Path(db.name) if db.parent == Path.cwd() else db
    return make_app(rel, ConsoleConfig(warm_up=False, db_path=rel, first_screen="results",
                                       export_dir=Path("exports"), clock=lambda: FIXED_TS,
                                       n_boot=RESAMPLES, hazard_boot=RESAMPLES))


async def _settle(pilot: Pilot[None]) -> None:
    await pilot.pause()
    await wait_workers(pilot.app)
    await pilot.pause()


async def _select(pilot: Pilot[None], selection: str) -> None:
    """Type a selection after `:` as a researcher would, key by key, and let it apply."""
    await pilot.press("colon", *selection, "enter")
    await _settle(pilot)


def _text(screen: DOMNode, selector: str) -> str:
    return str(screen.query_one(selector).render())


# ── pure parts ───────────────────────────────────────────────────────────────────────

def test_drilldown_counts_equal_every_delta_row(lab_db: Path) -> None:
    frames = load_frames(store.connect(lab_db))
    table = compute(frames, ("delta",), n_boot=50).table("delta")
    assert table is not None and len(table.rows) >= 8
    nonempty, sources = 0, [0, 0]  # rows with points: [judgment splits, design splits]
    for row in table.rows:
        d = cell_decisions(select(frames.decisions, row.as_dict()),
                           source_of(row.measure, row.scope))
        assert d.detail == row.detail, (row.model, row.arm, row.scope)
        assert len(d.a) + len(d.b) == row.n
        if d.source == "design":  # the design contrast splits by regime
            assert {p.regime for p in d.a} <= {DESIGN_A} and {p.regime for p in d.b} <= {DESIGN_B}
        else:  # a: every observation so far useless; b: an earlier useful one
            assert all(p.t == p.s for p in d.a) and all(1 <= p.s <= p.t - 2 for p in d.b)
        nonempty += bool(d.a or d.b)
        sources[d.source == "design"] += bool(d.a or d.b)
    assert nonempty >= 4
    assert all(sources), sources  # both kinds of split were checked on real points


def test_selection_parsing() -> None:
    text, sel = parse_selection("run=traj models=sim-own5 conditions=none,enforced_rule:k=2 "
                                "seeds=0 pool=seeds")
    assert sel == Selection(runs=("traj",), seeds=(0,), models=("sim-own5",),
                            conditions=("none", "enforced_rule:k=2"), pool=("seeds",))
    assert parse_selection(text)[1] == sel
    assert parse_selection("")[1] == Selection()
    with pytest.raises(ConfigError, match="not one of"):
        parse_selection("colour=red")
    with pytest.raises(ConfigError, match="cannot pool"):
        parse_selection("pool=models")


# ── the screen ───────────────────────────────────────────────────────────────────────

@pytest.mark.asyncio
async def test_every_table_shows(lab_db: Path) -> None:
    app = _app(lab_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await _settle(pilot)
        screen = cast(ResultsScreen, app.screen)
        assert "traj: EXPLORATORY" in _text(screen, "#results-prov")
        expected = {
            "success": ("Success per regime and mean6", "Paired success differences"),
            "delta": (),
            "index": ("Integration index I",),
            "hazard": ("Hazard model (exploratory)", "beta"),
            "answering": ("Answering", "med.act"),
            "cost": ("Stopping and cost", "TPC"),
            "policies": ("Offline stopping policies", "no answer-now branches"),
            "controllers": ("Confidence-gated controllers", "no answer-now branches"),
        }
        for view, titles in expected.items():
            assert screen.view == view
            text = _text(screen, "#results-text")
            for title in titles:
                assert title in text, (view, title)
            if view == "delta":
                grid = screen.query_one("#results-grid", DataTable)
                assert [str(c.label) for c in grid.columns.values()][1:] == [
                    "none", "enforced_rule:k=2"]
                assert "+0.00" in str(grid.get_row_at(0)[1])
            if view in ("hazard", "answering"):
                chart = _text(screen, "#results-chart")
                assert ("P(answer) after j" if view == "hazard" else "answering at each") in chart
            await pilot.press("right_square_bracket")
            await _settle(pilot)
        for view in TRACE_VIEWS:  # no trace states here: one line saying how to collect them
            assert screen.view == view
            assert "lab traces collect" in _text(screen, "#results-status")
            await pilot.press("right_square_bracket")
            await _settle(pilot)
        assert screen.view == "replication"  # no reference set: how to import one
        assert "lab data import paper-values FILE" in _text(screen, "#results-text")
        await pilot.press("right_square_bracket")
        await _settle(pilot)
        assert screen.view == "success"
        await pilot.press("left_square_bracket")
        await _settle(pilot)
        assert screen.view == "replication"


@pytest.mark.asyncio
async def test_policies_controllers_charts_and_the_repaired_toggle(lab_db: Path) -> None:
    import sqlite3

    def lab(*args: str) -> None:
        r = CliRunner().invoke(cli, ["--db", str(lab_db), *args])
        assert r.exit_code == 0, r.output

    lab("replay", "answer-now", "--run", "traj")
    lab("worker", "--until-idle")
    conn = sqlite3.connect(lab_db)
    with conn:  # one answered episode copied the template; lab repair asks for the answer
        (eid,) = conn.execute("SELECT id FROM episodes WHERE answered = 1 AND correct = 1 "
                              "ORDER BY id LIMIT 1").fetchone()
        conn.execute("UPDATE episodes SET answer = 'your best guess', placeholder = 1, "
                     "correct = 0, em = 0, f1 = 0 WHERE id = ?", (eid,))
    conn.close()
    lab("repair", "--run", "traj")
    lab("worker", "--until-idle")
    app = _app(lab_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await _settle(pilot)
        screen = cast(ResultsScreen, app.screen)
        raw_success = _text(screen, "#results-text")
        for _ in range(6):
            await pilot.press("right_square_bracket")
            await _settle(pilot)
        assert screen.view == "policies"
        text = _text(screen, "#results-text")
        assert "best_utility" in text and "regret" in text
        assert "no answer-now branches" not in text
        await pilot.press("right_square_bracket")
        await _settle(pilot)
        assert screen.view == "controllers"
        text = _text(screen, "#results-text")
        assert "isotonic" in text and "aurc" in text
        chart = _text(screen, "#results-chart")
        assert "Risk–coverage" in chart and "Reliability" in chart
        await pilot.press("R")
        await _settle(pilot)
        assert screen.repaired and "repaired answers" in _text(screen, "#results-status")
        assert "replace the raw ones of 1 episode;" in _text(screen, "#results-text")
        for _ in range(len(TRACE_VIEWS) + 2):  # the trace views, replication, success
            await pilot.press("right_square_bracket")
            await _settle(pilot)
        assert screen.view == "success"
        repaired = _text(screen, "#results-text")
        assert "replace the raw ones of 1 episode;" in repaired and repaired != raw_success
        await pilot.press("R")
        await _settle(pilot)
        assert not screen.repaired and _text(screen, "#results-text") == raw_success


@pytest.mark.asyncio
async def test_trace_tables_show_on_a_lab_db_of_trace_states(tmp_path: Path) -> None:
    db = tmp_path / "lab.db"
    for args in (("init",),
                 ("sets", "create", "d30", "--dataset", "demo", "--n", "30", "--seed", "1"),
                 ("traces", "collect", "--set", "d30", "--models", "sim-trace"),
                 ("worker", "--until-idle")):
        r = CliRunner().invoke(cli, ["--db", str(db), *args])
        assert r.exit_code == 0, r.output
    app = _app(db)
    async with app.run_test(size=(120, 40)) as pilot:
        await _settle(pilot)
        screen = cast(ResultsScreen, app.screen)
        screen.query_one("#results-tabs", Tabs).active = "tab-trace_table1"
        await _settle(pilot)
        expected = {"trace_table1": ("Second seed Table 1", "Calibrated − Raw", "Fixed RAG@3"),
                    "trace_table2": ("held-out ECE by depth", "depth 3"),
                    "trace_table3": ("adjacent retrieval transitions", "helpful"),
                    "trace_sweeps": ("Second seed sweeps", "τ_hi=0.95"),
                    "trace_calibration": ("split, fit records and map", "fit_record")}
        for view, words in expected.items():
            assert screen.view == view
            text = _text(screen, "#results-text")
            assert all(w in text for w in words), (view, text[:300])
            if view == "trace_sweeps":
                assert "risk" in _text(screen, "#results-chart")
            await pilot.press("right_square_bracket")
            await _settle(pilot)


@pytest.mark.asyncio
async def test_delta_drilldown_opens_the_trajectory_at_that_step(lab_db: Path) -> None:
    app = _app(lab_db)
    async with app.run_test(size=(80, 24)) as pilot:
        await _settle(pilot)
        screen = cast(ResultsScreen, app.screen)
        await pilot.press("right_square_bracket")
        await _settle(pilot)
        assert screen._body() == "results-delta"
        assert "sim-never × none" in _text(screen, "#results-cell")
        await pilot.press("j")
        cell = _text(screen, "#results-cell")
        assert "sim-own5 × none" in cell and "n 24 decisions (a 7/23, b 0/1)" in cell
        await pilot.press("enter")
        await _settle(pilot)
        assert screen._body() == "results-drill"
        screen.post_message(DbChanged())  # a worker committed: the list stays on show
        await _settle(pilot)
        assert screen._body() == "results-drill"
        table = screen.query_one("#results-drill-table", DataTable)
        assert table.row_count == 24
        assert "(a) s = t" in _text(screen, "#results-drill-head")
        assert screen._drill is not None
        first = screen._drill.a[0]
        assert (first.t, first.s) == (3, 3)
        await pilot.press("escape")
        assert screen._body() == "results-delta"
        await pilot.press("enter")
        await _settle(pilot)
        await pilot.press("enter")
        await _settle(pilot)
        traj = app.screen
        assert isinstance(traj, TrajectoriesScreen)
        assert traj.view == "traj-episode"
        assert traj._detail is not None
        assert traj._detail.row.id == first.episode_id
        assert traj._detail.steps[traj._step].t == first.action
        assert f"action {first.action} of" in _text(traj, "#traj-step")


@pytest.mark.asyncio
async def test_export_equals_lab_results_delta_csv(lab_db: Path) -> None:
    app = _app(lab_db)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await _settle(pilot)
        await _select(pilot, "models=sim-own5")
        await pilot.press("right_square_bracket")
        await _settle(pilot)
        await pilot.press("e")
        await _settle(pilot)
        (path,) = Path("exports").glob("delta-*.csv")
        (note,) = [n for n in said(app) if n.title == "export"]
        assert note.message == f"{path.name}\nwritten in exports/"
        await pilot.pause()
        toast = app.screen.query_one("Toast")
        lines = [line.text.strip("▌ ") for line in toast.render_lines(toast.region.reset_offset)]
        assert path.name in lines  # whole on one line of the toast, never cut mid-word
        longest = "controllers-20250102-030405.csv"  # the longest view's name fits too
        assert len(longest) <= toast.content_region.width
    cli_out = CliRunner().invoke(cli, ["--db", "lab.db", "results", "delta", "--format", "csv",
                                       "--models", "sim-own5", "--resamples", str(RESAMPLES)])
    assert cli_out.exit_code == 0, cli_out.output
    exported = list(csv.DictReader(path.open(encoding="utf-8")))
    printed = list(csv.DictReader(io.StringIO(cli_out.output)))
    assert exported == printed and len(exported) == 10
    assert {r["model"] for r in exported} == {"sim-own5"}


def _header_order(text: str, title: str) -> list[str]:
    """The column names of the first header line under `title` ("model  arm  clean …")."""
    after = text.split(title, 1)[1]
    header = next(line for line in after.splitlines() if line.startswith("model"))
    return header.split()


@pytest.mark.asyncio
async def test_regime_columns_in_canonical_order_in_cli_and_console(lab_db: Path) -> None:
    """A model that ran only persistent comes first (sim-clock4): its row once put pers.
    and mean6 before clean. Both the CLI and the console keep the canonical order
    (clean, persistent, rec1–5, late, plausible, answerless, mean6 last), and say what
    the short names mean under the table."""
    db = store.connect(lab_db)
    settings = WorkerSettings(db_path=lab_db, worker_id="test:2")
    enqueue_grid(db, settings, GridRequest(models=("sim-clock4",), conditions=("none",),
                                           regimes=("persistent",), question_set="traj6",
                                           run="traj"), load_registry(None))
    run_worker(settings, until_idle=True)
    db.conn.close()
    cli_out = CliRunner().invoke(cli, ["--db", "lab.db", "results", "success",
                                       "--resamples", str(RESAMPLES)])
    assert cli_out.exit_code == 0, cli_out.output
    title = "Success per regime and mean6"
    assert _header_order(cli_out.output, title) == ["model", "arm", "clean", "pers.", "rec2",
                                                    "mean6"]
    assert "pers. = persistent, rec2 = recover_after_2" in cli_out.output
    app = _app(lab_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await _settle(pilot)
        text = _text(app.screen, "#results-text")
        assert _header_order(text, title) == ["model", "arm", "clean", "pers.", "rec2", "mean6"]


@pytest.mark.asyncio
async def test_tables_fit_the_width_and_repeat_model_and_arm(lab_db: Path) -> None:
    """At 80 columns a wide table (Cost) is split into blocks that each start with model
    and arm, so no line is wider than the view and nothing scrolls out of sight; at 160
    columns the same table takes fewer blocks (fitted again on resize, not recomputed)."""
    from console.screens.results.screen import text_width

    app = _app(lab_db)
    async with app.run_test(size=(80, 24)) as pilot:
        await _settle(pilot)
        while cast(ResultsScreen, app.screen).view != "cost":
            await pilot.press("right_square_bracket")
            await _settle(pilot)
        text = _text(app.screen, "#results-text")
        assert max(len(line) for line in text.splitlines()) <= text_width(80)
        narrow = [line for line in text.splitlines() if line.startswith("model  ")]
        assert len(narrow) >= 2 and all(line.split()[:2] == ["model", "arm"] for line in narrow)
        assert "med.act = median action" in " ".join(text.split())
        seconds = cast(ResultsScreen, app.screen)._computed["cost"].seconds
        await pilot.resize_terminal(160, 40)
        await _settle(pilot)
        text = _text(app.screen, "#results-text")
        wide = [line for line in text.splitlines() if line.startswith("model  ")]
        assert len(wide) < len(narrow)
        assert max(len(line) for line in text.splitlines()) <= text_width(160)
        computed = cast(ResultsScreen, app.screen)._computed
        assert computed["cost"].seconds == seconds  # fitted, not recomputed


@pytest.mark.asyncio
async def test_delta_grid_labels_are_short_and_pinned(lab_db: Path) -> None:
    """The Δ grid's row label is the model first, at most LABEL_WIDTH wide, pinned while
    the arms scroll; the line under the grid names the row's full cover."""
    from console.screens.results.views import LABEL_WIDTH

    app = _app(lab_db)
    async with app.run_test(size=(80, 24)) as pilot:
        await _settle(pilot)
        await pilot.press("right_square_bracket")
        await _settle(pilot)
        grid = app.screen.query_one("#results-grid", DataTable)
        assert grid.fixed_columns == 1
        labels = [str(grid.get_row_at(i)[0]) for i in range(grid.row_count)]
        assert all(len(label) <= LABEL_WIDTH for label in labels)
        assert labels[0].startswith("sim-never")
        cell = _text(app.screen, "#results-cell")
        shown = cast(ResultsScreen, app.screen)._grid
        assert shown is not None and cell.startswith(shown.covers[0] + " × ")


@pytest.mark.asyncio
async def test_bad_selection_is_one_error_line(lab_db: Path) -> None:
    app = _app(lab_db)
    async with app.run_test(size=(80, 24)) as pilot:
        await _settle(pilot)
        await _select(pilot, "models=gpt-9")
        status = _text(app.screen, "#results-status")
        assert "no episodes of model 'gpt-9'" in status or "gpt-9" in status
        assert "\n" not in status.strip()


@pytest.mark.asyncio
async def test_new_episodes_mark_numbers_stale(lab_db: Path) -> None:
    app = _app(lab_db)
    async with app.run_test(size=(80, 24)) as pilot:
        await _settle(pilot)
        screen = app.screen
        before = _text(screen, "#results-text")
        screen.post_message(DbChanged())
        await _settle(pilot)
        assert "new episodes" not in _text(screen, "#results-prov")
        db = store.connect(lab_db)
        settings = WorkerSettings(db_path=lab_db, worker_id="test:2")
        enqueue_grid(db, settings, GridRequest(models=("sim-clock4",), conditions=("none",),
                                               regimes=("clean",), question_set="traj6",
                                               run="traj"), load_registry(None))
        run_worker(settings, until_idle=True)
        added = _episodes_of(lab_db, "sim-clock4")
        screen.post_message(DbChanged())
        await _settle(pilot)
        assert f"⟳ {added} new episodes since computed: r recomputes" in _text(
            screen, "#results-prov")
        assert _text(screen, "#results-text") == before
        await pilot.press("r")
        await _settle(pilot)
        assert "sim-clock4" in _text(screen, "#results-text")
        assert "⟳" not in _text(screen, "#results-prov")
        # a stored probe is no new episode, but the probe tables move with it: said as such
        episode = db.conn.execute("SELECT max(id) FROM episodes").fetchone()[0]
        write_probes(db, [ProbeRecord(episode, 1, "answer_now", "sim-clock4")])
        db.conn.close()
        screen.post_message(DbChanged())
        await _settle(pilot)
        assert "⟳ lab.db changed since computed: r recomputes" in _text(screen, "#results-prov")
        assert "new episode" not in _text(screen, "#results-prov")


def _episodes_of(path: Path, model: str, seed: int | None = None) -> int:
    """How many episodes of `model` (and `seed`) lab.db holds."""
    conn = sqlite3.connect(path)
    try:
        return int(conn.execute(
            "SELECT count(*) FROM episodes e JOIN cells c ON c.id = e.cell_id "
            "WHERE c.model = ? AND (? IS NULL OR c.seed = ?)", (model, seed, seed)).fetchone()[0])
    finally:
        conn.close()


@pytest.mark.asyncio
async def test_episodes_outside_the_selection_leave_its_numbers_current(lab_db: Path) -> None:
    app = _app(lab_db)
    async with app.run_test(size=(80, 24)) as pilot:
        await _settle(pilot)
        await _select(pilot, "models=sim-never")
        screen = app.screen
        before = _text(screen, "#results-text")
        assert "sim-never" in before and "sim-own5" not in before
        db = store.connect(lab_db)
        settings = WorkerSettings(db_path=lab_db, worker_id="test:2")
        enqueue_grid(db, settings, GridRequest(models=("sim-clock4",), conditions=("none",),
                                               regimes=("clean",), question_set="traj6",
                                               run="traj"), load_registry(None))
        run_worker(settings, until_idle=True)
        screen.post_message(DbChanged())
        await _settle(pilot)
        assert "new episodes" not in _text(screen, "#results-prov")  # none of them is shown
        enqueue_grid(db, settings, GridRequest(models=("sim-never",), conditions=("none",),
                                               regimes=("clean",), question_set="traj6",
                                               run="traj", seeds=(7,)), load_registry(None))
        run_worker(settings, until_idle=True)
        db.conn.close()
        screen.post_message(DbChanged())
        await _settle(pilot)
        added = _episodes_of(lab_db, "sim-never", seed=7)
        assert f"⟳ {added} new episodes since computed: r recomputes" in _text(
            screen, "#results-prov")
        assert _text(screen, "#results-text") == before


def _on_view(presses: int) -> Callable[[Pilot[None]], Awaitable[None]]:
    async def run_before(pilot: Pilot[None]) -> None:
        await _settle(pilot)
        for _ in range(presses):
            await pilot.press("right_square_bracket")
            await _settle(pilot)
    return run_before


def test_snapshot_delta_80x24(lab_db: Path, snap_compare: SnapCompare) -> None:
    assert snap_compare(_app(lab_db), terminal_size=(80, 24), run_before=_on_view(1))


def test_snapshot_success_80x24(lab_db: Path, snap_compare: SnapCompare) -> None:
    assert snap_compare(_app(lab_db), terminal_size=(80, 24), run_before=_on_view(0))


def test_snapshot_delta_120x40(lab_db: Path, snap_compare: SnapCompare) -> None:
    assert snap_compare(_app(lab_db), terminal_size=(120, 40), run_before=_on_view(1))


def test_snapshot_hazard_120x40(lab_db: Path, snap_compare: SnapCompare) -> None:
    assert snap_compare(_app(lab_db), terminal_size=(120, 40), run_before=_on_view(3))
