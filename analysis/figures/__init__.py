"""Publication figures from the results tables (`lab figures`, `lab report`;
docs/figures.md).

Every figure reads the rows `lab results … --format json` prints (`analysis.figures.study`)
and draws them with matplotlib (`analysis.figures.style`: Agg, DejaVu Sans, Okabe–Ito
colours with markers and line styles, deterministic SVG/PDF). One module per family:
judgments (judged useless, queried anyway), success, grid (the Δ grid), forest (Δ,
design contrast, hazard slopes), hazard, actions (budgets), cost (success against
calls), leaving, replay (controllers, calibration, Table 17), beliefs (Figure 6),
traces (matched trajectory replay's sweeps and calibration by depth); marks holds the
shared drawing rules (dodged series, cut intervals). A figure whose rows are absent from
the selection is skipped with one line
saying why, never drawn empty.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from analysis.base.parallel import each
from analysis.figures import (
    actions,
    beliefs,
    cost,
    forest,
    grid,
    hazard,
    judgments,
    leaving,
    replay,
    success,
    traces,
)
from analysis.figures.base import Drawn, FigureDef, Skipped
from analysis.figures.caption import provenance
from analysis.figures.select import CHOSEN_FROM, DEFAULT, Declared, declare
from analysis.figures.study import StudyRows, provenance_record
from analysis.figures.style import STYLES, Style, save, styled, svg_text

FIGURES: tuple[FigureDef, ...] = (*judgments.FIGURES, *success.FIGURES, *grid.FIGURES,
                                  *forest.FIGURES[:1], *hazard.FIGURES,
                                  *forest.FIGURES[1:], *actions.FIGURES, *cost.FIGURES,
                                  *leaving.FIGURES, *replay.FIGURES, *beliefs.FIGURES,
                                  *traces.FIGURES)
"""Every figure, in the order the report shows them."""


@dataclass(frozen=True)
class Written:
    """What `write_figures` wrote and left out.

    Attributes:
        paths: the figure files and their sidecars, in order.
        skipped: (figure name, reason) for each figure the selection cannot feed.
    """

    paths: tuple[Path, ...]
    skipped: tuple[tuple[str, str], ...]


def figures_for(tables: Sequence[str]) -> tuple[FigureDef, ...]:
    """The figures that read any of `tables` (all of them when `tables` is empty)."""
    return tuple(f for f in FIGURES if not tables or set(f.tables) & set(tables))


def tables_for(figures: Sequence[FigureDef]) -> tuple[str, ...]:
    """The results tables to compute for drawing `figures`: those they read and the
    table the declared selection is chosen from (`select.CHOSEN_FROM`)."""
    return tuple(dict.fromkeys([*(t for f in figures for t in f.tables), *CHOSEN_FROM]))


def sidecar(fig: FigureDef, drawn: Drawn, study: StudyRows, files: Sequence[str]) -> str:
    """The sidecar JSON of a drawn figure: its rows exactly and their provenance."""
    return json.dumps({"figure": fig.name, "title": fig.title, "tables": list(fig.tables),
                       "note": drawn.note, "files": list(files), "rows": drawn.rows,
                       "provenance": provenance_record(study, drawn.rows)},
                      ensure_ascii=False, indent=1) + "\n"


def write_figures(study: StudyRows, directory: Path, formats: Sequence[str] = ("png",),
                  style: Style = STYLES["paper"], figures: Sequence[FigureDef] = FIGURES,
                  declared: Declared = DEFAULT) -> Written:
    """Draw every figure the study's rows feed into `directory` (created if missing, and
    removed again with the folders made for it when no figure was drawn): NAME.FORMAT
    for each format and NAME.json, its sidecar.

    Args:
        study: the results rows (`study_rows`).
        directory: the output folder.
        formats: among "png", "svg", "pdf".
        style: `STYLES["paper"]` or `STYLES["talk"]`.
        figures: which figures (default all).
        declared: the runs, budgets and regime family drawn (default: the confirmatory
            runs at the primary budget in the main family; `analysis.figures.select`).

    Returns:
        The paths written and the figures skipped with their reasons.
    """
    made = [d for d in (directory, *directory.parents) if not d.exists()]
    directory.mkdir(parents=True, exist_ok=True)
    study, _ = declare(study, declared)

    def draw(i: int) -> tuple[list[Path], tuple[str, str] | None]:
        fig = figures[i]
        with styled(style):
            drawn = fig.build(study, style)
            if isinstance(drawn, Skipped):
                return [], (fig.name, drawn.reason)
            prov = provenance(study, drawn.rows, drawn.note)
            files = save(drawn.figure, directory / fig.name, tuple(formats), style,
                         prov.caption, prov.keywords())
        side = directory / f"{fig.name}.json"
        side.write_text(sidecar(fig, drawn, study, [p.name for p in files]),
                        encoding="utf-8")
        return [*files, side], None

    paths: list[Path] = []
    skipped: list[tuple[str, str]] = []
    for files, skip in each(len(figures), draw):  # drawn on every core
        paths += files
        skipped += [skip] if skip else []
    if not paths:  # nothing drawn: leave no empty folder behind
        for folder in made:  # the innermost first
            if folder.is_dir() and not any(folder.iterdir()):
                folder.rmdir()
    return Written(tuple(paths), tuple(skipped))


@dataclass(frozen=True)
class Rendered:
    """A figure drawn as SVG text for the report, or why it was skipped.

    Attributes:
        figure: the figure.
        svg: its SVG text ("" when skipped).
        rows: the rows drawn.
        note: what it shows, or the reason it was skipped.
    """

    figure: FigureDef
    svg: str
    rows: list
    note: str


def render_svgs(study: StudyRows, style: Style = STYLES["paper"], text_as_text: bool = True
                ) -> list[Rendered]:
    """Every figure as SVG text (skipped ones with their reason), for the report.

    Args:
        study: the results rows.
        style: sizes.
        text_as_text: write text as SVG <text> in DejaVu Sans (falling back to the
            reader's sans-serif) rather than as glyph outlines: a fifth of the bytes on a
            large study, and the page's text stays searchable.
    """
    import matplotlib

    def draw(i: int) -> tuple[str, list, str]:
        with styled(style), matplotlib.rc_context({"svg.fonttype": "none" if text_as_text
                                                   else "path"}):
            drawn = FIGURES[i].build(study, style)
            if isinstance(drawn, Skipped):
                return "", [], drawn.reason
            return svg_text(drawn.figure), drawn.rows, drawn.note

    return [Rendered(fig, *drawn) for fig, drawn in zip(FIGURES, each(len(FIGURES), draw))]
