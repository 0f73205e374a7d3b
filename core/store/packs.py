"""Packed shadow tables read back: the episode key packs and the decision packs
(`core.store.episode_packs`, `core.store.decisions`), checked against the layout this lab
writes (`core.store.layouts`) and decoded into numpy columns."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import Any

from sqlite_utils import Database

from core.store.decisions import PACKED_ID_SHIFT, packed_words_sql
from core.store.episode_packs import COST_AT, EPISODE_WORDS, NO_WORD, PACK_WORDS, WORD_AT
from core.store.layouts import require_layout

_KEY_PACKS_SQL = ("SELECT count(*), count(words), CAST(group_concat(words, '') AS BLOB), "
                  "group_concat(question_id, char(31)) FROM (SELECT p.words, e.question_id "
                  "FROM episodes e LEFT JOIN episode_packs p ON p.episode_id = e.id "
                  "WHERE e.id <= ? ORDER BY e.id)")
"""The episodes up to an id, those with a pack, and those packs with the questions, in id
order, as one BLOB and one text (question ids joined by the unit separator, U+001F)."""

_KEY_QUESTIONS_SQL = ("SELECT count(*), group_concat(question_id, char(31)) FROM (SELECT "
                      "question_id FROM episodes WHERE id <= ? ORDER BY id)")
"""The episodes up to an id, and their question ids in id order (one scan of ``episodes``,
no join)."""

_KEY_SPAN_SQL = ("SELECT (SELECT min(id) FROM episodes), "
                 "(SELECT max(id) FROM episodes WHERE id <= ?)")
"""The first and last episode id up to an id (two index lookups)."""

_KEY_WORDS_SQL = ("SELECT count(*), CAST(group_concat(words, '') AS BLOB) FROM episode_packs "
                  "WHERE episode_id <= ?")
"""The episode packs up to an id as one BLOB (one scan of ``episode_packs``; in whatever
order SQLite concatenates them: `read_key_packs` checks their ids increase)."""


KeyPackText = tuple[int, bytes, str | None]
"""`key_pack_text`'s read: (episodes, their packs' BLOB in id order, their question ids
joined by the unit separator; None when SQLite gave no text)."""


def key_pack_text(db: Database, last: int | None) -> KeyPackText | None:
    """Every episode's pack up to `last` and its question id, as SQLite hands them over:
    one BLOB and one text for the whole range (`read_key_packs` decodes them; the
    statements run with the GIL released, so `core.store.early_reads` runs them in a
    thread).

    Args:
        db: an open lab.db.
        last: the last episode id (None: all).

    Returns:
        The KeyPackText, or None when an episode in the range has no pack or there is
        no ``episode_packs`` table (a database being migrated): read the rows then.
    """
    last = (1 << 63) - 1 if last is None else int(last)
    try:
        read = _scanned_apart(db, last)
        if read is None:
            total, n, blob, questions = db.conn.execute(_KEY_PACKS_SQL, (last,)).fetchone()
            if n != total:
                return None
            read = (n, blob, questions)
    except sqlite3.OperationalError:  # no episode_packs table (a database being migrated)
        return None
    n, blob, questions = read
    return int(n), bytes(blob or b""), questions if isinstance(questions, str) else None


def read_key_packs(db: Database, upto: int | None, fields: Any,
                   text: KeyPackText | None = None) -> dict[str, Any] | None:
    """`episode_keys_frame`'s rows of every episode (errored ones included) up to `upto`
    from `episode_packs`: one BLOB and one text for the whole range, not a Python
    object per value.

    Args:
        db: an open lab.db.
        upto: the last episode id (None: all).
        fields: the structured dtype of the row read (episode_id, question_id, bad,
            cell_id unless word 1 is read, ``w{i}`` per `EPISODE_WORDS` word i, and
            cost_usd when read).
        text: `key_pack_text(db, upto)` when already read (`core.store.early_reads`).

    Returns:
        The columns of `fields` (the same values the row read gives), or None when an
        episode in the range has no pack, a question id holds the separator, the words
        are not in this layout, or a word read did not fit (the caller reads the rows).

    Raises:
        StoreError: lab.db records another layout for the packs (`require_layout`).
    """
    import numpy as np

    require_layout(db, "episode_packs")
    read = text if text is not None else key_pack_text(db, upto)
    if read is None:
        return None
    n, blob, questions = read
    if not n:
        return {name: np.zeros(0, dtype=fields[name]) for name in fields.names}
    pieces = questions.split("\x1f") if questions is not None else []
    if len(blob) != 8 * PACK_WORDS * n or len(pieces) != n:
        return None
    packs = np.frombuffer(blob, dtype="<i8").reshape(n, PACK_WORDS)
    if not (packs[1:, 0] > packs[:-1, 0]).all():
        return None  # not in id order: not this layout
    rows = {"episode_id": packs[:, 0], "question_id": np.array(pieces, dtype=object),
            "bad": packs[:, 2] != 0}
    for name in fields.names:
        if name == "cell_id":
            rows[name] = packs[:, 1]
        elif name.startswith("w"):
            word = packs[:, WORD_AT[int(name[1:])]]
            if (word == NO_WORD).any():
                return None
            rows[name] = word
        elif name == "cost_usd":
            rows[name] = np.frombuffer(blob, dtype="<f8").reshape(n, PACK_WORDS)[:, COST_AT]
    return rows


def _scanned_apart(db: Database, last: int) -> tuple[int, Any, Any] | None:
    """`read_key_packs`' episodes and packs read by two scans instead of a join (at
    198,000 episodes 0.14 s of SQLite's CPU instead of 0.18), where that gives the same
    rows: the episodes' ids up to `last` are consecutive, the packs there as many, and
    the first and last pack those of the first and last episode. Then the packs, which
    `read_key_packs` checks to be in increasing id order, are the episodes' very ids.

    Returns:
        (n, the packs' BLOB, the question ids' text) as the join reads them; None when the
        ids have gaps (deleted episodes) or the packs do not match: read the join then.
    """
    first, final = db.conn.execute(_KEY_SPAN_SQL, (last,)).fetchone()
    if first is None or final is None:
        return None
    total, questions = db.conn.execute(_KEY_QUESTIONS_SQL, (last,)).fetchone()
    if final - first + 1 != total:
        return None
    n, blob = db.conn.execute(_KEY_WORDS_SQL, (last,)).fetchone()
    size = 8 * PACK_WORDS
    if n != total or not isinstance(blob, bytes) or len(blob) != size * n:
        return None
    if (int.from_bytes(blob[:8], "little", signed=True) != first
            or int.from_bytes(blob[-size:-size + 8], "little", signed=True) != final):
        return None
    return n, blob, questions


def unpack_words(words: Any) -> dict[str, Any]:
    """EPISODE_WORDS' columns from the hex texts (int64 arrays)."""
    import numpy as np

    packed = np.frombuffer(bytes.fromhex("".join(words)), dtype=">u8").astype(np.int64)
    packed = packed.reshape(len(words), len(EPISODE_WORDS))
    out: dict[str, Any] = {}
    for i, word in enumerate(EPISODE_WORDS):
        out.update(unpack_word(word, packed[:, i]))
    return out


def unpack_word(word: tuple[tuple[str, str, int], ...], packed: Any) -> dict[str, Any]:
    """One EPISODE_WORDS word's columns from its int64 values (lowest bits first)."""
    out, shift = {}, 0
    for _, name, bits in word:
        out[name] = (packed >> shift) & ((1 << bits) - 1)
        shift += bits
    return out


_PACKED_COLUMNS = ", ".join(packed_words_sql("d"))


PACKED_SQL = f"""
SELECT d.episode_id, {_PACKED_COLUMNS}
FROM decisions d JOIN episodes e ON e.id = d.episode_id JOIN cells c ON c.id = e.cell_id
JOIN runs r ON r.id = c.run_id
"""
"""Decision rows packed into two integers each by SQLite: reading 3 values per row
instead of 14 is what makes a million decisions load in well under a second."""


_ID_SHIFT = PACKED_ID_SHIFT
"""Where `decisions_frame` with `episode_ids` packs the episode id into the second
integer (above the 23 bits of flags and stated_run): 2 values per row."""


PACKED_BY_ID_SQL = (f"SELECT {_PACKED_COLUMNS} | (d.episode_id << {_ID_SHIFT}) FROM decisions d "
                     "WHERE d.episode_id BETWEEN ? AND ? ORDER BY d.episode_id, d.seq")
"""`decisions_frame` given the episodes: by id range, no join, the id in the second word."""


_PACKS_SQL = ("SELECT COALESCE(sum(n), 0), CAST(group_concat(words, '') AS BLOB) "
              "FROM decision_packs WHERE episode_id BETWEEN ? AND ?")
"""Every pack of an id range as one value: SQLite concatenates the BLOBs (its text
concatenation keeps their bytes); each row's words carry its episode id, so the order
SQLite concatenates in does not matter."""


_ROWS_IN_RANGE_SQL = "SELECT count(*) FROM decisions WHERE episode_id BETWEEN ? AND ?"
"""An index range count (tens of ms for a million rows): the packs are used only when
their ``n`` add up to it."""


@dataclass(frozen=True)
class PackSpan:
    """The decision packs of an episode id range, as `read_packs` checks and decodes them.

    Attributes:
        first: the range's first episode id.
        last: its last episode id.
        rows: rows of ``decisions`` in the range.
        points: decision points the packs there hold (sum of their ``n``).
        blob: the packs' words, concatenated in episode id order.
    """

    first: int
    last: int
    rows: int
    points: int
    blob: bytes


def read_pack_span(db: Database, first: int, last: int) -> PackSpan:
    """Read the decision packs of episode ids first..last (two SQL statements that run in
    SQLite alone, releasing the GIL: `analysis.measures.frames.Frames.prefetch_decisions` runs
    them in a thread while the episodes' keys are read).

    Args:
        db: an open lab.db.
        first: the first episode id.
        last: the last episode id.

    Returns:
        The PackSpan.
    """
    span = (int(first), int(last))
    total = db.conn.execute(_ROWS_IN_RANGE_SQL, span).fetchone()[0]
    n, blob = db.conn.execute(_PACKS_SQL, span).fetchone()
    return PackSpan(span[0], span[1], int(total), int(n), bytes(blob or b""))


def read_packs(db: Database, ids: Any, span: PackSpan | None = None) -> Any:
    """The packed decisions of episodes `ids` (ascending, non-empty) from `decision_packs`.

    Args:
        db: an open lab.db.
        ids: the episode ids.
        span: packs already read for a range holding every id (else read here).

    Returns:
        int64 array (episode_id, word 0, word 1) per decision point in episode and seq
        order, or None when the packs of the id range do not hold every row of
        `decisions` there (a database some writer left unpacked): read the rows then.

    Raises:
        StoreError: lab.db records another layout for the packs (`require_layout`).
    """
    import numpy as np

    require_layout(db, "decision_packs")
    if span is None or not span.first <= ids[0] <= ids[-1] <= span.last:
        span = read_pack_span(db, int(ids[0]), int(ids[-1]))
    if span.points != span.rows or len(span.blob) != 16 * span.rows:
        return None
    # read in place (no int64 copy of the BLOB: 14 MB at 886,000 decisions); the rows
    # are written once, into the array returned
    words = np.frombuffer(span.blob, dtype="<i8").reshape(-1, 2)
    episode = words[:, 1] >> _ID_SHIFT
    if not (episode[1:] >= episode[:-1]).all():
        order = np.argsort(episode, kind="stable")
        words, episode = words[order], episode[order]
    if len(episode) and (episode[0] < span.first or episode[-1] > span.last):
        return None  # words not in this layout (no id where it belongs): read the rows
    at = np.minimum(run_positions(ids, episode), len(ids) - 1)
    keep = ids[at] == episode
    if not keep.all():
        words, episode = words[keep], episode[keep]
    packed = np.empty((len(episode), 3), dtype=np.int64)
    packed[:, 0] = episode
    packed[:, 1:] = words
    packed[:, 2] &= (1 << _ID_SHIFT) - 1
    return packed


def run_positions(ids: Any, wanted: Any) -> Any:
    """``np.searchsorted(ids, wanted)`` where `wanted` comes in runs of equal values (a
    decision per row, an episode's rows together): one search per run, repeated over
    its rows (886,000 decisions of 198,000 episodes: 0.03 -> 0.01 s of CPU).

    Args:
        ids: ascending values searched.
        wanted: the values looked up, ascending (else searched row by row).

    Returns:
        The same positions as ``np.searchsorted(ids, wanted)``.
    """
    import numpy as np

    wanted = np.asarray(wanted)
    if len(wanted) < 2 or not (wanted[1:] >= wanted[:-1]).all():
        return np.searchsorted(ids, wanted)
    starts = np.flatnonzero(np.concatenate(([True], wanted[1:] != wanted[:-1])))
    found = np.searchsorted(ids, wanted[starts])
    return np.repeat(found, np.diff(np.append(starts, len(wanted))))
