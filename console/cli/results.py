"""`lab results`, `lab validate-measures` and `lab export` (docs/results.md,
docs/export.md).

Thin commands: they read options, call `analysis`, and print. Registered on the
`lab` group by console/cli/__init__.py.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import click
from sqlite_utils import Database

from analysis.base.cache import hazard_resamples
from analysis.tables.provenance import provenance_lines, row_provenance
from console.cli.collector import freeze_loaded
from console.cli.options import TableChoice, bounded, number, open_db
from console.cli.output import echo
from core import store
from core.bounds import MAX_RESAMPLES, MAX_SEEDS, Bounds
from core.errors import ConfigError, LabError, StoreError
from core.json_text import dumps_rows
from core.regimes import DELTA_FAILURE, DELTA_REGIMES
from core.store import prereg as prereg_rows
from core.store.selection import Selection, check_selection, selection_from
from core.wording import plural

if TYPE_CHECKING:
    from analysis.base.rows import Table
    from analysis.measures.frames import Frames
    from analysis.tables.results import ResultsSpec
    from core.store.early_reads import EarlyReads
    from core.store.selection import Fingerprint

FORMATS = ("table", "csv", "json")
NO_REPAIRED = ("note: no repaired answers stored yet (answer repair, `lab repair`, is not run in "
               "this lab.db); showing raw results")


def selection_options(command: Callable[..., None]) -> Callable[..., None]:
    """The filter and pooling options shared by `lab results` and `lab export`."""
    options = (
        click.option("--run", "runs", multiple=True,
                     help="Run name to include (repeatable; default all)."),
        click.option("--set", "sets", multiple=True,
                     help="Question set to include (repeatable or comma-separated)."),
        click.option("--seeds", default=None, help="Comma-separated seeds, e.g. 0,1."),
        click.option("--models", default=None, help="Comma-separated model names."),
        click.option("--conditions", default=None,
                     help="Comma-separated arm labels (enforced_rule:k=7) or bare names "
                          "(every arm of that condition)."),
        click.option("--regimes", default=None,
                     help="Comma-separated regime names; mean6 stands for the six of the "
                          "paper's mean, as in `lab enqueue`."),
        click.option("--pool", default=None,
                     help="Merge rows across runs,seeds,replicates,sets (comma-separated); "
                          "default: every one splits."),
    )
    for option in reversed(options):
        command = option(command)
    return command


def trace_options(command: Callable[..., None]) -> Callable[..., None]:
    """The confidence gate, calibration split and label options shared by `lab results`,
    `lab figures` and `lab report` (the controllers and trace_* tables read them)."""
    options = (
        click.option("--tau-lo", type=number(Bounds(ge=0, le=1)), default=0.3,
                     show_default=True,
                     help="controllers, trace_*: abstain at or below this once the budget "
                          "is spent."),
        click.option("--tau-hi", type=number(Bounds(ge=0, le=1)), default=0.7,
                     show_default=True,
                     help="controllers, trace_*: commit at or above this confidence."),
        click.option("--max-retrievals", type=bounded(0, 100), default=3, show_default=True,
                     help="controllers, trace_*: retrieval budget (the seed's π, Eq. 1)."),
        click.option("--fit-depths", type=click.Choice(["0", "all"]), default="0",
                     show_default=True,
                     help="controllers, trace_*: fit the isotonic map on depth-zero records "
                          "(the seed) or on every depth."),
        click.option("--split-seed", type=bounded(), default=0, show_default=True,
                     help="controllers, trace_*: seed of the calibration/test split of "
                          "questions."),
        click.option("--judge", is_flag=True,
                     help="trace_*: read the LLM judge's labels instead of the dataset "
                          "scorer's."),
    )
    for option in reversed(options):
        command = option(command)
    return command


def results_spec(resamples: int, seed: int, tau_lo: float, tau_hi: float,
                 max_retrievals: int, fit_depths: str, split_seed: int, judge: bool,
                 repaired: bool = False, against: str | None = None,
                 delta_regimes: str = DELTA_FAILURE) -> ResultsSpec:
    """How `lab results` (and `lab figures`, `lab report`) compute the tables from their
    options: the hazard model takes at most 1,000 of the resamples; Δ pools the main
    family's five failure regimes unless `delta_regimes` is "mean6"."""
    from analysis.replay.gate import Gate
    from analysis.tables.results import ResultsSpec

    return ResultsSpec(resamples, hazard_resamples(resamples), seed,
                       Gate(tau_lo, tau_hi, max_retrievals), fit_depths, split_seed, judge,
                       repaired, against=against, delta_regimes=delta_regimes)


def _frames(db: Database, selection: Selection, path: Path,
            early: EarlyReads | None = None) -> Frames:
    """Load the selection, or explain in one line why it is empty or names unknown values
    (`early`: packs being read since the command started, for `load_frames`)."""
    from analysis.measures.frames import load_frames

    if not store.count(db, "episodes"):
        raise StoreError(f"no finished episodes in {path}; run `lab demo`, or `lab enqueue` "
                         "then `lab worker`")
    check_selection(db, selection)
    frames = load_frames(db, selection, early=early)
    if frames.n_episodes:  # from the fingerprint: a cached table reads no frame
        return frames
    raise ConfigError("no finished episodes match this selection (they exist, but not in this "
                      "combination of --run/--set/--seeds/--models/--conditions/--regimes)")


def _study_frames(db: Database, selection: Selection, path: Path) -> None:
    """What `lab figures` and `lab report` need: finished episodes matching the
    selection (as `_frames`), or, in a lab.db without episodes, stored trace states (the
    second seed's study alone draws and reports); else one line saying what is missing."""
    if store.count(db, "episodes") or not (db["traces"].exists()
                                           and store.count(db, "traces")):
        if not store.count(db, "episodes"):
            raise StoreError(f"no finished episodes or trace states in {path}; run `lab demo`, "
                             "`lab enqueue` then `lab worker`, or `lab traces collect`")
        try:
            _frames(db, selection, path)
        except ConfigError:
            from analysis.tables.export import has_traces

            # a trace run or set (`--run seed2`) beside episodes: its trace states draw
            if not (selection.runs or selection.sets) or not has_traces(db, selection):
                raise


def _rows_out(dicts: list[dict[str, object]], fmt: str) -> str:
    from analysis.tables.csv_files import results_csv

    return dumps_rows(dicts) if fmt == "json" else results_csv(dicts)


@click.command("results")
@click.argument("table", required=False, default="all",
                type=TableChoice(extra=("all",)))
@selection_options
@click.option("--repaired", is_flag=True, help="Use repaired answers (`lab repair`) where stored.")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True)
@click.option("--resamples", type=bounded(0, MAX_RESAMPLES), default=2000, show_default=True,
              help="Question-level bootstrap resamples (the hazard model uses at most 1,000).")
@click.option("--seed", type=bounded(), default=0, show_default=True, help="Bootstrap seed.")
@trace_options
@click.option("--against", default=None, metavar="NAME[/SPLIT]|run:OTHER",
              help="replication: the reference: an imported reference set (each run against "
                   "its split of the run's name, or /SPLIT) or run:OTHER (default: the first "
                   "reference set imported).")
@click.option("--delta-regimes", type=click.Choice(DELTA_REGIMES), default=DELTA_FAILURE,
              show_default=True,
              help="delta: what the main family's Δ pools: its five failure regimes (as the "
                   "main paper) or all six mean6 regimes, clean included.")
@click.pass_context
def results(ctx: click.Context, table: str, runs: tuple[str, ...], sets: tuple[str, ...],
            seeds: str | None, models: str | None, conditions: str | None,
            regimes: str | None, pool: str | None, repaired: bool, fmt: str, resamples: int,
            seed: int, tau_lo: float, tau_hi: float, max_retrievals: int, fit_depths: str,
            split_seed: int, judge: bool, against: str | None, delta_regimes: str) -> None:
    """Print results tables: success, delta, index, hazard, cost, judgments or all.

    One row per model × arm (its full spec: enforced_rule:k=7 and enforced_rule are
    different rows) × budget × dataset × question set × run × seed × replicate; --pool
    merges runs, seeds, replicates or sets and the row lists what it covers. Rows
    carry arm, condition_hash, measure, estimate, ci_low, ci_high, n and errored;
    table format prints paper-style intervals (+0.33 [+0.25, +0.41]) and charts.

    \b
    Example:
      lab results
      lab results delta --run main --models qwen3-8b,llama-3.1-8b
      lab results success --conditions none,enforced_rule:k=7 --pool seeds
      lab results success --format json > success.json
      lab results trace_table1 --set hotpot-test --tau-hi 0.8 --max-retrievals 2
      lab results replication --run test300 --against paper
      lab results replication --run rep1 --against run:test300

    controllers and the trace_* tables (the second seed's Tables 1–3, sweeps and
    calibration record on `lab traces collect` traces) gate with the seed's π: commit
    at confidence ≥ --tau-hi, else retrieve while budget remains, then abstain at ≤
    --tau-lo or escalate; every row names the thresholds it used.

    replication sets each line's Δ (own judgments, five failure regimes) and mean6
    beside the reference's, with the difference and whether the Δ intervals overlap
    (docs/results.md).
    """
    db = open_db(ctx, create=False)
    selection = selection_from(runs, sets, seeds, models, conditions, regimes, pool)
    early = _early_reads(db, selection, table, resamples, seed, delta_regimes)  # before
    # pandas and the tables' code load
    if early is not None:
        ctx.call_on_close(early.close)

    from analysis.tables.registry import REPLICATION, TRACES
    from analysis.tables.results import family_of, results_for
    from analysis.tables.text import render_results

    freeze_loaded(ctx)  # pandas and the tables' code: out of the exit's collections
    spec = results_spec(resamples, seed, tau_lo, tau_hi, max_retrievals, fit_depths,
                        split_seed, judge, repaired, against, delta_regimes)
    if against is not None and family_of(table) != REPLICATION:
        raise ConfigError("--against applies to `lab results replication` only")
    if family_of(table) == TRACES:
        (trace,) = results_for(db, selection, table, spec).tables
        _print_trace(trace, fmt)
        return
    frames = _frames(db, selection, ctx.obj["db"], early)
    res = results_for(db, selection, table, spec, frames)
    if family_of(table) == REPLICATION:
        from analysis.tables.replication import unmatched

        why = unmatched(res.tables[0])
        if why is not None:
            raise ConfigError(why)
    note = ""
    if res.repaired is not None:
        note = (f"note: repaired answers (lab repair) replace the raw ones of "
                f"{plural(res.repaired, 'episode')}; raw results are primary" if res.repaired
                else NO_REPAIRED)
        echo(note, err=True)
    provenance = prereg_rows.run_provenance(db, frames.runs)
    if fmt == "table":
        text = render_results(res, charts=True, colorless=not sys.stdout.isatty())
        echo((note + "\n\n" if note else "") + "\n".join(
            provenance_lines(provenance)) + "\n" + text)
        return
    echo(_rows_out([d | row_provenance(d, provenance) for t in res.tables
                          for d in t.dicts()], fmt))


def _early_reads(db: Database, selection: Selection, table: str, resamples: int, seed: int,
                 delta_regimes: str) -> EarlyReads | None:
    """Start reading what episode table `table` (or "all") reads first, the episodes' key
    packs and, for a table of decisions, the decision packs, in a thread, so SQLite reads
    them on another core while pandas and the tables' code are imported
    (`core.store.early_reads`); nothing is read when every table asked is in the results
    cache for the data the thread finds (`kept`: the key `compute` looks up, with the
    spec `results_spec` makes of the options). None for a filtered selection (it reads
    its own, narrower rows) or a table of another family."""
    from analysis.base.cache import REFERENCE, ResultsCache
    from analysis.base.source import FrameSource
    from analysis.tables.registry import EPISODES, table_def, table_names
    from core.conditions import LAMBDA
    from core.store.connection import db_file
    from core.store.early_reads import EarlyReads

    names = table_names(EPISODES) if table == "all" else (table,)
    if selection.filtered or any(table_def(n).family != EPISODES for n in names):
        return None
    path = db_file(db)
    if not path:
        return None
    cache = ResultsCache(path)

    def kept(fp: Fingerprint) -> bool:
        source = FrameSource(path, selection, fp)
        return all(cache.has(cache.table_key(source, n, table_def(n).options, resamples,
                                             hazard_resamples(resamples), seed, LAMBDA,
                                             REFERENCE, delta_regimes)) for n in names)

    reads = [table_def(n).reads for n in names]
    return EarlyReads(path, any(r.decisions and not r.two_source_only for r in reads), kept)


def _print_trace(table: Table, fmt: str) -> None:
    """Print a second-paper table on trace states (with the sweeps' charts)."""
    from analysis.tables.text import render_table
    from analysis.tables.trace_charts import sweep_charts

    if fmt != "table":
        echo(_rows_out(table.dicts(), fmt))
        return
    parts = [render_table(table)]
    if table.name == "trace_sweeps":
        parts += sweep_charts(table, colorless=not sys.stdout.isatty())
    echo("\n\n".join(parts))


@click.command("validate-measures")
@click.option("--set", "set_name", default=None,
              help="Question set to run (default: the bundled demo questions).")
@click.option("--seeds", type=bounded(1, MAX_SEEDS), default=3, show_default=True,
              help="Simulations per question (seeds 0 … N−1).")
@click.option("--paper-scale", is_flag=True,
              help="Table 7's scale: 300 questions × 10 seeds, the eleven Table 7 sims only, "
                   "each measure compared with the paper's Table 7 (±0.05); about 8 "
                   "minutes on two cores the first time (165,000 episodes, 0.5 GB).")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True)
@click.option("--resamples", type=bounded(0, MAX_RESAMPLES), default=2000, show_default=True)
@click.pass_context
def validate_measures_cmd(ctx: click.Context, set_name: str | None, seeds: int,
                          paper_scale: bool, fmt: str, resamples: int) -> None:
    """Check that the stopping measures separate simulated policies (docs/results.md).

    Runs every built-in sim policy under condition none, budget 8, in the five
    failure regimes (run "validate-measures"; stored episodes are reused), then
    prints I, the design-label contrast and the own-judgment Δ per policy, each
    checked against the paper's Table 7 (≈ 0, > 0 or undefined). Exits 1 when a
    policy does not separate as expected.

    --paper-scale runs the Table 7 sims on 300 questions × 10 seeds (with --set, its
    first 300 questions; without, the 60 demo questions copied five times under new
    ids) and also compares each measure, averaged over the seeds, with Table 7's
    number; it exits 1 when one lies outside ±0.05.

    \b
    Example:
      lab validate-measures
      lab validate-measures --set dev100 --seeds 5
      lab validate-measures --paper-scale
    """
    from dataclasses import replace

    from analysis.tables.text import render_table
    from analysis.validate import (
        PAPER_QUESTIONS,
        PAPER_SEEDS,
        PAPER_TABLE7,
        ValidationFailed,
        n_cells,
        paper_comparisons,
        paper_decisions,
        paper_scale_questions,
        paper_table,
        validation_table,
    )
    from core.demo_data import demo_questions
    from core.regimes import ForeignPool
    from jobs.validate import validate_measures

    if paper_scale and ctx.get_parameter_source("seeds") == click.core.ParameterSource.COMMANDLINE \
            and seeds != PAPER_SEEDS:
        raise ConfigError(f"--paper-scale runs {PAPER_SEEDS} seeds (Table 7: the mean of "
                          f"{PAPER_SEEDS} simulations); drop --seeds {seeds}")
    db = open_db(ctx)
    if set_name:
        qset = store.question_set(db, set_name)
        questions = store.load_questions(db, ids=qset["ids"])
        if paper_scale:
            if len(questions) < PAPER_QUESTIONS:
                raise ConfigError(f"--paper-scale needs {PAPER_QUESTIONS} questions; set "
                                  f"'{set_name}' has {len(questions)} (drop --set to use "
                                  "copies of the demo questions)")
            questions = questions[:PAPER_QUESTIONS]
        pool = ForeignPool(store.load_questions(db, dataset=qset["dataset"]))
    else:
        questions = demo_questions()
        if paper_scale:
            questions = paper_scale_questions(questions, PAPER_QUESTIONS)
        store.insert_questions(db, questions)
        pool = ForeignPool(questions)
    seed_list = tuple(range(PAPER_SEEDS if paper_scale else seeds))
    models = [m for m, _ in PAPER_TABLE7] if paper_scale else None
    with click.progressbar(length=n_cells(seed_list, models), label="running sim policies",
                           file=sys.stderr) as bar:
        v = validate_measures(db, questions, seed_list, models=models, pool=pool,
                              question_set=set_name, n_boot=resamples, progress=bar.update)
    tables = [validation_table(v)]
    if paper_scale:
        v = replace(v, paper=paper_comparisons(
            paper_decisions(db, questions, seed_list, models or ()), models or (), seed_list))
        tables.append(paper_table(v))
    if fmt == "table":
        echo("\n\n".join(render_table(t) for t in tables))
    else:
        echo(_rows_out([d for t in tables for d in t.dicts()], fmt))
    if not v.passed:
        failed = v.failures()
        raise ValidationFailed(f"{len(failed)} check(s) on simulated policies failed: "
                               f"{', '.join(failed)}")


@click.command("export")
@click.argument("directory", type=click.Path(path_type=Path))
@selection_options
@click.option("--resamples", type=bounded(0, MAX_RESAMPLES), default=2000, show_default=True)
@click.pass_context
def export_cmd(ctx: click.Context, directory: Path, runs: tuple[str, ...],
               sets: tuple[str, ...], seeds: str | None, models: str | None,
               conditions: str | None, regimes: str | None, pool: str | None,
               resamples: int) -> None:
    """Write tidy CSVs: episodes.csv, steps.csv and one CSV per results table.

    UTF-8 with a header row; every row carries run(s), amendment (or exploratory), arm
    label, condition_hash and the project version; columns are documented in
    docs/export.md. Filters and --pool as for `lab results`. Where trace states
    of `lab traces collect` are stored (--run, --set and --models filter them), also
    traces.csv and the second seed's tables, with or without episodes.

    \b
    Example:
      lab export results/
      lab export results/main --run main --models qwen3-8b --pool seeds
    """
    from analysis.tables.export import export, has_traces

    db = open_db(ctx, create=False)
    freeze_loaded(ctx)  # pandas and the tables' code: out of the exit's collections
    selection = selection_from(runs, sets, seeds, models, conditions, regimes, pool)
    traces = has_traces(db, selection)
    episodes = True
    try:
        _frames(db, selection, ctx.obj["db"])
    except LabError as exc:
        if not traces:
            if has_traces(db) and not store.count(db, "episodes"):
                raise ConfigError("no trace states match this selection (--run, --set and "
                                  "--models filter them) and lab.db holds no episodes") from None
            raise
        episodes = False  # trace states only: no episode files or tables
        if store.count(db, "episodes"):
            echo(f"note: {exc}; writing the trace states' files only", err=True)
    paths = export(db, directory, selection, resamples, hazard_resamples(resamples),
                   episodes=episodes)
    echo(f"wrote {plural(len(paths), 'file')} to {directory}: " + ", ".join(p.name for p in paths))


COMMANDS = (results, validate_measures_cmd, export_cmd)
"""The commands to register on the `lab` group."""
