"""Each screen's quick first visit: Results' text drawn a line at a time (the same cells as
Static, only the lines in view rendered) and the warm-up after the first frame (every
screen's module and stylesheet loaded, no restyle of the mounted screens on a first
visit, the garbage collector left alone in a headless app)."""

from __future__ import annotations

import gc
import re
import sys
from pathlib import Path

import pytest
from textual.app import App, ComposeResult
from textual.containers import VerticalScroll
from textual.geometry import Offset
from textual.selection import Selection
from textual.strip import Strip
from textual.widgets import Static

from console import warmup
from console.app import LabApp
from console.screens import SCREENS, LazyScreen
from console.widgets.text_lines import TextLines
from tests.helpers.console import build, console_app, settle
from tests.helpers.waiting import pause_until

TEXTS = ("", "a", "a\n", "a\n\nb",
         "Δ grid · model – x\n  indented   trailing   \n" + "wide " * 30,
         "\n".join(f"line {i} " + "Δ·" * (i % 7) for i in range(200)))


class _Shown(App[None]):
    """A chart above a text in a scrolling view, as on the Results screen."""

    CSS = "#view { height: 1fr; overflow-x: auto; padding: 0 1; } #text { width: auto; }"

    def __init__(self, text: str, lines: bool) -> None:
        super().__init__()
        self.text, self.lines = text, lines

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="view"):
            yield Static("chart", id="chart")
            yield TextLines(self.text, id="text") if self.lines else \
                Static(self.text, id="text", markup=False)


async def _capture(text: str, lines: bool, scroll: bool = False,
                   selection: Selection | None = None) -> tuple[str, str | None]:
    app = _Shown(text, lines)
    async with app.run_test(size=(60, 12)) as pilot:
        await pilot.pause()
        if scroll:
            app.query_one("#view").scroll_to(x=5, y=7, animate=False)
            await pilot.pause()
        if selection is not None:
            app.screen.selections = {app.query_one("#text"): selection}
            await pilot.pause()
        assert str(app.query_one("#text").render()) == text
        svg = re.sub(r"terminal-\d+", "terminal", app.export_screenshot())
        return svg, app.screen.get_selected_text()


@pytest.mark.asyncio
@pytest.mark.parametrize("text", TEXTS)
async def test_text_lines_draw_what_static_draws(text: str) -> None:
    for scroll in (False, True):
        assert await _capture(text, True, scroll) == await _capture(text, False, scroll)


@pytest.mark.asyncio
@pytest.mark.parametrize("selection", [Selection(Offset(2, 0), Offset(5, 1)),
                                       Selection(Offset(1, 1), Offset(4, 1)),
                                       Selection(None, None), Selection(Offset(3, 1), None)])
async def test_text_lines_select_as_static(selection: Selection) -> None:
    assert await _capture(TEXTS[4], True, selection=selection) == \
        await _capture(TEXTS[4], False, selection=selection)


@pytest.mark.asyncio
async def test_text_lines_render_only_the_lines_in_view() -> None:
    rendered: list[int] = []

    class Counted(TextLines):
        def render_line(self, y: int) -> Strip:
            rendered.append(y)
            return super().render_line(y)

    class Long(App[None]):
        def compose(self) -> ComposeResult:
            with VerticalScroll():
                yield Counted("\n".join(f"row {i}" for i in range(5000)), id="text")

    app = Long()
    async with app.run_test(size=(40, 10)) as pilot:
        await pilot.pause()
        assert app.query_one("#text").size.height == 5000
        assert rendered and max(rendered) < 20  # the 10 rows in view, not 5,000


def test_import_screens_says_what_failed() -> None:
    calls: list[int] = []
    classes, failed = warmup.import_screens(
        [LazyScreen("help", "HelpScreen"), LazyScreen("no_such_screen", "Nope")],
        lambda: calls.append(1))
    assert [c.__name__ for c in classes] == ["HelpScreen"]
    assert len(failed) == 1 and failed[0].startswith("console.screens.no_such_screen: ")
    assert len(calls) == 2 + len(warmup.RESULTS_IMPORTS) + 1  # before every import and call


def test_pacer_starts_once_settled_and_waits_while_a_screen_is_shown(
        monkeypatch: pytest.MonkeyPatch) -> None:
    now = [100.0]
    monkeypatch.setattr(warmup.time, "monotonic", lambda: now[0])
    pacer = warmup.Pacer()
    assert not pacer.tick(False) and not pacer.quiet.is_set()  # the first screen reads
    assert not pacer.tick(True)  # drawn: settled from now on
    now[0] += warmup.SETTLE_S
    assert pacer.tick(True) and pacer.quiet.is_set()  # start (once)
    assert not pacer.tick(True)
    pacer.switched()  # a digit: the thread waits while that screen reads
    assert not pacer.tick(False) and not pacer.quiet.is_set()
    now[0] += warmup.WAIT_S + 0.01  # a screen that keeps reading holds it back no longer
    assert not pacer.tick(False)
    now[0] += warmup.SETTLE_S
    assert not pacer.tick(False) and pacer.quiet.is_set()


def test_a_console_that_owns_its_process_freezes_and_tunes_the_collector() -> None:
    # conftest's autouse fixture puts the collector back as it was
    gc.unfreeze()
    before = gc.get_threshold()
    warmup.freeze_startup_objects()
    assert gc.get_freeze_count() > 1000  # the modules and classes at least
    assert gc.get_threshold() == (warmup.YOUNG_OBJECTS, *before[1:])


@pytest.fixture
def lab_db(tmp_path: Path) -> Path:
    """A lab.db with a queued (not run) sim grid."""
    return build(tmp_path / "lab.db", run=False)


@pytest.mark.asyncio
async def test_warm_up_loads_every_screen_then_first_visits_skip_restyles(
        lab_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from analysis.base.cache import code_hash
    from analysis.stats.blas import single_thread

    once = (single_thread, code_hash)
    for f in once:
        f.cache_clear()
    frozen = gc.get_freeze_count()
    app = console_app(lab_db, warm_up=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await pause_until(pilot, lambda: app.warm, "the warm-up")
        for info in SCREENS:
            assert isinstance(info.factory, LazyScreen)
            assert f"console.screens.{info.factory.module}" in sys.modules
            for path in warmup.css_paths(info.factory.screen_class()):
                assert app.stylesheet.has_source(str(path))
        assert set(warmup.RESULTS_IMPORTS) <= set(sys.modules)
        # what Results' first computation pays once per process is paid
        assert [f.cache_info().currsize for f in once] == [1, 1]
        assert gc.get_freeze_count() == frozen  # headless: the test process's GC is its own
        restyles: list[int] = []
        real = type(app).refresh_css

        def counted(self: LabApp, animate: bool = True) -> None:
            restyles.append(1)
            real(self, animate)

        monkeypatch.setattr(type(app), "refresh_css", counted)
        for key in "2345":
            await pilot.press(key)
            await settle(pilot)
        assert app.current_mode == "live" and not restyles
