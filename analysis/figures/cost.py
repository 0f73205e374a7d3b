"""What success costs (table "cost"): each arm's success (mean6 when it ran all six
regimes, else over the regimes it ran; 95% question-bootstrap interval) against its mean
tool calls per episode, one panel per model, each arm in its own look (points that
would hide one another are pulled apart sideways by a few hundredths of the panel's
calls). The cost the
paper's utility charges is the tool call (utility = success − λ·calls), so an arm up and
to the left does better on both.
"""

from __future__ import annotations

import math

from matplotlib.axes import Axes

from analysis.figures.base import (
    Drawn,
    FigureDef,
    Skipped,
    by_model,
    error_bar,
    group_key,
    labeller,
    ordered,
    pick,
    primary_budget,
    value,
)
from analysis.figures.identity import row_look
from analysis.figures.marks import coincident_offsets, cut_interval
from analysis.figures.study import RowDict, StudyRows
from analysis.figures.style import Style, legend_right, legends, new_figure

CALLS = "tool calls"
SUCCESS = "success"
PANEL_INCHES = 2.1
"""The least width of one model's panel."""


def _pairs(rows: list[RowDict]) -> list[tuple[RowDict, RowDict]]:
    """(calls row, success row) of each group that has both, in table order."""
    calls = {group_key(r): r for r in rows if r["measure"] == CALLS}
    return [(calls[group_key(r)], r) for r in rows
            if r["measure"] == SUCCESS and group_key(r) in calls]


INSIDE = 12
"""A one-panel-wide figure's legend with more entries than this goes to the right of its
axes, not inside them: it would cover the points it names."""


def cost_success(study: StudyRows, style: Style) -> Drawn | Skipped:
    """Success (y, with its interval) against mean tool calls (x) per model × arm."""
    pairs = _pairs(pick(study, "cost", (CALLS, SUCCESS)))
    if not pairs:
        return Skipped("no cost rows with both tool calls and success in this selection")
    kept = {id(r) for pair in pairs for r in pair}
    rows = [r for r in pick(study, "cost", (CALLS, SUCCESS)) if id(r) in kept]
    models = by_model(rows)
    primary = primary_budget(rows)
    cols = max(1, min(len(models), int(style.width // PANEL_INCHES)))
    grid = -(-len(models) // cols)
    fig, axes = new_figure(style, rows=grid, cols=cols, sharey=True,
                           height=style.panel_height * grid * 1.15 + 0.5)
    for ax, (model, model_rows) in zip(axes, models):
        label = labeller([r for r in rows if r["measure"] == SUCCESS], with_model=False)
        keys = ordered(group_key(r) for r in model_rows)
        mine = [p for p in pairs if group_key(p[1]) in keys]
        points = [(value(c["estimate"]), value(s["estimate"])) for c, s in mine]
        for (_, success), (x, y), dx in zip(mine, points, coincident_offsets(points)):
            if not (math.isfinite(x) and math.isfinite(y)):
                continue
            x += dx
            look = row_look(success, primary) | {"linestyle": "none"}
            bar = error_bar(success)
            ax.errorbar([x], [y], yerr=[[bar[0]], [bar[1]]] if bar else None, capsize=2,
                        label=label(success), **look)
            if bar:
                cut_interval(ax, x, y - bar[0], y + bar[1], (-0.05, 1.05), look["color"],
                             horizontal=False)
        ax.set_ylim(-0.05, 1.05)
        ax.set_title(model, loc="left")
        ax.set_xlabel("tool calls per episode")
        ax.margins(x=0.15)
    for ax in axes[len(models):]:
        ax.set_visible(False)

    def own(ax: Axes) -> None:  # a panel's own legend: inside it, unless it would cover points
        if cols == 1 and len(ax.get_legend_handles_labels()[0]) > INSIDE:
            legend_right(ax, style, fontsize="x-small")
        else:
            ax.legend(loc="best", frameon=False, fontsize="x-small")

    legends(axes, style, own, fontsize="x-small")
    for row_start in range(0, len(axes), cols):
        axes[row_start].set_ylabel("success (95% CI)")
    return Drawn(fig, rows, "success against mean tool calls per episode, 95% "
                            "question-bootstrap intervals on success")


FIGURES = (FigureDef("cost_success", "Success against tool calls", ("cost",),
                     cost_success, ("cost",)),)
