"""Figures from the tables on answer-now branches (`lab replay answer-now`; matched
trajectory replay, Figures 3–5 of that paper; the lab paper's Table 17):

- risk–coverage operating points of the confidence-gated controller on raw and on
  isotonic-calibrated confidence (risk = 1 − accuracy of committed answers), one panel
  per model, a line from raw to isotonic per group (table "controllers"); an arm's look
  is the same in every model, so models share no panel;
- calibration by depth: ECE (10 equal-width bins) by observations seen t, raw against
  isotonic, one panel per model (table "controllers"). The tables hold ECE, not the
  binned confidences, so this stands in for a reliability diagram;
- the regret heat map of Table 17: each model × arm's utility distance from the best
  simple stopping policy chosen on the unaided runs, per λ (table "policies").

The second seed's OA–cost sweep gets its figure when its table exists.
"""

from __future__ import annotations

import re

import numpy as np
from matplotlib.colors import TwoSlopeNorm

from analysis.figures.base import (
    Drawn,
    FigureDef,
    Skipped,
    by_model,
    drawable,
    group_key,
    labeller,
    ordered,
    pick,
    value,
)
from analysis.figures.identity import row_look
from analysis.figures.marks import SERIES_SPREAD, coincident_offsets, dodge
from analysis.figures.study import RowDict, StudyRows
from analysis.figures.style import NEUTRAL, Style, legends, new_figure

KINDS = ("raw", "isotonic")


def risk_coverage(study: StudyRows, style: Style) -> Drawn | Skipped:
    """Operating points (coverage, risk) per model (panel) and group, raw → isotonic;
    points of two groups that would hide one another are pulled apart sideways
    (`coincident_offsets`); a group that commits nothing (no risk) is keyed "(n.a.)"."""
    rows = [r for r in pick(study, "controllers", ("coverage", "committed_accuracy"))
            if r["scope"] in KINDS]
    if not rows:
        return Skipped("no controllers rows (no answer-now branches with a stated confidence; "
                       "run `lab replay answer-now --run R`)")
    models = by_model(rows)
    fig, axes = new_figure(style, rows=len(models), sharex=True,
                           height=style.panel_height * 1.3 * len(models))
    for ax, (model, model_rows) in zip(axes, models):
        label = labeller(model_rows, with_model=False)
        groups = [(first, points) for first, points in
                  (_operating_points([r for r in model_rows if group_key(r) == key])
                   for key in ordered(group_key(r) for r in model_rows)) if points]
        shift = {kind: coincident_offsets([g.get(kind, (np.nan, np.nan)) for _, g in groups],
                                          spans=(1.0, 1.0)) for kind in KINDS}
        for i, (first, points) in enumerate(groups):
            st = row_look(first)
            drawn = {kind: (x + shift[kind][i], y) for kind, (x, y) in points.items()}
            ax.plot([p[0] for p in drawn.values()], [p[1] for p in drawn.values()],
                    color=st["color"], linestyle=st["linestyle"], linewidth=0.8)
            key = label(first) + ("" if any(map(drawable, drawn.values())) else " (n.a.)")
            for n, (kind, point) in enumerate(drawn.items()):
                # the isotonic square is hollow: a raw circle under it shows through
                ax.plot(*point, marker="o" if kind == "raw" else "s", color=st["color"],
                        linestyle="none",
                        markerfacecolor=st["color"] if kind == "raw" else "none",
                        label=key if n == 0 else None)
        ax.set_xlim(-0.03, 1.03)
        ax.set_ylim(-0.03, 1.03)
        ax.set_ylabel("risk (1 − committed accuracy)")
        ax.set_title(model, loc="left")
    legends(axes, style)
    axes[-1].set_xlabel("coverage (share of episodes committed)")
    return Drawn(fig, rows, "controller operating points, raw (circles) and isotonic "
                            "(squares) confidence; points that would hide one another are "
                            "pulled apart sideways")


def _operating_points(rows: list[RowDict]) -> tuple[RowDict, dict[str, tuple[float, float]]]:
    """One group's first row and its (coverage, risk) by kind of confidence it has."""
    points = {}
    for kind in KINDS:
        cov = next((r for r in rows if r["scope"] == kind and r["measure"] == "coverage"), None)
        acc = next((r for r in rows if r["scope"] == kind
                    and r["measure"] == "committed_accuracy"), None)
        if cov and acc:
            points[kind] = (value(cov["estimate"]), 1.0 - value(acc["estimate"]))
    return rows[0], points


_DEPTH = re.compile(r"(raw|isotonic), t=(\d+)$")


def ece_by_depth(study: StudyRows, style: Style) -> Drawn | Skipped:
    """ECE by depth t per model (panel), raw (solid) against isotonic (dashed), one line
    pair per group; the groups' points at one t are dodged sideways so equal ECEs stay
    visible."""
    rows = [r for r in pick(study, "controllers", ("ece",)) if _DEPTH.match(str(r["scope"]))]
    if not rows:
        return Skipped("no ECE-by-depth rows (no answer-now branches with a stated "
                       "confidence; run `lab replay answer-now --run R`)")
    models = by_model(rows)
    fig, axes = new_figure(style, rows=len(models), sharex=True,
                           height=style.panel_height * 1.4 * len(models))
    for ax, (model, model_rows) in zip(axes, models):
        label = labeller(model_rows, with_model=False)
        keys = ordered(group_key(r) for r in model_rows)
        for i, key in enumerate(keys):
            mine = [r for r in model_rows if group_key(r) == key]
            st = row_look(mine[0])
            for kind, line, face in (("raw", "-", st["color"]), ("isotonic", "--", "white")):
                part = sorted((int(m.group(2)), value(r["estimate"])) for r in mine
                              if (m := _DEPTH.match(str(r["scope"]))) and m.group(1) == kind)
                if not part:
                    continue
                ax.plot([t + dodge(i, len(keys), SERIES_SPREAD) for t, _ in part],
                        [e for _, e in part], color=st["color"], linestyle=line,
                        marker=st["marker"], markerfacecolor=face,
                        label=f"{label(mine[0])} ({kind})")
        ax.set_ylabel("ECE (10 bins)")
        ax.set_ylim(bottom=0)
        ax.set_title(model, loc="left")
    legends(axes, style)
    axes[-1].set_xlabel("t: observations seen")
    return Drawn(fig, rows, "calibration error by depth, raw (solid) and isotonic (dashed)")


_LAMBDA = re.compile(r"λ=([0-9.]+) · best on (.+)$")


def regret_heatmap(study: StudyRows, style: Style) -> Drawn | Skipped:
    """Table 17: regret (best policy on the unaided runs − the arm), model × arm by λ."""
    rows = [r for r in pick(study, "policies", ("regret",))
            if (m := _LAMBDA.match(str(r["scope"]))) and m.group(2) != "own branches"]
    if not rows:
        return Skipped("no Table 17 regret rows (needs answer-now branches on unaided "
                       "`none` runs; run `lab replay answer-now --run R`)")
    label = labeller(rows)
    lams = sorted({float(_LAMBDA.match(r["scope"]).group(1)) for r in rows})  # type: ignore[union-attr]
    names = ordered(label(r) for r in rows)
    grid = np.full((len(names), len(lams)), np.nan)
    for r in rows:
        lam = float(_LAMBDA.match(r["scope"]).group(1))  # type: ignore[union-attr]
        grid[names.index(label(r)), lams.index(lam)] = value(r["estimate"])
    height = max(style.panel_height, 0.3 * len(names) * style.font_size / 8 + 1.0)
    fig, (ax,) = new_figure(style, height=height)
    finite = grid[np.isfinite(grid)]
    span = float(max(1e-6, np.abs(finite).max())) if finite.size else 1.0
    # vector cells (pcolormesh), not a raster image: the SVG stays text, sharp at any size
    image = ax.pcolormesh(np.arange(len(lams) + 1) - 0.5, np.arange(len(names) + 1) - 0.5,
                          np.ma.masked_invalid(grid), cmap="PuOr_r",
                          norm=TwoSlopeNorm(0.0, -span, span), edgecolors="white",
                          linewidth=0.5)
    ax.invert_yaxis()
    for (i, j), v in np.ndenumerate(grid):
        text = "n.a." if not np.isfinite(v) else f"{v:+.3f}"
        ax.text(j, i, text, ha="center", va="center", fontsize="small",
                color="white" if np.isfinite(v) and abs(v) > 0.6 * span else "black")
    ax.set_xticks(range(len(lams)), [f"λ={lam:g}" for lam in lams])
    ax.set_yticks(range(len(names)), names)
    ax.grid(False)
    ax.set_title("regret: best simple policy on the unaided runs − arm (positive: the "
                 "policy does better)", loc="left", fontsize="small")
    cbar = fig.colorbar(image, ax=ax)
    if cbar.solids is not None:
        cbar.solids.set_rasterized(False)  # matplotlib rasterizes long colour bars
    cbar.ax.set_ylabel("regret", color=NEUTRAL)
    return Drawn(fig, rows, "Table 17 regret by model × arm and λ (numbers in the cells)")


FIGURES = (FigureDef("risk_coverage", "Risk–coverage: controllers on raw vs isotonic "
                     "confidence", ("controllers",), risk_coverage, ("controllers",)),
           FigureDef("ece_by_depth", "Calibration (ECE) by depth, raw vs isotonic",
                     ("controllers",), ece_by_depth, ("controllers",)),
           FigureDef("regret_heatmap", "Table 17: regret from the best simple stopping "
                     "policy", ("policies",), regret_heatmap, ("policies",)))
