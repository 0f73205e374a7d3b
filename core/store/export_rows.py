"""lab export's episodes.csv and steps.csv rows, streamed from one SQLite cursor.

SQLite does the filtering, joins and ordering; each row's cell strings (run, amendment,
model, arm label, condition, hash, regime, budget, set, seed, replicate) come from a
small dict keyed by cell id, built once per cell. Rows are fetched in batches, so
memory does not grow with the database.

Episode values come out as Python objects the stdlib ``csv`` writer formats exactly as
pandas' ``to_csv`` formatted the old frames: NULL as an empty cell, ints as ints
(booleans 0/1), REAL columns through ``repr`` (pandas' shortest round-trip float text).
Steps, five times as many rows and no REAL column, come out as lines SQLite formats
with the same rules (`step_lines`).

Each episode row also splits its extra calls into the calls its condition needs
(``own_calls``) and the ones that only measure (``measurement_calls``); which stored
column holds the own calls depends on the condition, which this layer does not
interpret: the caller passes `OwnCallColumn` (``analysis.measures.cost.own_call_column`` of
each cell's condition). With the per-step tokens in steps.csv, that is all TPC and
the refused turns need (docs/export.md, "Formulas you can recompute").
"""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Callable, Iterator, Sequence
from functools import cache
from typing import Any

from sqlite_utils import Database

from core.conditions import arm_label
from core.pack_labels import label_with_pack
from core.store.selection import Selection, where_clause

_FROM = """
FROM episodes e JOIN cells c ON c.id = e.cell_id JOIN runs r ON r.id = c.run_id
"""

_CELLS_SQL = """
SELECT c.id, r.name, r.amendment_id, c.model, c.condition, c.condition_hash,
       c.condition_spec, c.regime, c.budget, COALESCE(c.question_set, ''), c.seed,
       c.replicate, c.prompt_pack
FROM cells c JOIN runs r ON r.id = c.run_id
"""

_EPISODES_SQL = """
SELECT e.id, e.cell_id, COALESCE(q.dataset, qr.dataset, ''), e.question_id, e.answered,
       e.answer_action, e.correct, e.f1, e.tool_calls, e.extra_calls,
       COALESCE(e.discarded_turns, 0), COALESCE(e.primary_judgments, 0), e.refused_calls,
       e.input_tokens, e.output_tokens, e.cost_usd, e.end_reason, e.error
""" + _FROM + ("LEFT JOIN questions q ON q.id = e.question_id "
                "LEFT JOIN question_refs qr ON qr.id = e.question_id\n")
"""After the cell id and the dataset, the episode's own columns in EPISODE_COLUMNS order,
with the columns an own-call count may come from (`OWN_CALL_SOURCES`) in place of
own_calls and measurement_calls."""
OWN_CALL_SOURCES = ("extra_calls", "discarded_turns", "primary_judgments")
"""The episode columns `OwnCallColumn` may name, in `_EPISODES_SQL` order."""

OwnCallColumn = Callable[[str | None, str], str | None]
"""(condition spec JSON, condition name) → the column of OWN_CALL_SOURCES holding the
calls that condition itself needs, or None (``analysis.measures.cost.own_call_column``)."""

_STEP_VALUES = ("e.question_id", "s.t", "s.action", "s.obs_index", "s.obs_failed",
                "s.obs_source", "s.judgment", "s.judgment_source", "s.stated_judgment",
                "s.streak", "s.forced", "s.refused", "s.discarded", "s.input_tokens",
                "s.output_tokens", "s.reasoning", "s.reasoning_tokens")
"""A step's own columns in steps.csv order after the cell's (as stored: a judgment
replayed later, `lab replay`, is in probes, not here)."""
_STEP_TEXTS = frozenset({"e.question_id", "s.action", "s.obs_source", "s.judgment",
                         "s.judgment_source", "s.stated_judgment", "s.reasoning"})
"""The TEXT ones of `_STEP_VALUES`; the others are INTEGER (obs_index and obs_failed
may be NULL)."""
_STEPS_FROM = """
FROM steps s JOIN episodes e ON e.id = s.episode_id JOIN cells c ON c.id = e.cell_id
JOIN runs r ON r.id = c.run_id
"""
_STEPS_SQL = "SELECT s.episode_id, e.cell_id, " + ", ".join(_STEP_VALUES) + _STEPS_FROM
_STEPS_ORDER = " ORDER BY s.episode_id, s.t, s.discarded"
"""In the steps' key order, which SQLite reads without sorting (a sort by discarded
descending cost a fifth of the rows' CPU at 1 M steps); `_discarded_first` puts each
turn's discarded row before its re-ask, as steps.csv has them."""

BATCH = 20_000
"""Rows fetched from the cursor at a time."""


def _cells(db: Database, exploratory: str) -> dict[int, tuple[Any, ...]]:
    """cell id → (run, amendment or `exploratory`, model, arm, condition, condition_hash,
    regime, budget, question_set, seed, replicate), one arm label per distinct spec (with
    the prompt pack's short hash for a cell run with one, as results rows show it)."""
    labels: dict[str, str] = {}
    out = {}
    for (cell_id, run, amendment, model, condition, chash, spec, regime, budget, qset, seed,
         replicate, pack) in db.conn.execute(_CELLS_SQL):
        if spec not in labels:
            labels[spec] = arm_label(spec)
        out[cell_id] = (run, exploratory if amendment is None else amendment, model,
                        label_with_pack(labels[spec], pack), condition, chash, regime, budget,
                        qset, seed, replicate)
    return out


def _batches(db: Database, sql: str, args: list[Any]) -> Iterator[list[tuple[Any, ...]]]:
    cursor = db.conn.execute(sql, args)
    try:
        while rows := cursor.fetchmany(BATCH):
            yield rows
    finally:
        cursor.close()


def _own_sources(db: Database, own_column: OwnCallColumn) -> dict[int, int | None]:
    """cell id → index into OWN_CALL_SOURCES of its own calls' column (None: no own
    calls), asked once per distinct (spec, condition)."""
    asked: dict[tuple[str | None, str], int | None] = {}
    out = {}
    for cell_id, condition, spec in db.conn.execute(
            "SELECT id, condition, condition_spec FROM cells"):
        key = (spec, condition)
        if key not in asked:
            column = own_column(spec, condition)
            asked[key] = None if column is None else OWN_CALL_SOURCES.index(column)
        out[cell_id] = asked[key]
    return out


def episode_rows(db: Database, selection: Selection | None, version: str,
                 exploratory: str, own_column: OwnCallColumn) -> Iterator[tuple[Any, ...]]:
    """The selection's episodes (errored ones included) as episodes.csv rows, by id.

    Args:
        db: an open lab.db.
        selection: the filters (default: everything).
        version: the project version recorded on every row.
        exploratory: the amendment column of a run no amendment governs.
        own_column: which stored column holds the calls a cell's condition needs
            (``own_calls``; the rest of ``extra_calls`` is ``measurement_calls``).

    Yields:
        Tuples in `analysis.tables.export.EPISODE_COLUMNS` order.

    Raises:
        ValueError: `own_column` names a column outside OWN_CALL_SOURCES.
    """
    where, args = where_clause(db, selection or Selection())
    cells = _cells(db, exploratory)
    sources = _own_sources(db, own_column)
    heads = {cid: c[:8] for cid, c in cells.items()}
    tails = {cid: c[8:] for cid, c in cells.items()}
    for rows in _batches(db, _EPISODES_SQL + where + " ORDER BY e.id", args):
        for r in rows:
            cid = r[1]
            source = sources[cid]
            own = 0 if source is None else r[9 + source]
            yield (r[0], *heads[cid], r[2], *tails[cid], *r[3:10], own, r[9] - own, *r[12:],
                   version)


def step_lines(db: Database, selection: Selection | None = None,
               episodes: tuple[int, int] | None = None) -> Iterator[list[str]]:
    """The selection's steps as steps.csv lines, by episode and t (a turn the
    stated-judgment rule discarded before its re-ask), batch by batch.

    SQLite writes each line's step columns (`_step_line_sql`): fetching them as Python
    values and formatting them with the csv module took a third more CPU (the steps of
    40,000 episodes: 2.82 s against 2.17 s, medians of five). A line is byte for byte
    the row the stdlib writer (`csv_line`'s dialect) writes; a row SQLite's text would
    not match, a value not of its column's declared type or a text holding NUL (which
    SQLite's printf ends at), is read as values and written by that writer.

    Args:
        db: an open lab.db.
        selection: the filters (default: everything).
        episodes: only the steps of the episodes whose ids are in this closed range
            (`episode_spans`; default: every episode).

    Yields:
        Lists of lines (no line ending), in `analysis.tables.export.STEP_COLUMNS` order.
    """
    span = ([] if episodes is None
            else [f"s.episode_id BETWEEN {int(episodes[0])} AND {int(episodes[1])}"])
    where, args = where_clause(db, selection or Selection(), *span)
    cells = {cid: (c[0], c[2], c[3], c[4], c[6]) for cid, c in _cells(db, "").items()}
    heads = {cid: csv_line(c) for cid, c in cells.items()}
    line_sql, params = _step_line_sql()
    sql = ("SELECT s.episode_id, e.cell_id, s.discarded, s.t, " + line_sql + _STEPS_FROM
           + where + _STEPS_ORDER)
    for rows in _discarded_first(_batches(db, sql, [*params, *args])):
        yield [f"{eid},{heads[cid]},{line}" if line is not None
               else csv_line(_step_row(db, eid, t, discarded, cells))
               for eid, cid, discarded, t, line in rows]


def _step_row(db: Database, episode: int, t: int, discarded: int,
              cells: dict[int, tuple[Any, ...]]) -> tuple[Any, ...]:
    """One step's steps.csv row as values (`step_lines`' rows SQLite does not write)."""
    r = db.conn.execute(_STEPS_SQL + " WHERE s.episode_id = ? AND s.t = ? AND s.discarded = ?",
                        (episode, t, discarded)).fetchone()
    return (r[0], *cells[r[1]], *r[2:])


def csv_line(values: Sequence[Any]) -> str:
    """`values` as the stdlib csv writer writes a row in lab's dialect (minimal quoting,
    `os.linesep` line ends; `analysis.tables.csv_files.write_rows_atomic`), without the
    line end."""
    buf = io.StringIO()
    csv.writer(buf, lineterminator=os.linesep).writerow(values)
    return buf.getvalue()[:-len(os.linesep)]


@cache
def _step_line_sql() -> tuple[str, tuple[str, ...]]:
    """SQL for a step's columns after the cell's as one steps.csv line (`step_lines`),
    and its parameters, to go before the query's own.

    A text is quoted, its quotes doubled, when it holds a character the writer quotes
    for (asked of the writer itself, `_quoted_characters`); NULL is an empty cell. The
    line is NULL where SQLite's text of a value could differ from the writer's: an
    INTEGER column holding a REAL (SQLite prints 15 digits, Python the shortest round
    trip), a text or a blob, or a sum of them past 64 bits; a TEXT column holding a blob
    or a NUL (printf's %s ends there). A check per column cost a third more than the
    line: the sums and maxima below check them all in a few calls (any REAL makes the
    sum REAL; a text or blob is above every number, a blob above every text)."""
    special = _quoted_characters()
    params: list[str] = []
    cells = []
    for column in _STEP_VALUES:
        if column in _STEP_TEXTS:
            holds = " OR ".join(f"instr({column}, ?)" for _ in special)
            params += special
            cells.append(f"CASE WHEN {holds} THEN '\"' || replace({column}, '\"', '\"\"') "
                         f"|| '\"' ELSE {column} END")
        else:
            cells.append(column)
    ints = [f"coalesce({c}, 0)" for c in _STEP_VALUES if c not in _STEP_TEXTS]
    texts = [f"coalesce({c}, '')" for c in _STEP_VALUES if c in _STEP_TEXTS]
    odd = [f"typeof({' + '.join(ints)}) != 'integer'",
           f"typeof(max({', '.join(ints)})) != 'integer'",
           f"typeof(max({', '.join(texts)})) != 'text'",
           *(f"instr({c}, ?)" for c in _STEP_VALUES if c in _STEP_TEXTS)]
    line = f"printf('{','.join(['%s'] * len(cells))}', {', '.join(cells)})"
    return (f"CASE WHEN {' OR '.join(odd)} THEN NULL ELSE {line} END",
            ("\0",) * len(texts) + tuple(params))


def _quoted_characters() -> tuple[str, ...]:
    """The characters that make `csv_line`'s writer quote a field (a delimiter, a quote,
    the line end's characters; which ones depends on the dialect and Python's version)."""
    return tuple(c for c in ',"\r\n' if csv_line([f"a{c}b", ""]).startswith('"'))


def _discarded_first(batches: Iterator[list[tuple[Any, ...]]]
                     ) -> Iterator[list[tuple[Any, ...]]]:
    """Step rows ordered by (episode_id, t, discarded), batch by batch, reordered by
    (episode_id, t, discarded descending): each run of rows of one turn (``episode_id``
    at 0 and ``t`` at 3) reversed, a run cut by a batch's end held for the next."""
    held: list[tuple[Any, ...]] = []
    for batch in batches:
        rows = held + batch if held else batch
        last, cut = rows[-1], len(rows) - 1
        while cut and rows[cut - 1][0] == last[0] and rows[cut - 1][3] == last[3]:
            cut -= 1
        held = rows[cut:]
        yield _turns_reversed(rows[:cut])
    if held:
        yield _turns_reversed(held)


def _turns_reversed(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """`rows` with each run of one turn's rows (equal ``episode_id`` and ``t``) reversed
    (a turn has one row but where the stated-judgment rule discarded it)."""
    again = [i for i in range(1, len(rows))
             if rows[i][3] == rows[i - 1][3] and rows[i][0] == rows[i - 1][0]]
    if not again:
        return rows
    out = list(rows)
    k = 0
    while k < len(again):
        first, last = again[k] - 1, again[k]  # the turn's rows: first … last
        while k + 1 < len(again) and again[k + 1] == last + 1:
            k, last = k + 1, last + 1
        out[first:last + 1] = rows[first:last + 1][::-1]
        k += 1
    return out


def episode_spans(db: Database, parts: int) -> list[tuple[int, int] | None]:
    """Up to `parts` consecutive ranges of episode ids covering every stored episode, of
    about equal width (for `step_rows` in pieces written side by side; ids are dense, so
    the pieces hold about as many steps each).

    Args:
        db: an open lab.db.
        parts: how many ranges wanted.

    Returns:
        The closed ranges in id order; ``[None]`` (everything, one piece) when there are
        fewer episodes than parts or `parts` is below 2.
    """
    low, high = db.conn.execute("SELECT min(id), max(id) FROM episodes").fetchone()
    if parts < 2 or low is None or high - low + 1 < parts:
        return [None]
    cuts = [low + (high - low + 1) * k // parts for k in range(parts + 1)]
    return [(cuts[k], cuts[k + 1] - 1) for k in range(parts)]
