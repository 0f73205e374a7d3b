"""The traces table (migration 0014): the second seed's depth-wise answer states (docs/traces.md).

A trace state is keyed by (run, model, question, depth); a complete state (its call
answered, whether or not the reply parsed) is never written twice, and an errored
one (the call failed after its retries) is replaced by a later success. `load_traces`
is the reader the seed's tables (`analysis.replay`) read.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from sqlite_utils import Database

from core.episode import utc_now
from core.store.model_results import upsert_sql, write_results

if TYPE_CHECKING:  # pandas loads when a frame is built, not on import
    import pandas as pd

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
        copied_from: the depth whose state this one copies (its slice of the plan is
            empty: the seed's App. B copies the state before instead of asking); None
            for a state the model was asked.
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
    copied_from: int | None = None

    def copied_to(self, depth: int) -> TraceRecord:
        """This state stored again at `depth` as a copy (no call: no tokens, latency or
        reply); a copy of a copy names the state first asked. An errored state gives
        an errored copy, asked again with it by the next collect."""
        origin = self.depth if self.copied_from is None else self.copied_from
        return replace(self, depth=depth, copied_from=origin, prompt_tokens=0,
                       completion_tokens=0, latency_ms=0.0, raw=None, prompt_files={},
                       error=None if self.error is None else
                       f"copies depth {origin}, which failed: {self.error}",
                       created_at=utc_now())


_WRITE_COLUMNS = ("run", "model", "dataset", "set_name", "question_id", "depth", "answer",
                  "confidence", "parsed", "correct", "f1", "judge_correct", "judge_model",
                  "prompt_tokens", "completion_tokens", "latency_ms", "plan_sha256", "raw",
                  "error", "prompts_sha256", "created_at", "copied_from")
_INSERT = upsert_sql("traces", _WRITE_COLUMNS, ("run", "model", "question_id", "depth"),
                     _WRITE_COLUMNS[6:])


def write_traces(db: Database, records: Iterable[TraceRecord]) -> int:
    """Store trace states in one transaction; a complete state already stored is kept.

    Returns:
        The number of rows inserted or (errored rows) replaced.
    """
    return write_results(db, _INSERT, _WRITE_COLUMNS, records)


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


def complete_records(db: Database, run: str, model: str, keys: Sequence[tuple[str, int]]
                     ) -> dict[tuple[str, int], TraceRecord]:
    """The complete stored states among `keys` ((question, depth) of a run's model), as
    records (what a copy of them needs; the reply text is left out)."""
    out: dict[tuple[str, int], TraceRecord] = {}
    wanted = set(keys)
    qids = sorted({q for q, _ in wanted})
    columns = [c for c in _WRITE_COLUMNS if c != "raw"]
    for i in range(0, len(qids), 500):
        chunk = qids[i:i + 500]
        for row in db.conn.execute(
                f"SELECT {', '.join(columns)} FROM traces WHERE run = ? AND model = ? AND "
                f"error IS NULL AND question_id IN ({', '.join('?' * len(chunk))})",
                (run, model, *chunk)):
            values = dict(zip(columns, row))
            key = (values["question_id"], int(values["depth"]))
            if key in wanted:
                for flag in ("parsed", "correct", "judge_correct"):
                    if values[flag] is not None:
                        values[flag] = bool(values[flag])
                out[key] = TraceRecord(**values)
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


def episode_cells(db: Database, run: str) -> int:
    """How many cells of episodes (not of trace states) a run holds."""
    return int(db.conn.execute(
        "SELECT count(*) FROM cells c JOIN runs r ON r.id = c.run_id WHERE r.name = ? AND "
        "c.condition != ?", (run, TRACE_CONDITION)).fetchone()[0])


def context_overflows(db: Database, run: str, model: str) -> int:
    """A run's model's trace states stored with a context overflow."""
    return int(db.conn.execute(
        "SELECT count(*) FROM traces WHERE run = ? AND model = ? AND error LIKE "
        "'context_overflow%'", (run, model)).fetchone()[0])


def _in(column: str, values: Sequence[str]) -> tuple[str, list[str]]:
    return f"{column} IN ({', '.join('?' * len(values))})", list(values)


def load_traces(db: Database, runs: Sequence[str] = (), sets: Sequence[str] = (),
                models: Sequence[str] = (), new_evidence: bool = False) -> pd.DataFrame:
    """Stored trace states, one row per (run, model, question, depth), errored ones included.

    Args:
        db: an open lab.db.
        runs: only these runs (default: all).
        sets: only these question sets (default: all).
        models: only these models (default: all).
        new_evidence: add a boolean `new_evidence` column: the state's depth revealed
            a non-empty slice of its plan (False at depth 0; a plan of fewer than three
            passages shows at depth 3 what depth 2 showed, the seed's "copied" states).

    Returns:
        A frame with exactly TRACE_COLUMNS (and `new_evidence` when asked), ordered by
        run, model, question, depth. `answer`/`confidence` are NULL (NaN) where the
        reply did not parse (`parsed` 0) or the call failed (`error` set);
        `correct`/`judge_correct` are nullable integers (pandas "Int64"), `confidence`
        is the stated 0–100 value.
    """
    where, args = _filters(runs, sets, models)
    sql = (f"SELECT {', '.join(TRACE_COLUMNS)} FROM traces{where} "
           f"ORDER BY run, model, question_id, depth")
    rows = db.conn.execute(sql, args).fetchall()
    import pandas as pd

    frame = pd.DataFrame(rows, columns=list(TRACE_COLUMNS))
    for column in ("id", "depth", "parsed", "prompt_tokens", "completion_tokens"):
        frame[column] = frame[column].astype("int64")
    for column in ("correct", "judge_correct"):
        frame[column] = frame[column].astype("Int64")
    frame["confidence"] = frame["confidence"].astype("float64")
    if new_evidence:
        slices = _plan_slices(db, sorted(set(frame["plan_sha256"])))
        frame["new_evidence"] = [d > 0 and d in slices.get(sha, ()) for sha, d in
                                 zip(frame["plan_sha256"], frame["depth"])]
        frame["new_evidence"] = frame["new_evidence"].astype(bool)
    return frame


EXPORT_COLUMNS = ("id", "run", "model", "dataset", "set_name", "question_id", "depth",
                  "answer", "confidence", "parsed", "correct", "f1", "judge_correct",
                  "judge_model", "prompt_tokens", "completion_tokens", "latency_ms",
                  "plan_sha256", "copied_from", "error", "prompts_sha256", "created_at", "raw")
"""Columns of traces.csv (`lab export`): every column of the traces table."""


def _filters(runs: Sequence[str], sets: Sequence[str], models: Sequence[str]
             ) -> tuple[str, list[str]]:
    where: list[str] = []
    args: list[str] = []
    for column, values in (("run", runs), ("set_name", sets), ("model", models)):
        if values:
            clause, more = _in(column, values)
            where.append(clause)
            args += more
    return (" WHERE " + " AND ".join(where) if where else ""), args


def count_traces(db: Database, runs: Sequence[str] = (), sets: Sequence[str] = (),
                 models: Sequence[str] = ()) -> int:
    """Stored trace states of these runs, sets and models (default: all)."""
    if "traces" not in db.table_names():
        return 0
    where, args = _filters(runs, sets, models)
    return int(db.conn.execute(f"SELECT count(*) FROM traces{where}", args).fetchone()[0])


def export_rows(db: Database, runs: Sequence[str] = (), sets: Sequence[str] = (),
                models: Sequence[str] = (), batch: int = 2000) -> Iterator[tuple[Any, ...]]:
    """Every stored state (errored and copied ones included) as traces.csv rows, by
    run, model, question and depth, read in batches from one cursor.

    Yields:
        Tuples in EXPORT_COLUMNS order (booleans as 0/1, NULL as None).
    """
    where, args = _filters(runs, sets, models)
    cursor = db.conn.execute(f"SELECT {', '.join(EXPORT_COLUMNS)} FROM traces{where} "
                             f"ORDER BY run, model, question_id, depth", args)
    while rows := cursor.fetchmany(batch):
        yield from rows


def _plan_slices(db: Database, shas: Sequence[str]) -> dict[str, set[int]]:
    """plan_sha256 → the slice numbers that hold at least one passage."""
    out: dict[str, set[int]] = {}
    for i in range(0, len(shas), 500):
        chunk = list(shas[i:i + 500])
        for sha, plan in db.conn.execute(
                f"SELECT plan_sha256, plan FROM evidence_plans WHERE plan_sha256 IN "
                f"({', '.join('?' * len(chunk))})", chunk):
            out[sha] = {int(p["slice"]) for p in json.loads(plan)["passages"]}
    return out


# --- trace jobs on the ledger (jobs.kind = 'traces') ---------------------------------

TRACE_CONDITION = "traces"
"""The `condition` of a trace cell: a cell that holds no episodes, only the trace jobs of
one (run, model, question set) on the job ledger."""


def pending_trace_questions(db: Database, cell_id: int) -> set[str]:
    """Questions of a trace cell held by queued, running or paused trace jobs."""
    out: set[str] = set()
    for (ids,) in db.conn.execute(
            "SELECT question_ids FROM jobs WHERE cell_id = ? AND kind = 'traces' "
            "AND state IN ('queued', 'running', 'paused')", (cell_id,)):
        out.update(json.loads(ids))
    return out


def trace_cell(db: Database, cell_id: int) -> dict[str, Any]:
    """A trace cell's run name, model, model spec and question set."""
    row = db.conn.execute(
        "SELECT r.name, c.model, c.model_spec, c.question_set FROM cells c JOIN runs r "
        "ON r.id = c.run_id WHERE c.id = ?", (cell_id,)).fetchone()
    if row is None:
        raise KeyError(cell_id)
    return {"run": row[0], "model": row[1], "model_spec": row[2], "question_set": row[3]}


def unsettled_trace_questions(db: Database, cell_id: int, question_ids: Sequence[str]
                              ) -> set[str]:
    """Questions of a trace job with a depth that has no row (complete or errored) yet.

    A trace job that ran to its end leaves none: each state got a complete row or an
    errored one (which the next `lab traces collect` asks again).
    """
    cell = trace_cell(db, cell_id)
    have: dict[str, int] = {}
    for i in range(0, len(question_ids), 500):
        chunk = list(question_ids[i:i + 500])
        for qid, n in db.conn.execute(
                f"SELECT question_id, count(*) FROM traces WHERE run = ? AND model = ? AND "
                f"question_id IN ({', '.join('?' * len(chunk))}) GROUP BY question_id",
                (cell["run"], cell["model"], *chunk)):
            have[qid] = int(n)
    return {q for q in question_ids if have.get(q, 0) < len(DEPTHS)}


def trace_progress(db: Database, jobs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """State progress of a trace grid's jobs: what `lab status` shows for it.

    Args:
        db: an open lab.db.
        jobs: the grid's trace jobs rows (cell_id, question_ids as JSON or a list).

    Returns:
        {"kind": "trace", "expected" (questions × 4 depths), "stored" (complete
        states), "errored" (states whose last call failed: the next collect asks them
        again), "finished" (the complete states' created_at, sorted)}.
    """
    wanted: dict[int, set[str]] = {}
    for job in jobs:
        qids = job["question_ids"]
        wanted.setdefault(job["cell_id"], set()).update(
            json.loads(qids) if isinstance(qids, str) else qids)
    expected = errored = 0
    finished: list[str] = []
    for cell_id, qids in wanted.items():
        cell = trace_cell(db, cell_id)
        expected += len(qids) * len(DEPTHS)
        ordered = sorted(qids)
        for i in range(0, len(ordered), 500):
            chunk = ordered[i:i + 500]
            for error, created in db.conn.execute(
                    f"SELECT error, created_at FROM traces WHERE run = ? AND model = ? AND "
                    f"question_id IN ({', '.join('?' * len(chunk))})",
                    (cell["run"], cell["model"], *chunk)):
                if error is None:
                    finished.append(created)
                else:
                    errored += 1
    return {"kind": "trace", "expected": expected, "stored": len(finished), "errored": errored,
            "finished": sorted(finished)}
