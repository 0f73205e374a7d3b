"""docs/console.md's screen captures are made from the real console by this test.

Each capture is one screen at 80×24, drawn by the console on a fixture lab.db built
through the real queue (a small sim grid, a frozen amendment), with the clock and every
stored time fixed; the text is the screen's cells, line by line. The test fails when the
captures in docs/console.md differ from freshly made ones;

    LAB_UPDATE_GOLDEN=1 pytest tests/test_console_captures.py

writes them into the page instead (read the diff: it is what the docs will show).
"""

from __future__ import annotations

import difflib
import os
import sqlite3
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import cast

import pytest
from textual.app import App
from textual.pilot import Pilot
from textual.widgets import Input, Select, SelectionList

from console.screens.enqueue import EnqueueScreen
from core import prereg, store
from core.models.registry import load_registry
from tests.helpers.console import FIXED_ISO, build, console_app, copy_db, freeze_times, settle

DOC = Path(__file__).resolve().parents[1] / "docs" / "console.md"
HEADING = "## Screen captures\n"
UPDATE = os.environ.get("LAB_UPDATE_GOLDEN") == "1"
SIZE = (80, 24)
INTRO = (
    "Text captures of each screen at 80×24, drawn by the console itself on a small lab.db\n"
    "(a sim grid of two models × two arms × two regimes run through the queue, a frozen\n"
    "amendment A1; times fixed). `tests/test_console_captures.py` makes them and fails\n"
    "when this page differs; `LAB_UPDATE_GOLDEN=1 pytest tests/test_console_captures.py`\n"
    "writes them here.\n")

Step = Callable[[Pilot[None]], Awaitable[None]]


async def _nothing(pilot: Pilot[None]) -> None:
    await settle(pilot)


async def _enqueue(pilot: Pilot[None]) -> None:
    await settle(pilot)
    screen = cast(EnqueueScreen, pilot.app.screen)
    screen.query_one("#enq-set", Select).value = "demo"
    screen.query_one("#enq-models", SelectionList).select("sim-own5")
    screen.query_one("#enq-conditions", SelectionList).select("none")
    screen.query_one("#enq-regimes", SelectionList).focus()
    await pilot.press("m")
    screen.query_one("#enq-run", Input).value = "pilot"
    for _ in range(400):  # the preview plans after a pause in changes: wait for it
        await pilot.pause(0.05)
        await settle(pilot)
        if not screen.planning() and "can be queued" in screen_text(pilot.app):
            return
    raise AssertionError("the Enqueue preview never showed the grid")


async def _help(pilot: Pilot[None]) -> None:
    await settle(pilot)
    await pilot.press("question_mark")
    await settle(pilot)


CAPTURES: tuple[tuple[str, str, Step], ...] = (
    ("Dashboard (`1`): the queue, workers, spend, endpoints", "dashboard", _nothing),
    ("Pre-registration (`2`), the frozen amendment A1", "prereg", _nothing),
    ("Enqueue (`3`), one model, one arm and the mean6 regimes (`m`) picked; the preview "
     "on the right", "enqueue", _enqueue),
    ("Jobs (`4`), the finished run and its grid", "jobs", _nothing),
    ("Live (`5`), nothing running", "live", _nothing),
    ("Trajectories (`6`), newest episodes first (`:` filters, `/` searches, `m` matched arms)",
     "trajectories", _nothing),
    ("Results (`7`), the Success table (`]`/`[` step through the tables)", "results",
     _nothing),
    ("Help (`?`) over the Dashboard", "dashboard", _help),
)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fixture lab.db with a frozen amendment over its grid, every time fixed."""
    path = build(tmp_path_factory.mktemp("captures") / "lab.db")
    db = store.connect(path)
    a1 = prereg.create(db, "The enforced rule on two sims",
                       "We predict the enforced rule answers sooner.",
                       [{"id": "H1", "kind": "paired_diff", "metric": "success",
                         "regime": "persistent", "a": "enforced_rule", "b": "none"}],
                       {"models": ["sim-never", "sim-own5"],
                        "conditions": ["none", "enforced_rule"],
                        "regimes": ["clean", "persistent"], "question_sets": ["demo"],
                        "budgets": [8]})
    prereg.freeze(db, a1, load_registry(None))
    db.conn.close()
    freeze_times(path)
    conn = sqlite3.connect(path)
    with conn:  # the hashes cover the freeze time: fix what the screens show of them
        conn.execute("UPDATE amendments SET frozen_at = ?, version = '0.1.0', "
                     "content_sha256 = ?, prev_sha256 = ?",
                     (FIXED_ISO, "c7e71991eaf49ae5" * 4, "0" * 64))
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return path


def screen_text(app: App[None]) -> str:
    """What the terminal shows: the screen's cells, line by line, right-stripped."""
    return "\n".join(strip.text.rstrip() for strip in app.screen._compositor.render_strips())


async def capture(db: Path, mode: str, step: Step, expected: str | None = None) -> str:
    """The screen once it has settled: when the page holds a capture for it, the screen is
    read again (up to about 10 s of pauses) until it shows that, as a user would wait for a
    screen still drawing on a loaded machine; whatever it shows last is returned."""
    app = console_app(db, first_screen=mode)
    async with app.run_test(size=SIZE) as pilot:
        await step(pilot)
        text = screen_text(app)
        for _ in range(200 if expected is not None else 0):
            if text == expected:
                break
            await pilot.pause(0.05)
            await settle(pilot)
            text = screen_text(app)
        return text


def expected_capture(page: str, caption: str) -> str | None:
    """The text block the page shows under `caption`, if any."""
    _, found, rest = page.partition(f"{caption}:\n\n```text\n")
    return rest.partition("\n```\n")[0] if found else None


def section(captures: list[tuple[str, str]]) -> str:
    """The page's captures section: the intro, then each caption and its text block."""
    out = [HEADING, "\n", INTRO]
    for caption, text in captures:
        out += ["\n", f"{caption}:\n", "\n", "```text\n", text + "\n", "```\n"]
    return "".join(out)


@pytest.mark.asyncio
async def test_the_docs_captures_are_the_consoles(built: Path, tmp_path: Path) -> None:
    db = tmp_path / "lab.db"
    copy_db(built, db)
    page = DOC.read_text(encoding="utf-8")
    made = [(caption, await capture(db, mode, step,
                                    None if UPDATE else expected_capture(page, caption)))
            for caption, mode, step in CAPTURES]
    head, found, _ = page.partition(HEADING)
    assert found, "docs/console.md has no captures section"
    fresh = head + section(made)
    if UPDATE:
        DOC.write_text(fresh, encoding="utf-8")
        return
    diff = "".join(difflib.unified_diff(page.splitlines(True), fresh.splitlines(True),
                                        "docs/console.md", "the console now", n=1))
    assert page == fresh, ("docs/console.md's captures differ from the console's: "
                           "LAB_UPDATE_GOLDEN=1 pytest tests/test_console_captures.py "
                           "rewrites them (read the diff)\n" + diff)
