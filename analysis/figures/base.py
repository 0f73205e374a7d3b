"""What a figure is: a name, the table it reads, and a function from that table's JSON
rows to a drawn matplotlib figure (or the one-line reason it cannot be drawn), plus the
helpers the figure modules share (numbers from JSON rows, series labels).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from matplotlib.axes import Axes
from matplotlib.figure import Figure

from analysis.figures.study import RowDict, StudyRows
from analysis.figures.style import NEUTRAL, Style
from core.regimes import regime_family


@dataclass(frozen=True)
class Drawn:
    """A figure and exactly the rows it drew.

    Attributes:
        figure: the matplotlib figure (closed once saved).
        rows: the rows drawn, in table order (the sidecar's rows).
        note: one line on what the figure shows (in the sidecar and the report).
    """

    figure: Figure
    rows: list[RowDict]
    note: str = ""


@dataclass(frozen=True)
class Skipped:
    """A figure the selection cannot feed, and why (one line)."""

    reason: str


Build = Callable[[StudyRows, Style], "Drawn | Skipped"]


@dataclass(frozen=True)
class FigureDef:
    """One figure `lab figures` can write.

    Attributes:
        name: file stem, e.g. "success_by_regime".
        title: one-line title.
        tables: the results tables it reads (the Results screen's `F` picks figures by
            these).
        build: rows -> Drawn or Skipped.
        views: the Results screen views it belongs to (their `F` writes it; the views
            are declared in `analysis.tables.registry`).
    """

    name: str
    title: str
    tables: tuple[str, ...]
    build: Build
    views: tuple[str, ...] = ()


def value(v: Any) -> float:
    """A JSON row's number as a float: None (undefined) is NaN, "inf"/"-inf" infinite."""
    if v is None:
        return math.nan
    if isinstance(v, str):
        return math.inf if v == "inf" else -math.inf if v == "-inf" else float(v)
    return float(v)


def defined(row: RowDict) -> bool:
    """Whether the row's estimate is a finite number."""
    return math.isfinite(value(row["estimate"]))


def drawable(point: tuple[float, float]) -> bool:
    """Whether both coordinates of a point are numbers (a controller that commits
    nothing has no risk: its point is not drawn, and its legend entry says n.a.)."""
    return math.isfinite(point[0]) and math.isfinite(point[1])


def error_bar(row: RowDict) -> tuple[float, float] | None:
    """(below, above) distances of the row's 95% interval, or None when it has none."""
    est, low, high = value(row["estimate"]), value(row["ci_low"]), value(row["ci_high"])
    if not all(math.isfinite(x) for x in (est, low, high)):
        return None
    return max(0.0, est - low), max(0.0, high - est)


GROUP_FIELDS = ("model", "arm", "budget", "dataset", "question_set", "runs", "seeds",
                "replicates")
"""What makes a row's group (its series) besides its regime family; the regime(s) and
scope are positions."""
_LABELLED = ("family", "budget", "dataset", "question_set", "runs", "seeds", "replicates")
_PREFIX = {"family": "", "budget": "B", "dataset": "", "question_set": "set ",
           "runs": "run ", "seeds": "seed ", "replicates": "rep "}


def family(row: RowDict) -> str:
    """The regime family of a row: "main" when its regimes are mean6 regimes, else the
    regime's own name (rows of different families are never one series; several
    families, comma-joined, only for a row that pools them)."""
    names = [r for r in str(row.get("regimes") or "").split(",") if r]
    return ",".join(dict.fromkeys(regime_family(r) for r in names))


def field(row: RowDict, name: str) -> Any:
    """A row's value of a grouping field; "family" is derived from its regimes."""
    return family(row) if name == "family" else row.get(name)


def group_key(row: RowDict) -> tuple[Any, ...]:
    """The row's group: model, arm, budget, dataset, set, runs, seeds, replicates and
    regime family (a line never joins points of two families)."""
    return (*(row.get(f) for f in GROUP_FIELDS), family(row))


def labeller(rows: Sequence[RowDict], with_model: bool = True
             ) -> Callable[[RowDict], str]:
    """A function naming a row's group by its arm (and model), plus only the fields that
    differ between the groups drawn (regime family, budget, dataset, set, runs, seeds,
    replicates), so two groups drawn together never share a label."""
    varying = [f for f in _LABELLED if len({field(r, f) for r in rows}) > 1]

    def label(row: RowDict) -> str:
        parts = ([str(row["model"])] if with_model else []) + [str(row["arm"])]
        parts += [f"{_PREFIX[f]}{field(row, f)}" for f in varying]
        return " · ".join(parts)

    return label


def primary_budget(rows: Sequence[RowDict]) -> int | None:
    """The smallest budget among `rows` (the primary one: its markers are filled, other
    budgets' open), or None when no row has one."""
    budgets = [int(r["budget"]) for r in rows if r.get("budget") not in (None, "")]
    return min(budgets) if budgets else None


def ordered(values: Iterable[Any]) -> list[Any]:
    """Distinct values in first-seen order."""
    return list(dict.fromkeys(values))


def by_model(rows: Sequence[RowDict]) -> list[tuple[str, list[RowDict]]]:
    """Rows split by model, in first-seen order."""
    return [(m, [r for r in rows if r["model"] == m]) for m in ordered(r["model"] for r in rows)]


def na_mark(ax: Axes, x: float, y: float, **kw: Any) -> None:
    """Mark an undefined estimate at (x, y) in axes data coordinates: "n.a."."""
    ax.annotate("n.a.", (x, y), ha="center", va="center", fontsize="x-small",
                color=NEUTRAL, **kw)


def zero_mark(ax: Axes, x: float) -> None:
    """Label a bar of height 0 at x "0", just above the axis: a bar of no height draws
    nothing, and would read as a bar that is missing (not run, or undefined: "n.a.")."""
    ax.annotate("0", (x, 0.0), xytext=(0, 2), textcoords="offset points", ha="center",
                va="bottom", fontsize="x-small", color=NEUTRAL)


def pick(study: StudyRows, table: str, measures: Sequence[str] | None = None
         ) -> list[RowDict]:
    """The JSON rows of `table` (only `measures`, when given), in table order."""
    return [r for r in study.table_rows(table) if measures is None or r["measure"] in measures]
