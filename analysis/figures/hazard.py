"""The hazard of answering by useless-run length j, with 95% bands, one panel per model
and one line per arm (the paper's hazard figure, Figure 5; table "hazard").

The tables hold the hazard by run length only; a hazard by action has no table yet, so
it has no figure.
"""

from __future__ import annotations

from analysis.figures.base import (
    Drawn,
    FigureDef,
    Skipped,
    by_model,
    group_key,
    labeller,
    ordered,
    pick,
    primary_budget,
    value,
)
from analysis.figures.identity import row_look
from analysis.figures.marks import SERIES_SPREAD, dodge
from analysis.figures.study import StudyRows
from analysis.figures.style import Style, legends, new_figure


def _j(scope: str) -> int:
    return int(scope.split("=", 1)[1])


def hazard_by_run(study: StudyRows, style: Style) -> Drawn | Skipped:
    """P(answer | j consecutive failed observations) per model (panel) and arm (line);
    the series' points at one j are dodged sideways so equal hazards stay visible."""
    rows = [r for r in pick(study, "hazard", ("hazard",)) if str(r["scope"]).startswith("j=")]
    if not rows:
        return Skipped("no hazard rows (no decision points after failed observations in "
                       "this selection)")
    models = by_model(rows)
    primary = primary_budget(rows)
    fig, axes = new_figure(style, rows=len(models), sharex=True)
    for ax, (model, model_rows) in zip(axes, models):
        label = labeller(model_rows, with_model=False)
        keys = ordered(group_key(r) for r in model_rows)
        for i, key in enumerate(keys):
            series = sorted((r for r in model_rows if group_key(r) == key),
                            key=lambda r: _j(r["scope"]))
            look = row_look(series[0], primary)
            js = [_j(r["scope"]) + dodge(i, len(keys), SERIES_SPREAD) for r in series]
            ax.plot(js, [value(r["estimate"]) for r in series], label=label(series[0]),
                    **look)
            ax.fill_between(js, [value(r["ci_low"]) for r in series],
                            [value(r["ci_high"]) for r in series], color=look["color"],
                            alpha=0.12, linewidth=0)
        ax.set_ylim(-0.02, 1.02)
        ax.set_ylabel("P(answer)")
        ax.set_title(model, loc="left")
    legends(axes, style)
    axes[-1].set_xlabel("j: consecutive failed observations just seen")
    return Drawn(fig, rows, "hazard of answering by useless-run length, 95% bands")


FIGURES = (FigureDef("hazard_by_run", "Hazard of answering by useless-run length",
                     ("hazard",), hazard_by_run, ("index", "hazard")),)
