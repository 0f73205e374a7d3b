"""Issue 22's first visits: Results' text drawn a line at a time (the same cells as
Static, only the lines in view rendered)."""

from __future__ import annotations

import re

import pytest
from textual.app import App, ComposeResult
from textual.containers import VerticalScroll
from textual.geometry import Offset
from textual.selection import Selection
from textual.strip import Strip
from textual.widgets import Static

from console.widgets.text_lines import TextLines

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
