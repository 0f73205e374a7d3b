"""The console's stylesheet (`console.stylesheet`): a screen's first show no longer parses
every CSS source again, and a new theme still restyles with its own colours."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest
from textual.app import App
from textual.cache import LRUCache
from textual.color import Color
from textual.css import stylesheet as textual_stylesheet
from textual.css.model import RuleSet
from textual.css.stylesheet import Stylesheet, StylesheetParseError

from console import stylesheet as console_stylesheet
from console.stylesheet import ReusingStylesheet, install
from core import store
from core.demo_set import ensure_demo_set
from tests.helpers.console import console_app, settle

SCREEN_KEYS = ("2", "3", "4", "5", "6", "7", "1")


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> Iterator[Counter[object]]:
    """How often Textual's CSS parser ran, per source, from a process with no parses yet
    (the parses are the process's: an earlier test's apps would have made them)."""
    monkeypatch.setattr(console_stylesheet, "_PARSES", LRUCache(8))
    counts: Counter[object] = Counter()
    parse = textual_stylesheet.parse

    def counted(scope: str, css: str, read_from: object, **kwargs: object) -> Iterable[RuleSet]:
        counts[read_from] += 1
        return parse(scope, css, read_from, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(textual_stylesheet, "parse", counted)
    yield counts


@pytest.fixture
def lab_db(tmp_path: Path) -> Path:
    path = tmp_path / "lab.db"
    db = store.connect(path)
    ensure_demo_set(db)
    db.conn.close()
    return path


@pytest.mark.asyncio
async def test_every_screen_shown_parses_each_source_about_once(
        lab_db: Path, parses: Counter[object]) -> None:
    """Shown one after another, the seven screens parse each source once per tie-breaker
    it is read with (a base class's CSS comes again, ranked lower, with each deeper
    subclass: Widget's five times), about 1.5 parses a source in all; Textual's own
    stylesheet parsed the dashboard's sources 15 times each."""
    app = console_app(lab_db)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        assert isinstance(app.stylesheet, ReusingStylesheet)
        for key in SCREEN_KEYS:
            await pilot.press(key)
            await settle(pilot)
        assert app.errors == []
        sources = len(app.stylesheet.source)
    assert sources >= 40, sources  # every screen's stylesheet was read
    most = parses.most_common(3)
    assert most[0][1] <= 6, most
    assert sum(parses.values()) <= 2 * sources, (sum(parses.values()), sources, most)


class Themed(App[None]):
    """A bare app on `ReusingStylesheet`, with a colour taken from the theme."""

    CSS = "Screen { background: $primary; }"

    def __init__(self) -> None:
        super().__init__()
        install(self)


@pytest.mark.asyncio
async def test_a_new_theme_parses_again_and_shows_its_colours() -> None:
    app = Themed()
    async with app.run_test() as pilot:
        app.theme = "textual-dark"
        await pilot.pause()
        dark = app.screen.styles.background
        cached = len(app.stylesheet._parse_cache)
        assert cached > 0
        app.refresh_css()  # the same variables again: the parses are kept
        await pilot.pause()
        assert len(app.stylesheet._parse_cache) == cached
        app.theme = "textual-light"
        await pilot.pause()
        light = app.screen.styles.background
    assert dark != light
    for theme, shown in (("textual-dark", dark), ("textual-light", light)):
        primary = app.get_theme(theme)
        assert primary is not None
        assert shown.rgb == Color.parse(primary.primary).rgb


@pytest.mark.asyncio
async def test_an_app_started_after_another_in_the_process_parses_nothing_again(
        parses: Counter[object]) -> None:
    """The parses are the process's (per set of variables), not each app's: a second app
    reads the first one's, and shows the same colours."""
    shown = []
    for _ in range(2):
        app = Themed()
        async with app.run_test() as pilot:
            await pilot.pause()
            shown.append(app.screen.styles.background)
        if len(shown) == 1:
            first = sum(parses.values())
    assert first > 0 and sum(parses.values()) == first
    assert shown[0] == shown[1]


def test_reparse_keeps_the_rules_and_an_error_leaves_them() -> None:
    """As Textual's: the same rules after a re-parse; invalid CSS raises and the
    stylesheet keeps the rules it had."""
    sheet = ReusingStylesheet()
    sheet.add_source("Static { color: red; }", read_from=("a.tcss", ""))
    sheet.parse()
    before = [rule.css for rule in sheet.rules]
    sheet.reparse()
    assert [rule.css for rule in sheet.rules] == before
    plain = Stylesheet()
    plain.add_source("Static { color: red; }", read_from=("a.tcss", ""))
    plain.reparse()
    assert [rule.css for rule in plain.rules] == before
    sheet.add_source("Static { color: ; }", read_from=("b.tcss", ""))
    with pytest.raises(StylesheetParseError):
        sheet.reparse()
    assert [rule.css for rule in sheet.rules] == before


def test_install_refuses_an_app_that_read_its_css() -> None:
    app = Themed.__new__(Themed)
    App.__init__(app)
    app.stylesheet.add_source("Static { color: red; }", read_from=("a.tcss", ""))
    with pytest.raises(AssertionError):
        install(app)
