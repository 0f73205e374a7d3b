"""The rows every figure and the report draw: exactly what `lab results … --format json`
prints for the same selection, resamples and seed (each table's `Table.dicts()` plus the
version and provenance fields of `row_provenance`), with the study's provenance.

`lab results` computes the tables with ``compute(frames, names, resamples,
hazard_resamples(resamples), seed)`` and the probe tables with `results_for`; `study_rows`
does the same, so a figure's sidecar rows equal the table's JSON rows (tests/test_figures.py).
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlite_utils import Database

from analysis.base.rows import Table
from analysis.tables.provenance import row_provenance
from core.canonical import canonical_hash
from core.store import prereg as prereg_rows
from core.store.scripts import LabDatabase
from core.store.selection import Selection

if TYPE_CHECKING:
    from analysis.tables.results import ResultsSpec

RowDict = dict[str, Any]
"""One results row as `lab results --format json` prints it."""


@dataclass(frozen=True)
class StudyRows:
    """Every results table of a selection, as tables and as JSON rows.

    Attributes:
        tables: the computed tables (their titles and notes), in `lab results` order.
        rows: table name -> its JSON rows (`Table.dicts()` plus version and provenance).
        provenance: per run, its amendment and deviations (`run_provenance`).
        runs: runs in the selection.
        errored: errored episodes left out (no complete retry).
        pooled: what rows pool ("" when nothing).
        n_episodes: finished episodes in the selection.
        selection: the filters.
        resamples: question-level bootstrap resamples.
        seed: bootstrap seed.
        amendments: the governing amendments' frozen records (id, frozen_at, hashes).
        spec: how the tables were computed (the controllers' and trace tables' gate, fit
            depths, split seed and labels besides `resamples` and `seed`); None: the
            defaults.
    """

    tables: tuple[Table, ...]
    rows: dict[str, list[RowDict]]
    provenance: list[dict[str, Any]]
    runs: tuple[str, ...]
    errored: int
    pooled: str
    n_episodes: int
    selection: Selection
    resamples: int
    seed: int
    amendments: list[dict[str, Any]] = field(default_factory=list)
    spec: ResultsSpec | None = None

    def table_rows(self, name: str) -> list[RowDict]:
        """The JSON rows of table `name` ([] when it was not computed or is empty)."""
        return self.rows.get(name, [])


def study_rows(db: Database, selection: Selection, resamples: int, seed: int = 0,
               probe_tables: bool = True, names: Sequence[str] | None = None,
               spec: ResultsSpec | None = None) -> StudyRows:
    """Compute every results table of `selection` as `lab results` does.

    Args:
        db: an open lab.db.
        selection: filters and pooling.
        resamples: question-level bootstrap resamples (the hazard model uses at most
            1,000, as in `lab results`).
        seed: bootstrap seed.
        probe_tables: also compute the tables on stored probes (policies, controllers
            on answer-now branches, beliefs on belief probes), each where lab.db holds
            the probes it reads, and the second seed's tables on trace states (trace_*) when
            lab.db holds any.
        names: only these tables (any of `analysis.tables.registry`; naming one trace
            table computes them all); default every one.
        spec: the controllers' and trace tables' gate, fit depths, split seed and
            labels, as `lab results` takes them (its resamples and seed are
            `resamples` and `seed`); default the tables' defaults.

    Returns:
        The StudyRows.
    """
    from analysis.base.cache import hazard_resamples
    from analysis.base.parallel import each
    from analysis.measures.frames import db_file, load_frames
    from analysis.tables.compute import compute
    from analysis.tables.registry import EPISODES, PROBES, TRACES, table_def, table_names
    from analysis.tables.results import ResultsSpec, results_for
    from core.store.probes import probe_counts

    spec = replace(spec or ResultsSpec(), n_boot=resamples,
                   hazard_boot=hazard_resamples(resamples), seed=seed)
    episode_tables, probes = table_names(EPISODES), table_names(PROBES)
    wanted = set(names) if names is not None else {*episode_tables, *probes, "trace_sweeps"}
    frames = load_frames(db, selection)
    counts = probe_counts(db)
    on_branches = [n for n in probes if probe_tables and n in wanted and (
        not table_def(n).probe_kinds or any(counts.get(k) for k in table_def(n).probe_kinds))]
    parent, path = os.getpid(), db_file(db)

    def piece(i: int) -> tuple[tuple[Table, ...], tuple[str, ...], int, str]:
        """The episode tables (0) or the tables on stored probes (1); a forked
        process reads lab.db through a connection of its own."""
        if i == 0:
            res = compute(frames, [n for n in episode_tables if n in wanted], resamples,
                          hazard_resamples(resamples), seed)
            return res.tables, res.runs, res.errored, res.pooled
        own = os.getpid() != parent
        reader = LabDatabase(sqlite3.connect(path)) if own else db
        try:
            return tuple(t for name in on_branches
                         for t in results_for(reader, selection, name, spec, frames).tables
                         ), (), 0, ""
        finally:
            if own:
                reader.conn.close()

    # the two groups are independent: side by side on two cores (analysis.base.parallel)
    parts = each(2, piece) if on_branches and path else [piece(0), piece(1)]
    (episode_part, runs, errored, pooled), (branch_part, *_) = parts
    tables = [*episode_part, *branch_part]
    provenance = prereg_rows.run_provenance(db, runs)
    rows: dict[str, list[RowDict]] = {}
    for table in tables:
        rows[table.name] = [d | row_provenance(d, provenance) for d in table.dicts()]
    if probe_tables and wanted & set(table_names(TRACES)):
        for table in _trace_tables(db, selection, spec):
            tables.append(table)
            rows[table.name] = table.dicts()  # as `lab results trace_…` prints them
    ids = sorted({str(p["amendment"]) for p in provenance if p["amendment"]})
    amendments = []
    for a in ids:
        record = prereg_rows.amendment(db, a)
        amendments.append({k: record.get(k) for k in ("id", "title", "state", "frozen_at",
                                                       "content_sha256", "prev_sha256")})
    return StudyRows(tuple(tables), rows, provenance, runs, errored, pooled,
                     frames.n_episodes, selection, resamples, seed, amendments, spec)


def _trace_tables(db: Database, selection: Selection, spec: ResultsSpec
                  ) -> tuple[Table, ...]:
    """The second seed's tables (`lab results trace_*` with the spec's π, split, fit and
    labels) on the trace states of the selection's runs, sets and models; () when there
    are none."""
    from core import store
    from core.errors import ConfigError

    if not db["traces"].exists() or not store.count(db, "traces"):
        return ()
    from analysis.tables.registry import TRACES, table_names
    from analysis.tables.results import trace_results

    try:
        return trace_results(db, table_names(TRACES), selection, spec.trace_settings(),
                             spec.n_boot, spec.seed)
    except ConfigError:  # no trace state matches this selection: no trace tables
        return ()


def git_commit(start: Path | None = None) -> str:
    """The checkout's commit (with "+dirty" when files changed), or "unknown" outside a
    git checkout or without git."""
    where = start or Path(__file__).resolve().parent
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=where, capture_output=True,
                              text=True, timeout=10, check=False)
        if head.returncode != 0:
            return "unknown"
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               cwd=where, capture_output=True, text=True, timeout=30,
                               check=False)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return head.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


def rows_sha256(rows: list[RowDict]) -> str:
    """sha256 of rows as canonical JSON (sorted keys, no spaces)."""
    return canonical_hash(rows, ensure_ascii=False)


def provenance_record(study: StudyRows, rows: list[RowDict]) -> dict[str, Any]:
    """What a figure's sidecar says about where its rows came from.

    Args:
        study: the study the rows belong to.
        rows: the rows drawn.

    Returns:
        Runs with their amendments and deviations, the amendments' freeze times and
        hashes, the rows' condition hashes, the selection, resamples and seed, the lab
        version and git commit, and the sha256 of the rows.
    """
    from dataclasses import asdict

    from core.version import project_version

    runs = sorted({r for row in rows for r in str(row.get("runs") or "").split(",") if r})
    return {
        "lab_version": project_version(),
        "git_commit": git_commit(),
        "runs": [p for p in study.provenance if p["run"] in runs],
        "amendments": study.amendments,
        "condition_hashes": sorted({str(r["condition_hash"]) for r in rows
                                    if r.get("condition_hash")}),
        "selection": {k: list(v) if isinstance(v, tuple) else v
                      for k, v in asdict(study.selection).items()},
        "resamples": study.resamples,
        "seed": study.seed,
        "rows_sha256": rows_sha256(rows),
    }
