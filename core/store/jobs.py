"""Grids, the job ledger and worker rows (docs/queue.md).

A job is a chunk of at most 50 questions of one cell. Its row is the record of
truth: Huey only carries "run job N" messages, which can be lost when a worker
dies, so a job's state, lease and heartbeat live here.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Sequence
from typing import Any

from sqlite_utils import Database

from core.episode import utc_now
from core.errors import StoreError
from core.redaction import redact_optional
from core.store.base import write
from core.store.episodes import COMPLETE
from core.store.events import log_event as log_event  # callers log as ledger.log_event

ACTIVE = ("queued", "running", "paused")
WAITING = ("queued", "paused")
"""Job states whose job has not started (or was released by a stopping worker): when it
starts it runs each of its questions without a complete episode, errored ones again."""
TARGETS = ("run", "grid", "job")


def _rows(db: Database, sql: str, args: Sequence[Any] = ()) -> list[dict[str, Any]]:
    cur = db.conn.execute(sql, tuple(args))
    cols = [d[0] for d in cur.description]
    return [dict(zip(cols, r)) for r in cur.fetchall()]


def check_run_amendment(db: Database, run: str, amendment_id: str | None) -> None:
    """Refuse, before anything is written, an enqueue into a run started under another
    amendment (`core.store.runs.ensure_run` refuses the same when it writes).

    Raises:
        StoreError: the run exists under another amendment (or none).
    """
    row = db.conn.execute("SELECT amendment_id FROM runs WHERE name = ?", (run,)).fetchone()
    if row is not None and row[0] != amendment_id:
        owner = f"amendment {row[0]}" if row[0] else "no amendment (exploratory)"
        raise StoreError(f"run '{run}' was started under {owner}; use another --run name for "
                         f"this enqueue")


def create_grid(db: Database, run_id: int, spec: dict[str, Any]) -> int:
    """Record one enqueue request; returns the grid id."""
    with write(db):
        cur = db.conn.execute("INSERT INTO grids (run_id, spec, created_at) VALUES (?, ?, ?)",
                              (run_id, json.dumps(spec, sort_keys=True), utc_now()))
        return int(cur.lastrowid or 0)


def cell(db: Database, cell_id: int) -> dict[str, Any]:
    """One cells row as a dict."""
    rows = _rows(db, "SELECT * FROM cells WHERE id = ?", (cell_id,))
    if not rows:
        raise KeyError(cell_id)
    return rows[0]


def stored_questions(db: Database, cell_id: int) -> set[str]:
    """Question ids with a stored (complete, not errored) episode in the cell."""
    return {r[0] for r in db.conn.execute(
        f"SELECT question_id FROM episodes WHERE cell_id = ? AND {COMPLETE}", (cell_id,))}


def last_episode_id(db: Database) -> int:
    """The highest episode id so far (0 when none)."""
    return int(db.conn.execute("SELECT coalesce(max(id), 0) FROM episodes").fetchone()[0])


def unsettled_questions(db: Database, cell_id: int, question_ids: Sequence[str],
                        after_id: int) -> set[str]:
    """Questions with no complete episode and no episode recorded after `after_id`.

    A job that ran to its end leaves none: each question got a complete episode or
    a new errored record (which `lab retry --errored` re-runs).
    """
    settled = {r[0] for r in db.conn.execute(
        f"SELECT question_id FROM episodes WHERE cell_id = ? AND ({COMPLETE} OR id > ?)",
        (cell_id, after_id))}
    return set(question_ids) - settled


ERRORED_SQL = (f"SELECT e.question_id, e.error FROM episodes e WHERE e.cell_id = ? AND "
               f"e.error IS NOT NULL AND NOT EXISTS (SELECT 1 FROM episodes c WHERE "
               f"c.cell_id = e.cell_id AND c.question_id = e.question_id AND c.{COMPLETE}) "
               f"ORDER BY e.id")
"""Errored records of pairs that have no complete episode (the pairs `lab retry` re-runs)."""


def errored_questions(db: Database, cell_id: int) -> dict[str, str]:
    """Question ids of the cell whose episodes all errored, with the latest error of each."""
    return dict(db.conn.execute(ERRORED_SQL, (cell_id,)).fetchall())


def retryable_pairs(db: Database) -> int:
    """Errored (cell, question) pairs with no complete episode that no queued, running or
    paused job holds: what `lab retry --errored` (the Jobs screen's `E`) queues again."""
    cells = [c for (c,) in db.conn.execute(
        "SELECT DISTINCT cell_id FROM episodes WHERE error IS NOT NULL")]
    return sum(len(errored_questions(db, c).keys() - pending_questions(db, c)) for c in cells)


def held_pairs(db: Database, cells: Iterable[int]) -> dict[str, set[tuple[int, str]]]:
    """The (cell, question) pairs of these cells held by queued, running or paused jobs,
    by the holding job's state (a state no job of the cells is in is absent)."""
    cells = sorted(set(cells))
    out: dict[str, set[tuple[int, str]]] = {}
    if not cells:
        return out
    for cell, state, ids in db.conn.execute(
            f"SELECT cell_id, state, question_ids FROM jobs WHERE state IN "
            f"({', '.join('?' * len(ACTIVE))}) AND cell_id IN ({', '.join('?' * len(cells))})",
            (*ACTIVE, *cells)):
        out.setdefault(state, set()).update((cell, q) for q in json.loads(ids))
    return out


def pending_questions(db: Database, cell_id: int) -> set[str]:
    """Question ids of the cell held by queued, running or paused jobs."""
    return {q for pairs in held_pairs(db, [cell_id]).values() for _, q in pairs}


JOB_SIZE = 50
"""Questions per job at most: a job is the unit of leasing, so a lost lease re-runs little."""


def insert_jobs(db: Database, grid_id: int, cell_id: int, question_ids: Sequence[str],
                priority: int = 0, kind: str = "episodes", params: str | None = None,
                size: int = JOB_SIZE) -> list[int]:
    """Add queued jobs of one kind for a cell, one per `size` question ids, in one transaction.

    Args:
        kind: the job kind (`jobs.kind`: what a worker does with the questions).
        params: the kind's parameters as JSON (None for episode jobs).
    """
    now = utc_now()
    ids = []
    with write(db):
        for i in range(0, len(question_ids), size):
            chunk = list(question_ids[i:i + size])
            cur = db.conn.execute(
                "INSERT INTO jobs (grid_id, cell_id, question_ids, state, priority, created_at, "
                "updated_at, kind, params) VALUES (?, ?, ?, 'queued', ?, ?, ?, ?, ?)",
                (grid_id, cell_id, json.dumps(chunk), priority, now, now, kind, params))
            ids.append(int(cur.lastrowid or 0))
    return ids


def job(db: Database, job_id: int) -> dict[str, Any] | None:
    """One jobs row (question_ids decoded) or None."""
    rows = _rows(db, "SELECT * FROM jobs WHERE id = ?", (job_id,))
    if not rows:
        return None
    row = rows[0]
    row["question_ids"] = json.loads(row["question_ids"])
    return row


def acquire(db: Database, job_id: int, worker: str, lease_s: float) -> dict[str, Any] | None:
    """Take the job's lease if it is queued or its lease expired; None otherwise."""
    now = time.time()
    with write(db):
        cur = db.conn.execute(
            "UPDATE jobs SET state = 'running', worker = ?, lease_until = ?, heartbeat_at = ?, "
            "attempts = attempts + 1, updated_at = ? WHERE id = ? AND (state = 'queued' OR "
            "(state = 'running' AND lease_until < ?))",
            (worker, now + lease_s, now, utc_now(), job_id, now))
        if cur.rowcount == 0:
            return None
    return job(db, job_id)


def heartbeat(db: Database, job_id: int, worker: str, lease_s: float) -> str | None:
    """Renew the lease; returns the job's state, or None when another worker holds it."""
    now = time.time()
    with write(db):
        db.conn.execute("UPDATE jobs SET lease_until = ?, heartbeat_at = ? WHERE id = ? AND "
                        "worker = ? AND state = 'running'", (now + lease_s, now, job_id, worker))
        row = db.conn.execute("SELECT state, worker FROM jobs WHERE id = ?", (job_id,)).fetchone()
    if row is None or row[1] != worker:
        return None
    return str(row[0])


def finish(db: Database, job_id: int, worker: str, state: str, error: str | None = None) -> bool:
    """Move a running job this worker holds to `state` (done, failed or queued)."""
    with write(db):
        cur = db.conn.execute(
            "UPDATE jobs SET state = ?, last_error = coalesce(?, last_error), lease_until = NULL, "
            "updated_at = ?, worker = CASE WHEN ? = 'queued' THEN NULL ELSE worker END "
            "WHERE id = ? AND worker = ? AND state = 'running'",
            (state, redact_optional(error), utc_now(), state, job_id, worker))
        return cur.rowcount > 0


def expired(db: Database, now: float | None = None) -> list[int]:
    """Running jobs whose lease has expired, made queued again; returns their ids."""
    now = time.time() if now is None else now
    with write(db):
        ids = [r[0] for r in db.conn.execute(
            "SELECT id FROM jobs WHERE state = 'running' AND lease_until < ?", (now,))]
        db.conn.executemany("UPDATE jobs SET state = 'queued', worker = NULL, lease_until = NULL, "
                            "updated_at = ? WHERE id = ?", [(utc_now(), i) for i in ids])
    return ids


def running_workers(db: Database) -> set[str]:
    """Worker ids holding running jobs."""
    return {r[0] for r in db.conn.execute(
        "SELECT DISTINCT worker FROM jobs WHERE state = 'running' AND worker IS NOT NULL")}


def release_worker_jobs(db: Database, worker: str, reason: str) -> list[int]:
    """Make the running jobs of a worker known to be dead queued again; returns their ids."""
    with write(db):
        ids = [r[0] for r in db.conn.execute(
            "SELECT id FROM jobs WHERE state = 'running' AND worker = ?", (worker,))]
        db.conn.executemany(
            "UPDATE jobs SET state = 'queued', worker = NULL, lease_until = NULL, "
            "last_error = ?, updated_at = ? WHERE id = ? AND state = 'running'",
            [(redact_optional(reason), utc_now(), i) for i in ids])
        db.conn.execute("UPDATE workers SET state = 'lost' WHERE id = ? AND state != 'stopped'",
                        (worker,))
    return ids


def queued(db: Database) -> list[dict[str, Any]]:
    """Queued jobs (id, priority, updated_at)."""
    return _rows(db, "SELECT id, priority, updated_at FROM jobs WHERE state = 'queued' ORDER BY id")


def jobs_rows(db: Database, ids: Sequence[int]) -> list[dict[str, Any]]:
    """Jobs rows (question_ids decoded) of the given ids, in id order."""
    rows = _rows(db, f"SELECT * FROM jobs WHERE id IN ({', '.join('?' * len(ids)) or 'NULL'}) "
                     f"ORDER BY id", ids)
    for row in rows:
        row["question_ids"] = json.loads(row["question_ids"])
    return rows


def cell_run(db: Database, cell_id: int) -> dict[str, Any]:
    """The run (id, name, amendment_id) a cell belongs to."""
    rows = _rows(db, "SELECT r.id, r.name, r.amendment_id FROM cells c JOIN runs r "
                     "ON r.id = c.run_id WHERE c.id = ?", (cell_id,))
    if not rows:
        raise StoreError(f"no cell {cell_id}")
    return rows[0]


def respec_cell(db: Database, cell_id: int, model_spec: str, spec_hash: str) -> None:
    """Record a cell's new model spec (and so its new spec hash).

    Raises:
        StoreError: another cell of the run already has that spec hash.
    """
    with write(db):
        clash = db.conn.execute(
            "SELECT id FROM cells WHERE spec_hash = ? AND id != ? AND run_id = "
            "(SELECT run_id FROM cells WHERE id = ?)", (spec_hash, cell_id, cell_id)).fetchone()
        if clash is not None:
            raise StoreError(f"cell {cell_id}: its run already has cell {clash[0]} with the new "
                             f"model spec; enqueue that cell instead of retrying this one")
        db.conn.execute("UPDATE cells SET model_spec = ?, spec_hash = ? WHERE id = ?",
                        (model_spec, spec_hash, cell_id))


def select_jobs(db: Database, target: str, value: str | int) -> list[int]:
    """Job ids of a run (by name), a grid or a job."""
    if target == "run":
        sql = ("SELECT j.id FROM jobs j JOIN grids g ON g.id = j.grid_id JOIN runs r "
               "ON r.id = g.run_id WHERE r.name = ?")
    elif target == "grid":
        sql = "SELECT j.id FROM jobs j WHERE j.grid_id = ?"
    else:
        sql = "SELECT j.id FROM jobs j WHERE j.id = ?"
    return [r[0] for r in db.conn.execute(sql + " ORDER BY j.id", (value,))]


def transition(db: Database, ids: Sequence[int], from_states: Sequence[str],
               to_state: str) -> list[int]:
    """Move the given jobs that are in `from_states` to `to_state`; returns the moved ids."""
    moved = []
    with write(db):
        for job_id in ids:
            cur = db.conn.execute(
                f"UPDATE jobs SET state = ?, updated_at = ?, lease_until = CASE WHEN ? = 'running' "
                f"THEN lease_until ELSE NULL END WHERE id = ? AND state IN "
                f"({', '.join('?' * len(from_states))})",
                (to_state, utc_now(), to_state, job_id, *from_states))
            if cur.rowcount:
                moved.append(job_id)
    return moved


def reset_attempts(db: Database, ids: Sequence[int]) -> None:
    """Give retried jobs a fresh attempt count."""
    with write(db):
        db.conn.executemany("UPDATE jobs SET attempts = 0 WHERE id = ?", [(i,) for i in ids])


def job_states(db: Database) -> dict[str, int]:
    """Number of jobs per state."""
    return dict(db.conn.execute("SELECT state, count(*) FROM jobs GROUP BY state").fetchall())


def register_worker(db: Database, worker: str) -> None:
    """Insert or refresh a worker row (state running)."""
    with write(db):
        db.conn.execute(
            "INSERT INTO workers (id, started_at, heartbeat_at, state) VALUES (?, ?, ?, 'running') "
            "ON CONFLICT(id) DO UPDATE SET started_at = excluded.started_at, "
            "heartbeat_at = excluded.heartbeat_at, state = 'running'",
            (worker, utc_now(), time.time()))


def worker_heartbeat(db: Database, worker: str, state: str = "running") -> None:
    """Refresh a worker row's heartbeat and state."""
    with write(db):
        db.conn.execute("UPDATE workers SET heartbeat_at = ?, state = ? WHERE id = ?",
                        (time.time(), state, worker))


def worker_state(db: Database, worker: str) -> str | None:
    """State of one worker row, or None."""
    row = db.conn.execute("SELECT state FROM workers WHERE id = ?", (worker,)).fetchone()
    return None if row is None else str(row[0])


def workers(db: Database) -> list[dict[str, Any]]:
    """All worker rows."""
    return _rows(db, "SELECT * FROM workers ORDER BY heartbeat_at DESC")


def live_info(db: Database, live_id: int) -> dict[str, Any] | None:
    """A live_episodes row, or None once the episode has finished."""
    rows = _rows(db, "SELECT * FROM live_episodes WHERE id = ?", (live_id,))
    return rows[0] if rows else None


def finished_episode(db: Database, cell_id: int, question_id: str) -> int | None:
    """Id of the newest stored episode of a (cell, question) (complete or errored), if any."""
    row = db.conn.execute("SELECT id FROM episodes WHERE cell_id = ? AND question_id = ? "
                          "ORDER BY id DESC LIMIT 1", (cell_id, question_id)).fetchone()
    return None if row is None else int(row[0])


def episode_row(db: Database, episode_id: int) -> dict[str, Any] | None:
    """An episode with its cell's model/condition/regime, the gold answer and its
    question's type (``question_type``: `core.data.task_for_type` reads its task)."""
    rows = _rows(db, "SELECT e.*, c.model, c.condition, c.regime, q.answer AS gold, "
                     "q.type AS question_type "
                     "FROM episodes e JOIN cells c ON c.id = e.cell_id "
                     "LEFT JOIN questions q ON q.id = e.question_id WHERE e.id = ?",
                 (episode_id,))
    return rows[0] if rows else None
