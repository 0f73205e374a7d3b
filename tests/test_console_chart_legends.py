"""The Hazard and Answering charts at 80×24 keep their plot whole: the legend is a keyed
line under each chart (each series' marker, in its colour, and its label), never a box
over the plot's cells."""

from __future__ import annotations

import re
from pathlib import Path
from typing import cast

import pytest
from textual.content import Content

from analysis.tables.plots import MARKERS, legend_text, line_chart
from console.screens.results import ResultsScreen
from tests.helpers.console import console_app, copy_db, settle

LABELS = ("enforced_rule:k=2", "none")
"""The arms the Trajectories fixture runs (each chart's series)."""


@pytest.fixture
def lab_db(trajectories_db: Path, tmp_path: Path) -> Path:
    target = tmp_path / "lab.db"
    copy_db(trajectories_db, target)
    return target


def plot_cells(chart: str) -> list[str]:
    """The cells inside each plot frame (between ┌…┐ and └…┘, inside │ … │)."""
    cells: list[str] = []
    inside = False
    for line in chart.splitlines():
        if "┌" in line:
            inside = True
            continue
        if "└" in line:
            inside = False
            continue
        if inside:
            left = max(line.find("┤"), line.find("│"))
            cells.append(line[left + 1:line.rfind("│")])
    return cells


def legend_lines(chart: str) -> list[str]:
    """The lines under each chart's x-axis label that key its series."""
    return [line for line in chart.splitlines()
            if any(line.startswith(f"{m} ") for m in MARKERS)]


@pytest.mark.asyncio
@pytest.mark.parametrize("view", ["hazard", "answering"])
async def test_the_legend_leaves_the_plot_whole_at_80x24(lab_db: Path, view: str) -> None:
    app = console_app(lab_db, first_screen="results")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        screen = cast(ResultsScreen, app.screen)
        while screen.view != view:
            await pilot.press("right_square_bracket")
            await settle(pilot)
        rendered = screen.query_one("#results-chart").render()
        assert isinstance(rendered, Content)
        chart = rendered.plain
        cells = plot_cells(chart)
        assert len(cells) >= 20, chart  # two charts' plots
        covered = [c for c in cells if re.search(r"[A-Za-z_:=]", c)]
        assert not covered, "\n".join(covered)
        keys = legend_lines(chart)
        assert keys == ["● enforced_rule:k=2   ■ none"] * 2, chart
        # the legend's marker is drawn in its series' colour, as in the plot
        key_at = chart.rindex("\n● enforced_rule") + 1
        for marker, offset in (("●", key_at), ("■", chart.index("■ none", key_at))):
            styles = {repr(span.style) for span in rendered.spans
                      if marker in chart[span.start:span.end]}
            at_key = [repr(span.style) for span in rendered.spans
                      if span.start <= offset < span.end]
            assert len(styles) == 1 and at_key == list(styles), (marker, styles, at_key)


def test_the_legend_wraps_on_whole_entries() -> None:
    keyed = [("●", "enforced_rule:k=2 · budget 16"), ("■", "none · budget 16"),
             ("▲", "random_rule:rate=0.6 · budget 16")]
    assert legend_text(keyed, 40) == ["● enforced_rule:k=2 · budget 16",
                                      "■ none · budget 16",
                                      "▲ random_rule:rate=0.6 · budget 16"]
    assert legend_text(keyed[1:2] * 2, 40) == ["■ none · budget 16   ■ none · budget 16"]


def test_the_inside_legend_is_unchanged_for_files() -> None:
    """`lab results` keeps plotext's box (its text output is unchanged)."""
    series = [(label, [0, 1, 2], [0.1 * k, 0.5, 0.9]) for k, label in enumerate(LABELS)]
    inside = line_chart(series, "t", "j")
    assert "enforced_rule:k=2" in "".join(plot_cells(inside))
    below = line_chart(series, "t", "j", legend="below")
    assert not any(re.search(r"[a-z]", c) for c in plot_cells(below))
    assert legend_lines(below) == ["● enforced_rule:k=2   ■ none"]
    assert len(below.splitlines()) == len(inside.splitlines())


@pytest.mark.parametrize("legend", ["below", "inside"])
def test_a_curve_that_hides_another_exactly_is_keyed_once_under_both_labels(legend: str
                                                                           ) -> None:
    """Two arms reaching the same points drew two curves, the second over the first, and
    the legend keyed both: the hidden one's marker was nowhere in the plot."""
    series = [("sim-never", [0, 1, 2], [0.1, 0.5, float("nan")]),
              ("sim-own3", [0, 1, 2], [0.3, 0.2, 0.1]),
              ("sim-own5", [0, 1, 2, 3], [0.1, 0.5, float("nan"), None]),
              ("sim-clock4", [0, 1, 2], [0.9, 0.8, 0.7])]
    chart = line_chart(series, "t", "j", legend=legend)  # type: ignore[arg-type]
    cells = "".join(plot_cells(chart))
    if legend == "below":
        assert legend_lines(chart) == [
            "● sim-never = sim-own5   ■ sim-own3   ◆ sim-clock4"], chart
        assert "▲" not in cells and {"●", "■", "◆"} <= set(cells), chart
    else:
        assert "sim-never = sim-own5" in cells and cells.count("sim-own5") == 1, chart
