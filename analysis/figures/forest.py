"""Forest plots: the time-matched contrast Δ and the design-label contrast per model ×
arm, with the no-effect line at 0 (the paper's Figure 3 with its intervals, table
"delta"); and the leaving Δ of two-source arms is drawn by `analysis.figures.leaving`."""

from __future__ import annotations

import matplotlib.pyplot as plt

from analysis.figures.base import (Drawn, FigureDef, Skipped, error_bar, labeller, ordered,
                                   pick, primary_budget, value)
from analysis.figures.identity import row_look
from analysis.figures.study import RowDict, StudyRows
from analysis.figures.style import NEUTRAL, Style


def forest(rows: list[RowDict], style: Style, panel_of: str = "scope",
           xlabel: str = "contrast (95% CI)") -> plt.Figure:
    """One panel per `panel_of` value (measure · scope), one line per group, the
    estimate with its interval and a dashed no-effect line at 0; undefined estimates
    say "n.a." at 0."""
    panels = ordered((r["measure"], r[panel_of]) for r in rows)
    sizes = [sum(1 for r in rows if (r["measure"], r[panel_of]) == p) for p in panels]
    height = sum(0.22 * n + 0.45 for n in sizes) * style.font_size / 8.0 + 0.4
    fig, axes = plt.subplots(len(panels), 1, figsize=(style.width, height), sharex=True,
                             squeeze=False, gridspec_kw={"height_ratios": sizes})
    label = labeller(rows)
    primary = primary_budget(rows)
    for ax, panel in zip(axes[:, 0], panels):
        part = [r for r in rows if (r["measure"], r[panel_of]) == panel]
        ys = list(range(len(part)))[::-1]
        for y, r in zip(ys, part):
            look = row_look(r, primary)
            bar = error_bar(r)
            est = value(r["estimate"])
            if est != est:
                ax.annotate("n.a.", (0, y), ha="center", va="center", fontsize="x-small",
                            color=NEUTRAL)
                continue
            ax.errorbar([est], [y], xerr=[[bar[0]], [bar[1]]] if bar else None,
                        capsize=2, **(look | {"linestyle": "none"}))
        ax.axvline(0.0, color=NEUTRAL, linestyle="--", linewidth=0.8)
        ax.set_yticks(ys, [label(r) for r in part])
        ax.set_ylim(-0.7, len(part) - 0.3)
        ax.set_title(f"{panel[0]} · {panel[1]}", loc="left")
        ax.grid(axis="y", visible=False)
    axes[-1, 0].set_xlabel(xlabel)
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
                     delta_forest),
           FigureDef("hazard_slopes", "Hazard model β and γ (forest plot)", ("hazard",),
                     hazard_slopes))
