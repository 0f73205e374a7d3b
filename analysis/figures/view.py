"""The figures of one console view (the Results screen's `F`): which figures draw the
table a view shows, and writing them, with their sidecars, into a folder."""

from __future__ import annotations

from pathlib import Path
from types import MappingProxyType

from sqlite_utils import Database

from analysis.figures import FIGURES, Written, write_figures
from analysis.figures.study import study_rows
from analysis.figures.style import STYLES
from core.store.selection import Selection

VIEW_FIGURES = MappingProxyType({
    "success": ("success_by_regime",),
    "delta": ("delta_forest",),
    "index": ("hazard_by_run",),
    "hazard": ("hazard_by_run", "hazard_slopes"),
    "answering": ("answer_action_by_budget",),
    "cost": ("answer_action_by_budget",),
    "policies": ("regret_heatmap",),
    "controllers": ("risk_coverage", "ece_by_depth"),
    "trace_sweeps": ("trace_risk_coverage", "trace_oa_cost", "trace_reliability"),
})
"""Results screen view -> the figures of what it shows (the Answering and Cost views
read the cost table; their figure, the answering action under two budgets, reads the
budgets table, computed for it)."""


def write_view_figures(db: Database, selection: Selection, view: str, directory: Path,
                       resamples: int, seed: int = 0, formats: tuple[str, ...] = ("png", "svg"),
                       style: str = "page") -> Written:
    """Write the figures of one Results view, each with its sidecar, into `directory`.

    Args:
        db: an open lab.db.
        selection: the view's filters and pooling.
        view: a key of VIEW_FIGURES.
        directory: the folder (created if missing).
        resamples: question-level bootstrap resamples, as the view's.
        seed: bootstrap seed.
        formats: among "png", "svg", "pdf".
        style: a key of `STYLES` ("page" as `lab figures`).

    Returns:
        What was written and what was skipped, with why (a view without a figure skips
        nothing and writes nothing).
    """
    figures = [f for f in FIGURES if f.name in VIEW_FIGURES.get(view, ())]
    if not figures:
        return Written((), ())
    tables = tuple(dict.fromkeys(t for f in figures for t in f.tables))
    study = study_rows(db, selection, resamples, seed, names=tables)
    return write_figures(study, directory, formats, STYLES[style], figures)
