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


def _applied(screen: object) -> list[tuple[object, dict[str, object], dict[str, object]]]:
    """Each node of `screen` with the rules the stylesheet gave it and its component
    classes' rules, in DOM order."""
    return [(node, dict(node.styles.base._rules),
             {name: dict(styles.base._rules)
              for name, styles in sorted(node._component_styles.items())})
            for node in screen.walk_children(with_self=True)]  # type: ignore[attr-defined]


async def _show(pilot: object, mode: str) -> None:
    """Show a screen as its digit key does, without a key (a key gives the app focus)."""
    await pilot.app.run_action(f"show('{mode}')")  # type: ignore[attr-defined]
    await settle(pilot)  # type: ignore[arg-type]


def _restyled_as_a_restyle_would(app: App[None]) -> list[str]:
    """Check that the screen's widgets have the styles a full restyle gives them; the
    dashboard's panel titles' text styles."""
    shown = _applied(app.screen)
    titles = [str(node.styles.text_style) for node in app.screen.query(".panel-title")]
    app.stylesheet.update(app.screen, animate=False)
    assert _applied(app.screen) == shown
    return titles


@pytest.mark.asyncio
async def test_a_screen_first_shown_is_restyled_once_and_has_its_styles(lab_db: Path) -> None:
    """Textual tells a mode's screen twice that it is shown on its first show; the second
    restyle, with nothing changed since the first, is skipped, and the screen has the
    styles a full restyle gives it."""
    app = console_app(lab_db)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await _show(pilot, "jobs")
        _restyled_as_a_restyle_would(app)
        assert app.errors == []


@pytest.mark.asyncio
async def test_a_screen_shown_again_is_restyled_when_and_only_when_it_can_have_changed(
        lab_db: Path) -> None:
    """A screen shown again is restyled only when something its styles depend on outside
    it changed while another screen was shown (`StyledUnder`): shown again unchanged, it
    is not restyled whole (Textual's handler restyled every widget of it each time, about
    half of a digit key's CPU); after CSS read meanwhile, an app class, the app losing
    focus or a theme, it shows the change, and after each it has the styles a full
    restyle gives it."""
    from textual.screen import Screen

    app = console_app(lab_db)
    whole: list[str] = []
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        # rules on the dashboard's panel titles that only their change makes apply
        for css in ("App.-lab-test #dash .panel-title { text-style: strike; }",
                    "App:blur #dash .panel-title { text-style: reverse; }"):
            app.stylesheet.add_source(css, read_from=("test", css))
        app.stylesheet.reparse()
        app.stylesheet.update(app)
        for key in (*SCREEN_KEYS, "4", "1"):  # every screen's CSS read, shown again
            await pilot.press(key)
            await settle(pilot)
        update_styles = app.update_styles

        def counted(node: object, animate: bool = True) -> None:
            if isinstance(node, Screen):
                whole.append(type(node).__name__)
            update_styles(node, animate=animate)  # type: ignore[arg-type]

        app.update_styles = counted  # type: ignore[method-assign]
        shown = []
        for change in ("nothing", "css added", "app class", "app blur", "theme"):
            await _show(pilot, "jobs")
            if change == "css added":  # as Textual reads a screen's CSS on its first show
                app.stylesheet.add_source("#dash .panel-title { text-style: italic; }",
                                          read_from=("test", change))
                app.stylesheet.reparse()
                app.stylesheet.update(app)
            elif change == "app class":
                app.add_class("-lab-test")
            elif change == "app blur":
                app.app_focus = False
            elif change == "theme":
                app.theme = "textual-light" if app.current_theme.dark else "textual-dark"
            await settle(pilot)
            await _show(pilot, "dashboard")
            if change == "nothing":
                assert whole == [], whole
            shown.append(_restyled_as_a_restyle_would(app))
        assert app.errors == []
    nothing, css_added, app_class, app_blur, _theme = shown
    assert nothing and not any("italic" in t or "strike" in t for t in nothing), nothing
    assert all("italic" in t for t in css_added), css_added
    assert all("strike" in t for t in app_class), app_class
    assert all("reverse" in t for t in app_blur), app_blur
