"""Per-episode counts of judged observations, read for the judgments table.

The judgments table (`analysis.measures.judgments`) reads every observation step of the
selection's error-free episodes, but only as counts k of n. Reading the steps into
pandas (a million rows at paper scale) cost seconds and the largest frame in memory;
here SQLite sums them per episode (`core.store.judgment_packs`, which also stores them
when an episode is stored) and this module reads the stored counts back, counting in
SQLite the episodes that have none.

The same counts over the replayed judgments alone (`JudgmentCounts.replayed`) tell how
many of each count's judgments came from a replay rather than the side channel in-run;
they are counted from the steps of the episodes that have a replayed judgment only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlite_utils import Database

from core.errors import LabError
from core.store.judgment_packs import COUNTS, LANE, PACK_WORDS, counted, counted_ids, has_replayed
from core.store.layouts import require_layout
from core.store.selection import Selection, where_clause

_MAX_OBSERVATIONS = 1 << (LANE - 1)
"""Observations per episode must stay below this (the top lane keeps the sign bit)."""
_HAS_REPLAYED = ("e.id IN (SELECT episode_id FROM probes WHERE kind = 'judgment' "
                 "AND error IS NULL)")
_STORED_SQL = ("SELECT count(*), count(j.episode_id), COALESCE(sum(j.episode_id), 0), "
               "CAST(group_concat(j.words, '') AS BLOB) "
               "FROM episodes e JOIN cells c ON c.id = e.cell_id JOIN runs r ON r.id = c.run_id "
               "LEFT JOIN judgment_packs j ON j.episode_id = e.id")
"""The selection's episodes, those with stored counts, the sum of their ids, and those
counts as one BLOB (SQLite concatenates the BLOBs' bytes; each carries its id, so their
order does not matter; the sum checks that they do)."""
_UNSTORED_SQL = ("SELECT e.id FROM episodes e JOIN cells c ON c.id = e.cell_id "
                 "JOIN runs r ON r.id = c.run_id LEFT JOIN judgment_packs j "
                 "ON j.episode_id = e.id")
_MAX_UNSTORED = 5_000
"""Selected episodes without stored counts that are counted by id; more: count all."""


def _stored(db: Database, where: str, args: Sequence[Any]) -> Any:
    """The selection's stored counts (int64 rows as `counts_sql`'s, by id, zero rows
    included), those of episodes without a stored row counted by id; None when too
    many have none (or the table is missing, or its words are in another layout).

    Raises:
        StoreError: lab.db records another layout for the counts (`require_layout`).
    """
    import numpy as np

    require_layout(db, "judgment_packs")
    if not db.conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' "
                           "AND name = 'judgment_packs'").fetchone():
        return None
    total, stored, id_sum, blob = db.conn.execute(_STORED_SQL + where, args).fetchone()
    blob = blob or b""
    if total - stored > _MAX_UNSTORED or len(blob) != 8 * PACK_WORDS * stored:
        return None
    rows = np.frombuffer(blob, dtype="<i8").astype(np.int64).reshape(-1, PACK_WORDS)
    if int(rows[:, 0].sum()) != id_sum:
        return None  # words in another layout (no id where it belongs)
    if total > stored:
        missing = [r[0] for r in db.conn.execute(
            _UNSTORED_SQL + (where + " AND" if where else " WHERE") + " j.episode_id IS NULL",
            args)]
        rows = np.concatenate([rows, counted_ids(db.conn, missing)])
    if not (rows[1:, 0] > rows[:-1, 0]).all():
        rows = rows[np.argsort(rows[:, 0], kind="stable")]
    return rows


@dataclass(frozen=True)
class JudgmentCounts:
    """The COUNTS of each episode that has an observation step.

    Attributes:
        episode_ids: episode ids, int64, one per row of `counts`.
        counts: integer array (episodes × len(COUNTS)), columns in COUNTS order.
        replayed: the same counts of the judgments read from a replay (`lab replay
            judgments`) alone, same shape; None when none was replayed (the judgments
            all came from the side channel in-run). Its stated counters are not
            restricted.
    """

    episode_ids: Any
    counts: Any
    replayed: Any = None


def judgment_counts(db: Database, selection: Selection | None = None,
                    upto: int | None = None, above: int | None = None) -> JudgmentCounts:
    """Count the judged observations of the selection's error-free episodes in SQLite.

    Args:
        db: an open lab.db.
        selection: the filters (the `pool` field is not used here).
        upto: only episodes with id <= upto (the state a `Fingerprint` recorded).
        above: only episodes with id > above (to count id ranges in parallel).

    Returns:
        The JudgmentCounts, ordered by episode id (episodes without an observation
        step have no row: all their counts are 0), with the replayed ones.

    Raises:
        ConfigError: a condition in the selection that matches no stored arm.
        LabError: an episode with 32,768 observations or more (the counts are packed
            into 16-bit lanes).
    """
    import numpy as np

    extra = ["e.error IS NULL"]
    extra += [f"e.id <= {int(upto)}"] if upto is not None else []
    extra += [f"e.id > {int(above)}"] if above is not None else []
    where, args = where_clause(db, selection or Selection(), *extra)
    rows = _stored(db, where, args)
    if rows is None:
        where, args = where_clause(db, selection or Selection(), "s.obs_index IS NOT NULL", *extra)
        rows = counted(db.conn, where, args, has_replayed(db.conn))
    else:
        rows = rows[rows[:, 1] > 0]
    if len(rows) and rows[:, 1].max() >= _MAX_OBSERVATIONS:
        worst = int(rows[rows[:, 1].argmax(), 0])
        raise LabError(f"episode {worst} has {int(rows[:, 1].max())} observation steps; "
                       f"judgment counts support fewer than {_MAX_OBSERVATIONS}")
    ids = rows[:, 0].copy()
    replayed = None
    if has_replayed(db.conn):
        where, args = where_clause(db, selection or Selection(), "s.obs_index IS NOT NULL", *extra,
                             _HAS_REPLAYED)
        got = counted(db.conn, where, args, True, only_replayed=True)
        got = got[np.isin(got[:, 0], ids)]
        replayed = np.zeros((len(ids), len(COUNTS)), dtype=np.int32)
        replayed[np.searchsorted(ids, got[:, 0])] = _unpacked(got)
    return JudgmentCounts(ids, _unpacked(rows), replayed)


def _unpacked(rows: Any) -> Any:
    """The COUNTS (int32, episodes × len(COUNTS)) of `counts_sql` rows."""
    import numpy as np

    counts = np.empty((len(rows), len(COUNTS)), dtype=np.int32)
    for i in range(len(COUNTS)):
        counts[:, i] = (rows[:, 2 + i // 4] >> (LANE * (i % 4))) & ((1 << LANE) - 1)
    return counts
