"""The stored judgment counts (`judgment_packs`): the counting query, its counters and
the writer, one row of packed integers per episode.

Each counter is one of `COUNTS`, over the observation steps (``obs_index`` set) of
one episode, with a step's judgment taken as the step frames take it: the in-run
side-channel judgment, or the replayed one (`lab replay judgments`, table probes)
where the arm asked none in-run. A real search result is a judged, not failed
``search`` observation from ``gold`` or ``distractor``; it is a repeat when it shows a
page (``obs_ref``) that an earlier observation step of the episode (by t, a discarded
turn before its re-ask) showed.

Apart from the reader (`core.store.judgment_counts`) so that the derived-table layouts
(`core.store.layouts`) and the episode store can fingerprint and write the counts
without importing what reads them: the reader checks those layouts.
"""

from __future__ import annotations

import itertools
import sqlite3
from collections.abc import Sequence
from typing import Any

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

LANE = 16
"""Bits per counter in the packed sums: 4 counters per integer."""

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
        The SQL (aliases e, c, r, s as `core.store.selection.where_clause` expects).
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
    `core.store.layouts`): the counting query, the counters, lanes and words."""
    return repr((counts_sql(), COUNTS, LANE, PACK_WORDS))


_PACK_INSERT_SQL = "INSERT OR REPLACE INTO judgment_packs (episode_id, words) VALUES (?, ?)"
_IDS_PER_QUERY = 500


def has_replayed(conn: sqlite3.Connection) -> bool:
    """Whether lab.db holds a replayed judgment (else `counts_sql` leaves the join out)."""
    return bool(conn.execute("SELECT EXISTS (SELECT 1 FROM probes WHERE kind = 'judgment' "
                             "AND error IS NULL)").fetchone()[0])


def counted(conn: sqlite3.Connection, where: str, args: Sequence[Any], replayed: bool,
            only_replayed: bool = False) -> Any:
    """`counts_sql` rows (int64, one per episode with an observation) under `where`."""
    import numpy as np

    cursor = conn.execute(counts_sql(replayed, only_replayed) + where
                          + " GROUP BY e.id ORDER BY e.id", args)
    return np.fromiter(itertools.chain.from_iterable(cursor), dtype=np.int64).reshape(-1, 6)


def _ids_clause(ids: Sequence[int]) -> str:
    return f"e.id IN ({', '.join(str(int(i)) for i in ids)})"


def counted_ids(conn: sqlite3.Connection, ids: Sequence[int]) -> Any:
    """`counts_sql` rows of the episodes `ids` (any order), a few hundred ids per query
    (replayed judgments joined: the same counts whether lab.db holds any or not)."""
    import numpy as np

    parts = [np.zeros((0, PACK_WORDS), dtype=np.int64)]
    for at in range(0, len(ids), _IDS_PER_QUERY):
        clause = _ids_clause(ids[at:at + _IDS_PER_QUERY])
        parts.append(counted(conn, f" WHERE s.obs_index IS NOT NULL AND {clause}", (), True))
    return np.concatenate(parts)


def store_counts(conn: sqlite3.Connection, episode_ids: Sequence[int] | None = None) -> int:
    """Write the `judgment_packs` of episodes from their stored steps (and probes).

    Runs inside the caller's transaction (the episode store, `derive_all`,
    `core.store.derived.rederive_stale`): each row is the episode's `counts_sql` row,
    zeros where it has no observation step, so the stored counts equal the query by
    construction.

    Args:
        conn: a connection in a write transaction.
        episode_ids: the episodes (default: every stored episode, read by id range).

    Returns:
        Rows written.
    """
    import numpy as np

    if episode_ids is None:
        replayed = has_replayed(conn)
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
        got = counted(conn, f" WHERE s.obs_index IS NOT NULL AND {clause}", args, replayed)
        rows[np.searchsorted(stored, got[:, 0])] = got
        words = rows.astype("<i8").tobytes()
        conn.executemany(_PACK_INSERT_SQL, ((int(e), words[size * i:size * (i + 1)])
                                            for i, e in enumerate(stored)))
        written += len(stored)
    return written

