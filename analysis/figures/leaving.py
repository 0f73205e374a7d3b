"""Leaving a failing source (two-source arms; the paper's Table 25 as a figure, table
"leaving"): the shares that switched to the backup by the fourth action, ever
switched, answered before any switch and chose the backup first, with their intervals
where the table has them; and the own-judgment Δ for leaving, with its no-effect line.

The table holds the share switched by the fourth action, not by every action, so the
figure shows that share among the others rather than a curve over actions.
"""

from __future__ import annotations

from analysis.figures.base import (
    Drawn,
    FigureDef,
    Skipped,
    error_bar,
    labeller,
    ordered,
    pick,
    value,
)
from analysis.figures.study import StudyRows
from analysis.figures.style import NEUTRAL, Style, narrow, new_figure, series_style

SHARES = ("switched_by_4", "ever_switched", "answered_first", "backup_first_share")


def leaving(study: StudyRows, style: Style) -> Drawn | Skipped:
    """Shares (left) and the leave Δ (right) per two-source group."""
    rows = pick(study, "leaving", (*SHARES, "leave_delta"))
    if not rows:
        return Skipped("no leaving rows (no two-source arm in this selection)")
    label = labeller(rows)
    groups = ordered(label(r) for r in rows)
    height = max(style.panel_height, 0.35 * len(groups) * style.font_size / 8 + 1.0)
    stacked = narrow(style)  # one column: the shares above the Δ, each full width
    fig, (left, right) = new_figure(style, rows=2 if stacked else 1, cols=1 if stacked else 2,
                                    height=height * (2.4 if stacked else 1.0), sharey=True)
    measures = [m for m in SHARES if any(r["measure"] == m for r in rows)]
    for i, measure in enumerate(measures):
        st = series_style(i)
        part = [r for r in rows if r["measure"] == measure]
        ys = [groups.index(label(r)) + 0.15 * (i - (len(measures) - 1) / 2) for r in part]
        xs = [value(r["estimate"]) for r in part]
        bars = [error_bar(r) for r in part]
        left.errorbar(xs, ys, xerr=[[b[0] if b else 0.0 for b in bars],
                                    [b[1] if b else 0.0 for b in bars]],
                      fmt=str(st["marker"]), color=st["color"], capsize=2, label=measure,
                      linestyle="none")
    left.set_xlim(-0.05, 1.05)
    left.set_xlabel("share of episodes")
    left.set_yticks(range(len(groups)), groups)
    if stacked:
        left.legend(loc="lower left", bbox_to_anchor=(0.0, 1.02), frameon=False)
    else:
        left.legend(loc="upper center", bbox_to_anchor=(0.5, -0.32), ncol=2, frameon=False)
    for r in (r for r in rows if r["measure"] == "leave_delta"):
        y, est, bar = groups.index(label(r)), value(r["estimate"]), error_bar(r)
        if est != est:
            right.annotate("n.a.", (0, y), ha="center", va="center", fontsize="x-small")
            continue
        right.errorbar([est], [y], xerr=[[bar[0]], [bar[1]]] if bar else None, fmt="o",
                       color=series_style(0)["color"], capsize=2)
    right.axvline(0.0, color=NEUTRAL, linestyle="--", linewidth=0.8)
    right.set_xlabel("Δ for leaving (95% CI)")
    right.set_ylim(-0.7, len(groups) - 0.3)
    return Drawn(fig, rows, "leaving the failing primary source: shares of episodes on a "
                            "failing primary and Δ for leaving (two-source arms); dashed: "
                            "no effect")


FIGURES = (FigureDef("leaving", "Leaving a failing source (two-source arms)", ("leaving",),
                     leaving),)
