"""At 60×20 no label, hint or value breaks inside a word: every screen (and the Sets
forms, the amendment editor, each Results tab and the help) is drawn at 60×20 and each
widget's lines are scanned for a line ending in letters whose next line starts with
letters that together are one word of the widget's own text, and for a one-line label
cut inside a word without "…" (a tab strip's tabs scroll into view, and are left out)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import cast

import pytest
from textual.app import App, ComposeResult
from textual.geometry import Region
from textual.pilot import Pilot
from textual.widget import Widget
from textual.widgets import Input, Select, SelectionList, Static, Tab, Tabs

from console.screens.enqueue import EnqueueScreen
from core import prereg, store
from tests.helpers.console import build, console_app, copy_db, settle

SIZE = (60, 20)
WORD_END = re.compile(r"([A-Za-z]+)$")
WORD_START = re.compile(r"\s*([A-Za-z]+)")


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A lab.db with a run sim grid and a draft amendment with a long title."""
    path = build(tmp_path_factory.mktemp("narrow") / "lab.db", run=True)
    db = store.connect(path)
    prereg.create(db, "The enforced rule against the own-judgment simulations",
                  "Its body, long enough to wrap at sixty columns of a small terminal.")
    db.conn.close()
    return path


@pytest.fixture
def lab_db(built: Path, tmp_path: Path) -> Path:
    return copy_db(built, tmp_path / "lab.db")


def source_text(widget: Widget) -> str:
    """What a widget draws, before wrapping ("" for one that draws no text of its own)."""
    try:
        rendered = widget.render()
    except Exception:  # a widget that renders only through its children or lines
        return ""
    plain = getattr(rendered, "plain", rendered)
    return plain if isinstance(plain, str) else ""


def visible(widget: Widget) -> Region:
    """The part of a widget's content on screen: clipped by every container around it."""
    region = widget.content_region
    for node in widget.ancestors:
        if isinstance(node, Widget):
            region = region.intersection(node.content_region)
    return region.intersection(widget.screen.region)


def split_words(app: App[None]) -> list[str]:
    """Each word a widget on screen shows broken over two lines, as `piece|piece`."""
    lines = [strip.text for strip in app.screen._compositor.render_strips()]
    found: list[str] = []
    for widget in app.screen.query("*"):
        if widget.children or not widget.display or not widget.region.height:
            continue
        text = source_text(widget)
        region = visible(widget)
        if not text:
            continue
        shown = [line[region.x:region.right].rstrip() for line in lines[region.y:region.bottom]]
        one = " ".join(text.split())
        if region.height == 1 and "\n" not in text.strip() and not isinstance(widget, Tab):
            cut = shown[0].strip()
            if (cut and cut != one and one.startswith(cut) and cut[-1].isalpha()
                    and one[len(cut)].isalpha()):
                found.append(f"{type(widget).__name__}#{widget.id}: {cut}| (cut)")
        for upper, lower in zip(shown, shown[1:]):
            end, start = WORD_END.search(upper), WORD_START.match(lower)
            if not end or not start:
                continue
            a, b = end.group(1), start.group(1)
            whole = re.search(rf"(?<![A-Za-z]){a}{b}(?![A-Za-z])", text)
            apart = re.search(rf"(?<![A-Za-z]){a}[^A-Za-z]+{b}(?![A-Za-z])", text)
            if whole and not apart:
                found.append(f"{type(widget).__name__}#{widget.id}: {a}|{b}")
    return found


async def keys(pilot: Pilot[None], *pressed: str) -> None:
    await pilot.press(*pressed)
    await settle(pilot)


STATES: dict[str, tuple[str, tuple[tuple[str, ...], ...]]] = {
    "dashboard": ("dashboard", ((), ("question_mark",))),
    "prereg": ("prereg", ((), ("down",), ("e",), ("question_mark",))),
    "enqueue": ("enqueue", ((), ("m",), ("question_mark",))),
    "sets": ("enqueue", (("escape", "s"), ("c",), ("escape", "i"))),
    "jobs": ("jobs", ((), ("enter",), ("question_mark",))),
    "live": ("live", ((), ("question_mark",))),
    "trajectories": ("trajectories", ((), ("enter",), ("m",), ("question_mark",))),
    "results": ("results", ((),) + (("right_square_bracket",),) * 8),
}
"""Per case: the first screen, then the keys pressed before each look (in turn)."""


@pytest.mark.asyncio
@pytest.mark.parametrize("case", list(STATES))
async def test_no_word_breaks_at_60x20(lab_db: Path, case: str) -> None:
    mode, steps = STATES[case]
    app = console_app(lab_db, first_screen=mode)
    broken: list[str] = []
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        for pressed in steps:
            if pressed == ("question_mark",):
                await keys(pilot, "question_mark")
                broken += [f"{case} help: {b}" for b in split_words(app)]
                await keys(pilot, "escape")
                continue
            await keys(pilot, *pressed)
            broken += [f"{case} {' '.join(pressed) or 'first'}: {b}" for b in split_words(app)]
    assert not broken, "\n".join(broken)


@pytest.mark.asyncio
async def test_the_enqueue_preview_keeps_its_words_at_60x20(lab_db: Path) -> None:
    """The preview of a planned grid (its lines are the longest the form has)."""
    app = console_app(lab_db, first_screen="enqueue")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = cast(EnqueueScreen, app.screen)
        screen.query_one("#enq-set", Select).value = "demo"
        screen.query_one("#enq-models", SelectionList).select("sim-own5")
        screen.query_one("#enq-conditions", SelectionList).select("none")
        screen.query_one("#enq-regimes", SelectionList).focus()
        await pilot.press("m")
        screen.query_one("#enq-run", Input).value = "pilot"
        preview = screen.query_one("#enq-preview-text", Static)
        for _ in range(400):  # the preview plans after a pause in changes: wait for it
            await pilot.pause(0.05)
            await settle(pilot)
            if not screen.planning() and "can be queued" in str(preview.render()):
                break
        assert "can be queued" in str(preview.render())
        assert split_words(app) == []


def strip_row(app: App[None], tabs: Tabs) -> str:
    """The tab strip's row of labels as drawn, its two sign columns included."""
    lines = [strip.text for strip in app.screen._compositor.render_strips()]
    region = tabs.region
    return lines[region.y][region.x:region.right]


async def walk_tabs(pilot: Pilot[None], tabs: Tabs, key: str) -> list[str]:
    """Press `key` once per tab and, after each, check the active tab's whole label is
    in the strip's row; the rows seen, in turn (the first before any key)."""
    rows: list[str] = []
    for _ in range(tabs.tab_count):
        row = strip_row(pilot.app, tabs)
        label = str(tabs.active_tab.label) if tabs.active_tab else "?"
        assert label in row[1:-1], f"{label!r} is not on screen: {row!r}"
        rows.append(row)
        await keys(pilot, key)
    return rows


@pytest.mark.asyncio
async def test_every_tab_is_reachable_and_its_strip_says_more_lie_beyond(
        lab_db: Path) -> None:
    """At 60×20 Results' tables and an amendment's views are wider than their strips:
    stepping through them (`]`, `t`) keeps the active tab's label on screen, and a strip
    shows › while tabs lie beyond its right edge and ‹ while some lie off its left."""
    app = console_app(lab_db, first_screen="results")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        tabs = app.screen.query_one("#results-tabs", Tabs)
        rows = await walk_tabs(pilot, tabs, "right_square_bracket")
        assert rows[0].startswith(" ") and rows[0].endswith("›"), rows[0]
        assert rows[-1].startswith("‹") and rows[-1].rstrip().endswith("Replication")
        assert all(row[0] == "‹" or row[-1] == "›" for row in rows)  # never all shown
        await pilot.resize_terminal(200, 40)
        await settle(pilot)
        wide = strip_row(app, tabs)
        assert "Replication" in wide and "‹" not in wide and "›" not in wide, wide
    app = console_app(lab_db, first_screen="prereg")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        tabs = app.screen.query_one("#prereg-view Tabs", Tabs)
        rows = await walk_tabs(pilot, tabs, "t")
        assert rows[0].endswith("›") and rows[-1].startswith("‹"), rows
        assert "Pins & verify" in rows[-1]


class _Narrow(App[None]):
    """Two 8-column labels: one word too long for a line, and words that wrap between."""

    CSS = "Static { width: 8; height: auto; }"

    def compose(self) -> ComposeResult:
        yield Static("exploratory", id="long")
        yield Static("one two three", id="words")


@pytest.mark.asyncio
async def test_the_scan_finds_a_split_word_and_only_that() -> None:
    app = _Narrow()
    async with app.run_test(size=(20, 8)) as pilot:
        await pilot.pause()
        assert split_words(app) == ["Static#long: explorat|ory"]
