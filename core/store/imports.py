"""Runs imported from released files: what was imported, and the questions they name.

A run that holds imported episodes (`run_imports` rows) holds nothing else: the
import refuses a run with episodes run here, and `jobs.grid` refuses to queue into an
imported run. `question_refs` keeps the ids of questions an import named that no
dataset held yet, under the dataset the import was told; the question links up when
that dataset is imported (`questions` wins wherever both have a row).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlite_utils import Database

from core.episode import EpisodeResult, utc_now
from core.errors import StoreError
from core.store.base import write
from core.store.episodes import write_episodes
from core.store.runs import ensure_cell, ensure_run

NO_TEXT = "imported: no text"
"""What a screen shows where an imported episode has no text (thought, argument,
observation, answer): it was imported from a file that released only its actions,
judgments and success."""
QUESTION_DATASETS_SQL = ("SELECT id, dataset FROM question_refs WHERE id NOT IN "
                         "(SELECT id FROM questions) UNION ALL SELECT id, dataset FROM questions")
"""(question id, dataset) of every question lab knows, by its row or by an import's
reference (a stored question's own dataset wins)."""


@dataclass(frozen=True)
class ImportedFile:
    """One file imported into a run (a `run_imports` row).

    Attributes:
        file: the source file's name (no folder).
        sha256: of its bytes.
        records: episodes it held.
        license: the data's license line.
        split: the released split its records named ("" when none).
        imported_at: when (ISO UTC).
    """

    file: str
    sha256: str
    records: int
    license: str
    split: str = ""
    imported_at: str = ""


def imports(db: Database, run: str) -> list[ImportedFile]:
    """The files imported into a run, in import order; empty for a run made here."""
    return [ImportedFile(*row) for row in db.conn.execute(
        "SELECT i.file, i.sha256, i.records, i.license, COALESCE(i.split, ''), i.imported_at "
        "FROM run_imports i JOIN runs r ON r.id = i.run_id WHERE r.name = ? ORDER BY i.id",
        (run,))]


def imported_runs(db: Database) -> set[str]:
    """The names of the runs that hold imported episodes."""
    return {r[0] for r in db.conn.execute(
        "SELECT DISTINCT r.name FROM runs r JOIN run_imports i ON i.run_id = r.id")}


def episode_imported(db: Database, episode_id: int) -> bool:
    """Whether a stored episode was imported (it has no text: no thoughts, arguments,
    observations or answer)."""
    return db.conn.execute(
        "SELECT 1 FROM episodes e JOIN cells c ON c.id = e.cell_id JOIN run_imports i "
        "ON i.run_id = c.run_id WHERE e.id = ? LIMIT 1", (episode_id,)).fetchone() is not None


def question_datasets(db: Database) -> dict[str, str]:
    """{question id: dataset} over stored questions and imports' references."""
    return dict(db.conn.execute(QUESTION_DATASETS_SQL).fetchall())


def check_import_run(db: Database, run: str) -> None:
    """Refuse to import into a run that holds episodes run here.

    Raises:
        StoreError: the run has cells and no import.
    """
    row = db.conn.execute(
        "SELECT (SELECT count(*) FROM cells c WHERE c.run_id = r.id), "
        "(SELECT count(*) FROM run_imports i WHERE i.run_id = r.id) FROM runs r "
        "WHERE r.name = ?", (run,)).fetchone()
    if row is not None and row[0] and not row[1]:
        raise StoreError(f"run '{run}' holds episodes run here; imported episodes never mix "
                         f"with them: import into another run with --run NAME")


def store_import(db: Database, run: str,
                 cells: Sequence[tuple[Mapping[str, Any], Sequence[EpisodeResult]]],
                 files: Sequence[ImportedFile], refs: Mapping[str, str]) -> int:
    """Store an import in one transaction: the run, its cells and episodes, the files'
    rows and the question references. All or nothing.

    Args:
        db: an open lab.db.
        run: the run's name (created if new; else it must be an imported run).
        cells: per cell, its `cells` columns (no run_id) and its episodes.
        files: the files imported.
        refs: {question id: dataset} of questions no dataset holds.

    Returns:
        Episodes stored.

    Raises:
        StoreError: the run holds episodes run here, or one of the episodes is stored
            already (nothing is written).
    """
    stored = 0
    with write(db):
        check_import_run(db, run)
        run_id = ensure_run(db, run)
        for columns, results in cells:
            cell_id = ensure_cell(db, run_id, dict(columns))
            ids = write_episodes(db, [(cell_id, r, None) for r in results])
            if None in ids:
                first = results[ids.index(None)]
                raise StoreError(f"run '{run}' holds {columns['model']} {columns['condition']} "
                                 f"{columns['regime']} {first.question_id} already; nothing "
                                 f"was imported")
            stored += len(ids)
        now = utc_now()
        db.conn.executemany(
            "INSERT INTO run_imports (run_id, file, sha256, records, license, split, "
            "imported_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
            [(run_id, f.file, f.sha256, f.records, f.license, f.split or None, now)
             for f in files])
        db.conn.executemany("INSERT OR IGNORE INTO question_refs (id, dataset) VALUES (?, ?)",
                            sorted(refs.items()))
    return stored


def link_set(db: Database, name: str, ids: Sequence[str]) -> int:
    """Link the cells of imported runs whose split is `name` to the set of that name,
    where every question of the cell is in it (the set was made after the import).

    Returns:
        Cells linked.
    """
    members = set(ids)
    linked = 0
    with write(db):
        cells = db.conn.execute(
            "SELECT c.id FROM cells c WHERE c.question_set IS NULL AND c.run_id IN "
            "(SELECT run_id FROM run_imports WHERE split = ?)", (name,)).fetchall()
        for (cell_id,) in cells:
            qids = {r[0] for r in db.conn.execute(
                "SELECT DISTINCT question_id FROM episodes WHERE cell_id = ?", (cell_id,))}
            if qids <= members:
                db.conn.execute("UPDATE cells SET question_set = ? WHERE id = ?",
                                (name, cell_id))
                linked += 1
    return linked
