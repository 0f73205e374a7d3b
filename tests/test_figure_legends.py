"""A legend of many entries beside its axes (`analysis.figures.style.legend_right`): on a
study of many arms × regimes × budgets × runs in one panel, success per regime, the
hazard by run and cost against success keep every entry on the figure and their axes'
labels laid out; a legend that fits is drawn as before."""

from __future__ import annotations

import warnings

import pytest
from matplotlib.figure import Figure

from analysis.figures import FIGURES
from analysis.figures.base import Skipped
from analysis.figures.study import StudyRows
from analysis.figures.style import STYLES, legend_right, new_figure, styled
from tests.helpers.figure_rows import MODELS, study_table_rows, synthetic_study

CROWDED = ("success_by_regime", "hazard_by_run", "cost_success")


@pytest.fixture(scope="module")
def one_model_study() -> StudyRows:
    """The synthetic study of one model: 40 series (arm × regime × budget × run) a panel."""
    return synthetic_study({t: [r for r in rows if r["model"] == MODELS[0]]
                            for t, rows in study_table_rows().items()})


def _outside(fig: Figure) -> list[str]:
    """The legend entries drawn (in part) outside the figure, at a screen's resolution
    (at 70 dpi a legend's rows take more room than its laid-out box says)."""
    fig.set_dpi(70)
    fig.canvas.draw()
    box = fig.get_window_extent()
    legends = [legend for ax in fig.axes if (legend := ax.get_legend()) is not None]
    return [t.get_text() for legend in legends for t in legend.get_texts()
            if t.get_window_extent().y0 < box.y0 - 0.5 or t.get_window_extent().y1 > box.y1 + 0.5]


@pytest.mark.parametrize("name", CROWDED)
def test_a_crowded_legend_stays_on_the_figure_and_the_layout_applies(
        name: str, one_model_study: StudyRows) -> None:
    figure = next(f for f in FIGURES if f.name == name)
    style = STYLES["paper"]
    with styled(style):
        drawn = figure.build(one_model_study, style)
        assert not isinstance(drawn, Skipped), drawn
        fig = drawn.figure
        entries = max(len(legend.get_texts()) for ax in fig.axes
                      if (legend := ax.get_legend()) is not None)
        assert entries >= 30, entries  # crowded: it did not fit before
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # "Tight layout not applied" fails the test
            fig.tight_layout()
        assert _outside(fig) == []
        assert fig.get_size_inches()[1] > style.panel_height  # it grew for its legend


def test_a_legend_that_fits_is_centred_and_the_figure_keeps_its_size() -> None:
    style = STYLES["paper"]
    with styled(style):
        fig, (ax,) = new_figure(style)
        for i in range(4):
            ax.plot([0, 1], [i, i], label=f"arm {i}")
        size = tuple(fig.get_size_inches())
        legend_right(ax, style)
        legend = ax.get_legend()
        assert legend is not None
        assert legend._loc == 6  # center left, as before: a study's usual figure unchanged
        assert tuple(fig.get_size_inches()) == size


def test_a_legend_too_tall_for_the_page_takes_columns() -> None:
    style = STYLES["paper"]
    with styled(style):
        fig, axes = new_figure(style, rows=2)
        for ax in axes:
            for i in range(60):
                ax.plot([0, 1], [i, i], label=f"series {i}")
            legend_right(ax, style)
        columns = [ax.get_legend()._ncols for ax in axes]
        assert columns[0] > 1 and columns == sorted(columns)
        assert fig.get_size_inches()[1] <= style.max_height
        assert _outside(fig) == []
