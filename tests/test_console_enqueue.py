"""Enqueue screen (3): live preview, refusals before anything is queued, queueing only
after a confirmation that names the run and says episodes, calls, tokens and dollars.

Pilot tests on a real lab.db: a dev set, a held-out set, a frozen amendment A1
governing the held-out set and a draft A2. Queueing is checked in the jobs ledger.
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path
from typing import cast

import pytest
from textual.pilot import Pilot
from textual.widgets import Button, Input, Select, SelectionList, Static

import prompts
from console.app import ConsoleConfig, LabApp, make_app
from console.screens.enqueue import EnqueueScreen
from console.widgets.confirm import Confirm
from core import prereg, store
from core.data import ids_hash
from core.demo_set import ensure_demo_set
from core.models.registry import load_registry
from tests.helpers.console import FIXED_TS, copy_db, wait_workers
from tests.helpers.notices import said
from tests.helpers.snapshots import SnapCompare

SCOPE = {"models": ["sim-own5", "sim-never"], "conditions": ["none", "enforced_rule:k=7"],
         "regimes": ["clean", "persistent"], "question_sets": ["test20"], "budgets": [8]}
CLAUDE = """
[models.claude-x]
backend = "anthropic"
model = "claude-x"
base_url = "http://127.0.0.1:9"
sampling = "default"
price_per_mtok = { input = 1.0, output = 5.0, cache_write = 1.25, cache_read = 0.10 }
"""


GOVERNED_CONFIRM = """\
Queue this grid in run confirm (governed by A1)?
Episodes: 160 new in 8 jobs, 8 cells (0 already stored/queued)
Calls:    ≤ 2,400 (160 episodes simulated, free)
Tokens:   none (sims only)
Dollars:  $0.00 (sims only)
Grid:     2 models × 2 arms × 2 regimes, set test20, budget 8, seed 0
y = queue 160 episodes    n / escape = no, do nothing"""
PRICED_CONFIRM = """\
Queue this grid in run pilot (EXPLORATORY, no amendment)?
Episodes: 10 new in 1 job, 1 cell (0 already stored/queued)
Calls:    ≤ 80
Tokens:   ≈ 63,120
Dollars:  ≈ $0.08
  claude-x: ≤ 80 calls, ≈ 63,120 tokens, ≈ $0.08
Grid:     1 model × 1 arm × 1 regime, set dev10, budget 8, seed 0
y = queue 10 episodes (≈ $0.08)    n / escape = no, do nothing"""
"""What the enqueue confirmation says: run, amendment, episodes, calls, tokens, dollars."""


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """dev10, held-out test20, frozen A1 (governs test20) and draft A2, built once."""
    path = tmp_path_factory.mktemp("enqueue") / "lab.db"
    db = store.connect(path)
    ensure_demo_set(db)
    ids = store.question_set(db, "demo")["ids"]
    store.save_question_set(db, "dev10", "demo", ids[:10], 1, [], False, ids_hash(ids[:10]))
    store.save_question_set(db, "test20", "demo", ids[10:30], 2, [], True, ids_hash(ids[10:30]))
    a1 = prereg.create(db, "Rule with k=7 on test20", "", [], SCOPE)
    prereg.freeze(db, a1, load_registry(None))
    prereg.create(db, "Draft on test20", "", [], SCOPE)
    db.conn.execute("UPDATE amendments SET created_at = '2025-01-02T03:04:05+00:00', "
                    "frozen_at = CASE WHEN frozen_at IS NULL THEN NULL "
                    "ELSE '2025-01-02T03:04:05+00:00' END")
    db.conn.close()
    return path


@pytest.fixture
def lab_db(built: Path, tmp_path: Path) -> Path:
    """A private copy of it in the test's directory."""
    return copy_db(built, tmp_path / "lab.db")


def app_on(db: Path, config: Path = Path("lab.toml")) -> LabApp:
    """The console on the Enqueue screen, previews without a debounce pause."""
    return make_app(db, ConsoleConfig(db_path=db, config_path=config, first_screen="enqueue",
                                      preview_debounce_s=0.01, warm_up=False,
                                      clock=lambda: FIXED_TS))  # the header's read time


async def settle(pilot: Pilot[None]) -> None:
    """Let the debounce timer fire and the planning workers finish."""
    for _ in range(3):
        await pilot.pause(0.05)
        await wait_workers(pilot.app)
    await pilot.pause()


async def fill(pilot: Pilot[None], *, amendment: str = "exploratory", qset: str = "dev10",
               models: tuple[str, ...] = ("sim-own5",), conditions: tuple[str, ...] = ("none",),
               knobs: str = "", regimes: tuple[str, ...] = ("clean",), budget: str = "8",
               seeds: str = "0",
               run: str = "pilot") -> None:
    """Set every field of the form (the amendment first: picking one fills its scope)."""
    screen = pilot.app.screen
    screen.query_one("#enq-amendment", Select).value = amendment
    await settle(pilot)
    screen.query_one("#enq-set", Select).value = qset
    for list_id, values in (("#enq-models", models), ("#enq-conditions", conditions),
                            ("#enq-regimes", regimes)):
        widget = screen.query_one(list_id, SelectionList)
        widget.deselect_all()
        for value in values:
            widget.select(value)
    for field_id, value in (("#enq-knobs", knobs), ("#enq-budget", budget),
                            ("#enq-seeds", seeds), ("#enq-run", run)):
        screen.query_one(field_id, Input).value = value


def preview(screen: EnqueueScreen) -> str:
    """The preview's plain text."""
    return str(screen.query_one("#enq-preview-text", Static).render())


def ledger(db: Path) -> tuple[int, int, list[tuple[str, str | None]]]:
    """(jobs, questions queued, [(run, amendment)]) as stored."""
    conn = sqlite3.connect(db)
    try:
        jobs = conn.execute("SELECT count(*) FROM jobs").fetchone()[0]
        questions = conn.execute("SELECT coalesce(sum(json_array_length(question_ids)), 0) "
                                 "FROM jobs").fetchone()[0]
        runs = conn.execute("SELECT name, amendment_id FROM runs ORDER BY id").fetchall()
        return jobs, questions, runs
    finally:
        conn.close()


@pytest.mark.asyncio
async def test_preview_counts_cells_episodes_and_calls(lab_db: Path) -> None:
    async with app_on(lab_db).run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        screen = pilot.app.screen
        assert isinstance(screen, EnqueueScreen)
        await fill(pilot, models=("sim-own5", "sim-never"), conditions=("none",),
             knobs="enforced_rule:k=7", regimes=("clean", "persistent"), seeds="0,1")
        await settle(pilot)
        text = preview(screen)
        assert "can be queued" in text and "EXPLORATORY" in text
        assert "cells     16" in text  # 2 models × 2 conditions × 2 regimes × 2 seeds
        assert "160 new" in text and "simulated" in text and "$0.00" in text
        assert not screen.query_one("#enq-queue", Button).disabled
    assert ledger(lab_db)[0] == 0  # a preview writes nothing


@pytest.mark.asyncio
async def test_mean6_key_ticks_the_six_regimes(lab_db: Path) -> None:
    async with app_on(lab_db).run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        screen = pilot.app.screen
        screen.query_one("#enq-models", SelectionList).focus()
        await pilot.press("m")
        await settle(pilot)
        ticked = screen.query_one("#enq-regimes", SelectionList).selected
        assert ticked == ["clean", "persistent", "recover_after_1", "recover_after_2",
                          "recover_after_3", "late_onset_from_3"]


@pytest.mark.asyncio
@pytest.mark.parametrize("amendment, qset, words", [
    ("A2", "test20", "A2 is a draft"),
    ("exploratory", "test20", "question set test20 is held-out"),
    ("A1", "dev10", "outside A1"),
])
async def test_refusal_is_shown_before_anything_is_queued(lab_db: Path, amendment: str,
                                                          qset: str, words: str) -> None:
    async with app_on(lab_db).run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        screen = cast(EnqueueScreen, pilot.app.screen)
        await fill(pilot, amendment=amendment, qset=qset)
        await settle(pilot)
        text = preview(screen)
        assert "REFUSED" in text and words in text
        assert screen.query_one("#enq-queue", Button).disabled
        await pilot.press("ctrl+s")
        await settle(pilot)
    assert ledger(lab_db)[0] == 0


@pytest.mark.asyncio
async def test_changed_pin_is_refused_until_a_deviation(lab_db: Path, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    copy = tmp_path / "prompts"
    shutil.copytree(prompts.PROMPT_DIR, copy,
                    ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    monkeypatch.setattr(prompts, "PROMPT_DIR", copy)
    (copy / "system.txt").write_text("reworded\n", encoding="utf-8")
    async with app_on(lab_db).run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await fill(pilot, amendment="A1", qset="test20", conditions=("none",))
        text = preview(cast(EnqueueScreen, pilot.app.screen))
        assert "REFUSED" in text and "prompts/system.txt changed since A1" in text
        assert "log a deviation" in text
    assert ledger(lab_db)[0] == 0


@pytest.mark.asyncio
async def test_bad_seeds_are_named(lab_db: Path) -> None:
    async with app_on(lab_db).run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await fill(pilot, seeds="0,x")
        await settle(pilot)
        text = preview(cast(EnqueueScreen, pilot.app.screen))
        assert "seeds must be comma-separated integers, got '0,x'" in text


@pytest.mark.asyncio
async def test_amendment_fills_its_scope_and_queues_governed_jobs(lab_db: Path) -> None:
    async with app_on(lab_db).run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        screen = cast(EnqueueScreen, pilot.app.screen)
        screen.query_one("#enq-run", Input).value = "confirm"
        screen.query_one("#enq-amendment", Select).value = "A1"
        await settle(pilot)
        assert screen.query_one("#enq-set", Select).value == "test20"
        assert screen.query_one("#enq-knobs", Input).value == "enforced_rule:k=7"
        assert sorted(screen.query_one("#enq-models", SelectionList).selected) == [
            "sim-never", "sim-own5"]
        text = preview(screen)
        assert "governed by A1" in text and "cells     8" in text and "160 new" in text
        await pilot.press("ctrl+s")
        await settle(pilot)
        dialog = pilot.app.screen
        assert isinstance(dialog, Confirm)
        assert dialog.text == GOVERNED_CONFIRM
        await pilot.press("n")  # declined: nothing is queued
        await settle(pilot)
        assert pilot.app.screen is screen and ledger(lab_db)[0] == 0
        await pilot.press("ctrl+s")
        await settle(pilot)
        await pilot.press("y")
        await settle(pilot)
        assert any("grid 1: queued 8 jobs, 160 episodes" in n.message
                   for n in said(pilot.app))
        assert "nothing to queue" in preview(screen)  # re-planned: all queued now
    jobs, questions, runs = ledger(lab_db)
    assert (jobs, questions, runs) == (8, 160, [("confirm", "A1")])


@pytest.mark.asyncio
async def test_queue_button_queues_exploratory_jobs(lab_db: Path) -> None:
    async with app_on(lab_db).run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        screen = cast(EnqueueScreen, pilot.app.screen)
        await fill(pilot, models=("sim-own5",), conditions=("none", "enforced_rule"),
             regimes=("clean",), run="pilot")
        await settle(pilot)
        button = screen.query_one("#enq-queue", Button)
        button.focus()
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(pilot.app.screen, Confirm)
        assert pilot.app.screen.text.startswith(
            "Queue this grid in run pilot (EXPLORATORY, no amendment)?\n"
            "Episodes: 20 new in 2 jobs, 2 cells (0 already stored/queued)\n")
        await pilot.press("y")
        await settle(pilot)
    assert ledger(lab_db) == (2, 20, [("pilot", None)])


@pytest.mark.asyncio
async def test_real_model_preview_shows_tokens_and_dollars(lab_db: Path, tmp_path: Path) -> None:
    config = tmp_path / "lab.toml"
    config.write_text(CLAUDE)
    async with app_on(lab_db, config).run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        screen = cast(EnqueueScreen, pilot.app.screen)
        await fill(pilot, models=("claude-x",))
        await settle(pilot)
        text = preview(screen)
        assert "claude-x" in text and "input tokens" in text
        assert "tokens    ≈" in text and "dollars   ≈ $" in text
        await pilot.press("ctrl+s")  # a priced model: the dollars are asked about first
        await settle(pilot)
        dialog = pilot.app.screen
        assert isinstance(dialog, Confirm)
        assert dialog.text == PRICED_CONFIRM
        await pilot.press("escape")
        await settle(pilot)
        assert pilot.app.screen is screen
    assert ledger(lab_db)[0] == 0


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
def test_snapshot(lab_db: Path, snap_compare: SnapCompare, size: tuple[int, int]) -> None:
    async def fill_form(pilot: Pilot[None]) -> None:
        await settle(pilot)
        await fill(pilot, models=("sim-own5", "sim-never"), conditions=("none",),
             knobs="enforced_rule:k=7", regimes=("clean", "persistent"))
        await settle(pilot)

    assert snap_compare(app_on(Path("lab.db")), terminal_size=size, run_before=fill_form)


async def plan_now(pilot: Pilot[None]) -> None:
    """Fire the preview's debounce timer now (the test's timer is too long to fire)."""
    screen = cast(EnqueueScreen, pilot.app.screen)
    if screen._timer is not None:
        screen._timer.stop()
    screen._start_preview()
    await settle(pilot)


@pytest.mark.asyncio
async def test_ctrl_s_while_planning_queues_the_new_plan_and_focus_leaves_the_run_name(
        lab_db: Path) -> None:
    """ctrl+s typed right after a change, before the new plan is on show, waits for that
    plan and asks about it (it used to say 'nothing to queue' beside 'can be queued');
    after queueing, a digit switches screens instead of renaming the next run."""
    app = make_app(lab_db, ConsoleConfig(warm_up=False, db_path=lab_db, first_screen="enqueue",
                                         preview_debounce_s=600, clock=lambda: FIXED_TS))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await plan_now(pilot)
        screen = pilot.app.screen
        assert isinstance(screen, EnqueueScreen)
        await fill(pilot, run="pilot")
        await settle(pilot)  # the fields' change events come in
        await plan_now(pilot)
        assert preview(screen).startswith("✓ can be queued")
        run = screen.query_one("#enq-run", Input)
        run.focus()
        await pilot.press("end", "4", "ctrl+s")  # the plan of "pilot4" is not made yet
        await settle(pilot)
        assert screen.planning() and not isinstance(pilot.app.screen, Confirm)
        assert not any("nothing to queue" in n.message for n in said(pilot.app))
        await plan_now(pilot)
        assert isinstance(pilot.app.screen, Confirm)
        assert "in run pilot4" in pilot.app.screen.text
        await pilot.press("y")
        await settle(pilot)
        assert not isinstance(screen.focused, Input)
        await pilot.press("4")
        await settle(pilot)
        assert pilot.app.current_mode == "jobs"
    assert ledger(lab_db) == (1, 10, [("pilot4", None)])
