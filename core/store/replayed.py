"""The observations whose side-channel judgment analysis reads from a replay (`lab replay
judgments`), read apart from the rest of the probes' reads (`core.store.probes`): every
decision table asks for them, and this module imports nothing but sqlite_utils, so those
tables do not load the probing and trajectory code.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlite_utils import Database

if TYPE_CHECKING:  # numpy loads on first use, not on import
    import numpy as np


REPLAYED_OBSERVATIONS_SQL = (
    "SELECT s.episode_id, s.obs_index FROM probes p JOIN steps s ON s.episode_id = "
    "p.episode_id AND s.t = p.t AND s.discarded = 0 WHERE p.kind = 'judgment' AND p.error "
    "IS NULL AND s.judgment_source IS NULL AND s.obs_index IS NOT NULL")
"""Observations whose judgment analysis reads from a replay (the step asked none in-run:
the same rule as `core.store.frames.STEP_FRAME_SQL`)."""


def replayed_observations(db: Database, upto: int | None = None) -> np.ndarray:
    """The observations whose side-channel judgment came from `lab replay judgments`.

    Args:
        db: an open lab.db.
        upto: only episodes with id <= upto.

    Returns:
        int64 array (rows × 2): episode id and ``obs_index`` of each such observation
        (every other judged observation was judged in-run, by the side channel).
    """
    import itertools

    import numpy as np

    sql: str = REPLAYED_OBSERVATIONS_SQL
    args: tuple[int, ...] = ()
    if upto is not None:
        sql, args = sql + " AND p.episode_id <= ?", (int(upto),)
    cursor = db.conn.execute(sql, args)
    return np.fromiter(itertools.chain.from_iterable(cursor), dtype=np.int64).reshape(-1, 2)
