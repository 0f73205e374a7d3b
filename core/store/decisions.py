"""The stored decision table and the other per-episode derivations analysis reads.

`decisions` holds one row of integers per decision point (`core.decisions`), derived
when an episode is stored, in the same transaction; `decision_packs` holds the same rows
of each episode packed into one BLOB (`PACKED_FIELDS`), which analysis reads in one
value per episode instead of stepping a million rows; `episodes.acting_input_tokens`
and `acting_output_tokens` hold the sums over its steps (the acting turns' tokens).
`rederive` recomputes them from the stored steps, e.g. after judgment replay
changes an episode's judgments.

`analysis_state.changes` counts every change that is not a new episode (triggers,
migration 0007): together with the count and largest id of the selection's episodes
it tells a results cache whether its numbers are still current.
"""

from __future__ import annotations

import sqlite3
import struct
from collections.abc import Iterable, Iterator, Sequence
from operator import attrgetter
from typing import Any

from sqlite_utils import Database

from core.decisions import COLUMNS, STEP_FIELDS, episode_decisions
from core.store.base import write
from core.store.episode_packs import store_packs
from core.store.judgment_packs import store_counts

INSERT_SQL = (f"INSERT INTO decisions (episode_id, seq, {', '.join(COLUMNS)}) "
              f"VALUES ({', '.join('?' * (len(COLUMNS) + 2))})")
TOTALS = ("acting_input_tokens", "acting_output_tokens", "discarded_turns", "backup_calls",
          "primary_judgments")
"""Per-episode sums over its steps, stored on the episode (see `step_totals`)."""
_TOTALS_SQL = (f"UPDATE episodes SET {', '.join(c + ' = ?' for c in TOTALS)} WHERE id = ?")
_TOTAL_FIELDS = ("input_tokens", "output_tokens", "tool_source", "judgment_raw")
_DERIVED_ROW = attrgetter(*STEP_FIELDS, *_TOTAL_FIELDS)
"""A Step's STEP_FIELDS and _TOTAL_FIELDS values as one tuple, read in C (every Step
has them all): a getattr per field per step was a tenth of storing an episode."""
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

PACKED_FIELDS = (("n_obs", 0, 0, 16), ("action", 0, 16, 16), ("design_run", 0, 32, 16),
                 ("own_run", 0, 48, 15), ("stated_run", 1, 0, 16), ("answer", 1, 16, 1),
                 ("final", 1, 17, 1), ("own_latest", 1, 18, 1), ("own_earlier", 1, 19, 1),
                 ("stated_known", 1, 20, 1), ("stated_latest", 1, 21, 1),
                 ("stated_earlier", 1, 22, 1))
"""A decision point packed into two 64-bit words: (column, word, shift, bits); run
lengths and actions below 32,768. ``stated_run`` is stored plus one (−1 → 0)."""
PACKED_ID_SHIFT = 23
"""Where a pack's words hold the episode id: word 1 above its 23 bits of fields (ids
below 2**40), so a reader of many episodes' concatenated packs knows each row's episode."""
PACKED_OFFSET = {"stated_run": 1}
"""Added to a column before it is packed (and taken off when unpacked)."""
PACK_INSERT_SQL = "INSERT INTO decision_packs (episode_id, n, words) VALUES (?, ?, ?)"
DECISIONS_LAYOUT_VERSION = 1
"""Bump when the rows of `decisions` or the episodes' TOTALS change meaning without
changing `decisions_layout_text` (e.g. a definition in `core.decisions`): every lab.db
then rederives them on open (`core.store.derived`)."""
PACKS_LAYOUT_VERSION = 1
"""Bump when `pack` or the packs' decoding changes meaning without changing
`packs_layout_text`."""


def decisions_layout_text() -> str:
    """What identifies the layout of `decisions` and the TOTALS (fingerprinted by
    `core.store.layouts`): their columns and the step fields they are derived from."""
    return repr((COLUMNS, STEP_FIELDS, TOTALS, _TOTAL_FIELDS, _STEPS_SQL))


def packs_layout_text() -> str:
    """What identifies the layout of `decision_packs`: the fields' words, shifts and
    widths, the id's place and the offsets."""
    return repr((PACKED_FIELDS, PACKED_ID_SHIFT, PACKED_OFFSET))


def packed_words_sql(alias: str = "d") -> tuple[str, str]:
    """The two packed words of a `decisions` row as SQL expressions (SQLite computes them).

    Args:
        alias: the table alias of `decisions` in the query.

    Returns:
        (word 0, word 1): OR of each column (plus its PACKED_OFFSET) shifted into place.
    """
    words: tuple[list[str], list[str]] = ([], [])
    for name, word, shift, _ in PACKED_FIELDS:
        column = f"{alias}.{name}" + (f" + {PACKED_OFFSET[name]}" if name in PACKED_OFFSET else "")
        words[word].append(f"(({column}) << {shift})")
    return " | ".join(words[0]), " | ".join(words[1])


def pack_words_sql(alias: str = "d") -> tuple[str, str]:
    """`packed_words_sql` with the episode id in word 1 (`PACKED_ID_SHIFT`): a pack's words."""
    word0, word1 = packed_words_sql(alias)
    return word0, f"{word1} | ({alias}.episode_id << {PACKED_ID_SHIFT})"


_AT = {name: COLUMNS.index(name) for name, *_ in PACKED_FIELDS}
_PACKING = tuple((_AT[name], word, shift, PACKED_OFFSET.get(name, 0))
                 for name, word, shift, _ in PACKED_FIELDS)
"""Per packed field: its COLUMNS index, word, shift and offset (looked up once, not
per field of every decision point)."""


def _signed64(value: int) -> int:
    """An integer wrapped to a signed 64-bit one, as SQLite's shifts and ORs leave it."""
    value &= (1 << 64) - 1
    return value - (1 << 64) if value >> 63 else value


def pack(episode_id: int, decisions: Sequence[Sequence[int]]) -> bytes:
    """One episode's decision points as its `decision_packs.words`.

    Args:
        episode_id: the episode.
        decisions: the COLUMNS values of each decision point, in ``seq`` order.

    Returns:
        Little-endian int64 pairs (`PACKED_FIELDS`, the id at `PACKED_ID_SHIFT`), the
        same words `pack_words_sql` computes from the stored rows.
    """
    words: list[int] = []
    for d in decisions:
        pair = [0, episode_id << PACKED_ID_SHIFT]
        for at, word, shift, offset in _PACKING:
            pair[word] |= (d[at] + offset) << shift
        words += (_signed64(pair[0]), _signed64(pair[1]))
    return struct.pack(f"<{len(words)}q", *words)


def pack_all(conn: sqlite3.Connection, chunk: int = 50_000) -> int:
    """Write the `decision_packs` of every episode with stored decision points.

    Runs inside the caller's transaction (migration 0008); SQLite computes the words
    from the stored rows, read one range of ``chunk`` episode ids at a time.

    Args:
        conn: a connection in a write transaction, `decision_packs` empty.
        chunk: episode ids per read.

    Returns:
        Packs written.
    """
    import itertools

    import numpy as np

    word0, word1 = pack_words_sql()
    sql = (f"SELECT d.episode_id, {word0}, {word1} FROM decisions d "
           "WHERE d.episode_id BETWEEN ? AND ? ORDER BY d.episode_id, d.seq")
    top = conn.execute("SELECT COALESCE(max(episode_id), 0) FROM decisions").fetchone()[0]
    written = 0
    for lo in range(0, top + 1, chunk):
        cursor = conn.execute(sql, (lo, lo + chunk - 1))
        rows = np.fromiter(itertools.chain.from_iterable(cursor), dtype=np.int64).reshape(-1, 3)
        if not len(rows):
            continue
        episodes, starts, counts = np.unique(rows[:, 0], return_index=True, return_counts=True)
        words = rows[:, 1:].astype("<i8").tobytes()
        conn.executemany(PACK_INSERT_SQL, ((int(e), int(n), words[16 * s:16 * (s + n)])
                                           for e, s, n in zip(episodes, starts, counts)))
        written += len(episodes)
    return written


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
                  steps: Sequence[Any], budget: int | None = None, packs: bool = True) -> None:
    """Write an episode's decision points, judgment counts and acting tokens.

    Inside the caller's transaction, after the episode's steps are written (its
    `judgment_packs` row is counted from them by `core.store.judgment_packs.counts_sql`).

    Args:
        conn: the connection holding the write transaction that stored the episode.
        episode_id: the new episode's id.
        cell_id: its cell (whose budget marks final actions).
        steps: its `core.episode.Step` objects.
        budget: the cell's budget, when the caller has it (else read from `cells`).
        packs: also write its episode and judgment packs now; False when the caller
            writes those of all its episodes at once (`store_episode_packs`, later in
            the same transaction).
    """
    if budget is None:
        budget = cell_budget(conn, cell_id)
    rows = [_DERIVED_ROW(s) for s in steps]
    decisions = _decision_rows(episode_id, budget, rows)
    conn.executemany(INSERT_SQL, decisions)
    if decisions:
        conn.execute(PACK_INSERT_SQL, (episode_id, len(decisions),
                                       pack(episode_id, [d[2:] for d in decisions])))
    conn.execute(_TOTALS_SQL, (*step_totals(rows), episode_id))
    if packs:
        store_episode_packs(conn, [episode_id])


def cell_budget(conn: sqlite3.Connection, cell_id: int) -> int:
    """A cell's budget (which marks its episodes' final actions)."""
    return int(conn.execute("SELECT budget FROM cells WHERE id = ?", (cell_id,)).fetchone()[0])


def store_episode_packs(conn: sqlite3.Connection, episode_ids: Sequence[int]) -> None:
    """Write the episode and judgment packs of episodes just stored with their derived rows.

    After `store_derived` (its totals update drops an episode's pack), in the same
    transaction; several episodes at once cost one query each instead of one per episode.
    """
    if episode_ids:
        store_packs(conn, episode_ids)
        store_counts(conn, episode_ids)


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


def derive_all(conn: sqlite3.Connection, where: str = "", args: Sequence[Any] = (),
               packs: bool = True) -> int:
    """(Re)derive the decision points and acting tokens of stored episodes from their steps.

    Runs inside the caller's transaction (the migration's, or `rederive`'s); reads the
    steps in episode order with one cursor, so memory stays flat.

    Args:
        conn: a connection in a write transaction.
        where: SQL condition on ``s``/``e``/``c`` selecting the episodes (default: all).
        args: its parameters.
        packs: also (re)write the episodes' `decision_packs`, `judgment_packs` and
            `episode_packs` (replayed judgments change the counts; False only in
            `core.store.derived.rederive_stale`, which rebuilds each of them whole).

    Returns:
        Episodes processed.
    """
    clause = f" WHERE {where}" if where else ""
    selected = (f"SELECT e.id FROM episodes e JOIN cells c ON c.id = e.cell_id "
                f"JOIN steps s ON s.episode_id = e.id{clause}")
    conn.execute(f"DELETE FROM decisions WHERE episode_id IN ({selected})", tuple(args))
    if packs:
        conn.execute(f"DELETE FROM decision_packs WHERE episode_id IN ({selected})", tuple(args))
    cursor = conn.execute(_STEPS_SQL + clause + " ORDER BY s.episode_id, s.t, s.discarded DESC",
                          tuple(args))
    n = 0
    derived: list[int] = []
    batch: list[tuple[Any, ...]] = []
    packed: list[tuple[int, int, bytes]] = []
    totals: list[tuple[int, ...]] = []
    for episode_id, budget, steps in _by_episode(cursor):
        decisions = _decision_rows(episode_id, budget, steps)
        batch += decisions
        if packs and decisions:
            packed.append((episode_id, len(decisions),
                           pack(episode_id, [d[2:] for d in decisions])))
        totals.append((*step_totals(steps), episode_id))
        derived.append(episode_id)
        n += 1
        if len(batch) > 50_000:
            conn.executemany(INSERT_SQL, batch)
            if packed:
                conn.executemany(PACK_INSERT_SQL, packed)
            batch, packed = [], []
    conn.executemany(INSERT_SQL, batch)
    if packed:
        conn.executemany(PACK_INSERT_SQL, packed)
    unset = [r[0] for r in conn.execute("SELECT id FROM episodes "
                                        "WHERE acting_input_tokens IS NULL")] if packs else []
    conn.executemany(_TOTALS_SQL, totals)
    conn.execute(f"UPDATE episodes SET {', '.join(c + ' = 0' for c in TOTALS)} "
                 "WHERE acting_input_tokens IS NULL")
    if packs:
        store_packs(conn, [*derived, *unset])  # the updates above dropped their packs
        store_counts(conn, derived)
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
