"""When agents answer under two budgets: the median answering action (among answered
questions) with its interval, per model × arm, one bar per budget, on a persistently
failing source when it was run (the paper's Figure 4; table "budgets")."""

from __future__ import annotations

import re

from analysis.figures.base import (
    Drawn,
    FigureDef,
    Skipped,
    error_bar,
    group_key,
    labeller,
    ordered,
    pick,
    value,
)
from analysis.figures.study import StudyRows
from analysis.figures.style import PALETTE, Style, new_figure

_MEDIAN = re.compile(r"median_action@(\d+)$")
HATCHES = ("", "///", "xx", "..")
"""Bars of the larger budgets are hatched as well as darker (greyscale)."""


def answer_action_by_budget(study: StudyRows, style: Style) -> Drawn | Skipped:
    """Grouped bars: median answering action per group, one bar per budget."""
    rows = [r for r in pick(study, "budgets") if _MEDIAN.match(str(r["measure"]))]
    if not rows:
        return Skipped("no budgets rows (no arm was run at two budgets in this selection)")
    regimes = ordered(r["regimes"] for r in rows)
    regime = "persistent" if "persistent" in regimes else regimes[0]
    rows = [r for r in rows if r["regimes"] == regime]
    budgets = sorted({int(_MEDIAN.match(r["measure"]).group(1)) for r in rows})  # type: ignore[union-attr]
    groups = ordered(group_key(r) for r in rows)
    label = labeller(rows)
    fig, (ax,) = new_figure(style, height=style.panel_height * 1.4)
    width = 0.8 / len(budgets)
    shades = PALETTE[4], PALETTE[0], "#003F63", "#001a2a"
    for b_i, budget in enumerate(budgets):
        part = [r for r in rows if r["measure"] == f"median_action@{budget}"]
        xs = [groups.index(group_key(r)) - 0.4 + width * (b_i + 0.5) for r in part]
        ys = [value(r["estimate"]) for r in part]
        bars = [error_bar(r) for r in part]
        ax.bar(xs, [y if y == y else 0.0 for y in ys], width, color=shades[b_i % 4],
               hatch=HATCHES[b_i % 4], edgecolor="black", linewidth=0.4,
               label=f"{budget}-action budget")
        lows = [b[0] if b else 0.0 for b in bars]
        highs = [b[1] if b else 0.0 for b in bars]
        ax.errorbar(xs, [y if y == y else 0.0 for y in ys], yerr=[lows, highs], fmt="none",
                    ecolor="black", capsize=2, linewidth=0.8)
        for x, y in zip(xs, ys):
            if y != y:
                ax.annotate("n.a.", (x, 0.2), ha="center", fontsize="x-small")
    first = {group_key(r): r for r in rows}
    ax.set_xticks(range(len(groups)), [label(first[g]) for g in groups], rotation=25,
                  ha="right")
    ax.set_ylabel("median answering action")
    ax.set_title(f"{regime}: among answered questions", loc="left")
    ax.legend(frameon=False)
    return Drawn(fig, rows, f"median answering action under {' and '.join(map(str, budgets))} "
                            f"actions ({regime})")


FIGURES = (FigureDef("answer_action_by_budget", "Median answering action under two budgets",
                     ("budgets",), answer_action_by_budget, ("answering", "cost")),)
