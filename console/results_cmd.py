"""`lab results`, `lab validate-measures` and `lab export` (SPEC §13, §15).

Thin commands: they read options, call `analysis`, and print. Registered on the
`lab` group by console/cli.py.
"""

from __future__ import annotations

import csv
import io
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click
from sqlite_utils import Database

from core import store
from core.errors import ConfigError, StoreError
from core.store import prereg as prereg_rows

if TYPE_CHECKING:
    from analysis.measures import Frames

TABLES = ("success", "delta", "index", "hazard", "cost", "judgments")
"""analysis.measures.TABLES, spelled out so `lab --help` need not import pandas (a test
checks they agree)."""

FORMATS = ("table", "csv", "json")
NO_REPAIRED = ("note: no repaired answers stored yet (answer repair, SPEC §8.5, is not run in "
               "this lab.db); showing raw results")


def _db(ctx: click.Context) -> Database:
    return store.connect(ctx.obj["db"])


def _models(text: str | None) -> list[str] | None:
    if text is None:
        return None
    names = [m.strip() for m in text.split(",") if m.strip()]
    if not names:
        raise ConfigError("--models needs at least one model name, e.g. --models sim-own5,"
                          "sim-clock6")
    return names


def _frames(db: Database, runs: tuple[str, ...], models: list[str] | None, path: Path) -> Frames:
    """Load the selection, or explain in one line why it is empty."""
    from analysis.measures import load_frames

    frames = load_frames(db, list(runs) or None, models)
    if len(frames.episodes) or frames.errored:
        return frames
    everything = store.episodes_frame(db)
    if everything.empty:
        raise StoreError(f"no finished episodes in {path}; run `lab demo`, or `lab enqueue` "
                         "then `lab worker`")
    known_runs = sorted(set(everything["run"]))
    missing = [r for r in runs if r not in known_runs]
    if missing:
        raise ConfigError(f"no run named '{missing[0]}' in lab.db; runs: {', '.join(known_runs)}")
    known_models = sorted(set(everything["model"]))
    missing = [m for m in models or () if m not in known_models]
    if missing:
        raise ConfigError(f"no episodes of model '{missing[0]}' in lab.db; models: "
                          f"{', '.join(known_models)}")
    raise ConfigError("no finished episodes match this selection (--run "
                      f"{', '.join(runs) or 'any'}, --models {', '.join(models or ['any'])})")


def _rows_out(dicts: list[dict[str, object]], fmt: str) -> str:
    from analysis.rows import ROW_FIELDS

    if fmt == "json":
        return json.dumps(dicts, ensure_ascii=False, indent=1)
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=["table", *ROW_FIELDS, "provenance"],
                            lineterminator="\n")
    writer.writeheader()
    writer.writerows(dicts)
    return buf.getvalue().rstrip("\n")


@click.command("results")
@click.argument("table", required=False, default="all",
                type=click.Choice([*TABLES, "all"]))
@click.option("--run", "runs", multiple=True, help="Run name to include (repeatable; default all).")
@click.option("--models", default=None, help="Comma-separated model names (default all).")
@click.option("--repaired", is_flag=True, help="Use repaired answers (SPEC §8.5) where stored.")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True)
@click.option("--resamples", type=click.IntRange(min=0), default=2000, show_default=True,
              help="Question-level bootstrap resamples (the hazard model uses at most 1,000).")
@click.option("--seed", type=int, default=0, show_default=True, help="Bootstrap seed.")
@click.pass_context
def results(ctx: click.Context, table: str, runs: tuple[str, ...], models: str | None,
            repaired: bool, fmt: str, resamples: int, seed: int) -> None:
    """Print results tables: success, delta, index, hazard, cost, judgments or all.

    Rows carry model, condition, measure, estimate, ci_low, ci_high and n; table
    format prints paper-style intervals (+0.33 [+0.25, +0.41]) and terminal charts.

    \b
    Example:
      lab results
      lab results delta --run main --models qwen3-8b,llama-3.1-8b
      lab results success --format json > success.json
    """
    from analysis.measures import compute
    from analysis.tables import render_results

    db = _db(ctx)
    if repaired:
        click.echo(NO_REPAIRED, err=True)
    frames = _frames(db, runs, _models(models), ctx.obj["db"])
    names = TABLES if table == "all" else (table,)
    res = compute(frames, names, resamples, min(resamples, 1000), seed)
    provenance = prereg_rows.run_provenance(db, frames.runs)
    if fmt == "table":
        text = render_results(res, charts=True, colorless=not sys.stdout.isatty())
        click.echo((NO_REPAIRED + "\n\n" if repaired else "") + "\n".join(
            provenance_lines(provenance)) + "\n" + text)
        return
    label = "; ".join(f"{p['run']}: {p['amendment'] or 'exploratory'}"
                      + (f" ({len(p['deviations'])} deviations)" if p["deviations"] else "")
                      for p in provenance)
    click.echo(_rows_out([d | {"provenance": label} for t in res.tables for d in t.dicts()],
                         fmt))


def provenance_lines(provenance: list[dict[str, object]]) -> list[str]:
    """One line per run (governed by an amendment, or exploratory) and its deviations."""
    lines = []
    for p in provenance:
        state = f"governed by {p['amendment']}" if p["amendment"] else \
            "EXPLORATORY (no governing amendment)"
        lines.append(f"run {p['run']}: {state}")
        lines += [f"  {d}" for d in p["deviations"]]  # type: ignore[attr-defined]
    return lines


@click.command("validate-measures")
@click.option("--set", "set_name", default=None,
              help="Question set to run (default: the bundled demo questions).")
@click.option("--seeds", type=click.IntRange(min=1), default=3, show_default=True,
              help="Simulations per question (seeds 0 … N−1).")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True)
@click.option("--resamples", type=click.IntRange(min=0), default=2000, show_default=True)
@click.pass_context
def validate_measures_cmd(ctx: click.Context, set_name: str | None, seeds: int, fmt: str,
                          resamples: int) -> None:
    """Check that the stopping measures separate simulated policies (SPEC §13.7).

    Runs every built-in sim policy under condition none, budget 8, in the five
    failure regimes (run "validate-measures"; stored episodes are reused), then
    prints I, the design-label contrast and the own-judgment Δ per policy. Exits 1
    when a policy does not separate as expected.

    \b
    Example:
      lab validate-measures
      lab validate-measures --set dev100 --seeds 5
    """
    from analysis.tables import render_table
    from analysis.validate import (ValidationFailed, n_cells, validate_measures,
                                   validation_table)
    from core.demo_data import demo_questions
    from core.regimes import ForeignPool

    db = _db(ctx)
    if set_name:
        qset = store.question_set(db, set_name)
        questions = store.load_questions(db, ids=qset["ids"])
        pool = ForeignPool(store.load_questions(db, dataset=qset["dataset"]))
    else:
        questions = demo_questions()
        store.insert_questions(db, questions)
        pool = ForeignPool(questions)
    seed_list = tuple(range(seeds))
    with click.progressbar(length=n_cells(seed_list), label="running sim policies",
                           file=sys.stderr) as bar:
        v = validate_measures(db, questions, seed_list, pool=pool, question_set=set_name,
                              n_boot=resamples, progress=bar.update)
    table = validation_table(v)
    click.echo(render_table(table) if fmt == "table" else _rows_out(table.dicts(), fmt))
    if not v.passed:
        failed = v.failures()
        raise ValidationFailed(f"{len(failed)} of {len(v.checks)} sim policies did not separate "
                               f"as expected: {', '.join(failed)}")


@click.command("export")
@click.argument("directory", type=click.Path(path_type=Path))
@click.option("--run", "runs", multiple=True, help="Run name to include (repeatable; default all).")
@click.option("--models", default=None, help="Comma-separated model names (default all).")
@click.option("--resamples", type=click.IntRange(min=0), default=2000, show_default=True)
@click.pass_context
def export_cmd(ctx: click.Context, directory: Path, runs: tuple[str, ...], models: str | None,
               resamples: int) -> None:
    """Write tidy CSVs: episodes.csv, steps.csv and one CSV per results table.

    UTF-8 with a header row; columns are documented in README ("Export").

    \b
    Example:
      lab export results/
      lab export results/main --run main --models qwen3-8b
    """
    from analysis.export import export

    db = _db(ctx)
    _frames(db, runs, _models(models), ctx.obj["db"])
    paths = export(db, directory, list(runs) or None, _models(models), resamples,
                   min(resamples, 1000))
    click.echo(f"wrote {len(paths)} files to {directory}: " + ", ".join(p.name for p in paths))


COMMANDS = (results, validate_measures_cmd, export_cmd)
"""The commands to register on the `lab` group."""
