"""Trajectories screen (key 6) and its reads: filter, open, step, matched arms.

The fixture grid runs two sim policies under `none` and `enforced_rule:k=2` in three
regimes through the real queue; with k=2 the rule forces an answer at action 3 after
two useless results, so the matched arms diverge there under `persistent`.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import cast

import pytest
from textual.pilot import Pilot
from textual.widgets import DataTable, Input

from console.app import ConsoleConfig, LabApp, make_app
from console.screens.base import read_stamp
from console.screens.results import ResultsScreen
from console.screens.trajectories import TrajectoriesScreen
from core import store
from core.conditions import parse_condition
from core.errors import ConfigError
from core.models.registry import load_registry, make_client, resolve_model
from core.regimes import ForeignPool, parse_regime
from core.runner import CellSpec, run_one, setup_for
from core.store import trajectories as traj
from tests.helpers.console import FIXED_TS, copy_db, wait_workers
from tests.helpers.notices import said
from tests.helpers.snapshots import SnapCompare


@pytest.fixture
def lab_db(trajectories_db: Path, tmp_path: Path) -> Path:
    """A private copy of the fixture lab.db."""
    target = tmp_path / "lab.db"
    copy_db(trajectories_db, target)
    return target


def _app(db: Path, clock: Callable[[], float] = lambda: FIXED_TS) -> LabApp:
    """The console on `db`, named relative to the test's directory (the header shows it),
    its clock (the header's read time) frozen at FIXED_TS unless given."""
    rel = Path(db.name) if db.parent == Path.cwd() else db
    return make_app(rel, ConsoleConfig(warm_up=False, db_path=rel, first_screen="trajectories",
                                       clock=clock))


async def _settle(pilot: Pilot[None]) -> None:
    await pilot.pause()
    await wait_workers(pilot.app)
    await pilot.pause()


def _episode(db_path: Path, **where: str) -> int:
    conn = sqlite3.connect(db_path)
    sql = ("SELECT e.id FROM episodes e JOIN cells c ON c.id = e.cell_id WHERE "
           + " AND ".join(f"{k} = ?" for k in where) + " ORDER BY e.id")
    (eid,) = conn.execute(sql, tuple(where.values())).fetchone()
    conn.close()
    return int(eid)


# ── reads ─────────────────────────────────────────────────────────────────────────────

def test_filter_parsing_and_errors() -> None:
    f = traj.parse_filter("model=sim-own5 arm=enforced_rule:k=2 outcome=wrong seed=0 demo-00")
    assert (f.model, f.arm, f.outcome, f.seed, f.question) == (
        "sim-own5", "enforced_rule:k=2", "wrong", 0, "demo-00")
    assert traj.parse_filter(f.describe()) == f
    with pytest.raises(ConfigError, match="unknown key 'colour'"):
        traj.parse_filter("colour=red")
    with pytest.raises(ConfigError, match="outcome must be one of"):
        traj.parse_filter("outcome=great")
    with pytest.raises(ConfigError, match="seed must be a number"):
        traj.parse_filter("seed=x")


def test_list_filters_count_and_paging(lab_db: Path) -> None:
    db = store.connect(lab_db)
    everything = traj.list_episodes(db, traj.EpisodeFilter())
    assert traj.count_episodes(db, traj.EpisodeFilter()) == 72 == len(everything)
    assert [e.id for e in everything] == sorted((e.id for e in everything), reverse=True)
    k2 = traj.list_episodes(db, traj.parse_filter("model=sim-never arm=enforced_rule:k=2"))
    assert len(k2) == 18 and {(e.model, e.arm) for e in k2} == {("sim-never",
                                                                   "enforced_rule:k=2")}
    # a bare condition name matches every arm of that condition
    assert traj.count_episodes(db, traj.parse_filter("arm=enforced_rule")) == 36
    assert traj.count_episodes(db, traj.parse_filter("arm=enforced_rule:k=7")) == 0
    unanswered = traj.list_episodes(db, traj.parse_filter("outcome=unanswered"))
    assert unanswered and all(e.outcome == "unanswered" and e.answer_action is None
                              for e in unanswered)
    by_text = traj.list_episodes(db, traj.parse_filter("Drilell"))  # words of demo-001
    assert by_text and {e.question_id for e in by_text} == {"demo-001"}
    page1 = traj.list_episodes(db, traj.EpisodeFilter(limit=10))
    page2 = traj.list_episodes(db, traj.EpisodeFilter(limit=10, before_id=page1[-1].id))
    assert len(page2) == 10 and page2[0].id == page1[-1].id - 1


def test_matched_arms_and_first_divergence(lab_db: Path) -> None:
    db = store.connect(lab_db)
    eid = _episode(lab_db, model="sim-never", condition="none", regime="persistent",
                   question_id="demo-002")
    matched = traj.matched_episodes(db, eid)
    assert [m.arm for m in matched] == ["none", "enforced_rule:k=2"]
    assert {(m.model, m.regime, m.seed, m.question_id) for m in matched} == {
        ("sim-never", "persistent", 0, "demo-002")}
    details = [traj.episode_detail(db, m.id) for m in matched]
    # identical failure draws: the same failed pages at the shared actions
    assert [s.obs_ref for s in details[0].steps[:2]] == [s.obs_ref for s in details[1].steps[:2]]
    assert traj.first_divergence([d.steps for d in details]) == 3
    assert traj.first_divergence([details[0].steps, details[0].steps]) is None


@pytest.mark.parametrize("regime", ["persistent", "plausible", "answerless"])
def test_observation_text_is_what_the_agent_saw(lab_db: Path, regime: str) -> None:
    db = store.connect(lab_db)
    questions = store.load_questions(db, dataset="demo")
    q = questions[0]
    cell = CellSpec(resolve_model(load_registry(None), "sim-never"), parse_condition("none"),
                    parse_regime(regime), None, 8, 0)
    client = make_client(cell.model)
    seen: list[tuple[object, str | None]] = []
    result = asyncio.run(run_one(setup_for(cell, q, ForeignPool(questions), client), client,
                                 on_step=lambda s: seen.append((s.t, s.shown))))
    by_id = {x.id: x for x in questions}
    rebuilt = [traj.observation_text(s, by_id.get, regime == "answerless", q.id)[0]
               for s in result.steps]
    assert [text for _, text in seen] == rebuilt
    assert any(s.obs_failed for s in result.steps) or regime == "answerless"


# ── the screen ───────────────────────────────────────────────────────────────────────

@pytest.mark.asyncio
async def test_filter_open_and_step(lab_db: Path) -> None:
    app = _app(lab_db)
    async with app.run_test(size=(80, 24)) as pilot:
        await _settle(pilot)
        screen = cast(TrajectoriesScreen, app.screen)
        assert "72 of 72 episodes" in str(screen.query_one("#traj-status").render())
        await pilot.press("colon")
        for ch in "model=sim-own5 outcome=wrong":
            await pilot.press("space" if ch == " " else ch)
        await pilot.press("enter")
        await _settle(pilot)
        rows = screen._rows
        assert rows and all(r.model == "sim-own5" and r.outcome == "wrong" for r in rows)
        assert f"{len(rows):,} of {len(rows):,} episodes" in str(
            screen.query_one("#traj-status").render())
        await pilot.press("j", "enter")
        await _settle(pilot)
        assert screen.view == "traj-episode" and screen._detail is not None
        assert screen._detail.row.id == rows[1].id
        body = str(screen.query_one("#traj-step").render())
        assert "action 1 of" in body and "thought:" in body
        await pilot.press("right")
        await pilot.press("l")
        body = str(screen.query_one("#traj-step").render())
        assert "action 3 of" in body
        await pilot.press("left")
        assert "action 2 of" in str(screen.query_one("#traj-step").render())
        await pilot.press("h", "h", "h")
        assert "action 1 of" in str(screen.query_one("#traj-step").render())
        await pilot.press("escape")
        assert screen.view == "traj-list"


@pytest.mark.asyncio
async def test_bad_filter_is_one_error_line(lab_db: Path) -> None:
    app = _app(lab_db)
    async with app.run_test(size=(80, 24)) as pilot:
        await _settle(pilot)
        await pilot.press("colon")
        for ch in "colour=red":
            await pilot.press(ch)
        await pilot.press("enter")
        await _settle(pilot)
        assert any("unknown key 'colour'" in str(n.message) and n.severity == "error"
                   for n in said(app))
        assert len(cast(TrajectoriesScreen, app.screen)._rows) == 72


@pytest.mark.asyncio
async def test_a_filter_reads_the_list_again_and_says_when(lab_db: Path) -> None:
    """The list a filter reads is as of that read: the header's `read` time moves."""
    now = [FIXED_TS]
    app = _app(lab_db, clock=lambda: now[0])
    async with app.run_test(size=(100, 24)) as pilot:
        await _settle(pilot)
        screen = cast(TrajectoriesScreen, app.screen)
        assert read_stamp(FIXED_TS) in str(screen.sub_title)
        now[0] = FIXED_TS + 3_723.0
        await pilot.press("colon")
        screen.query_one("#traj-filter", Input).value = "model=sim-never"
        await pilot.press("enter")
        await _settle(pilot)
        assert len(screen._rows) < 72 and screen.read_at == now[0]
        assert read_stamp(now[0]) in str(screen.sub_title)


@pytest.mark.asyncio
async def test_failed_observation_shows_its_source(lab_db: Path) -> None:
    eid = _episode(lab_db, model="sim-never", condition="none", regime="persistent",
                   question_id="demo-001")
    app = _app(lab_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await _settle(pilot)
        screen = cast(TrajectoriesScreen, app.screen)
        screen.open_episode(eid, 2)
        await _settle(pilot)
        body = str(app.screen.query_one("#traj-step").render())
        assert screen._detail is not None
        step = screen._detail.steps[1]
        assert "action 2 of 8" in body
        assert f"✗ FAILED → foreign page {screen._detail.titles[1]!r}" in body
        assert step.obs_ref is not None
        assert step.obs_ref in body and "useless streak: 2" in body


@pytest.mark.asyncio
async def test_probes_show_at_their_step(lab_db: Path) -> None:
    from click.testing import CliRunner

    from console.cli import cli

    eid = _episode(lab_db, model="sim-never", condition="none", regime="persistent",
                   question_id="demo-001")
    for args in (("replay", "answer-now", "--run", "traj", "--at", "t=2"),
                 ("replay", "beliefs", "--run", "traj", "--at", "t=2"), ("worker", "--until-idle")):
        r = CliRunner().invoke(cli, ["--db", str(lab_db), *args])
        assert r.exit_code == 0, r.output
    conn = sqlite3.connect(lab_db)
    answer, correct, conf, p_cont = conn.execute(
        "SELECT a.answer, a.correct, a.confidence, b.p_continue FROM probes a JOIN probes b ON "
        "b.episode_id = a.episode_id AND b.t = a.t AND b.kind = 'belief' WHERE a.episode_id = ? "
        "AND a.kind = 'answer_now'", (eid,)).fetchone()
    conn.close()
    app = _app(lab_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await _settle(pilot)
        cast(TrajectoriesScreen, app.screen).open_episode(eid, 2)
        await _settle(pilot)
        body = str(app.screen.query_one("#traj-step").render())
        assert "action 2 of 8" in body
        mark = "correct" if correct else "wrong"
        assert (f"probe answer-now (replay): answer {answer!r} ({mark}) · confidence "
                f"{conf:.2f}") in body
        assert f"probe belief (replay): p_continue {p_cont:.2f} · p_answer_now" in body
        await pilot.press("right")
        assert "probe " not in str(app.screen.query_one("#traj-step").render())  # t=3: none


@pytest.mark.asyncio
async def test_matched_arms_marks_first_divergence(lab_db: Path) -> None:
    app = _app(lab_db)
    async with app.run_test(size=(80, 24)) as pilot:
        await _settle(pilot)
        await pilot.press("colon")  # the filter set at once (test_filter_open_and_step types one)
        app.screen.query_one("#traj-filter", Input).value = (
            "model=sim-never regime=persistent arm=none demo-003")
        await pilot.press("enter")
        await _settle(pilot)
        assert len(cast(TrajectoriesScreen, app.screen)._rows) == 1
        await pilot.press("enter")
        await _settle(pilot)
        await pilot.press("m")
        await _settle(pilot)
        screen = cast(TrajectoriesScreen, app.screen)
        assert screen.view == "traj-matched"
        head = str(screen.query_one("#traj-m-head").render())
        assert "≠ first divergence at action 3" in head
        table = screen.query_one("#traj-m-table", DataTable)
        assert [str(c.label) for c in table.columns.values()] == ["t", "none",
                                                                  "enforced_rule:k=2"]
        row3 = [str(c) for c in table.get_row("3")]
        assert row3[0] == "≠3" and row3[1].startswith("✗ search") and "⏎ finish" in row3[2]
        assert str(table.get_row("2")[0]).strip() == "2"
        assert table.cursor_row == 2  # the cursor starts on the divergence
        detail = str(screen.query_one("#traj-m-detail").render())
        assert "FORCED turn" in detail
        await pilot.press("escape")
        assert screen.view == "traj-episode"
        await pilot.press("escape")
        assert screen.view == "traj-list"


def _matched_snapshot(db: Path) -> Callable[[Pilot[None]], Awaitable[None]]:
    async def run_before(pilot: Pilot[None]) -> None:
        await _settle(pilot)
        eid = _episode(db, model="sim-never", condition="none", regime="persistent",
                       question_id="demo-003")
        cast(TrajectoriesScreen, pilot.app.screen).open_episode(eid, 3)
        await _settle(pilot)
        await pilot.press("m")
        await _settle(pilot)
    return run_before


def test_snapshot_list_80x24(lab_db: Path, snap_compare: SnapCompare) -> None:
    assert snap_compare(_app(lab_db), terminal_size=(80, 24),
                        run_before=lambda pilot: _settle(pilot))


def test_snapshot_matched_80x24(lab_db: Path, snap_compare: SnapCompare) -> None:
    assert snap_compare(_app(lab_db), terminal_size=(80, 24),
                        run_before=_matched_snapshot(lab_db))


def test_snapshot_episode_120x40(lab_db: Path, snap_compare: SnapCompare) -> None:
    async def run_before(pilot: Pilot[None]) -> None:
        await _settle(pilot)
        screen = cast(TrajectoriesScreen, pilot.app.screen)
        screen.open_episode(_episode(lab_db, model="sim-own5", condition="none",
                                     regime="recover_after_2", question_id="demo-001"), 2)
        await _settle(pilot)
    assert snap_compare(_app(lab_db), terminal_size=(120, 40), run_before=run_before)


def test_snapshot_matched_120x40(lab_db: Path, snap_compare: SnapCompare) -> None:
    assert snap_compare(_app(lab_db), terminal_size=(120, 40),
                        run_before=_matched_snapshot(lab_db))


@pytest.mark.asyncio
async def test_resizing_lays_out_matched_arms_again(lab_db: Path) -> None:
    app = _app(lab_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await _settle(pilot)
        screen = cast(TrajectoriesScreen, app.screen)
        eid = _episode(lab_db, model="sim-never", condition="none", regime="persistent",
                       question_id="demo-003")
        screen.open_episode(eid, 3, back_to=None)
        await _settle(pilot)
        await pilot.press("m")
        await _settle(pilot)
        table = screen.query_one("#traj-m-table", DataTable)

        def widths() -> list[int]:
            return [c.width for c in list(table.columns.values())[1:]]

        assert widths() == [(120 - 8) // 2 - 2] * 2
        await pilot.press("down")  # the cursor stays where the person put it
        assert table.cursor_row == 3
        await pilot.resize_terminal(80, 24)
        await _settle(pilot)
        assert widths() == [(80 - 8) // 2 - 2] * 2
        assert table.cursor_row == 3 and screen.view == "traj-matched"
        assert all(len(str(c)) <= 34 for c in table.get_row("3")[1:])
        await pilot.press("1")  # resized while another screen is shown
        await _settle(pilot)
        await pilot.resize_terminal(100, 30)
        await _settle(pilot)
        await pilot.press("6")
        await _settle(pilot)
        assert app.screen is screen and widths() == [(100 - 8) // 2 - 2] * 2


@pytest.mark.asyncio
async def test_escape_from_a_trajectory_opened_from_results_returns_to_results(
        lab_db: Path) -> None:
    rel = Path(lab_db.name) if lab_db.parent == Path.cwd() else lab_db
    app = make_app(rel, ConsoleConfig(warm_up=False, db_path=rel, first_screen="results",
                                      clock=lambda: FIXED_TS))
    async with app.run_test(size=(80, 24)) as pilot:
        await _settle(pilot)
        results = cast(ResultsScreen, app.screen)
        await pilot.press("right_square_bracket")  # the Δ grid
        await _settle(pilot)
        await pilot.press("j", "enter")  # a cell's decisions
        await _settle(pilot)
        await pilot.press("enter")  # the first one's trajectory
        await _settle(pilot)
        screen = cast(TrajectoriesScreen, app.screen)
        assert app.current_mode == "trajectories" and screen.view == "traj-episode"
        assert "escape returns to Results" in str(screen.query_one("#traj-status").render())
        await pilot.press("m")  # matched arms and back: still the episode first
        await _settle(pilot)
        await pilot.press("escape")
        assert screen.view == "traj-episode" and app.current_mode == "trajectories"
        await pilot.press("escape")
        await _settle(pilot)
        assert app.current_mode == "results" and app.screen is results
        assert results._body() == "results-drill"  # where the person left it
        await pilot.press("6")  # the trajectory list's own escape is untouched
        await _settle(pilot)
        assert "episodes · filter" in str(screen.query_one("#traj-status").render())
        await pilot.press("escape")
        await _settle(pilot)
        assert app.current_mode == "trajectories" and screen.view == "traj-list"
