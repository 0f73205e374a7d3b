"""The figures of one console view (the Results screen's `F`): the figures that declare
the view (`FigureDef.views`; the Answering and Cost views read the cost table, their
figure, the answering action under two budgets, reads the budgets table, computed for
it), written with their sidecars into a folder."""

from __future__ import annotations

from pathlib import Path

from sqlite_utils import Database

from analysis.figures import FIGURES, Written, tables_for, write_figures
from analysis.figures.study import study_rows
from analysis.figures.style import STYLES
from core.store.selection import Selection


def write_view_figures(db: Database, selection: Selection, view: str, directory: Path,
                       resamples: int, seed: int = 0, formats: tuple[str, ...] = ("png", "svg"),
                       style: str = "page") -> Written:
    """Write the figures of one Results view, each with its sidecar, into `directory`.

    Args:
        db: an open lab.db.
        selection: the view's filters and pooling.
        view: a Results view's id (`analysis.tables.registry.views`).
        directory: the folder (created if missing).
        resamples: question-level bootstrap resamples, as the view's.
        seed: bootstrap seed.
        formats: among "png", "svg", "pdf".
        style: a key of `STYLES` ("page" as `lab figures`).

    Returns:
        What was written and what was skipped, with why (a view without a figure skips
        nothing and writes nothing).
    """
    figures = [f for f in FIGURES if view in f.views]
    if not figures:
        return Written((), ())
    study = study_rows(db, selection, resamples, seed, names=tables_for(figures))
    return write_figures(study, directory, formats, STYLES[style], figures)
