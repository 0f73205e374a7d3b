"""Per-episode counts of judged observations, aggregated by SQLite (issue 14).

The judgments table (`analysis.measures.judgments`) reads every observation step of the
selection's error-free episodes, but only as counts k of n. Reading the steps into
pandas (a million rows at paper scale) cost seconds and the largest frame in memory;
here SQLite sums them per episode and returns a few integers per episode.

Each counter is one of `COUNTS`, over the observation steps (``obs_index`` set) of
one episode, with a step's judgment taken as the step frames take it: the in-run
side-channel judgment, or the replayed one (`lab replay judgments`, table probes)
where the arm asked none in-run. A real search result is a judged, not failed
``search`` observation from ``gold`` or ``distractor``; it is a repeat when it shows a
page (``obs_ref``) that an earlier observation step of the episode (by t, a discarded
turn before its re-ask) showed.

The same counts over the replayed judgments alone (`JudgmentCounts.replayed`) tell how
many of each count's judgments came from a replay rather than the side channel in-run;
they are counted from the steps of the episodes that have a replayed judgment only.
"""

from __future__ import annotations

import itertools
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlite_utils import Database

from core.errors import LabError
from core.store.selection import Selection, where_clause
from core.store.derived import require_layout

COUNTS = ("judged_failed", "useless_failed", "judged_real", "useless_real",
          "gold_first", "useful_gold_first", "gold_repeat", "useful_gold_repeat",
          "distractor_first", "useful_distractor_first", "distractor_repeat",
          "useful_distractor_repeat", "stated_failed", "stated_useless_failed")
"""The per-episode counters, in column order:

- judged_failed / useless_failed: judged failed observations / those judged USELESS;
- judged_real / useless_real: judged observations that did not fail / USELESS;
- gold_first, gold_repeat, distractor_first, distractor_repeat: real search results
  of that source showing a page for the first time / again, and those judged USEFUL
  (the useful_ counts);
- stated_failed / stated_useless_failed: failed observations with a stated judgment /
  those stated "useless"."""

_LANE = 16
"""Bits per counter in the packed sums: 4 counters per integer."""
_MAX_OBSERVATIONS = 1 << (_LANE - 1)
"""Observations per episode must stay below this (the top lane keeps the sign bit)."""

_FAILED = "(COALESCE(s.obs_failed, 0) != 0)"
_NOT_FAILED = "(COALESCE(s.obs_failed, 0) = 0)"
_EARLIER_SAME_PAGE = (
    "EXISTS (SELECT 1 FROM steps p WHERE p.episode_id = s.episode_id AND p.t <= s.t "
    "AND (p.t < s.t OR p.discarded > s.discarded) AND p.obs_index IS NOT NULL "
    "AND p.obs_ref = s.obs_ref)")
"""An earlier observation step of the episode showed the same page (steps' primary
key is (episode_id, t, discarded): a seek, a few rows)."""
_REPLAYED_JUDGMENT = ("(CASE WHEN s.judgment_source IS NULL THEN rp.judgment "
                      "ELSE s.judgment END)")
"""A step's judgment as STEP_FRAME_SQL reads it: a step whose arm asked no judgment
in-run takes its replayed one; a judgment asked in-run is never replaced."""
_REPLAY_JOIN = ("LEFT JOIN probes rp ON rp.episode_id = s.episode_id AND rp.t = s.t "
                "AND rp.kind = 'judgment' AND rp.error IS NULL AND s.discarded = 0")
_IN_RUN_JUDGMENT = "(CASE WHEN s.judgment_source IS NOT NULL THEN s.judgment END)"
"""The same when lab.db holds no replayed judgment (no probe to join)."""
_ONLY_REPLAYED_JUDGMENT = "(CASE WHEN s.judgment_source IS NULL THEN rp.judgment END)"
"""A step's replayed judgment, where analysis reads it (none for an in-run judgment)."""
_HAS_REPLAYED = ("e.id IN (SELECT episode_id FROM probes WHERE kind = 'judgment' "
                 "AND error IS NULL)")


def _pages(judgment: str, source: str) -> str:
    """Packed sum over real search results of `source`: lanes first, useful first,
    repeat, useful repeat (a row adds 1, or 1 + 2^16 when USEFUL, shifted 32 bits up
    when it repeats a page)."""
    return (f"COALESCE(SUM(CASE WHEN s.obs_source = '{source}' AND s.action = 'search' "
            f"AND {_NOT_FAILED} AND {judgment} IS NOT NULL THEN (CASE {judgment} "
            f"WHEN 'USEFUL' THEN 65537 ELSE 1 END) << (32 * {_EARLIER_SAME_PAGE}) END), 0)")


def counts_sql(replayed: bool = True, only_replayed: bool = False) -> str:
    """The per-episode counting query, before its WHERE clause.

    One row per episode with an observation: id, observations, then four sums whose
    16-bit lanes are the COUNTS in order (the last has two; a judged observation adds 1
    to the lane of its n and 1 to the lane of its k when it counts there). CROSS JOIN
    keeps episodes outside, so each episode's cell and run are looked up once and its
    steps are read in key order, grouped without a sort.

    Args:
        replayed: join the replayed judgments (probes); without any in lab.db the
            join is left out (same counts, fewer lookups).
        only_replayed: count only the judgments read from a replay (the stated
            counters still count every stated judgment).

    Returns:
        The SQL (aliases e, c, r, s as `core.store.frames._where` expects).
    """
    judgment = (_ONLY_REPLAYED_JUDGMENT if only_replayed else
                _REPLAYED_JUDGMENT if replayed else _IN_RUN_JUDGMENT)
    replayed = replayed or only_replayed
    return f"""
SELECT e.id, COUNT(*),
    SUM((CASE {judgment} WHEN 'USELESS' THEN 65537 ELSE {judgment} IS NOT NULL END)
        << (32 * {_NOT_FAILED})),
    {_pages(judgment, "gold")},
    {_pages(judgment, "distractor")},
    COALESCE(SUM(CASE WHEN s.stated_judgment IS NOT NULL AND {_FAILED} THEN
        (CASE s.stated_judgment WHEN 'useless' THEN 65537 ELSE 1 END) END), 0)
FROM episodes e JOIN cells c ON c.id = e.cell_id JOIN runs r ON r.id = c.run_id
CROSS JOIN steps s ON s.episode_id = e.id {_REPLAY_JOIN if replayed else ""}
"""


PACK_WORDS = 6
"""A stored count (`judgment_packs.words`): little-endian int64 id, observations and
the four packed sums, exactly one `counts_sql` row (zeros for an episode without an
observation step)."""
LAYOUT_VERSION = 1
"""Bump when the stored counts change meaning without changing `layout_text` (which
covers the counting query, the counters and their lanes)."""


def layout_text() -> str:
    """What identifies the layout of `judgment_packs` (fingerprinted by
    `core.store.derived`): the counting query, the counters, lanes and words."""
    return repr((counts_sql(), COUNTS, _LANE, PACK_WORDS))
_PACK_INSERT_SQL = "INSERT OR REPLACE INTO judgment_packs (episode_id, words) VALUES (?, ?)"
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
_IDS_PER_QUERY = 500


def _replayed(conn: sqlite3.Connection) -> bool:
    """Whether lab.db holds a replayed judgment (else `counts_sql` leaves the join out)."""
    return bool(conn.execute("SELECT EXISTS (SELECT 1 FROM probes WHERE kind = 'judgment' "
                             "AND error IS NULL)").fetchone()[0])


def _counted(conn: sqlite3.Connection, where: str, args: Sequence[Any], replayed: bool,
             only_replayed: bool = False) -> Any:
    """`counts_sql` rows (int64, one per episode with an observation) under `where`."""
    import numpy as np

    cursor = conn.execute(counts_sql(replayed, only_replayed) + where
                          + " GROUP BY e.id ORDER BY e.id", args)
    return np.fromiter(itertools.chain.from_iterable(cursor), dtype=np.int64).reshape(-1, 6)


def _ids_clause(ids: Sequence[int]) -> str:
    return f"e.id IN ({', '.join(str(int(i)) for i in ids)})"


def _counted_ids(conn: sqlite3.Connection, ids: Sequence[int]) -> Any:
    """`counts_sql` rows of the episodes `ids` (any order), a few hundred ids per query
    (replayed judgments joined: the same counts whether lab.db holds any or not)."""
    import numpy as np

    parts = [np.zeros((0, PACK_WORDS), dtype=np.int64)]
    for at in range(0, len(ids), _IDS_PER_QUERY):
        clause = _ids_clause(ids[at:at + _IDS_PER_QUERY])
        parts.append(_counted(conn, f" WHERE s.obs_index IS NOT NULL AND {clause}", (), True))
    return np.concatenate(parts)


def store_counts(conn: sqlite3.Connection, episode_ids: Sequence[int] | None = None) -> int:
    """Write the `judgment_packs` of episodes from their stored steps (and probes).

    Runs inside the caller's transaction (the episode store, `derive_all`, migration
    0009): each row is the episode's `counts_sql` row, zeros where it has no
    observation step, so the stored counts equal the query by construction.

    Args:
        conn: a connection in a write transaction.
        episode_ids: the episodes (default: every stored episode, read by id range).

    Returns:
        Rows written.
    """
    import numpy as np

    if episode_ids is None:
        replayed = _replayed(conn)
        top = conn.execute("SELECT COALESCE(max(id), 0) FROM episodes").fetchone()[0]
        clauses: list[tuple[str, tuple[int, ...]]] = [
            (f"e.id BETWEEN {lo} AND {lo + 49_999}", ()) for lo in range(0, top + 1, 50_000)]
    else:
        replayed = True
        ids = sorted({int(i) for i in episode_ids})
        # one episode (every stored episode): a parameter, so sqlite3's statement cache
        # serves the same prepared query each time (a literal id re-prepared the long
        # counting query per episode: ~0.15 ms of every episode stored)
        clauses = ([("e.id = ?", (ids[0],))] if len(ids) == 1 else
                   [(_ids_clause(ids[at:at + _IDS_PER_QUERY]), ())
                    for at in range(0, len(ids), _IDS_PER_QUERY)])
    size = 8 * PACK_WORDS
    written = 0
    for clause, args in clauses:
        stored = np.fromiter((r[0] for r in conn.execute(
            f"SELECT e.id FROM episodes e WHERE {clause} ORDER BY e.id", args)), dtype=np.int64)
        if not len(stored):
            continue
        rows = np.zeros((len(stored), PACK_WORDS), dtype=np.int64)
        rows[:, 0] = stored
        got = _counted(conn, f" WHERE s.obs_index IS NOT NULL AND {clause}", args, replayed)
        rows[np.searchsorted(stored, got[:, 0])] = got
        words = rows.astype("<i8").tobytes()
        conn.executemany(_PACK_INSERT_SQL, ((int(e), words[size * i:size * (i + 1)])
                                            for i, e in enumerate(stored)))
        written += len(stored)
    return written


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
        rows = np.concatenate([rows, _counted_ids(db.conn, missing)])
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
        rows = _counted(db.conn, where, args, _replayed(db.conn))
    else:
        rows = rows[rows[:, 1] > 0]
    if len(rows) and rows[:, 1].max() >= _MAX_OBSERVATIONS:
        worst = int(rows[rows[:, 1].argmax(), 0])
        raise LabError(f"episode {worst} has {int(rows[:, 1].max())} observation steps; "
                       f"judgment counts support fewer than {_MAX_OBSERVATIONS}")
    ids = rows[:, 0].copy()
    replayed = None
    if _replayed(db.conn):
        where, args = where_clause(db, selection or Selection(), "s.obs_index IS NOT NULL", *extra,
                             _HAS_REPLAYED)
        got = _counted(db.conn, where, args, True, only_replayed=True)
        got = got[np.isin(got[:, 0], ids)]
        replayed = np.zeros((len(ids), len(COUNTS)), dtype=np.int32)
        replayed[np.searchsorted(ids, got[:, 0])] = _unpacked(got)
    return JudgmentCounts(ids, _unpacked(rows), replayed)


def _unpacked(rows: Any) -> Any:
    """The COUNTS (int32, episodes × len(COUNTS)) of `counts_sql` rows."""
    import numpy as np

    counts = np.empty((len(rows), len(COUNTS)), dtype=np.int32)
    for i in range(len(COUNTS)):
        counts[:, i] = (rows[:, 2 + i // 4] >> (_LANE * (i % 4))) & ((1 << _LANE) - 1)
    return counts
