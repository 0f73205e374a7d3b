"""The one place results become CSV: `lab results --format csv`, the Results screen's
export and `lab export` all write through these functions.

Every file is written under a temporary name and renamed, so a failed write leaves no
half-written CSV.
"""

from __future__ import annotations

import csv
import io
import os
import shutil
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from analysis.base.rows import ENDED_FIELDS, ROW_FIELDS, Table
from analysis.tables.provenance import EXTRA_FIELDS
from core.atomic_write import atomic_path, move_aside
from core.store.export_rows import csv_line
from core.version import project_version

TABLE_COLUMNS = (*ROW_FIELDS, *ENDED_FIELDS, "version")
"""Columns of every results-table CSV: the Row fields, the episodes that ended truncated
or refused (0 where none), then the project version."""
RESULTS_COLUMNS = ("table", *ROW_FIELDS, *ENDED_FIELDS, *EXTRA_FIELDS)
"""Columns of `lab results --format csv` and the Results screen's export: the table's
name, the Row fields, the ended-apart counts, the project version and the rows'
provenance."""
_NONE_ENDED = dict.fromkeys(ENDED_FIELDS, 0)
"""The ended-apart counts of a row whose dict leaves them out (`Row.as_dict`: all 0)."""


def results_csv(rows: Iterable[Mapping[str, object]]) -> str:
    """Results rows (`Row.as_dict` plus table, version and provenance) as CSV text, with
    a header and no trailing newline."""
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(RESULTS_COLUMNS), lineterminator="\n")
    writer.writeheader()
    writer.writerows(_NONE_ENDED | dict(r) for r in rows)
    return buf.getvalue().rstrip("\n")


def table_frame(table: Table, version: str | None = None) -> pd.DataFrame:
    """A results table as a frame.

    Args:
        table: a results table.
        version: project version recorded on every row (default: the installed one).

    Returns:
        One row per Row, with exactly the TABLE_COLUMNS columns.
    """
    version = version or project_version()
    rows = [_NONE_ENDED | r.as_dict() | {"version": version} for r in table.rows]
    return pd.DataFrame(rows, columns=list(TABLE_COLUMNS))


def write_rows_atomic(rows: Iterable[Sequence[Any]], columns: Sequence[str] | None,
                      path: Path) -> Path:
    """Write a CSV row by row (constant memory), under a temporary name, then rename.

    The stdlib writer with pandas' `to_csv` dialect (minimal quoting, os.linesep): the
    bytes are those the old DataFrame path wrote (tests/test_export_stream.py).
    `columns` None writes no header (a piece of a file `join_parts` puts together).
    """
    with atomic_path(path) as tmp, tmp.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh, lineterminator=os.linesep)
        if columns is not None:
            writer.writerow(columns)
        writer.writerows(rows)
    return path


def write_lines_atomic(batches: Iterable[Sequence[str]], columns: Sequence[str] | None,
                       path: Path) -> Path:
    """Write CSV lines already formatted in `write_rows_atomic`'s dialect (batches of
    lines without their line ends, `core.store.export_rows.step_lines`) under a
    temporary name, then rename. `columns` None writes no header."""
    with atomic_path(path) as tmp, tmp.open("w", encoding="utf-8", newline="") as fh:
        if columns is not None:
            fh.write(csv_line(columns) + os.linesep)
        for lines in batches:
            if lines:
                fh.write(os.linesep.join(lines))
                fh.write(os.linesep)
    return path


def write_frame(frame: pd.DataFrame, path: Path) -> Path:
    """Write a frame as CSV under a temporary name, then rename (no half-written file)."""
    with atomic_path(path) as tmp:
        frame.to_csv(tmp, index=False, encoding="utf-8")
    return path


def join_parts(parts: Sequence[Path], path: Path) -> Path:
    """Put the files `parts` together, in order, as `path` (under a temporary name, then
    renamed); the parts are gone afterwards, whatever happens.

    The first part becomes the temporary file (renamed, not copied) and the others are
    appended to it.
    """
    try:
        with atomic_path(path) as tmp:
            move_aside(parts[0], tmp)
            with tmp.open("ab") as out:
                for part in parts[1:]:
                    with part.open("rb") as fh:
                        shutil.copyfileobj(fh, out, 1 << 20)
    finally:
        for part in parts:
            part.unlink(missing_ok=True)
    return path
