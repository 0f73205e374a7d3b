"""Figures checked as a reader would look at them, on a study of many groups
(`tests/helpers/figure_rows.py`: two models × five arms × two budgets × a confirmatory
and an exploratory run × the main family and `plausible`), drawn without a lab.db:
no line joins two regime families, no two rows of a panel share a label."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from analysis.figures import FIGURES
from analysis.figures.base import Drawn
from analysis.figures.style import STYLES, styled
from core.store.selection import Selection
from tests.helpers.figure_rows import synthetic_study


def drawn(name: str, **fields: Any) -> Drawn:
    """Figure `name` drawn on the synthetic study (or with `fields` replaced)."""
    (fig,) = [f for f in FIGURES if f.name == name]
    with styled(STYLES["paper"]):
        out = fig.build(synthetic_study(**fields), STYLES["paper"])
    assert isinstance(out, Drawn), out
    return out


def close(figure: Figure) -> None:
    plt.close(figure)


def _line(handle: Any) -> Line2D:
    """A legend handle's line: the handle itself, or an errorbar container's data line."""
    return handle if hasattr(handle, "get_marker") else handle.lines[0]


def data_lines(ax: Axes) -> list[tuple[np.ndarray, np.ndarray]]:
    """The (x, y) of each drawn line with more than one point."""
    out = []
    for line in ax.get_lines():
        xs = np.asarray(line.get_xdata(), dtype=float)
        if len(xs) > 1:
            out.append((xs, np.asarray(line.get_ydata(), dtype=float)))
    return out


def test_a_hazard_line_never_joins_two_regime_families() -> None:
    out = drawn("hazard_by_run")
    try:
        for ax in out.figure.axes:
            lines = data_lines(ax)
            assert lines
            for xs, _ in lines:  # a line through two families visits each j twice
                assert np.all(np.diff(xs) > 0), xs
    finally:
        close(out.figure)


@pytest.mark.parametrize("name", ["delta_forest", "hazard_slopes"])
def test_no_two_rows_of_a_forest_panel_share_a_label(name: str) -> None:
    out = drawn(name)
    try:
        labelled = [[t.get_text() for t in ax.get_yticklabels()] for ax in out.figure.axes]
        labelled = [labels for labels in labelled if labels]
        assert labelled
        for labels in labelled:
            assert len(labels) == len(set(labels)), labels
    finally:
        close(out.figure)


def test_every_known_arm_has_a_marker_of_its_own() -> None:
    from analysis.figures.identity import KNOWN, arm_look

    looks = [arm_look(a) for a in KNOWN]
    assert len({look.marker for look in looks}) == len(KNOWN)
    assert arm_look("enforced_rule:k=7").color == arm_look("enforced_rule").color
    assert arm_look("enforced_rule:k=7").linestyle != arm_look("enforced_rule").linestyle
    assert arm_look("none:judge=true").fill != arm_look("none").fill == "full"


@pytest.mark.parametrize("name", ["success_by_regime", "hazard_by_run"])
def test_an_arm_keeps_its_look_in_every_panel(name: str) -> None:
    """Each legend entry is drawn in its arm's look, whatever the panel or its order."""
    from matplotlib.colors import to_hex

    from analysis.figures.identity import arm_look

    out = drawn(name)
    try:
        seen = 0
        for ax in out.figure.axes:
            for handle, text in zip(*ax.get_legend_handles_labels()):
                arm = text.split(" · ")[0]
                line = _line(handle)
                look = arm_look(arm)
                assert (to_hex(line.get_color()), line.get_marker()) == \
                    (look.color.lower(), look.marker), (arm, name)
                seen += 1
        assert seen
    finally:
        close(out.figure)


def declared_rows(**kw: Any) -> tuple[list[dict[str, Any]], Any]:
    from analysis.figures.select import Declared, declare

    study, chosen = declare(synthetic_study(), Declared(**kw))
    return [r for rows in study.rows.values() for r in rows], chosen


def test_by_default_figures_draw_confirmatory_runs_at_the_primary_budget_in_one_family() -> None:
    from analysis.figures.base import family

    rows, chosen = declared_rows()
    assert rows and {r["runs"] for r in rows} == {"confirm"}
    assert {r["budget"] for r in rows} == {8} and chosen.budgets == (8,)
    assert {family(r) for r in rows} == {"main"} and not chosen.exploratory
    study = synthetic_study()
    assert {r["table"] for r in rows} == {t for t, rs in study.rows.items() if rs}


def test_budgets_family_and_runs_are_chosen_when_asked() -> None:
    from analysis.figures.base import family

    rows, _ = declared_rows(budgets=(16,))
    assert {r["budget"] for r in rows if r["table"] != "budgets"} == {16}
    rows, _ = declared_rows(all_budgets=True, family="plausible")
    assert {r["budget"] for r in rows} == {8, 16}
    assert {family(r) for r in rows} == {"plausible"}
    rows, chosen = declared_rows(runs_named=True, family="all")
    assert {r["runs"] for r in rows} == {"confirm", "pilot"}
    assert {family(r) for r in rows} == {"main", "plausible"}
    assert not chosen.exploratory


def test_a_study_of_exploratory_runs_only_is_drawn_and_said_so() -> None:
    from analysis.figures.select import Declared, declare
    from tests.helpers.figure_rows import study_table_rows

    only = {t: [r for r in rs if r["runs"] == "pilot"] for t, rs in study_table_rows().items()}
    study, chosen = declare(synthetic_study(only), Declared())
    assert chosen.exploratory and study.rows["success"]


@pytest.mark.parametrize("kw", [{}, {"budgets": (16,)}, {"all_budgets": True},
                                {"runs_named": True}, {"runs_named": True, "all_budgets": True},
                                {"family": "plausible"}])
def test_a_figure_drawn_alone_draws_the_rows_it_draws_among_all(kw: dict[str, Any]) -> None:
    """`lab figures --table T` and the Results screen's `F` compute only what their
    figures read and the table the selection is chosen from (`tables_for`): each figure
    then draws the rows it draws when every table is computed, even for a table whose own
    rows would choose another run and budget."""
    from analysis.figures import tables_for
    from analysis.figures.select import Declared, declare
    from tests.helpers.figure_rows import lone_table_study

    whole, _ = declare(lone_table_study(), Declared(**kw))
    for fig in FIGURES:
        alone, _ = declare(lone_table_study(tables_for([fig])), Declared(**kw))
        for table in fig.tables:
            assert alone.rows.get(table, []) == whole.rows.get(table, []), (fig.name, table)
    # the leaving rows are drawn only when their run is named at their budget
    assert bool(whole.rows["leaving"]) == (kw == {"runs_named": True, "all_budgets": True})


def test_the_results_screens_figures_are_chosen_as_lab_figures_chooses(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`F` on the hazard view computes the hazard table and the table the selection is
    chosen from: its figures draw the confirmatory run's rows at the primary budget, none
    here, as `lab figures` would."""
    import analysis.figures.view as view
    from tests.helpers.figure_rows import lone_table_study

    asked = []

    def study_rows(db: Any, selection: Any, resamples: int, seed: int = 0,
                   names: tuple[str, ...] | None = None) -> Any:
        asked.append(names)
        return lone_table_study(names, lone="hazard")

    monkeypatch.setattr(view, "study_rows", study_rows)
    written = view.write_view_figures(cast(Any, None), Selection(), "hazard",
                                      tmp_path / "f", 30, formats=("svg",))
    assert asked == [("hazard", "success")]
    assert not written.paths
    assert [name for name, _ in written.skipped] == ["hazard_by_run", "hazard_slopes"]


@pytest.mark.parametrize("name", ["success_by_regime", "hazard_by_run"])
@pytest.mark.parametrize("every_budget", [False, True])
def test_no_two_series_of_a_panel_share_a_style(name: str, every_budget: bool) -> None:
    from analysis.figures.select import Declared, declare

    study, _ = declare(synthetic_study(), Declared(all_budgets=every_budget))
    out = drawn(name, rows=study.rows)
    try:
        for ax in out.figure.axes:
            styles = []
            for handle in ax.get_legend_handles_labels()[0]:
                line = _line(handle)
                styles.append((str(line.get_color()), line.get_marker(),
                               str(line.get_markerfacecolor()), line.get_fillstyle()))
            assert styles and len(styles) == len(set(styles)), styles
    finally:
        close(out.figure)


def every_drawn(style_name: str) -> list[tuple[str, Drawn]]:
    """Every figure the synthetic study (with the second seed's Table 2 rows) feeds, on
    its default selection, in a style (built once per style for this module: the checks
    below only read the figures; `_EVERY` closes them at the module's end)."""
    if style_name in _EVERY:
        return _EVERY[style_name]
    from analysis.figures.select import Declared, declare
    from analysis.figures.style import legible
    from tests.helpers.figure_rows import study_table_rows, trace_table2_rows

    style = STYLES[style_name]
    rows = study_table_rows() | {"trace_table2": trace_table2_rows()}
    study, _ = declare(synthetic_study(rows), Declared())
    out = []
    with styled(style):
        for fig in FIGURES:
            built = fig.build(study, style)
            if isinstance(built, Drawn):
                legible(built.figure, style)
                out.append((fig.name, built))
    _EVERY[style_name] = out
    return out


_EVERY: dict[str, list[tuple[str, Drawn]]] = {}


@pytest.fixture(scope="module", autouse=True)
def _close_every_drawn() -> Iterator[None]:
    """Close the figures `every_drawn` kept, once the module's tests are done (both
    styles' stay open until then: past matplotlib's warning at 20 open figures)."""
    with plt.rc_context({"figure.max_open_warning": 64}):
        yield
        for figures in _EVERY.values():
            for _, out in figures:
                close(out.figure)
        _EVERY.clear()


@pytest.mark.parametrize("style_name", ["column", "page"])
def test_every_figure_fits_its_width_and_a_page_with_no_text_under_6_pt(style_name: str) -> None:
    from matplotlib.text import Text

    style = STYLES[style_name]
    figures = every_drawn(style_name)
    assert {"judged_but_not_acted", "delta_grid", "answer_action_by_budget", "cost_success",
            "trace_ece_by_depth"} <= {name for name, _ in figures}
    assert len(figures) >= 10
    for name, out in figures:
        width, height = out.figure.get_size_inches()
        # a forest is as tall as its cells' rows need (the test of many models below)
        assert width == pytest.approx(style.width), name
        assert height <= 9.0 or name in ("delta_forest", "hazard_slopes"), name
        sizes = [cast(float, t.get_fontsize()) for t in out.figure.findobj(Text) if t.get_text()]
        assert min(sizes) >= 6.0, name


def test_the_delta_grid_is_models_side_by_side_with_arms_as_rows() -> None:
    from analysis.figures.select import Declared, declare

    out = drawn("delta_forest", rows=declare(synthetic_study(), Declared())[0].rows)
    try:
        visible = [ax for ax in out.figure.axes if ax.get_visible()]
        titles = [ax.get_title(loc="left").split("\n")[0] for ax in visible]
        assert sorted(set(titles)) == ["llama-3.1-8b", "qwen3-8b"]
        assert out.figure.get_size_inches()[1] <= 9.0
    finally:
        close(out.figure)


@pytest.mark.parametrize("style_name", ["column", "page"])
@pytest.mark.parametrize("name", ["delta_forest", "hazard_slopes"])
def test_a_forest_of_many_models_keeps_every_cell_legible(name: str, style_name: str) -> None:
    """Six models' forests in one column do not fit a page: drawn squeezed into one,
    each cell had no height, its rows' labels lay over one another and each title over
    the cell above; side by side, a long title ran into its neighbour's. Each cell keeps
    its rows' height, and no title touches another cell or title or runs past the
    figure's edge."""
    from analysis.figures.forest import ROW_INCHES
    from analysis.figures.select import Declared, declare
    from analysis.figures.style import save
    from tests.helpers.figure_rows import study_table_rows

    table = {"delta_forest": "delta", "hazard_slopes": "hazard"}[name]
    rows = study_table_rows()
    rows[table] = [r | {"model": f"{r['model']}-{i}"} for i in range(3) for r in rows[table]]
    long = "persistent − late_onset_from_3, a panel named at length"  # a title to wrap
    rows[table] = [r | {"scope": long} if r["scope"] in ("own judgments, by t", "pooled")
                   else r for r in rows[table]]
    study, _ = declare(synthetic_study(rows), Declared())
    (fig,) = [f for f in FIGURES if f.name == name]
    style = STYLES[style_name]
    with styled(style):
        out = fig.build(study, style)
        assert isinstance(out, Drawn)
        figure = out.figure
        save(figure, Path(os.devnull), (), style, "caption")  # laid out as written
        renderer = FigureCanvasAgg(figure).get_renderer()
        cells = [ax for ax in figure.axes if ax.get_visible()]
        assert len({ax.get_title(loc="left").split("\n")[0] for ax in cells}) == 6
        labels = len(cells[0].get_yticks())
        titles: list[Any] = []  # title boxes so far
        for ax in cells:
            assert ax.get_window_extent(renderer).height / figure.dpi >= \
                0.8 * ROW_INCHES * labels, name
            title = ax.title if ax.title.get_text() else ax._left_title  # type: ignore[attr-defined]
            box = title.get_window_extent(renderer)
            assert box.x0 >= 0 and box.x1 <= figure.bbox.width, title.get_text()
            others = [o.get_window_extent(renderer) for o in cells if o is not ax]
            assert not any(box.overlaps(o) for o in others), title.get_text()
            assert not any(box.overlaps(t) for t in titles), title.get_text()
            titles.append(box)
    plt.close(figure)


def test_a_figure_file_says_where_its_rows_come_from(tmp_path: Path) -> None:
    """The caption under the figure and the PNG/SVG/PDF metadata: amendment and its freeze
    date, run, set, budget, family, n, and the sidecar rows' sha256."""
    import json

    from PIL import Image

    from analysis.figures import figures_for, write_figures

    written = write_figures(synthetic_study(), tmp_path, ("png", "svg", "pdf"),
                            STYLES["column"], figures_for(("hazard",)))
    side = json.loads((tmp_path / "hazard_by_run.json").read_text(encoding="utf-8"))
    png = Image.open(tmp_path / "hazard_by_run.png").info
    assert png["Description"].startswith(
        "A1 (frozen 2026-12-04) · run confirm · fresh30 · B8 · main family · n = 30 "
        "questions. Hazard")
    assert png["Keywords"] == (f"runs=confirm; amendments=A1; rows_sha256="
                               f"{side['provenance']['rows_sha256']}")
    svg = (tmp_path / "hazard_by_run.svg").read_text(encoding="utf-8")
    assert side["provenance"]["rows_sha256"] in svg and "A1 (frozen 2026-12-04)" in svg
    assert side["provenance"]["rows_sha256"].encode() in \
        (tmp_path / "hazard_by_run.pdf").read_bytes()
    assert written.paths


def test_an_exploratory_figure_says_so_first() -> None:
    from analysis.figures.caption import provenance
    from tests.helpers.figure_rows import study_table_rows

    rows = [r for r in study_table_rows()["success"] if r["runs"] == "pilot"][:3]
    assert provenance(synthetic_study(), rows, "").caption.startswith(
        "EXPLORATORY · run pilot · fresh30")


@pytest.mark.parametrize("arms", [
    ("none", "permit", "budget", "stated_rule", "enforced_rule"),
    ("none", "enforced_rule", "lexical_rule", "random_rule", "stated_judgment_rule"),
    ("none", "two_source", "switch_rule"), ("Raw-Gated", "Calibrated-Gated")])
def test_arms_drawn_together_differ_in_colour(arms: tuple[str, ...]) -> None:
    from analysis.figures.identity import arm_look

    assert len({arm_look(a).color for a in arms}) == len(arms)


def overlapping(boxes: list[Any]) -> list[tuple[int, int]]:
    """Pairs of display boxes that overlap by more than a pixel each way."""
    return [(i, j) for i in range(len(boxes)) for j in range(i + 1, len(boxes))
            if min(boxes[i].x1, boxes[j].x1) - max(boxes[i].x0, boxes[j].x0) > 1
            and min(boxes[i].y1, boxes[j].y1) - max(boxes[i].y0, boxes[j].y0) > 1]


@pytest.mark.parametrize("style_name", ["column", "page"])
def test_no_two_labels_of_a_panel_collide(style_name: str) -> None:
    """Tick labels along x and y and legend entries never overlap, in either print
    width."""
    for name, out in every_drawn(style_name):
        out.figure.canvas.draw()
        renderer = cast(FigureCanvasAgg, out.figure.canvas).get_renderer()
        for ax in out.figure.axes:
            if not ax.get_visible():
                continue
            for axis, labels in (("y", ax.get_yticklabels()), ("x", ax.get_xticklabels())):
                ticks = [t.get_window_extent(renderer) for t in labels
                         if t.get_text() and t.get_visible()]
                assert not overlapping(ticks), (name, f"{axis} labels")
            legend = ax.get_legend()
            if legend is not None:
                texts = [t.get_window_extent(renderer) for t in legend.get_texts()]
                assert not overlapping(texts), (name, "legend")
