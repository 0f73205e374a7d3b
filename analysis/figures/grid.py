"""The main paper's Figure 3: Δ from the agents' own judgments as a grid, models as rows
and arms as columns, each cell coloured by its sign (blue above 0, red below) and, when a
second run of the same cells is drawn (a replication on fresh questions), that run's Δ
in parentheses under the first's (table "delta"). The forest (`analysis.figures.forest`)
gives the same estimates with their intervals.
"""

from __future__ import annotations

import math

import numpy as np
from matplotlib.colors import TwoSlopeNorm

from analysis.figures.base import Drawn, FigureDef, Skipped, ordered, pick, value
from analysis.figures.marks import label_room, tick_rotation
from analysis.figures.study import RowDict, StudyRows
from analysis.figures.style import Style, new_figure

OWN = "own judgments, by t"
"""The Δ the figure shows: matched by t on the agents' own judgments."""
ORIGIN = ("runs", "question_set", "dataset", "seeds", "replicates")
"""What tells the first run of a cell from its replication."""


def origin(row: RowDict) -> tuple[object, ...]:
    """Where a row's episodes come from: its runs, set, dataset, seeds and replicates."""
    return tuple(row.get(f) for f in ORIGIN)


def _text(v: float) -> str:
    return "n.a." if not math.isfinite(v) else f"{v:+.2f}"


def delta_grid(study: StudyRows, style: Style) -> Drawn | Skipped:
    """Models × arms, Δ in each cell, a replication's Δ in parentheses."""
    rows = [r for r in pick(study, "delta", ("delta",)) if r["scope"] == OWN]
    if not rows:
        return Skipped("no Δ on own judgments (no decision points with side-channel "
                       "judgments in this selection)")
    origins = ordered(origin(r) for r in rows)
    first, second = origins[0], origins[1] if len(origins) > 1 else None
    rows = [r for r in rows if origin(r) in (first, second)]
    models = ordered(r["model"] for r in rows)
    arms = ordered(r["arm"] for r in rows)
    cells: dict[tuple[str, str], dict[int, float]] = {}
    for r in rows:
        cells.setdefault((r["model"], r["arm"]), {})[0 if origin(r) == first else 1] = \
            value(r["estimate"])
    grid = np.full((len(models), len(arms)), np.nan)
    for (model, arm), runs in cells.items():
        grid[models.index(model), arms.index(arm)] = runs.get(0, math.nan)
    turn = tick_rotation(arms, 0.8 * style.width / max(1, len(arms)), style.font_size)
    fig, (ax,) = new_figure(style, height=min(style.max_height,
                                              0.42 * len(models) * style.font_size / 8
                                              + 0.9 + label_room(arms, turn,
                                                                 style.font_size)))
    finite = grid[np.isfinite(grid)]
    span = float(max(0.05, np.abs(finite).max())) if finite.size else 1.0
    ax.pcolormesh(np.arange(len(arms) + 1) - 0.5, np.arange(len(models) + 1) - 0.5,
                  np.ma.masked_invalid(grid), cmap="RdBu", norm=TwoSlopeNorm(0.0, -span, span),
                  edgecolors="white", linewidth=0.8)
    ax.invert_yaxis()
    for (model, arm), runs in cells.items():
        main = runs.get(0, math.nan)
        text = _text(main) + (f"\n({_text(runs[1])})" if 1 in runs else "")
        dark = math.isfinite(main) and abs(main) > 0.6 * span
        ax.text(arms.index(arm), models.index(model), text, ha="center", va="center",
                fontsize="small", color="white" if dark else "black")
    ax.set_xticks(range(len(arms)), arms, rotation=turn)
    ax.set_yticks(range(len(models)), models)
    ax.grid(False)
    ax.tick_params(length=0)
    for spine in ax.spines.values():
        spine.set_visible(False)
    head = "Δ (own judgments, by t)"
    if second is None:
        ax.set_title(head, loc="left", fontsize="small")
        return Drawn(fig, rows, f"{head}, blue > 0, red < 0; intervals in the Δ forest")
    names = describe(first, second)
    ax.set_title(f"{head}: {names[0]} (in parentheses: {names[1]})", loc="left",
                 fontsize="small")
    return Drawn(fig, rows, f"{head} of {names[0]}, blue > 0, red < 0, with {names[1]} in "
                            f"parentheses; intervals in the Δ forest")


_PREFIX = {"runs": "run ", "question_set": "set ", "dataset": "", "seeds": "seed ",
           "replicates": "rep "}


def describe(first: tuple[object, ...], second: tuple[object, ...]) -> tuple[str, str]:
    """The two origins named by the fields in which they differ ("run confirm" against
    "run fresh · set fresh30")."""
    differ = [i for i, (a, b) in enumerate(zip(first, second)) if a != b]
    return tuple(" · ".join(f"{_PREFIX[ORIGIN[i]]}{o[i]}" for i in differ)  # type: ignore[return-value]
                 for o in (first, second))


FIGURES = (FigureDef("delta_grid", "Δ grid: models × arms, a replication in parentheses "
                     "(Figure 3)", ("delta",), delta_grid, ("delta",)),)
