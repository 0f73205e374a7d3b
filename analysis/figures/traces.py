"""Matched trajectory replay's figures from its sweeps table (the paper's Figures 3–5;
table "trace_sweeps", on states stored by `lab traces collect`):

- risk–coverage: each model's raw- and calibrated-gated controller at every τ_hi of the
  sweep (selective risk = 1 − CA against coverage), the confidence-blind baselines as
  squares, those at one point under one label ("A = B"); a controller with no point
  defined (it commits nothing, so it has no risk) is keyed "(n.a.)" (Figure 3);
- OA–cost: the same controllers as the retrieval budget goes from 0 to 3, overall
  accuracy against mean retrievals, baselines as squares (Figure 4);
- reliability: the depth-zero bins, mean confidence against accuracy, raw against
  calibrated, with the diagonal of perfect calibration (Figure 5);
- ECE by depth: the calibration error of raw and calibrated confidence at each
  retrieval depth (its Table 2, table "trace_table2").
"""

from __future__ import annotations

import re

from analysis.figures.base import (
    Drawn,
    FigureDef,
    Skipped,
    by_model,
    drawable,
    ordered,
    pick,
    value,
)
from analysis.figures.identity import arm_look
from analysis.figures.study import RowDict, StudyRows
from analysis.figures.style import NEUTRAL, Style, new_figure

GATED = ("Raw-Gated", "Calibrated-Gated")
_BIN = re.compile(r"t=0 bin \[([0-9.]+), ")


def _points(rows: list[RowDict], x: str, y: str, flip_y: bool = False
            ) -> dict[tuple[str, str, str], tuple[float, float]]:
    """(system, scope, dataset) -> (x, y) from the rows measuring x and y."""
    xs = {(r["arm"], r["scope"], r["dataset"]): value(r["estimate"]) for r in rows
          if r["measure"] == x}
    out = {}
    for r in rows:
        key = (r["arm"], r["scope"], r["dataset"])
        if r["measure"] == y and key in xs:
            v = value(r["estimate"])
            out[key] = (xs[key], 1.0 - v if flip_y else v)
    return out


def _sweep(study: StudyRows, style: Style, scope_prefix: str, x: str, y: str, flip: bool,
           xlabel: str, ylabel: str, note: str) -> Drawn | Skipped:
    rows = [r for r in pick(study, "trace_sweeps", (x, y))
            if str(r["scope"]).startswith(scope_prefix) or r["scope"] == "baseline"]
    if not rows:
        return Skipped("no second-seed sweep rows (no trace states in this selection; "
                       "`lab traces collect` stores them)")
    models = by_model(rows)
    fig, axes = new_figure(style, cols=len(models), height=style.panel_height * 1.5,
                           sharey=True)
    for ax, (model, part) in zip(axes, models):
        points = _points(part, x, y, flip)
        datasets = ordered(k[2] for k in points)
        for system in ordered(k[0] for k in points if k[0] in GATED):
            look = arm_look(system).kwargs()
            for d_i, dataset in enumerate(datasets):
                line = [p for k, p in points.items() if k[0] == system and k[2] == dataset
                        and k[1] != "baseline"]
                line.sort()
                ax.plot([p[0] for p in line], [p[1] for p in line], **look,
                        label=system + (f" · {dataset}" if len(datasets) > 1 else "")
                        + ("" if any(map(drawable, line)) else " (n.a.)"),
                        alpha=1.0 if d_i == 0 else 0.6)
        at: dict[tuple[float, float], list[str]] = {}  # baselines at one point: one label
        for k, p in points.items():
            if k[1] == "baseline" and drawable(p):
                at.setdefault(p, []).append(str(k[0]))
        xs = [q[0] for q in points.values() if drawable(q)]
        middle = (min(xs) + max(xs)) / 2 if xs else 0.0
        for p, names in at.items():
            ax.plot(*p, marker="s", color=NEUTRAL, linestyle="none", markerfacecolor="white")
            right = p[0] > middle  # its label to the left, so it stays over the plot
            ax.annotate(" = ".join(names), p, textcoords="offset points",
                        xytext=(-3 if right else 3, 3), ha="right" if right else "left",
                        fontsize="x-small", color=NEUTRAL)
        ax.set_title(model, loc="left")
        ax.set_xlabel(xlabel)
        ax.legend(frameon=False, fontsize="x-small")
    axes[0].set_ylabel(ylabel)
    return Drawn(fig, rows, note)


def trace_risk_coverage(study: StudyRows, style: Style) -> Drawn | Skipped:
    """Seed Figure 3: selective risk against coverage over the τ_hi sweep."""
    return _sweep(study, style, "τ_hi=", "coverage", "CA", True, "coverage",
                  "selective risk (1 − CA)", "τ_hi sweep of the gated controllers; squares: "
                  "confidence-blind baselines")


def trace_oa_cost(study: StudyRows, style: Style) -> Drawn | Skipped:
    """Seed Figure 4: overall accuracy against mean retrievals over the budget sweep."""
    return _sweep(study, style, "budget ", "cost", "OA", False, "mean retrievals (cost)",
                  "overall accuracy (OA)", "retrieval budget 0–3 of the gated controllers; "
                  "squares: baselines")


def trace_reliability(study: StudyRows, style: Style) -> Drawn | Skipped:
    """Seed Figure 5: depth-zero reliability bins, raw against calibrated."""
    rows = [r for r in pick(study, "trace_sweeps", ("bin_confidence", "bin_accuracy"))
            if _BIN.match(str(r["scope"])) and r["arm"] in GATED]
    if not rows:
        return Skipped("no second-seed reliability bins (no trace states in this selection; "
                       "`lab traces collect` stores them)")
    models = by_model(rows)
    fig, axes = new_figure(style, cols=len(models), height=style.panel_height * 1.5,
                           sharey=True)
    for ax, (model, part) in zip(axes, models):
        ax.plot([0, 1], [0, 1], color=NEUTRAL, linestyle="--", linewidth=0.8)
        points = _points(part, "bin_confidence", "bin_accuracy")
        datasets = ordered(k[2] for k in points)
        for system in GATED:
            look = arm_look(system).kwargs()
            for dataset in datasets:
                line = sorted(p for k, p in points.items() if k[0] == system and
                              k[2] == dataset)
                ax.plot([p[0] for p in line], [p[1] for p in line], **look,
                        label=system + (f" · {dataset}" if len(datasets) > 1 else ""))
        ax.set_xlim(-0.02, 1.02)
        ax.set_ylim(-0.02, 1.02)
        ax.set_title(model, loc="left")
        ax.set_xlabel("mean confidence (depth 0)")
        ax.legend(frameon=False, fontsize="x-small")
    axes[0].set_ylabel("accuracy")
    return Drawn(fig, rows, "depth-zero reliability bins (10 equal-width); dashed: perfect "
                            "calibration")


_DEPTH = re.compile(r"depth (\d+)$")
ECE = (("ece_raw", "Raw-Gated", "raw"), ("ece_cal", "Calibrated-Gated", "calibrated"))
"""(measure, the system whose look it takes, legend): raw confidence is what the
raw-gated controller reads, the calibrated map what the calibrated-gated one reads."""


def trace_ece_by_depth(study: StudyRows, style: Style) -> Drawn | Skipped:
    """The second seed's Table 2 as a figure: ECE (10 equal-width bins) of the stated
    confidence by retrieval depth, raw against calibrated, one panel per model, one line
    per dataset (the others lighter)."""
    rows = [r for r in pick(study, "trace_table2", tuple(m for m, _, _ in ECE))
            if _DEPTH.match(str(r["arm"]))]
    if not rows:
        return Skipped("no second-seed calibration rows (no trace states in this "
                       "selection; `lab traces collect` stores them)")
    models = by_model(rows)
    fig, axes = new_figure(style, cols=len(models), height=style.panel_height * 1.4,
                           sharey=True)
    for ax, (model, part) in zip(axes, models):
        datasets = ordered(r["dataset"] for r in part)
        for measure, system, legend in ECE:
            look = arm_look(system).kwargs()
            for d_i, dataset in enumerate(datasets):
                line = sorted((int(_DEPTH.match(str(r["arm"])).group(1)),  # type: ignore[union-attr]
                               value(r["estimate"])) for r in part
                              if r["measure"] == measure and r["dataset"] == dataset)
                ax.plot([p[0] for p in line], [p[1] for p in line], **look,
                        alpha=1.0 if d_i == 0 else 0.55,
                        label=legend + (f" · {dataset}" if len(datasets) > 1 else ""))
        depths = sorted({int(_DEPTH.match(str(r["arm"])).group(1)) for r in part})  # type: ignore[union-attr]
        ax.set_xticks(depths)
        ax.set_ylim(bottom=0)
        ax.set_title(model, loc="left")
        ax.set_xlabel("retrieval depth")
        ax.legend(frameon=False, fontsize="x-small")
    axes[0].set_ylabel("ECE (10 bins)")
    return Drawn(fig, rows, "expected calibration error by retrieval depth, raw against "
                            "calibrated confidence (map fitted on the calibration split), "
                            "on the test split")


FIGURES = (FigureDef("trace_risk_coverage", "Second seed: risk–coverage over τ_hi",
                     ("trace_sweeps",), trace_risk_coverage, ("trace_sweeps",)),
           FigureDef("trace_oa_cost", "Second seed: OA–cost over the retrieval budget",
                     ("trace_sweeps",), trace_oa_cost, ("trace_sweeps",)),
           FigureDef("trace_reliability", "Second seed: reliability at depth zero",
                     ("trace_sweeps",), trace_reliability, ("trace_sweeps",)),
           FigureDef("trace_ece_by_depth", "Second seed: calibration error by depth",
                     ("trace_table2",), trace_ece_by_depth, ("trace_table2",)))
