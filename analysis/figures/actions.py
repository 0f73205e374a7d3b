"""When agents answer under two budgets: the median answering action (among answered
questions) with its interval, one panel per model, a pair of bars per arm (light: the
smaller budget, dark and hatched: the larger), on a persistently failing source when it
was run (the paper's Figure 4; table "budgets")."""

from __future__ import annotations

import re

from matplotlib.patches import Patch

from analysis.figures.base import (
    GROUP_FIELDS,
    Drawn,
    FigureDef,
    Skipped,
    by_model,
    error_bar,
    group_key,
    labeller,
    na_mark,
    ordered,
    pick,
    value,
    zero_mark,
)
from analysis.figures.identity import arm_look
from analysis.figures.marks import label_room, tick_rotation
from analysis.figures.study import RowDict, StudyRows
from analysis.figures.style import Style, new_figure

_MEDIAN = re.compile(r"median_action@(\d+)$")
HATCHES = ("", "///", "xx", "..")
"""Bars of the larger budgets are hatched as well as darker (greyscale)."""
SHADES = (0.45, 1.0)
"""The opacity of an arm's bar at the smaller and the larger budget (light, dark)."""


PANEL_INCHES = 2.2
"""The least width of one model's panel."""


def answer_action_by_budget(study: StudyRows, style: Style) -> Drawn | Skipped:
    """The paper's Figure 4: one panel per model, a pair of bars per arm (the smaller
    budget light, the larger dark and hatched, both in the arm's colour), the median
    answering action on a persistently failing source with its interval."""
    rows = [r for r in pick(study, "budgets") if _MEDIAN.match(str(r["measure"]))]
    if not rows:
        return Skipped("no budgets rows (no arm was run at two budgets in this selection)")
    regimes = ordered(r["regimes"] for r in rows)
    regime = "persistent" if "persistent" in regimes else regimes[0]
    rows = [r for r in rows if r["regimes"] == regime]
    budgets = sorted({_budget(r) for r in rows})
    models = by_model(rows)
    cols = max(1, min(len(models), int(style.width // PANEL_INCHES)))
    grid = -(-len(models) // cols)
    arms = ordered(str(r["arm"]) for r in rows)
    fig, axes = new_figure(style, rows=grid, cols=cols, sharey=True,
                           height=grid * (style.panel_height * 1.1 + label_room(
                               arms, 90, style.font_size)))
    width = 0.8 / len(budgets)
    for ax, (model, model_rows) in zip(axes, models):
        label = labeller([r for r in model_rows if _budget(r) == budgets[0]],
                         with_model=False)
        groups = ordered(pair_key(r) for r in model_rows)
        first = {pair_key(r): r for r in reversed(model_rows)}
        for r in model_rows:
            b_i = budgets.index(_budget(r))
            x = groups.index(pair_key(r)) - 0.4 + width * (b_i + 0.5)
            y = value(r["estimate"])
            colour = arm_look(str(r["arm"])).color
            ax.bar([x], [y if y == y else 0.0], width, color=colour,
                   alpha=SHADES[min(b_i, len(SHADES) - 1)], hatch=HATCHES[b_i % 4],
                   edgecolor="black", linewidth=0.4)
            bar = error_bar(r)
            if bar:
                ax.errorbar([x], [y], yerr=[[bar[0]], [bar[1]]], fmt="none", ecolor="black",
                            capsize=2, linewidth=0.8)
            if y != y:
                na_mark(ax, x, 0.5)
            elif y == 0:
                zero_mark(ax, x)
        names = [label(first[g]) for g in groups]
        ax.set_xticks(range(len(groups)), names, rotation=tick_rotation(
            names, 0.85 * style.width / cols / max(1, len(groups)), style.font_size))
        ax.set_title(model, loc="left")
        ax.grid(axis="x", visible=False)
        tops = [value(r["ci_high"]) for r in model_rows] + \
            [value(r["estimate"]) for r in model_rows]
        ax.set_ylim(0, 1.45 * max([t for t in tops if t == t] or [1.0]))
    for ax in axes[len(models):]:
        ax.set_visible(False)
    for row_start in range(0, len(axes), cols):
        axes[row_start].set_ylabel("median action")
    handles = [Patch(facecolor="#777777", alpha=SHADES[min(i, len(SHADES) - 1)],
                     hatch=HATCHES[i % 4], edgecolor="black", linewidth=0.4,
                     label=f"{b}-action budget") for i, b in enumerate(budgets)]
    axes[0].legend(handles=handles, loc="upper left", ncol=len(handles), frameon=False,
                   fontsize="x-small")
    return Drawn(fig, rows, f"median answering action among answered questions on "
                            f"{regime}, budgets {' (light) and '.join(map(str, budgets))} "
                            f"(dark); 95% intervals")


def pair_key(row: RowDict) -> tuple[object, ...]:
    """What pairs a row with its other budget's: its group without the budget (the
    table may give the larger budget's median the larger budget)."""
    return tuple(v for f, v in zip((*GROUP_FIELDS, "family"), group_key(row))
                 if f != "budget")


def _budget(row: RowDict) -> int:
    return int(_MEDIAN.match(str(row["measure"])).group(1))  # type: ignore[union-attr]


FIGURES = (FigureDef("answer_action_by_budget", "Median answering action under two budgets",
                     ("budgets",), answer_action_by_budget, ("answering", "cost")),)
