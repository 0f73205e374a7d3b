"""Tidy CSV export (docs/export.md): episodes, steps and one CSV per results table (the
replication table where a reference set is imported); where trace states are stored
(`lab traces collect`, docs/traces.md), traces.csv and one CSV per
second-seed table, with or without episodes.

episodes.csv and steps.csv are streamed batch by batch from one SQLite cursor
(`core.store.export_rows`): episodes.csv through the stdlib csv writer, steps.csv as
lines SQLite formats in that writer's dialect; so an export's memory does not grow with
the database; the results tables come from `compute` (and its cache).

UTF-8 with a header row; booleans as 0/1; missing values as empty cells. Each file is
written to a temporary name and renamed, so a failed export leaves no half-written
CSV. Column names are stable and documented in docs/export.md. Every row carries its
provenance: run(s), amendment (or "exploratory"), arm label, condition hash and the
project version that wrote the file.

The two files alone recompute the cost table's TPC and the refused turns: an
episode's charged tokens are its input/output_tokens when measurement_calls
is 0, else the sum of its steps' input/output_tokens (the acting turns only,
``analysis.measures.cost.charged_tokens``); TPC = Σ(output + 0.25·input + 500·tool_calls) /
Σ correct over a row's error-free episodes, inf when none is correct. refused_calls
is the episode's count of steps with refused = 1.

traces.csv holds every stored trace state of the selection's runs, sets and models
(errored and copied states included), streamed like episodes.csv, with every column of
the traces table and the project version.
"""

from __future__ import annotations

import os
import sqlite3
import tempfile
from pathlib import Path

from sqlite_utils import Database

from analysis.base.arms import EXPLORATORY
from analysis.measures.cost import own_call_column, parse_condition_of
from analysis.measures.frames import db_file, load_frames
from analysis.stats.bootstrap import N_BOOT
from analysis.tables.compute import compute
from analysis.tables.csv_files import (
    join_parts,
    table_frame,
    write_frame,
    write_lines_atomic,
    write_rows_atomic,
)
from analysis.tables.registry import PROBES, REPLICATION, TRACES, table_def, table_names
from core.errors import ConfigError
from core.store.export_rows import episode_rows, episode_spans, step_lines
from core.store.scripts import LabDatabase
from core.store.selection import Selection
from core.store.traces import EXPORT_COLUMNS as TRACE_STATE_COLUMNS
from core.store.traces import count_traces, export_rows
from core.version import project_version

EPISODE_COLUMNS = ("episode_id", "run", "amendment", "model", "arm", "condition",
                   "condition_hash", "regime", "budget", "dataset", "question_set", "seed",
                   "replicate", "question_id", "answered", "answer_action", "correct", "f1",
                   "tool_calls", "extra_calls", "own_calls", "measurement_calls",
                   "refused_calls", "input_tokens", "output_tokens", "cost_usd", "end_reason",
                   "error", "version")
"""episodes.csv: one row per finished episode; ``end_reason`` tells a format failure,
a truncated generation and a refusal apart (`core.end_reasons`)."""
STEP_COLUMNS = ("episode_id", "run", "model", "arm", "condition", "regime", "question_id", "t",
                "action", "obs_index", "obs_failed", "obs_source", "judgment",
                "judgment_source", "stated_judgment", "streak", "forced", "refused",
                "discarded", "input_tokens", "output_tokens", "reasoning", "reasoning_tokens")
"""steps.csv: one row per stored turn, a turn the stated-judgment rule discarded
(``discarded`` = 1) included; input/output_tokens are that turn's acting call."""
STEP_PARTS = 2
"""Pieces `lab export` writes steps.csv in, side by side (on more than one core)."""
TRACES_COLUMNS = (*TRACE_STATE_COLUMNS, "version")
"""traces.csv: one row per stored trace state (every column of the traces table), then
the project version."""


def own_calls_column(spec: str | None, condition: str) -> str | None:
    """The stored column holding the calls a cell's condition itself needs
    (``analysis.measures.cost.own_call_column``), for `core.store.export_rows.episode_rows`."""
    return own_call_column(parse_condition_of(spec, condition))


def write_rows_csvs(db: Database, directory: Path, selection: Selection | None = None,
                    version: str | None = None) -> tuple[Path, Path]:
    """Stream episodes.csv and steps.csv into `directory` (constant memory).

    Args:
        db: an open lab.db.
        directory: an existing folder.
        selection: the filters (default: everything).
        version: project version recorded on every episode row (default: the installed
            one).

    Returns:
        The two paths, episodes.csv first.
    """
    selection = selection or Selection()
    version = version or project_version()
    return (write_rows_atomic(episode_rows(db, selection, version, EXPLORATORY, own_calls_column),
                        EPISODE_COLUMNS, directory / "episodes.csv"),
            write_lines_atomic(step_lines(db, selection), STEP_COLUMNS,
                               directory / "steps.csv"))


def export_folder(directory: Path) -> Path:
    """`directory`, created with its missing parents, once it is known to be writable:
    checked before any table is computed or file written.

    Raises:
        ConfigError: it, or a folder above it, is a file; it cannot be created; or no
            file can be written in it (one line naming the folder and the reason).
    """
    hint = "give a folder you can write to, e.g. lab export results/"
    for path in (directory, *directory.parents):
        if path.exists() and not path.is_dir():
            where = "exists" if path == directory else f"is inside {path}, which exists"
            raise ConfigError(f"{directory}: {where} and is not a directory; {hint}")
    try:
        directory.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=directory):
            pass
    except OSError as exc:
        verb = "cannot write into" if directory.is_dir() else "cannot create"
        raise ConfigError(f"{directory}: {verb} the folder ({exc.strerror or exc}); "
                          f"{hint}") from None
    return directory


def has_traces(db: Database, selection: Selection | None = None) -> bool:
    """Whether lab.db stores trace states of the selection's runs, sets and models."""
    selection = selection or Selection()
    return bool(count_traces(db, selection.runs, selection.sets, selection.models))


def write_traces_csv(db: Database, directory: Path, selection: Selection | None = None,
                     version: str | None = None) -> Path:
    """Stream traces.csv into `directory` (constant memory).

    Args:
        db: an open lab.db.
        directory: an existing folder.
        selection: the filters (its runs, sets and models; default: everything).
        version: project version recorded on every row (default: the installed one).

    Returns:
        The path written.
    """
    selection = selection or Selection()
    version = version or project_version()
    rows = (row + (version,) for row in export_rows(db, selection.runs, selection.sets,
                                                    selection.models))
    return write_rows_atomic(rows, TRACES_COLUMNS, directory / "traces.csv")


def export_traces(db: Database, directory: Path, selection: Selection | None = None,
                  version: str | None = None, n_boot: int = N_BOOT, seed: int = 0
                  ) -> list[Path]:
    """traces.csv and one CSV per second-seed table (the default π, split and fit) of
    the selection's stored trace states; nothing when there are none.

    Returns:
        The paths written.
    """
    from analysis.tables.results import trace_results

    selection = selection or Selection()
    version = version or project_version()
    if not has_traces(db, selection):
        return []
    written = [write_traces_csv(db, directory, selection, version)]
    for table in trace_results(db, table_names(TRACES), selection, None, n_boot, seed):
        written.append(write_frame(table_frame(table, version), directory / f"{table.name}.csv"))
    return written


def export_probes(db: Database, directory: Path, selection: Selection, version: str,
                  n_boot: int, seed: int = 0) -> list[Path]:
    """probes.csv (every complete probe of the selection), and each probe table's CSV
    where lab.db holds the probes it reads: policies.csv and controllers.csv with
    answer-now branches, beliefs.csv with belief probes (`lab export`; the trace tables
    are `export_traces`).

    Returns:
        The paths written.
    """
    from analysis.tables.results import ResultsSpec, results_for
    from core.store.probes import EXPORT_COLUMNS, probes_frame

    probes = probes_frame(db, selection)
    written = [write_frame(probes.loc[:, list(EXPORT_COLUMNS)], directory / "probes.csv")]
    held = set(probes["kind"].unique())
    names = [n for n in table_names(PROBES)
             if not table_def(n).probe_kinds or held & set(table_def(n).probe_kinds)]
    if names:
        frames = load_frames(db, selection)
        for name in names:
            (table,) = results_for(db, selection, name, ResultsSpec(n_boot, seed=seed),
                                   frames).tables
            written.append(write_frame(table_frame(table, version), directory / f"{name}.csv"))
    return written


def export_replication(db: Database, directory: Path, selection: Selection, version: str,
                       n_boot: int, hazard_boot: int, seed: int = 0) -> list[Path]:
    """replication.csv (`lab export`): the selection's lines beside the first imported
    reference set; nothing when no reference set is imported.

    Returns:
        The paths written.
    """
    from analysis.tables.results import ResultsSpec, results_for
    from core.store.references import reference_sets

    if not reference_sets(db):
        return []
    written = []
    for name in table_names(REPLICATION):
        for table in results_for(db, selection, name, ResultsSpec(n_boot, hazard_boot,
                                                                  seed)).tables:
            written.append(write_frame(table_frame(table, version),
                                       directory / f"{table.name}.csv"))
    return written


def _episode_files(db: Database, directory: Path, selection: Selection, version: str,
                   n_boot: int, hazard_boot: int, seed: int) -> list[Path]:
    """episodes.csv, steps.csv and one CSV per results table, in that order.

    The pieces are independent and each takes seconds at paper scale, so they are
    written side by side on every core (`analysis.base.parallel`): a forked process
    reads lab.db through a connection of its own (a connection must not cross a fork),
    the tables' frames through theirs. steps.csv, the longest (at 198,000 episodes
    about as much CPU as the tables and episodes.csv together), is written in
    `STEP_PARTS` pieces by episode id and put together after; every piece runs at once,
    so the cores share the work whatever each piece costs on this study.
    """
    from analysis.base.parallel import cores, each

    frames = load_frames(db, selection)  # the fingerprint and errored episodes, read here
    parent, path = os.getpid(), db_file(db)
    forked = bool(path) and cores() > 1
    spans = episode_spans(db, STEP_PARTS if forked else 1)
    steps = directory / "steps.csv"
    parts = ([steps] if len(spans) == 1
             else [directory / f".steps.csv.{k}.part" for k in range(len(spans))])

    def piece(i: int) -> list[Path]:
        if i == 0:
            return [write_frame(table_frame(table, version), directory / f"{table.name}.csv")
                    for table in compute(frames, None, n_boot, hazard_boot, seed).tables]
        own = path and os.getpid() != parent
        reader = LabDatabase(sqlite3.connect(path)) if own else db
        try:
            if i == 1:
                return [write_rows_atomic(episode_rows(reader, selection, version, EXPLORATORY,
                                                       own_calls_column),
                                          EPISODE_COLUMNS, directory / "episodes.csv")]
            k = i - 2
            return [write_lines_atomic(step_lines(reader, selection, spans[k]),
                                       STEP_COLUMNS if k == 0 else None, parts[k])]
        finally:
            if own:
                reader.conn.close()

    n = 2 + len(spans)
    try:
        tables, episodes, *_ = (each(n, piece, processes=n) if forked
                                else [piece(i) for i in range(n)])
    except BaseException:
        for part in parts if len(parts) > 1 else ():  # (one part is steps.csv itself)
            part.unlink(missing_ok=True)
        raise
    if len(parts) > 1:
        join_parts(parts, steps)
    return [*episodes, steps, *tables]


def export(db: Database, directory: Path, selection: Selection | None = None,
           n_boot: int = N_BOOT, hazard_boot: int = 1000, seed: int = 0,
           episodes: bool = True) -> tuple[Path, ...]:
    """Write episodes.csv, steps.csv and one CSV per results table into `directory`,
    then (where trace states are stored) traces.csv and the second seed's tables.

    Args:
        db: an open lab.db.
        directory: target folder (created if missing).
        selection: filters and pooling, as for `lab results` (default: everything,
            nothing pooled).
        n_boot: resamples for the results tables.
        hazard_boot: resamples for the hazard model.
        seed: bootstrap seed.
        episodes: write the episode files and tables (False: a lab.db, or a selection,
            that holds trace states only).

    Returns:
        The paths written, in order.

    Raises:
        ConfigError: `directory` cannot be a folder written to (`export_folder`).
    """
    directory = export_folder(Path(directory))
    selection = selection or Selection()
    version = project_version()
    written: list[Path] = []
    if episodes:
        written += _episode_files(db, directory, selection, version, n_boot, hazard_boot,
                                  seed)
        written += export_replication(db, directory, selection, version, n_boot, hazard_boot,
                                      seed)
        written += export_probes(db, directory, selection, version, n_boot, seed)
    written += export_traces(db, directory, selection, version, n_boot, seed)
    return tuple(written)
