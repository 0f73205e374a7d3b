"""`lab figures DIR`: publication figures from the results tables (docs/figures.md).

A thin command: it reads the options, computes the rows `lab results --format json`
prints (`analysis.figures.study`), and writes the figures with their sidecars
(`analysis.figures.write_figures`). Registered on the `lab` group by console/cli/__init__.py.
"""

from __future__ import annotations

from pathlib import Path

import click

from console.cli.options import TableChoice, bounded, open_db
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
from core.wording import plural

FIGURE_FORMATS = ("png", "svg", "pdf")


def parse_budgets(text: str) -> tuple[tuple[int, ...], bool]:
    """"8,16" -> ((8, 16), False); "all" -> ((), True); one line for anything else."""
    if text.strip().lower() == "all":
        return (), True
    try:
        budgets = tuple(sorted({int(b) for b in text.split(",") if b.strip()}))
    except ValueError:
        budgets = ()
    if not budgets or min(budgets) < 1:
        raise ConfigError(f"--budgets {text!r}: comma-separated action budgets, e.g. "
                          "--budgets 8,16, or all")
    return budgets, False


def parse_formats(text: str) -> tuple[str, ...]:
    """"png,svg" -> ("png", "svg"); one line naming a format that is not offered."""
    formats = tuple(dict.fromkeys(f.strip().lower() for f in text.split(",") if f.strip()))
    bad = [f for f in formats if f not in FIGURE_FORMATS]
    if bad or not formats:
        raise ConfigError(f"--format {text!r}: choose from {', '.join(FIGURE_FORMATS)}, "
                          "comma-separated, e.g. --format png,svg")
    return formats


@click.command("figures")
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path))
@selection_options
@click.option("--format", "fmt", default="png,svg,pdf", show_default=True,
              help="Comma-separated formats among png, svg, pdf.")
@click.option("--style", type=click.Choice(("column", "page", "paper", "talk")),
              default="page", show_default=True,
              help="column: one journal column (3.3 in); page: the text width (6.9 in); "
                   "paper: the earlier 6.75 in; talk: slides. No text under 6 pt.")
@click.option("--budgets", default=None,
              help="Comma-separated budgets to draw, or all (default: the primary, "
                   "smallest, budget).")
@click.option("--family", default=None,
              help="Regime family to draw: main (the mean6 regimes), plausible, … or all "
                   "(default: main when present).")
@click.option("--table", "tables", multiple=True,
              type=TableChoice(),
              help="Only the figures of this results table (repeatable; default all).")
@click.option("--resamples", type=bounded(0, MAX_RESAMPLES), default=2000, show_default=True,
              help="Question-level bootstrap resamples (as `lab results`).")
@click.option("--seed", type=bounded(), default=0, show_default=True, help="Bootstrap seed.")
@trace_options
@click.pass_context
def figures_cmd(ctx: click.Context, directory: Path, runs: tuple[str, ...],
                sets: tuple[str, ...], seeds: str | None, models: str | None,
                conditions: str | None, regimes: str | None, pool: str | None, fmt: str,
                style: str, budgets: str | None, family: str | None,
                tables: tuple[str, ...], resamples: int, seed: int, tau_lo: float,
                tau_hi: float, max_retrievals: int, fit_depths: str, split_seed: int,
                judge: bool) -> None:
    """Write the paper's figures, each with a sidecar .json of the rows it drew.

    Figures: success per regime, Δ and design contrast (forest), hazard by useless-run
    length, hazard slopes, median answering action under two budgets, leaving (two-
    source arms), controllers' risk–coverage and ECE by depth, Table 17's regret heat
    map, and the second seed's risk–coverage, OA–cost and reliability (on trace states
    of `lab traces collect`). Each NAME.json holds exactly the rows drawn (those of `lab
    results TABLE --format json` with the same filters, --resamples and --seed) and
    their provenance (runs, amendments and hashes, lab version, git commit). A figure
    whose rows the selection lacks is skipped with one line saying why. Filters and
    --pool as for `lab results`.

    By default a figure draws the confirmatory runs (those an amendment governs; the
    exploratory ones when there are none) at the primary budget in the main regime
    family: --run draws the runs named, --budgets 8,16 or all other budgets (open
    markers), --family another family or all.

    \b
    Example:
      lab figures figs/
      lab figures figs/ --run main --models qwen3-8b --format pdf --style talk
    """
    from analysis.figures import figures_for, tables_for, write_figures
    from analysis.figures.select import Declared
    from analysis.figures.study import study_rows
    from analysis.figures.style import STYLES
    from analysis.tables.export import export_folder

    formats = parse_formats(fmt)
    chosen, every_budget = parse_budgets(budgets) if budgets else ((), False)
    declared = Declared(chosen, every_budget, (family or "").strip(), bool(runs))
    db = open_db(ctx, create=False)
    selection = selection_from(runs, sets, seeds, models, conditions, regimes, pool)
    _study_frames(db, selection, ctx.obj["db"])
    directory = export_folder(directory)
    spec = results_spec(resamples, seed, tau_lo, tau_hi, max_retrievals, fit_depths,
                        split_seed, judge)
    figures = figures_for(tables)
    # with --table only what its figures read (every table when none is named)
    study = study_rows(db, selection, resamples, seed,
                       names=tables_for(figures) if tables else None, spec=spec)
    for table in tables:
        if not figures_for((table,)):
            echo(f"no figure draws the {table} table; `lab results {table}` prints it",
                       err=True)
    written = write_figures(study, directory, formats, STYLES[style], figures, declared)
    for name, reason in written.skipped:
        echo(f"skipped {name}: {reason}", err=True)
    drawn = sum(1 for p in written.paths if p.suffix == ".json")
    echo(f"wrote {plural(drawn, 'figure')} ({', '.join(formats)} + .json) to {directory}")


COMMANDS = (figures_cmd,)
"""The commands to register on the `lab` group."""
