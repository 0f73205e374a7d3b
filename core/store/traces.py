"""The traces table (migration 0014): depth-wise answer states of the second seed (issue 21).

A trace state is keyed by (run, model, question, depth); a complete state (its call
answered, whether or not the reply parsed) is never written twice, and an errored
one (the call failed after its retries) is replaced by a later success. `load_traces`
is the reader the seed's tables (`analysis.replay`) read.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
from sqlite_utils import Database

from core.episode import utc_now
from core.store.base import write

TRACE_COLUMNS = ("id", "run", "model", "dataset", "set_name", "question_id", "depth", "answer",
                 "confidence", "parsed", "correct", "judge_correct", "prompt_tokens",
                 "completion_tokens", "plan_sha256", "error", "created_at")
"""Columns of `load_traces`'s frame, in order (the interface the seed's tables read)."""
DEPTHS = (0, 1, 2, 3)
"""Depth t shows evidence slices 1…t (0: none)."""


@dataclass
class TraceRecord:
    """One answer state as collected (what `write_traces` stores).

    Attributes:
        run, model, dataset, set_name, question_id, depth: the state's key and labels.
        answer: the parsed answer, None when the reply did not parse (or the call failed).
        confidence: the stated confidence 0–100, None with `answer`.
        parsed: the reply parsed as the required JSON.
        correct: the dataset scorer's verdict (None when not parsed).
        f1: token F1 against the best reference (None when not parsed).
        judge_correct: the LLM judge's label (None when not asked or unparseable).
        judge_model: the judge asked.
        prompt_tokens, completion_tokens, latency_ms: what the answer call took.
        plan_sha256: the evidence plan the prompt was built from.
        raw: the reply text.
        error: why the call failed (None: a complete state).
        prompts_sha256: the prompt files used.
    """

    run: str
    model: str
    dataset: str
    set_name: str
    question_id: str
    depth: int
    plan_sha256: str
    answer: str | None = None
    confidence: float | None = None
    parsed: bool = False
    correct: bool | None = None
    f1: float | None = None
    judge_correct: bool | None = None
    judge_model: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_ms: float = 0.0
    raw: str | None = None
    error: str | None = None
    prompts_sha256: str | None = None
    prompt_files: dict[str, str] = field(default_factory=dict)
    created_at: str = field(default_factory=utc_now)


_WRITE_COLUMNS = ("run", "model", "dataset", "set_name", "question_id", "depth", "answer",
                  "confidence", "parsed", "correct", "f1", "judge_correct", "judge_model",
                  "prompt_tokens", "completion_tokens", "latency_ms", "plan_sha256", "raw",
                  "error", "prompts_sha256", "created_at")
_INSERT = (f"INSERT INTO traces ({', '.join(_WRITE_COLUMNS)}) VALUES "
           f"({', '.join('?' * len(_WRITE_COLUMNS))}) ON CONFLICT (run, model, question_id, depth) "
           f"DO UPDATE SET {', '.join(f'{c} = excluded.{c}' for c in _WRITE_COLUMNS[6:])} "
           f"WHERE traces.error IS NOT NULL")


def _value(record: TraceRecord, column: str) -> Any:
    value = getattr(record, column)
    return int(value) if isinstance(value, bool) else value


def write_traces(db: Database, records: Iterable[TraceRecord]) -> int:
    """Store trace states in one transaction; a complete state already stored is kept.

    Args:
        db: an open lab.db.
        records: the states.

    Returns:
        The number of rows inserted or (errored rows) replaced.
    """
    n = 0
    with write(db):
        for rec in records:
            if rec.prompt_files and rec.prompts_sha256:
                db.conn.execute("INSERT OR IGNORE INTO prompt_sets (sha256, files, created_at) "
                                "VALUES (?, ?, ?)", (rec.prompts_sha256, json.dumps(
                                    rec.prompt_files, sort_keys=True), rec.created_at))
            n += db.conn.execute(_INSERT, tuple(_value(rec, c) for c in _WRITE_COLUMNS)).rowcount
    return n


def stored_states(db: Database, run: str, model: str, question_ids: Sequence[str]
                  ) -> set[tuple[str, int]]:
    """(question, depth) states of a run's model that are complete (not errored)."""
    out: set[tuple[str, int]] = set()
    for i in range(0, len(question_ids), 500):
        chunk = list(question_ids[i:i + 500])
        out.update(db.conn.execute(
            f"SELECT question_id, depth FROM traces WHERE run = ? AND model = ? AND error IS NULL "
            f"AND question_id IN ({', '.join('?' * len(chunk))})", (run, model, *chunk)))
    return out


def errored_states(db: Database, run: str, model: str, question_ids: Sequence[str]
                   ) -> set[tuple[str, int]]:
    """(question, depth) states of a run's model stored with an error."""
    out: set[tuple[str, int]] = set()
    for i in range(0, len(question_ids), 500):
        chunk = list(question_ids[i:i + 500])
        out.update(db.conn.execute(
            f"SELECT question_id, depth FROM traces WHERE run = ? AND model = ? AND error IS NOT "
            f"NULL AND question_id IN ({', '.join('?' * len(chunk))})", (run, model, *chunk)))
    return out


def _in(column: str, values: Sequence[str]) -> tuple[str, list[str]]:
    return f"{column} IN ({', '.join('?' * len(values))})", list(values)


def load_traces(db: Database, runs: Sequence[str] = (), sets: Sequence[str] = (),
                models: Sequence[str] = ()) -> pd.DataFrame:
    """Stored trace states, one row per (run, model, question, depth), errored ones included.

    Args:
        db: an open lab.db.
        runs: only these runs (default: all).
        sets: only these question sets (default: all).
        models: only these models (default: all).

    Returns:
        A frame with exactly TRACE_COLUMNS, ordered by run, model, question, depth.
        `answer`/`confidence` are NULL (NaN) where the reply did not parse (`parsed`
        0) or the call failed (`error` set); `correct`/`judge_correct` are nullable
        integers (pandas "Int64"), `confidence` is the stated 0–100 value.
    """
    where: list[str] = []
    args: list[str] = []
    for column, values in (("run", runs), ("set_name", sets), ("model", models)):
        if values:
            clause, more = _in(column, values)
            where.append(clause)
            args += more
    sql = (f"SELECT {', '.join(TRACE_COLUMNS)} FROM traces"
           + (" WHERE " + " AND ".join(where) if where else "")
           + " ORDER BY run, model, question_id, depth")
    rows = db.conn.execute(sql, args).fetchall()
    frame = pd.DataFrame(rows, columns=list(TRACE_COLUMNS))
    for column in ("id", "depth", "parsed", "prompt_tokens", "completion_tokens"):
        frame[column] = frame[column].astype("int64")
    for column in ("correct", "judge_correct"):
        frame[column] = frame[column].astype("Int64")
    frame["confidence"] = frame["confidence"].astype("float64")
    return frame
