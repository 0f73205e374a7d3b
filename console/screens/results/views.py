"""Presentation for the Results screen: what each view shows of its table (the views
themselves are `analysis.tables.registry`'s), the Δ grid (models × arms) built from the
Δ table, and the charts' series. Only shaping and formatting of computed rows: no
statistics and no lab.db here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from rich.text import Text

from analysis.base.rows import Row, Table
from analysis.tables.text import DASH, fmt_interval, fmt_number

ANSWERING = ("answered", "median action", "final share")
"""Cost-table measures shown on the Answering view."""


def view_tables(view: str, tables: Sequence[Table]) -> tuple[Table, ...]:
    """The tables a view shows (and exports), from the computed ones.

    Args:
        view: a view id (`analysis.tables.registry.views`).
        tables: the tables `analysis.tables.results.results_for` returned for the view.

    Returns:
        The tables; the Answering view keeps only the answering measures of "cost".
    """
    if view == "answering":
        out = []
        for t in tables:
            rows = tuple(r for r in t.rows if r.measure in ANSWERING)
            out.append(replace(t, name="answering", title="Answering: how many answered, "
                               "at which action (median), share at the final action",
                               rows=rows, ci_columns=(), notes=()))
        return tuple(out)
    return tuple(tables)


def display_tables(view: str, tables: Sequence[Table]) -> tuple[Table, ...]:
    """What a view prints as text: on Hazard, β/γ only (the curve is drawn as a chart).

    Args:
        view: a view id (`analysis.tables.registry.views`).
        tables: the view's tables (`view_tables`).

    Returns:
        The tables to print.
    """
    if view != "hazard":
        return tuple(tables)
    return tuple(replace(t, rows=tuple(r for r in t.rows if r.measure != "hazard"),
                         title="Hazard model (exploratory): β per extra useless result, "
                               "γ for an earlier useful one; the curve P(answer | j) is "
                               "charted below, `e` exports it with β/γ")
                 for t in tables)


def arm_of(row: Row) -> str:
    """The row's arm label (full spec), falling back to the bare condition name."""
    return str(getattr(row, "arm", "") or row.condition)


_GROUP_FIELDS = ("model", "budget", "dataset", "question_set", "runs", "seeds", "replicates",
                 "regimes")
"""What tells the lines of the Δ grid apart (the arm is the column)."""


LABEL_WIDTH = 26
"""The widest a Δ grid's row label is at 80 columns (the model first): the arms stay in
view, and the full cover is in the line under the grid. A longer label is elided in the
middle of its longest parts, so the model's start and the seed at its end stay. A wider
screen gives the labels what the arms' columns leave (`label_width`)."""
CELL_WIDTH = 6
"""A grid cell's widest text: a signed estimate and its mark ("+0.36*")."""


def label_width(screen_width: int, arms: Sequence[str]) -> int:
    """The widest a row label may be on a screen `screen_width` columns wide: what the
    arms' columns (each its header or a cell, padded by one on each side) leave, less the
    label column's padding and a scrollbar; never under `LABEL_WIDTH`."""
    used = sum(max(len(arm), CELL_WIDTH) + 2 for arm in arms) + 2 + 2
    return max(LABEL_WIDTH, screen_width - used)


@dataclass(frozen=True)
class Grid:
    """Δ as a grid: one line per model (and whatever else splits rows), one column per arm.

    Attributes:
        lines: short line labels (model, then the values that differ between lines).
        arms: column labels (arm labels).
        cells: (line index, arm index, row) for every computed cell.
        measure: the Δ-table measure shown ("delta" or "design").
        scope: the variant shown (e.g. "own judgments, by t").
        covers: each line in full (model · run … · regimes …), for the detail line.
    """

    lines: tuple[str, ...]
    arms: tuple[str, ...]
    cells: tuple[tuple[int, int, Row], ...]
    measure: str
    scope: str
    covers: tuple[str, ...] = ()

    def cell(self, line: int, arm: int) -> Row | None:
        """The row behind a cell, or None when that arm did not run on that line."""
        return next((r for i, j, r in self.cells if i == line and j == arm), None)


def variants(table: Table) -> tuple[tuple[str, str], ...]:
    """The (measure, scope) variants present in a Δ table, in table order."""
    return tuple(dict.fromkeys((r.measure, r.scope) for r in table.rows))


def delta_grid(table: Table, measure: str, scope: str, screen_width: int = 80) -> Grid:
    """Arrange one Δ variant as lines × arms.

    Args:
        table: the Δ table.
        measure: "delta" or "design".
        scope: the variant's scope.
        screen_width: the columns the grid has; its row labels take what the arms leave.

    Returns:
        The Grid.
    """
    from analysis.tables.fit import fit_parts
    from analysis.tables.text import regimes_text

    rows = [r for r in table.rows if r.measure == measure and r.scope == scope]
    keys = [tuple(getattr(r, f, "") for f in _GROUP_FIELDS) for r in rows]
    varying = [i for i, _ in enumerate(_GROUP_FIELDS) if len({k[i] for k in keys}) > 1]
    names = [f for i, f in enumerate(_GROUP_FIELDS) if i in varying and f != "model"]

    def value(f: str, k: tuple[object, ...]) -> str:
        v = str(k[_GROUP_FIELDS.index(f)])  # "" for none (imported episodes have no set)
        return regimes_text(v) if f == "regimes" else v or DASH

    def cover(k: tuple[object, ...]) -> str:
        extra = [f"{f.rstrip('s') if f != 'regimes' else 'regimes'} "
                 f"{k[_GROUP_FIELDS.index(f)] or DASH}" for f in names]
        return " · ".join([str(k[0]), *extra])

    def parts(k: tuple[object, ...]) -> list[str]:
        return [str(k[0]), *(value(f, k) for f in names)]

    arms = sorted(dict.fromkeys(arm_of(r) for r in rows), key=lambda a: (a != "none", a))
    width = label_width(screen_width, arms)
    covers = list(dict.fromkeys(cover(k) for k in keys))
    labels = {cover(k): fit_parts(parts(k), width) for k in keys}
    if len(set(labels.values())) < len(labels):  # elided alike: number the lines
        labels = {c: fit_parts([f"{n}.", *parts(k)], width) for n, (c, k) in
                  enumerate(dict(zip(map(cover, keys), keys)).items(), 1)}
    cells = tuple((covers.index(cover(k)), arms.index(arm_of(r)), r) for k, r in zip(keys, rows))
    return Grid(tuple(labels[c] for c in covers), tuple(arms), cells, measure, scope,
                tuple(covers))


def excludes_zero(row: Row) -> bool:
    """Whether the 95% interval lies entirely above or below zero."""
    lo, hi = row.ci_low, row.ci_high
    return not (math.isnan(lo) or math.isnan(hi)) and (lo > 0 or hi < 0)


def grid_cell(row: Row | None) -> Text:
    """A grid cell: the signed estimate, `*` when its interval excludes 0, styled by sign.

    The sign is always written out, so the cell reads the same without colour.
    """
    if row is None:
        return Text("·", style="dim")
    if math.isnan(row.estimate):
        return Text(DASH, style="dim")
    text = fmt_number(row.estimate, ".2f", signed=True) + ("*" if excludes_zero(row) else " ")
    if row.estimate > 1e-12:
        return Text(text, style="bold green")
    if row.estimate < -1e-12:
        return Text(text, style="bold red")
    return Text(text)


def cell_summary(grid: Grid, line: int, arm: int) -> str:
    """The selected cell in words: estimate, interval, n and group sizes.

    Args:
        grid: the grid.
        line: line index.
        arm: arm index.

    Returns:
        One or two lines.
    """
    if not grid.lines or not grid.arms:
        return "no Δ rows for this selection"
    row = grid.cell(line, arm)
    where = f"{(grid.covers or grid.lines)[line]} × {grid.arms[arm]}"
    if row is None:
        return f"{where}: this arm did not run here"
    what = "Δ" if grid.measure == "delta" else "design contrast"
    value = fmt_interval(row.estimate, row.ci_low, row.ci_high, 2, True)
    return (f"{where} · {what} ({grid.scope}) = {value} · n {row.n} {row.unit} "
            f"({row.detail})\nEnter lists these decisions in groups (a) and (b)")


_KEY_FIELDS = ("budget", "dataset", "question_set", "runs", "seeds", "replicates", "family")
"""ArmKey fields that tell two groups of the same model and arm apart."""


def group_labels(keys: Sequence[object]) -> list[str]:
    """A chart label per group (`analysis.base.arms.ArmKey`): the arm, plus what differs.

    Args:
        keys: the groups.

    Returns:
        e.g. "enforced_rule:k=2" or "none · budget 16 · seeds 1" when groups differ there.
    """
    varying = [f for f in _KEY_FIELDS if len({getattr(k, f, "") for k in keys}) > 1]
    return [" · ".join([str(getattr(k, "arm", "")),
                        *(f"{f} {getattr(k, f)}" for f in varying if getattr(k, f, ""))])
            for k in keys]


Series = tuple[str, list[int], list[float]]


def hazard_series(curves: Sequence[tuple[object, Sequence[float]]]) -> dict[str, list[Series]]:
    """Hazard curves per model for `analysis.tables.plots.line_chart`.

    Args:
        curves: `Results.hazard_curves`: (group, P(answer) at j = 0, 1, …).

    Returns:
        {model: [(group label, js, hazards), …]}.
    """
    labels = group_labels([k for k, _ in curves])
    out: dict[str, list[Series]] = {}
    for (key, hazards), label in zip(curves, labels):
        out.setdefault(str(getattr(key, "model", "")), []).append(
            (label, list(range(len(hazards))), list(hazards)))
    return out


def answer_series(actions: Sequence[tuple[object, Sequence[tuple[int, int]]]],
                  episodes: Sequence[int]) -> dict[str, list[Series]]:
    """Share of episodes answering at each action, per model, for `line_chart`.

    Args:
        actions: `Results.answer_actions`: (group, ((action, answers), …)).
        episodes: `Results.episodes_per_arm`, aligned with `actions`.

    Returns:
        {model: [(group label, actions, shares), …]}.
    """
    labels = group_labels([k for k, _ in actions])
    out: dict[str, list[Series]] = {}
    for (key, counts), n, label in zip(actions, episodes, labels):
        out.setdefault(str(getattr(key, "model", "")), []).append(
            (label, [a for a, _ in counts], [c / n if n else math.nan for _, c in counts]))
    return out


Curve = tuple[str, list[float], list[float]]


def controller_series(curves: Sequence[tuple[str, Any, Any, Any]]
                      ) -> tuple[list[Curve], list[Curve]]:
    """The risk–coverage and reliability series of `analysis.replay.controllers.chart_curves`.

    Returns:
        (risk against coverage per group, accuracy against mean confidence per group
        plus the diagonal of perfect calibration).
    """
    risk: list[Curve] = []
    reliability: list[Curve] = [("perfect", [0.0, 1.0], [0.0, 1.0])]
    for label, rc, conf, acc in curves:
        risk.append((label, [float(x) for x in rc.coverage], [float(y) for y in rc.risk]))
        reliability.append((label, [float(x) for x in conf], [float(y) for y in acc]))
    return risk, reliability
