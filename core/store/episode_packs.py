"""Each stored episode's keys and integer values packed into one BLOB, so analysis at
paper scale reads one value per episode.

Reading 198,000 episodes' id, cell, question, error flag and a few packed integers
row by row costs one Python object per value (most of a second, more for cost's
columns), while SQLite scans them in a few hundredths of a second. `episode_packs`
holds, per episode, those values as fixed-width little-endian words, so a reader
asks SQLite for one BLOB of a whole id range and decodes it with numpy
(`core.store.frames.episode_keys_frame`).

A pack is `PACK_SQL`'s row of the episode, packed by `pack`: the stored words equal
a fresh computation by construction. `EPISODE_WORDS` is the integer layout both the
packs and `core.store.frames`' packed episode reads use.
"""

from __future__ import annotations

import math
import sqlite3
import struct
from collections.abc import Sequence
from typing import Any

EPISODE_WORDS = (
    (("e.id", "episode_id", 62),),
    (("e.cell_id", "cell_id", 48), ("COALESCE(e.answer_action + 1, 0)", "_answer_action", 15)),
    (("e.answered", "answered", 16), ("e.correct", "correct", 16), ("e.em", "em", 16),
     ("e.placeholder", "placeholder", 15)),
    (("e.tool_calls", "tool_calls", 16), ("e.extra_calls", "extra_calls", 16),
     ("e.format_failures", "format_failures", 16), ("e.forced_turns", "forced_turns", 15)),
    (("e.refused_calls", "refused_calls", 16),
     ("COALESCE(e.discarded_turns, 0)", "discarded_turns", 16),
     ("COALESCE(e.backup_calls, 0)", "backup_calls", 16),
     ("COALESCE(e.primary_judgments, 0)", "primary_judgments", 15)),
    (("e.input_tokens", "input_tokens", 32), ("e.output_tokens", "output_tokens", 31)),
    (("e.cache_read_tokens", "cache_read_tokens", 32),
     ("e.cache_write_tokens", "cache_write_tokens", 31)),
    (("COALESCE(e.acting_input_tokens, 0)", "acting_input_tokens", 32),
     ("COALESCE(e.acting_output_tokens, 0)", "acting_output_tokens", 31)),
)
"""EPISODE_FRAME_SQL's integer columns packed into 64-bit words: (SQL, column, bits),
lowest bits first (``_answer_action``: answer_action + 1, 0 when NULL)."""


def word_sql(index: int) -> str:
    """One of EPISODE_WORDS as a SQL integer (a word's fields are below 2^63 together).

    Args:
        index: the word.

    Returns:
        The SQL expression (aliases ``e`` for episodes): NULL when a field does not
        fit its bits, so a reader reads the episode plainly then.
    """
    parts, fits, shift = [], [], 0
    for expr, _, bits in EPISODE_WORDS[index]:
        parts.append(f"(({expr}) << {shift})" if shift else f"({expr})")
        fits.append(f"({expr}) BETWEEN 0 AND {(1 << bits) - 1}")
        shift += bits
    return f"CASE WHEN {' AND '.join(fits)} THEN {' | '.join(parts)} END"


def pack_sql() -> str:
    """An episode's pack as SQLite computes it from the current `EPISODE_WORDS`, before
    the WHERE clause: id, cell_id, the error flag, EPISODE_WORDS 1.. (word 0 is the id)
    and cost_usd."""
    return ("SELECT e.id, e.cell_id, e.error IS NOT NULL, "
            + ", ".join(word_sql(i) for i in range(1, len(EPISODE_WORDS)))
            + ", e.cost_usd FROM episodes e")


PACK_SQL = pack_sql()
"""`pack_sql()` of this layout (what `store_packs` writes)."""
LAYOUT_VERSION = 1
"""Bump when `pack` or a reader's decoding changes meaning without changing `pack_sql()`
(the layout's fingerprint, `layout_text`, follows EPISODE_WORDS by itself)."""


def layout_text() -> str:
    """What identifies the packs' layout (`core.store.layouts` fingerprints it): the
    packing query, from the current EPISODE_WORDS, and the cost word's place."""
    return f"{pack_sql()}\ncost word {2 + len(EPISODE_WORDS)} float64 little-endian"


WORD_AT = {i: 2 + i for i in range(1, len(EPISODE_WORDS))}
"""Where a pack holds EPISODE_WORDS word i (0: id, 1: cell_id, 2: error flag)."""
COST_AT = 2 + len(EPISODE_WORDS)
"""Where a pack holds cost_usd (float64 bits; NaN where NULL)."""
PACK_WORDS = COST_AT + 1
"""Little-endian 8-byte words per pack."""
NO_WORD = -1
"""A word whose fields do not fit their bits (`word_sql` NULL): no real word is negative."""
_STRUCT = struct.Struct(f"<{PACK_WORDS - 1}qd")
_INSERT_SQL = "INSERT OR REPLACE INTO episode_packs (episode_id, words) VALUES (?, ?)"
_IDS_PER_QUERY = 500


def pack(row: Sequence[Any]) -> bytes | None:
    """One `PACK_SQL` row as its `episode_packs.words`.

    Args:
        row: id, cell_id, error flag, the words (None where a field does not fit),
            cost_usd (None where NULL).

    Returns:
        PACK_WORDS little-endian words (NO_WORD for a None word, NaN for a NULL cost),
        or None when a value is not an integer (or cost not a number) that fits 8
        bytes: that episode gets no pack, and readers read the rows.
    """
    *ints, cost = row
    try:
        return _STRUCT.pack(*(NO_WORD if v is None else v for v in ints),
                            math.nan if cost is None else cost)
    except (struct.error, TypeError):
        return None


def store_packs(conn: sqlite3.Connection, episode_ids: Sequence[int] | None = None) -> int:
    """Write the `episode_packs` of episodes from their stored rows.

    Runs inside the caller's transaction (the episode store and `derive_all`, after
    they update the episode's totals; migration 0010).

    Args:
        conn: a connection in a write transaction.
        episode_ids: the episodes (default: every stored episode, read by id range).

    Returns:
        Packs written (an episode whose values `pack` cannot hold gets none, and loses
        any it had).
    """
    if episode_ids is None:
        top = conn.execute("SELECT COALESCE(max(id), 0) FROM episodes").fetchone()[0]
        clauses: list[tuple[str, tuple[int, ...]]] = [
            (f"e.id BETWEEN {lo} AND {lo + 49_999}", ()) for lo in range(0, top + 1, 50_000)]
    else:
        ids = sorted({int(i) for i in episode_ids})
        # one episode (every stored episode): a parameter, so the statement is prepared once
        clauses = ([("e.id = ?", (ids[0],))] if len(ids) == 1 else
                   [(f"e.id IN ({', '.join(map(str, ids[at:at + _IDS_PER_QUERY]))})", ())
                    for at in range(0, len(ids), _IDS_PER_QUERY)])
    written = 0
    for clause, args in clauses:
        packs, unpacked = [], []
        for row in conn.execute(f"{PACK_SQL} WHERE {clause}", args):
            words = pack(row)
            if words is None:
                unpacked.append((row[0],))
            else:
                packs.append((row[0], words))
        conn.executemany(_INSERT_SQL, packs)
        conn.executemany("DELETE FROM episode_packs WHERE episode_id = ?", unpacked)
        written += len(packs)
    return written
