"""The stored decision table and the other per-episode derivations analysis reads.

`decisions` holds one row of integers per decision point (`core.decisions`), derived
when an episode is stored, in the same transaction; `episodes.acting_input_tokens`
and `acting_output_tokens` hold the sums over its steps (the acting turns' tokens).
`rederive` recomputes them from the stored steps, e.g. after judgment replay
changes an episode's judgments.

`analysis_state.changes` counts every change that is not a new episode (triggers,
migration 0005): together with the count and largest id of the selection's episodes
it tells a results cache whether its numbers are still current.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from sqlite_utils import Database

from core.decisions import COLUMNS, STEP_FIELDS, episode_decisions
from core.store.base import write

INSERT_SQL = (f"INSERT INTO decisions (episode_id, seq, {', '.join(COLUMNS)}) "
              f"VALUES ({', '.join('?' * (len(COLUMNS) + 2))})")
TOTALS = ("acting_input_tokens", "acting_output_tokens", "discarded_turns", "backup_calls",
          "primary_judgments")
"""Per-episode sums over its steps, stored on the episode (see `step_totals`)."""
_TOTALS_SQL = (f"UPDATE episodes SET {', '.join(c + ' = ?' for c in TOTALS)} WHERE id = ?")
_TOTAL_FIELDS = ("input_tokens", "output_tokens", "tool_source", "judgment_raw")
_STEP_EXPR = {"judgment": "CASE WHEN s.judgment_source IS NULL THEN rp.judgment "
                          "ELSE s.judgment END"}
"""A step whose arm asked no judgment in-run reads its replayed one (`lab replay
judgments`, table probes); a judgment asked in-run is never replaced."""
_STEPS_SQL = (f"SELECT s.episode_id, c.budget, "
              f"{', '.join(_STEP_EXPR.get(f, 's.' + f) for f in STEP_FIELDS)}, "
              f"{', '.join('s.' + f for f in _TOTAL_FIELDS)} FROM steps s JOIN episodes e "
              "ON e.id = s.episode_id JOIN cells c ON c.id = e.cell_id "
              "LEFT JOIN probes rp ON rp.episode_id = s.episode_id AND rp.t = s.t AND "
              "rp.kind = 'judgment' AND rp.error IS NULL AND s.discarded = 0")
_N = len(STEP_FIELDS)


def step_totals(steps: Sequence[Sequence[Any]]) -> tuple[int, ...]:
    """The TOTALS of one episode.

    Args:
        steps: per step, the STEP_FIELDS values followed by input_tokens,
            output_tokens, tool_source and judgment_raw.

    Returns:
        (acting input tokens, acting output tokens, discarded turns, backup searches
        not refused, primary searches with a judgment reply).
    """
    i_ref, i_disc = STEP_FIELDS.index("refused"), STEP_FIELDS.index("discarded")
    tin = tout = discarded = backup = primary = 0
    for s in steps:
        tin += s[_N] or 0
        tout += s[_N + 1] or 0
        discarded += bool(s[i_disc])
        backup += s[_N + 2] == "backup" and not s[i_ref]
        primary += s[_N + 2] == "primary" and s[_N + 3] is not None
    return tin, tout, discarded, backup, primary


def _decision_rows(episode_id: int, budget: int, steps: Sequence[Sequence[Any]]
                   ) -> list[tuple[Any, ...]]:
    return [(episode_id, seq, *d)
            for seq, d in enumerate(episode_decisions([s[:_N] for s in steps], budget))]


def store_derived(conn: sqlite3.Connection, episode_id: int, cell_id: int,
                  steps: Sequence[Any]) -> None:
    """Write an episode's decision points and acting tokens (inside the caller's transaction).

    Args:
        conn: the connection holding the write transaction that stored the episode.
        episode_id: the new episode's id.
        cell_id: its cell (whose budget marks final actions).
        steps: its `core.episode.Step` objects.
    """
    budget = conn.execute("SELECT budget FROM cells WHERE id = ?", (cell_id,)).fetchone()[0]
    rows = [tuple(getattr(s, f, None) for f in (*STEP_FIELDS, *_TOTAL_FIELDS)) for s in steps]
    conn.executemany(INSERT_SQL, _decision_rows(episode_id, budget, rows))
    conn.execute(_TOTALS_SQL, (*step_totals(rows), episode_id))


def _by_episode(rows: Iterable[tuple[Any, ...]]
                ) -> Iterator[tuple[int, int, list[tuple[Any, ...]]]]:
    """Group (episode_id, budget, *step) rows ordered by episode into episodes."""
    current: int | None = None
    budget = 0
    steps: list[tuple[Any, ...]] = []
    for row in rows:
        if row[0] != current:
            if current is not None:
                yield current, budget, steps
            current, budget, steps = row[0], row[1], []
        steps.append(row[2:])
    if current is not None:
        yield current, budget, steps


def derive_all(conn: sqlite3.Connection, where: str = "", args: Sequence[Any] = ()) -> int:
    """(Re)derive the decision points and acting tokens of stored episodes from their steps.

    Runs inside the caller's transaction (the migration's, or `rederive`'s); reads the
    steps in episode order with one cursor, so memory stays flat.

    Args:
        conn: a connection in a write transaction.
        where: SQL condition on ``s``/``e``/``c`` selecting the episodes (default: all).
        args: its parameters.

    Returns:
        Episodes processed.
    """
    clause = f" WHERE {where}" if where else ""
    conn.execute(f"DELETE FROM decisions WHERE episode_id IN (SELECT e.id FROM episodes e "
                 f"JOIN cells c ON c.id = e.cell_id JOIN steps s ON s.episode_id = e.id{clause})",
                 tuple(args))
    cursor = conn.execute(_STEPS_SQL + clause + " ORDER BY s.episode_id, s.t, s.discarded DESC",
                          tuple(args))
    n = 0
    batch: list[tuple[Any, ...]] = []
    totals: list[tuple[int, ...]] = []
    for episode_id, budget, steps in _by_episode(cursor):
        batch += _decision_rows(episode_id, budget, steps)
        totals.append((*step_totals(steps), episode_id))
        n += 1
        if len(batch) > 50_000:
            conn.executemany(INSERT_SQL, batch)
            batch = []
    conn.executemany(INSERT_SQL, batch)
    conn.executemany(_TOTALS_SQL, totals)
    conn.execute(f"UPDATE episodes SET {', '.join(c + ' = 0' for c in TOTALS)} "
                 "WHERE acting_input_tokens IS NULL")
    return n


def rederive(db: Database, episode_ids: Sequence[int]) -> int:
    """Recompute the decision points of some episodes from their stored steps.

    For judgment replay: after an episode's judgments change in `steps`, its
    judgment-dependent decision columns (`core.decisions.JUDGMENT_COLUMNS`) follow.

    Args:
        db: an open lab.db.
        episode_ids: the episodes to recompute.

    Returns:
        Episodes recomputed.
    """
    if not episode_ids:
        return 0
    marks = ", ".join("?" * len(episode_ids))
    with write(db):
        return derive_all(db.conn, f"e.id IN ({marks})", list(episode_ids))


def changes(db: Database) -> int:
    """The change counter (bumped by triggers on every change that is not a new episode)."""
    row = db.conn.execute("SELECT changes FROM analysis_state WHERE id = 1").fetchone()
    return int(row[0]) if row else 0
