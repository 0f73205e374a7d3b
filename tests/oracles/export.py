"""The pandas episodes.csv the streamed export (`analysis.tables.export.export`) must
equal byte for byte."""

from __future__ import annotations

import pandas as pd

from analysis.base.arms import EXPLORATORY
from analysis.measures.cost import measurement_calls, own_calls
from analysis.tables.export import EPISODE_COLUMNS
from core.version import project_version

INTS = ("answer_action", "obs_index", "obs_failed")
"""Columns written as integers with blanks for missing values."""


def nullable_ints(frame: pd.DataFrame) -> pd.DataFrame:
    """`frame` with the INTS columns it has as pandas' nullable integers."""
    out = frame.copy()
    for col in INTS:
        if col in out:
            out[col] = out[col].astype("Int64")
    return out


def episodes_table(episodes: pd.DataFrame, version: str | None = None) -> pd.DataFrame:
    """episodes.csv: one row per finished episode (errored ones included, with `error`).

    Args:
        episodes: `core.store.episodes_frame` output.
        version: project version recorded on every row (default: the installed one).

    Returns:
        The frame with exactly EPISODE_COLUMNS; amendment is "exploratory" for runs
        no amendment governs.
    """
    out = episodes.assign(
        amendment=episodes["amendment"].where(episodes["amendment"].notna(), EXPLORATORY),
        own_calls=own_calls(episodes), measurement_calls=measurement_calls(episodes),
        version=version or project_version())
    return nullable_ints(out.loc[:, list(EPISODE_COLUMNS)])


