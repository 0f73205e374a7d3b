"""`lab report FILE.html`: the study as one self-contained HTML page (docs/figures.md).

A thin command: it computes the rows `lab results --format json` prints
(`analysis.figures.study`) and writes `analysis.report.build_report`'s page. Registered on
the `lab` group by console/cli/__init__.py.
"""

from __future__ import annotations

from pathlib import Path

import click

from console.cli.options import bounded, open_db
from console.cli.output import echo
from console.cli.results import (
    _study_frames,
    results_spec,
    selection_options,
    trace_options,
)
from core.bounds import MAX_RESAMPLES
from core.errors import ConfigError
from core.store.selection import selection_from


@click.command("report")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@selection_options
@click.option("--style", type=click.Choice(("paper", "talk")), default="paper",
              show_default=True, help="Figure sizes: paper or talk.")
@click.option("--resamples", type=bounded(0, MAX_RESAMPLES), default=2000, show_default=True,
              help="Question-level bootstrap resamples (as `lab results`).")
@click.option("--seed", type=bounded(), default=0, show_default=True, help="Bootstrap seed.")
@trace_options
@click.option("--title", default=None,
              help="The page's title (default: the governing amendment's, else 'lab report').")
@click.pass_context
def report_cmd(ctx: click.Context, file: Path, runs: tuple[str, ...], sets: tuple[str, ...],
               seeds: str | None, models: str | None, conditions: str | None,
               regimes: str | None, pool: str | None, style: str, resamples: int,
               seed: int, title: str | None, tau_lo: float, tau_hi: float,
               max_retrievals: int, fit_depths: str, split_seed: int, judge: bool) -> None:
    """Write the study as one HTML file to send: no network, no lab needed to read it.

    Read top-down: title, generation time and lab version, every run, a summary
    box (verdicts, headline contrasts), the registered tests' outcomes, every figure
    (inline SVG), every results table as `lab results` prints it (its exact rows,
    those of `--format json`, collapsed under it), then covers and pooling, errored
    records and the pre-registration in full. Exploratory runs, rows and figures are
    marked. Filters and --pool as for `lab results`.

    \b
    Example:
      lab report study.html
      lab report main.html --run main --pool seeds
    """
    from analysis.figures.study import study_rows
    from analysis.report import build_report
    from core.atomic_write import write_text_atomic

    if file.suffix.lower() not in (".html", ".htm"):
        raise ConfigError(f"{file}: the report is HTML; name it FILE.html, e.g. "
                          "lab report study.html")
    if not file.parent.is_dir():
        raise ConfigError(f"{file}: folder {file.parent} does not exist; create it first or "
                          "give another path, e.g. lab report study.html")
    db = open_db(ctx, create=False)
    selection = selection_from(runs, sets, seeds, models, conditions, regimes, pool)
    _study_frames(db, selection, ctx.obj["db"])
    spec = results_spec(resamples, seed, tau_lo, tau_hi, max_retrievals, fit_depths,
                        split_seed, judge)
    study = study_rows(db, selection, resamples, seed, spec=spec)
    html = build_report(db, study, Path(ctx.obj["db"]).name, style, title)
    write_text_atomic(file, html)
    echo(f"wrote {file} ({len(html.encode('utf-8')) / 1e6:.2f} MB; "
               f"{sum(len(r) for r in study.rows.values()):,} rows in {len(study.tables)} "
               "tables)")


COMMANDS = (report_cmd,)
"""The commands to register on the `lab` group."""
