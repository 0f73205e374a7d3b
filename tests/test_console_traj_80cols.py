"""Trajectories at 80 columns: the question wraps under its text (never cut), a step's
wrapped lines start under their text column, the short codes (act, pers., rec1, late3,
U1, ok) are explained on screen, and a step with no recorded time says so, not `0 ms`."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from textual.app import App
from textual.widgets import DataTable, Static

from console.widgets.hanging import hang
from console.widgets.traj_render import MATCHED_KEY, step_body
from core.episode import Step
from tests.helpers.console import console_app, copy_db, settle

QUESTION = "Which company was founded earlier, Seiming Optics or Bithell Lamps?"
"""The question of the fixture's newest episode (72, demo-006)."""


@pytest.fixture
def lab_db(trajectories_db: Path, tmp_path: Path) -> Path:
    target = tmp_path / "lab.db"
    copy_db(trajectories_db, target)
    return target


def lines_of(app: App[None], selector: str) -> list[str]:
    """The lines a widget shows on screen (its region of the screen's cells)."""
    region = app.screen.query_one(selector).content_region
    rows = list(app.screen._compositor.render_strips())[region.y:region.bottom]
    return [strip.text[region.x:region.right].rstrip() for strip in rows]


@pytest.mark.asyncio
async def test_an_episode_reads_whole_at_80_columns(lab_db: Path) -> None:
    app = console_app(lab_db, first_screen="trajectories")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        app.screen.query_one("#traj-list", DataTable).focus()
        await pilot.press("enter")
        await settle(pilot)
        head = lines_of(app, "#traj-head")
        asked = next(i for i, line in enumerate(head) if line.startswith("Q demo-006: "))
        indent = " " * len("Q demo-006: ")
        assert head[asked + 1].startswith(indent + "Lamps?"), head
        joined = head[asked] + " " + head[asked + 1].strip()
        assert joined == f"Q demo-006: {QUESTION}", head
        step = lines_of(app, "#traj-step")
        assert all(len(line) <= 78 for line in step)
        thought = next(i for i, line in enumerate(step) if line.startswith("thought: "))
        assert step[thought + 1].startswith(" " * len("thought: ") + "Optics."), step
        judged = next(i for i, line in enumerate(step) if line.startswith("judgment: "))
        assert step[judged + 1].startswith(" " * len("judgment: ") + "USELESS"), step
        assert any("– (no time recorded)" in line for line in step), step
        assert not any(" 0 ms" in line for line in step), step


@pytest.mark.asyncio
async def test_the_episode_head_is_never_cut_at_80_columns(lab_db: Path) -> None:
    """The head's lines wrap under their text instead of ending in "…": who ran it (the
    run was cut), the outcome with a long answer and its gold, the calls and tokens."""
    answer = "Seiming Optics, founded in the harbour town of Lerrstead well before 1900"
    conn = sqlite3.connect(lab_db)
    with conn:
        conn.execute("UPDATE episodes SET answer = ? WHERE id = 72", (answer,))
    conn.close()
    app = console_app(lab_db, first_screen="trajectories")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        app.screen.query_one("#traj-list", DataTable).focus()
        await pilot.press("enter")
        await settle(pilot)
        head = lines_of(app, "#traj-head")
        assert all(len(line) <= 78 for line in head) and "…" not in "".join(head), head
        items: list[str] = []  # each wrapped line joined to the line it continues
        for line in head:
            if line.startswith(" ") and items:
                items[-1] += " " + line.strip()
            else:
                items.append(line)
        assert items[0] == ("episode 72 · sim-own5 · enforced_rule:k=2 · clean · seed 0 · "
                            "budget 8 · run traj"), head
        assert head[1].startswith(" " * len("episode 72 · ") + "run traj"), head
        assert items[2] == (f"✓ correct · '{answer}' at action 3, F1 1.00 · gold "
                            "'Seiming Optics'"), head
        hung = " " * len("✓ correct ")
        assert head[5].startswith(hung) and head[5][len(hung)] != " ", head
        assert items[3].startswith("calls: ") and items[3].endswith(
            "tokens 1,654 in / 105 out"), head


@pytest.mark.asyncio
async def test_the_codes_are_explained_on_screen(lab_db: Path) -> None:
    app = console_app(lab_db, first_screen="trajectories")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("question_mark")
        await settle(pilot)
        helped = " ".join(str(app.screen.query_one("#help-workflow", Static).render()).split())
        for code in ("act = the action it answered at", "pers. = persistent",
                     "rec1…rec5 = recover_after_1…5", "late3 = late_onset_from_3",
                     "U1, U2 …: judged useless", "ok: judged useful", "⏎ answer",
                     "none recorded"):
            assert code in helped, code
        await pilot.press("escape")
        await settle(pilot)
        app.screen.query_one("#traj-list", DataTable).focus()
        await pilot.press("enter")
        await settle(pilot)
        await pilot.press("m")
        await settle(pilot)
        assert MATCHED_KEY in lines_of(app, "#traj-m-head"), lines_of(app, "#traj-m-head")


def test_a_recorded_time_is_shown_in_ms() -> None:
    timed = step_body(Step(t=1, raw="", latency_ms=812.4), None, "", 1).plain
    untimed = step_body(Step(t=1, raw=""), None, "", 1).plain
    assert timed.endswith("· 812 ms") and untimed.endswith("· – (no time recorded)")


def test_hang_indents_continuations_and_keeps_words() -> None:
    from rich.text import Text

    text = Text("thought: " + "word " * 20 + "\n  [Page] " + "longer " * 12)
    lines = hang(text, 40).plain.splitlines()
    assert all(len(line) <= 40 for line in lines)
    assert lines[1].startswith(" " * 9 + "word")
    page = next(i for i, line in enumerate(lines) if line.startswith("  [Page]"))
    assert lines[page + 1].startswith("  longer")
    assert " ".join(hang(text, 40).plain.split()) == " ".join(text.plain.split())
