"""Agents judge a failing source correctly but do not act on it (the main paper's
Figure 1, right; table "judgments"): per model, the unaided agent's share of
side-channel judgments that call a failing source's results useless, beside the share of
questions with five such judgments in a row on which it answers (persistent regime).
"""

from __future__ import annotations

import math

from analysis.figures.base import (
    Drawn,
    FigureDef,
    Skipped,
    error_bar,
    labeller,
    na_mark,
    ordered,
    pick,
    value,
    zero_mark,
)
from analysis.figures.marks import label_room, tick_rotation
from analysis.figures.study import RowDict, StudyRows
from analysis.figures.style import Style, new_figure

JUDGED = "USELESS on failed"
ANSWERED = "answered after 5 own useless"
UNAIDED = "none"
"""The condition whose judgments the figure shows (the unaided agent)."""
BARS = ((JUDGED, "judged useless", "#D55E00", ""),
        (ANSWERED, "answered after 5 useless in a row", "#999999", "///"))
"""(measure, legend, colour, hatch): red for the judgments, grey for the answers, as in
the paper; the hatch tells them apart in greyscale."""


def _share(row: RowDict) -> float:
    return value(row["estimate"])


def judged_but_not_acted(study: StudyRows, style: Style) -> Drawn | Skipped:
    """Paired bars per model (and unaided arm variant): judged useless, and answered."""
    rows = [r for r in pick(study, "judgments", (JUDGED, ANSWERED))
            if str(r["arm"]).split(":")[0] == UNAIDED]
    if not rows:
        return Skipped("no side-channel judgments of the unaided arm (none) in this "
                       "selection; `lab replay judgments --run R` records them")
    several = len({r["arm"] for r in rows}) > 1
    name = labeller(rows, with_model=True)

    def label(row: RowDict) -> str:  # the arm only when it varies (it is the unaided one)
        return name(row) if several else " · ".join(
            p for i, p in enumerate(name(row).split(" · ")) if i != 1)

    groups = ordered(label(r) for r in rows)
    turn = tick_rotation(groups, 0.85 * style.width / max(1, len(groups)), style.font_size)
    fig, (ax,) = new_figure(style, height=style.panel_height * 1.3
                            + label_room(groups, turn, style.font_size))
    width = 0.38
    for b_i, (measure, legend, colour, hatch) in enumerate(BARS):
        part = [r for r in rows if r["measure"] == measure]
        xs = [groups.index(label(r)) + (b_i - 0.5) * width for r in part]
        ys = [_share(r) for r in part]
        ax.bar(xs, [y if math.isfinite(y) else 0.0 for y in ys], width, color=colour,
               hatch=hatch, edgecolor="black", linewidth=0.4, label=legend)
        for x, y, r in zip(xs, ys, part):
            bar = error_bar(r)
            if bar:
                ax.errorbar([x], [y], yerr=[[bar[0]], [bar[1]]], fmt="none", ecolor="black",
                            capsize=2, linewidth=0.8)
            if not math.isfinite(y):
                na_mark(ax, x, 0.08)
            elif y == 0:
                zero_mark(ax, x)
    ax.set_xticks(range(len(groups)), groups, rotation=turn)
    ax.set_ylim(0, 1.3)
    ax.set_yticks([0, 0.25, 0.5, 0.75, 1.0])
    ax.set_ylabel("share")
    ax.legend(loc="upper left", ncol=2, frameon=False, fontsize="x-small")
    return Drawn(fig, rows, "unaided agent: share of side-channel judgments calling a "
                            "failing source useless, and share of questions with five "
                            "useless judgments in a row (persistent) it answers")


FIGURES = (FigureDef("judged_but_not_acted", "Judged useless, queried anyway (Figure 1, "
                     "right)", ("judgments",), judged_but_not_acted),)
