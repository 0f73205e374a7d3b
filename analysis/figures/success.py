"""Success per regime with 95% intervals, one panel per model, one series per arm (the
paper's Table 6 / Table 13 as a dot plot; table "success")."""

from __future__ import annotations

from analysis.figures.base import (
    Drawn,
    FigureDef,
    Skipped,
    by_model,
    error_bar,
    group_key,
    labeller,
    na_mark,
    ordered,
    pick,
    primary_budget,
    value,
)
from analysis.figures.identity import row_look
from analysis.figures.marks import dodge, tick_rotation
from analysis.figures.study import StudyRows
from analysis.figures.style import Style, legends, new_figure


def success_by_regime(study: StudyRows, style: Style) -> Drawn | Skipped:
    """Dot plot of success by regime (x) per model (panel) and arm (series)."""
    rows = pick(study, "success", ("success",))
    if not rows:
        return Skipped("no success rows in this selection")
    scopes = ordered(r["scope"] for r in rows)
    models = by_model(rows)
    primary = primary_budget(rows)
    fig, axes = new_figure(style, rows=len(models), sharex=True)
    for ax, (model, model_rows) in zip(axes, models):
        label = labeller(model_rows, with_model=False)
        groups = ordered(group_key(r) for r in model_rows)
        for i, key in enumerate(groups):
            series = [r for r in model_rows if group_key(r) == key]
            look = row_look(series[0], primary)
            xs = [scopes.index(r["scope"]) + dodge(i, len(groups), 0.7) for r in series]
            ys = [value(r["estimate"]) for r in series]
            bars = [error_bar(r) for r in series]
            lows = [b[0] if b else 0.0 for b in bars]
            highs = [b[1] if b else 0.0 for b in bars]
            ax.errorbar(xs, ys, yerr=[lows, highs], capsize=2, label=label(series[0]),
                        **(look | {"linestyle": "none"}))
            for x, y in zip(xs, ys):
                if y != y:  # NaN: undefined
                    na_mark(ax, x, 0.5)
        ax.set_ylim(-0.05, 1.05)
        ax.set_ylabel("success")
        ax.set_title(model, loc="left")
    legends(axes, style)
    axes[-1].set_xticks(range(len(scopes)), scopes, rotation=tick_rotation(
        scopes, 0.75 * style.width / max(1, len(scopes)), style.font_size))
    return Drawn(fig, rows, "success per regime, 95% question-bootstrap intervals")


FIGURES = (FigureDef("success_by_regime", "Success per regime (95% CIs) by model and arm",
                     ("success",), success_by_regime, ("success",)),)
