"""`lab results policies|controllers`: the tables that read answer-now branches (issue 12)."""

from __future__ import annotations

from pathlib import Path

from sqlite_utils import Database

from analysis.measures.arms import Grouping
from analysis.replay.controllers import controller_table
from analysis.measures.compute import Frames, Results
from analysis.replay.policies import policy_table
from core.store.frames import Selection
from core.store.probes import EXPORT_COLUMNS, probes_frame

PROBE_TABLES = ("policies", "controllers")


def probe_results(db: Database, frames: Frames, name: str, n_boot: int, seed: int = 0
                  ) -> Results:
    """One of PROBE_TABLES on the frames' episodes and their stored answer-now branches.

    Args:
        db: an open lab.db.
        frames: the selection's frames.
        name: "policies" or "controllers".
        n_boot: question-level resamples.
        seed: bootstrap seed.

    Returns:
        Results holding the one table.

    Raises:
        ValueError: another name.
    """
    if name not in PROBE_TABLES:
        raise ValueError(f"unknown probe table {name!r}; choose from {', '.join(PROBE_TABLES)}")
    grouping = Grouping(frames.selection.pool, frames.errored_episodes)
    probes = probes_frame(db, frames.selection, kinds=("answer_now",))
    build = policy_table if name == "policies" else controller_table
    table = build(frames.episodes, frames.steps, probes, n_boot, seed, grouping)
    return Results((table,), (), (), (), frames.errored, frames.runs, grouping.pooled)


def export_probes(db: Database, directory: Path, selection: Selection, version: str,
                  n_boot: int, seed: int = 0) -> list[Path]:
    """probes.csv (every complete probe of the selection) and, where answer-now branches
    exist, policies.csv and controllers.csv (`lab export`).

    Returns:
        The paths written.
    """
    from analysis.tables.csv_files import table_frame, write_frame
    from analysis.measures.compute import load_frames

    probes = probes_frame(db, selection)
    written = [write_frame(probes.loc[:, list(EXPORT_COLUMNS)], directory / "probes.csv")]
    if (probes["kind"] == "answer_now").any():
        frames = load_frames(db, selection)
        for name in PROBE_TABLES:
            (table,) = probe_results(db, frames, name, n_boot, seed).tables
            written.append(write_frame(table_frame(table, version), directory / f"{name}.csv"))
    return written
