"""Forest plots: the time-matched contrast Δ and the design-label contrast per model ×
arm, with the no-effect line at 0 (the paper's Figure 3 with its intervals, table
"delta"); and the leaving Δ of two-source arms is drawn by `analysis.figures.leaving`."""

from __future__ import annotations

from textwrap import fill

import matplotlib.pyplot as plt

from analysis.figures.base import (
    Drawn,
    FigureDef,
    Skipped,
    error_bar,
    labeller,
    ordered,
    pick,
    primary_budget,
    value,
)
from analysis.figures.identity import row_look
from analysis.figures.marks import bounded_limits, cut_interval, interval_rows
from analysis.figures.study import RowDict, StudyRows
from analysis.figures.style import NEUTRAL, Style, chars_across

ROW_INCHES = 0.16
"""Height of one forest row at an 8-point base font."""


def forest(rows: list[RowDict], style: Style, panel_of: str = "scope",
           xlabel: str = "contrast (95% CI)") -> plt.Figure:
    """A grid of forests: one cell per (measure · `panel_of` value) × model, the models
    side by side (wrapped to fit the width), one line per arm group on rows shared by
    every cell, the estimate with its interval in the arm's look and a dashed no-effect
    line at 0; undefined estimates say "n.a." at 0. Each cell is as tall as its rows
    need, even where that makes the figure taller than a page (many models in one
    column), and its title wraps to its width. The x axis holds every estimate and no
    interval reaches further than the estimates' spread beyond them: a longer one is
    cut at the axis and marked with an arrowhead."""
    panels = ordered((r["measure"], r[panel_of]) for r in rows)
    models = ordered(r["model"] for r in rows)
    label = labeller(rows, with_model=False)
    names = ordered(label(r) for r in rows)
    cols = max(1, min(len(models), int(style.width // 2.2)))
    cells = [(panel, model) for panel in panels for model in models]
    grid_rows = sum(-(-len(models) // cols) for _ in panels)
    # a cell's title wraps to the cell's width, so neighbours' titles never run together,
    # and the cell is as tall as its rows and its title's lines need, even past a page:
    # squeezed to one, a column-wide forest of five models drew cells of no height,
    # their labels and titles over one another
    labels_in = max(map(len, names)) * 0.6 * style.font_size / 72
    title_chars = chars_across((style.width - labels_in) / cols, style.font_size * 0.83)
    titles = {(panel, model): fill(str(model), title_chars) + "\n" +
              fill(f"{panel[0]} · {panel[1]}", title_chars) for panel, model in cells}
    lines = max(t.count("\n") + 1 for t in titles.values())
    cell_height = (ROW_INCHES * len(names) + 0.21 + 0.12 * lines) * style.font_size / 8.0
    height = grid_rows * cell_height + 0.5
    fig, axes = plt.subplots(grid_rows, cols, figsize=(style.width, height), sharex=True,
                             sharey=True, squeeze=False)
    flat = [ax for line in axes for ax in line]
    primary = primary_budget(rows)
    slots: list[int] = []
    for p_i in range(len(panels)):  # each panel starts a new grid row
        start = sum(-(-len(models) // cols) for _ in range(p_i)) * cols
        slots += [start + m_i for m_i in range(len(models))]
    used = set(slots)
    limits = bounded_limits([value(r["estimate"]) for r in rows],
                            [value(r["ci_low"]) for r in rows],
                            [value(r["ci_high"]) for r in rows])
    for slot, (panel, model) in zip(slots, cells):
        ax = flat[slot]
        part = [r for r in rows if (r["measure"], r[panel_of]) == panel and r["model"] == model]
        drawn = []
        for r in part:
            y = len(names) - 1 - names.index(label(r))
            bar = error_bar(r)
            est = value(r["estimate"])
            if est != est:
                ax.annotate("n.a.", (0, y), ha="center", va="center", fontsize="x-small",
                            color=NEUTRAL)
                continue
            drawn.append((est, float(y), bar, row_look(r, primary)))
        interval_rows(ax, drawn)
        for est, at, bar, look in drawn:
            if bar:
                cut_interval(ax, at, est - bar[0], est + bar[1], limits, look["color"])
        ax.axvline(0.0, color=NEUTRAL, linestyle="--", linewidth=0.8)
        ax.set_title(titles[(panel, model)], loc="left", fontsize="small")
        ax.grid(axis="y", visible=False)
    flat[0].set_xlim(*limits)
    for slot, ax in enumerate(flat):
        if slot not in used:
            ax.set_visible(False)
    flat[0].set_yticks(range(len(names)), names[::-1])
    flat[0].set_ylim(-0.7, len(names) - 0.3)
    bottom = [slot for slot in slots if slot // cols == slots[-1] // cols]  # last grid row
    flat[bottom[0]].set_xlabel(fill(xlabel, chars_across(style.width - labels_in, style.font_size)))
    return fig


def delta_forest(study: StudyRows, style: Style) -> Drawn | Skipped:
    """Δ (own and stated judgments, matched by t) and the design contrast, per model ×
    arm. The table's other Δ estimators (matched by question × action, by regime ×
    action) are robustness checks left to the table: five panels of every group would
    make a study of a hundred groups a figure some metres tall."""
    rows = [r for r in pick(study, "delta", ("delta", "design")) if "×" not in str(r["scope"])]
    if not rows:
        return Skipped("no Δ or design-contrast rows (no decision points with judgments "
                       "in this selection)")
    return Drawn(forest(rows, style, xlabel="Δ / design contrast (95% CI); dashed: no effect"),
                 rows, "Δ and design-label contrast; dashed line: no effect")


def hazard_slopes(study: StudyRows, style: Style) -> Drawn | Skipped:
    """The hazard model's β (per consecutive useless judgment) and γ (after an earlier
    useful one), per model × arm (the paper's Table 10)."""
    rows = pick(study, "hazard", ("beta", "gamma"))
    if not rows:
        return Skipped("no hazard-model rows in this selection")
    return Drawn(forest(rows, style, xlabel="change in P(answer) (95% CI); dashed: none"),
                 rows, "hazard model β and γ; dashed line: no change")


FIGURES = (FigureDef("delta_forest", "Δ and design-label contrast (forest plot)", ("delta",),
                     delta_forest, ("delta",)),
           FigureDef("hazard_slopes", "Hazard model β and γ (forest plot)", ("hazard",),
                     hazard_slopes, ("hazard",)))
