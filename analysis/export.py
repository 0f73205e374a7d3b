"""Tidy CSV export (SPEC §13.8): episodes, steps and one CSV per results table.

UTF-8 with a header row; booleans as 0/1; missing values as empty cells. Each file is
written to a temporary name and renamed, so a failed export leaves no half-written
CSV. Column names are stable and documented in README.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import pandas as pd
from sqlite_utils import Database

from analysis.measures import TABLES, compute, frames_from
from analysis.rows import ROW_FIELDS, Table
from analysis.stats import N_BOOT
from core.errors import ConfigError

EPISODE_COLUMNS = ("episode_id", "run", "model", "condition", "regime", "budget", "seed",
                   "question_id", "answered", "answer_action", "correct", "f1", "tool_calls",
                   "extra_calls", "input_tokens", "output_tokens", "cost_usd", "error")
STEP_COLUMNS = ("episode_id", "model", "condition", "regime", "question_id", "t", "action",
                "obs_index", "obs_failed", "obs_source", "judgment", "judgment_source",
                "stated_judgment", "streak", "forced")
_INTS = ("answer_action", "obs_index", "obs_failed")


def _nullable_ints(frame: pd.DataFrame) -> pd.DataFrame:
    out = frame.copy()
    for col in _INTS:
        if col in out:
            out[col] = out[col].astype("Int64")
    return out


def episodes_table(episodes: pd.DataFrame) -> pd.DataFrame:
    """episodes.csv: one row per finished episode (errored ones included, with `error`).

    Args:
        episodes: `core.store.episodes_frame` output.

    Returns:
        The frame with exactly EPISODE_COLUMNS.
    """
    return _nullable_ints(episodes.loc[:, list(EPISODE_COLUMNS)])


def steps_table(episodes: pd.DataFrame, steps: pd.DataFrame) -> pd.DataFrame:
    """steps.csv: one row per step, with its episode's model, condition, regime, question.

    Args:
        episodes: episode frame.
        steps: step frame.

    Returns:
        The frame with exactly STEP_COLUMNS, ordered by episode and t.
    """
    keys = episodes.loc[:, ["episode_id", "model", "condition", "regime", "question_id"]]
    merged = steps.merge(keys, on="episode_id", how="inner", validate="many_to_one")
    merged = merged.sort_values(["episode_id", "t"], kind="stable")
    return _nullable_ints(merged.loc[:, list(STEP_COLUMNS)])


def table_frame(table: Table) -> pd.DataFrame:
    """A results table as a frame.

    Args:
        table: a results table.

    Returns:
        One row per Row, with exactly the ROW_FIELDS columns.
    """
    rows = [r.as_dict() for r in table.rows]
    return pd.DataFrame(rows, columns=list(ROW_FIELDS))


def _write(frame: pd.DataFrame, path: Path) -> Path:
    tmp = path.with_name(f".{path.name}.tmp")
    frame.to_csv(tmp, index=False, encoding="utf-8")
    os.replace(tmp, path)
    return path


def export(db: Database, directory: Path, runs: Sequence[str] | None = None,
           models: Sequence[str] | None = None, n_boot: int = N_BOOT,
           hazard_boot: int = 1000, seed: int = 0) -> tuple[Path, ...]:
    """Write episodes.csv, steps.csv and one CSV per results table into `directory`.

    Args:
        db: an open lab.db.
        directory: target folder (created if missing).
        runs: runs to export (default: all).
        models: models to export (default: all).
        n_boot: resamples for the results tables.
        hazard_boot: resamples for the hazard model.
        seed: bootstrap seed.

    Returns:
        The paths written, in order.

    Raises:
        ConfigError: when `directory` exists and is not a folder.
    """
    from core.store import episodes_frame, steps_frame

    directory = Path(directory)
    if directory.exists() and not directory.is_dir():
        raise ConfigError(f"{directory}: exists and is not a directory; give a folder, "
                          "e.g. lab export results/")
    directory.mkdir(parents=True, exist_ok=True)
    episodes, steps = episodes_frame(db, runs, models), steps_frame(db, runs, models)
    written = [_write(episodes_table(episodes), directory / "episodes.csv"),
               _write(steps_table(episodes, steps), directory / "steps.csv")]
    results = compute(frames_from(episodes, steps), TABLES, n_boot, hazard_boot, seed)
    for table in results.tables:
        written.append(_write(table_frame(table), directory / f"{table.name}.csv"))
    return tuple(written)
