"""Result rows and tables: the common shape every measure is reported in.

A `Row` is one estimate for one arm (model × condition × budget) with its interval;
a `Table` is a named, titled tuple of rows plus notes. Tables, CSV and JSON are all
built from these, so every output carries model, condition, measure, estimate,
ci_low, ci_high and n.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

from analysis.stats import Interval

ROW_FIELDS = ("model", "condition", "budget", "measure", "scope", "estimate", "ci_low",
              "ci_high", "n", "unit", "p", "p_holm", "detail", "runs")
"""Column order of every results CSV."""


@dataclass(frozen=True)
class Row:
    """One estimate of one measure for one arm.

    Attributes:
        model: model name.
        condition: condition (arm) name.
        budget: action budget of the arm.
        measure: what is estimated, e.g. "success", "delta", "beta".
        scope: where it is estimated, e.g. a regime, "mean6", "vs none".
        estimate: point estimate (NaN when undefined).
        ci_low: lower 95% bound (NaN when not computed or undefined).
        ci_high: upper 95% bound.
        n: size behind the estimate, in `unit`.
        unit: "questions", "decisions", "episodes", "judgments" or "".
        p: one-sided p (share of resampled differences <= 0), when relevant.
        p_holm: Holm-adjusted p across models, when relevant.
        detail: short free text (group sizes, components, flags).
        runs: the runs pooled into the arm, comma-separated.
    """

    model: str
    condition: str
    budget: int | None
    measure: str
    scope: str = ""
    estimate: float = math.nan
    ci_low: float = math.nan
    ci_high: float = math.nan
    n: int = 0
    unit: str = ""
    p: float = math.nan
    p_holm: float = math.nan
    detail: str = ""
    runs: str = ""

    def as_dict(self) -> dict[str, Any]:
        """The row as a plain dict; NaN and infinities become None (valid JSON)."""
        out = asdict(self)
        for key, value in out.items():
            if isinstance(value, float) and not math.isfinite(value):
                out[key] = None
        return out


def interval_row(arm: tuple[str, str, int], measure: str, interval: Interval, scope: str = "",
                 unit: str = "questions", n: int | None = None, detail: str = "",
                 runs: str = "", with_p: bool = False) -> Row:
    """A Row from an Interval.

    Args:
        arm: (model, condition, budget).
        measure: measure name.
        interval: the estimate and its interval.
        scope: scope label.
        unit: unit of `n`.
        n: size (default: the interval's cluster count).
        detail: free text.
        runs: runs pooled into the arm.
        with_p: copy the interval's one-sided p.

    Returns:
        The Row.
    """
    return Row(arm[0], arm[1], arm[2], measure, scope, interval.estimate, interval.low,
               interval.high, interval.n if n is None else n, unit,
               interval.p if with_p else math.nan, math.nan, detail, runs)


@dataclass(frozen=True)
class Table:
    """A named table of rows.

    Attributes:
        name: short name, also the CSV file stem (e.g. "success").
        title: one-line title printed above the table.
        rows: the rows.
        notes: lines printed under the table (definitions, exclusions).
        layout: "wide" (one line per arm, one column per measure/scope) or "long".
        ci_columns: in a wide layout, the columns printed with their interval.
        formats: (measure, format spec) pairs for estimates printed without an
            interval (default ".2f").
        headers: (measure, column header) pairs where the header is shorter.
    """

    name: str
    title: str
    rows: tuple[Row, ...]
    notes: tuple[str, ...] = ()
    layout: str = "long"
    ci_columns: tuple[str, ...] = field(default=())
    formats: tuple[tuple[str, str], ...] = field(default=())
    headers: tuple[tuple[str, str], ...] = field(default=())

    def dicts(self) -> list[dict[str, Any]]:
        """Every row as a dict (for JSON and CSV), with the table name added."""
        return [{"table": self.name, **r.as_dict()} for r in self.rows]
