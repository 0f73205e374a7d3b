"""Terminal charts of matched trajectory replay's sweeps (its Figs. 3–4 and reliability
diagrams), drawn from the rows of `analysis.replay.trace_tables.sweeps`: only formatting.

One set per model, on the micro-pooled datasets when there are several (as the paper's
figures pool them): risk–coverage at the τ_hi sweep's thresholds (Fig. 3), overall
accuracy against mean retrievals as the budget grows (Fig. 4), with the always-commit
baselines as single points, and reliability diagrams at depths 0 and 3.
"""

from __future__ import annotations

import re

from analysis.base.rows import Row, Table
from analysis.tables.plots import Series, line_chart

GATED = ("Raw-Gated", "Calibrated-Gated")


def _value(rows: list[Row], system: str, measure: str, scope: str) -> float | None:
    return next((r.estimate for r in rows if r.arm == system and r.measure == measure
                 and r.scope == scope), None)


def _chosen(table: Table) -> dict[str, list[Row]]:
    """Per model, the rows of its pooled dataset (the one with the most '+')."""
    out: dict[str, list[Row]] = {}
    for model in dict.fromkeys(r.model for r in table.rows):
        rows = [r for r in table.rows if r.model == model]
        dataset = max({r.dataset for r in rows}, key=lambda d: (d.count("+"), d))
        out[model] = [r for r in rows if r.dataset == dataset]
    return out


def sweep_charts(table: Table, colorless: bool = True) -> list[str]:
    """The charts of a trace_sweeps table.

    Args:
        table: the table `sweeps` built.
        colorless: strip ANSI colours.

    Returns:
        Per model: risk–coverage, OA–cost and reliability charts.
    """
    charts = []
    for model, rows in _chosen(table).items():
        dataset = rows[0].dataset if rows else ""
        taus = list(dict.fromkeys(r.scope for r in rows if r.scope.startswith("τ_hi=")))
        budgets = list(dict.fromkeys(r.scope for r in rows if r.scope.startswith("budget ")))
        baselines = list(dict.fromkeys(r.arm for r in rows if r.scope == "baseline"))
        risk: list[Series] = []
        cost: list[Series] = []
        for system in GATED:
            risk.append((system, [_value(rows, system, "coverage", s) or 0.0 for s in taus],
                         [v if (v := _value(rows, system, "risk", s)) is not None
                          else float("nan") for s in taus]))
            cost.append((system, [_value(rows, system, "cost", s) or 0.0 for s in budgets],
                         [_value(rows, system, "OA", s) or 0.0 for s in budgets]))
        for name in baselines:
            risk.append((name, [_value(rows, name, "coverage", "baseline") or 0.0],
                         [_value(rows, name, "risk", "baseline") or 0.0]))
            cost.append((name, [_value(rows, name, "cost", "baseline") or 0.0],
                         [_value(rows, name, "OA", "baseline") or 0.0]))
        charts.append(line_chart(risk, f"{model} ({dataset}): risk vs coverage, τ_hi sweep",
                                 "coverage", "risk = 1 − CA", colorless=colorless))
        charts.append(line_chart(cost, f"{model} ({dataset}): OA vs mean retrievals, budget "
                                 "0–3", "mean retrievals", "OA", colorless=colorless))
        for depth in (0, 3):
            series: list[Series] = [("perfect calibration", [0.0, 1.0], [0.0, 1.0])]
            for system in GATED:
                bins = sorted({r.scope for r in rows if r.arm == system
                               and re.match(rf"t={depth} bin", r.scope)})
                series.append((system.replace("-Gated", ""),
                               [_value(rows, system, "bin_confidence", b) or 0.0 for b in bins],
                               [v if (v := _value(rows, system, "bin_accuracy", b)) is not None
                                else float("nan") for b in bins]))
            charts.append(line_chart(series, f"{model} ({dataset}): reliability at depth "
                                     f"{depth} (test states)", "confidence", "accuracy",
                                     colorless=colorless))
    return charts
