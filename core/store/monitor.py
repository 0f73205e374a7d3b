"""What the console's dashboard reads: queue, workers, throughput, spend, servers, events.

Every function takes an injectable `now` (seconds since the epoch) so that tests and
snapshots can freeze the clock. Reads only; cheap on a 100,000-episode lab.db
(aggregates over indexed or small tables, one scan of `episodes` for spend).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlite_utils import Database

JOB_STATES = ("queued", "running", "paused", "done", "failed", "cancelled")
EVENT_KINDS = ("freeze", "enqueue", "failed", "retry", "cancel", "pause", "resume")


@dataclass(frozen=True)
class QueueCounts:
    """Jobs per state, and finished episodes stored with an error (excluded from analysis).

    Attributes:
        rate: episodes stored per second over the last `window_s` (see `queue_counts`).
    """

    jobs: dict[str, int]
    episodes: int
    errored: int
    rate: float = 0.0


@dataclass(frozen=True)
class WorkerRow:
    """One worker process as the dashboard shows it.

    Attributes:
        id: host:pid.
        state: running, stopping or stopped as the worker last wrote it, or "lost"
            when it claims to run but its heartbeat is older than the lease.
        age_s: seconds since its last heartbeat.
        jobs: jobs it holds now (state running).
    """

    id: str
    state: str
    age_s: float
    jobs: int


@dataclass(frozen=True)
class Spend:
    """Tokens and dollars of the stored episodes of one model."""

    model: str
    episodes: int
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    dollars: float


@dataclass(frozen=True)
class Event:
    """One line of the events table."""

    at: str
    kind: str
    detail: str


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="microseconds")


def _last_line(text: str | None) -> str:
    lines = (text or "").strip().splitlines()
    return lines[-1][:200] if lines else "(no error recorded)"


def queue_counts(db: Database, window_s: float = 60.0, now: float | None = None) -> QueueCounts:
    """Jobs per state (every state present, zeros included), episode counts and the
    episodes/s over the last `window_s` seconds, in one scan of `episodes`."""
    now = time.time() if now is None else now
    jobs = dict.fromkeys(JOB_STATES, 0)
    jobs.update(db.conn.execute("SELECT state, count(*) FROM jobs GROUP BY state").fetchall())
    total, errored, recent = db.conn.execute(
        "SELECT count(*), count(error), count(CASE WHEN finished_at >= ? THEN 1 END) "
        "FROM episodes", (_iso(now - window_s),)).fetchone()
    return QueueCounts(jobs, int(total), int(errored or 0), int(recent or 0) / window_s)


def workers(db: Database, lease_s: float, now: float | None = None) -> list[WorkerRow]:
    """Worker rows, newest heartbeat first; a silent "running" worker shows as "lost".

    Args:
        lease_s: a worker whose heartbeat is older than this no longer holds its jobs
            (any other worker re-takes them), so it is shown as lost.
        now: the clock (default: time.time()).
    """
    now = time.time() if now is None else now
    held = dict(db.conn.execute(
        "SELECT worker, count(*) FROM jobs WHERE state = 'running' GROUP BY worker").fetchall())
    out = []
    for wid, state, beat in db.conn.execute(
            "SELECT id, state, heartbeat_at FROM workers ORDER BY heartbeat_at DESC, id"):
        age = max(0.0, now - float(beat))
        if state != "stopped" and age > lease_s:
            state = "lost"
        out.append(WorkerRow(str(wid), str(state), age, int(held.get(wid, 0))))
    return out


def episodes_per_s(db: Database, window_s: float = 60.0, now: float | None = None) -> float:
    """Episodes stored per second over the last `window_s` seconds."""
    now = time.time() if now is None else now
    (n,) = db.conn.execute("SELECT count(*) FROM episodes WHERE finished_at >= ?",
                           (_iso(now - window_s),)).fetchone()
    return int(n) / window_s


def spend(db: Database) -> list[Spend]:
    """Tokens (cache reads/writes apart) and dollars so far, one row per model."""
    rows = db.conn.execute(
        "SELECT c.model, count(*), sum(e.input_tokens), sum(e.output_tokens), "
        "sum(e.cache_read_tokens), sum(e.cache_write_tokens), sum(e.cost_usd) "
        "FROM episodes e JOIN cells c ON c.id = e.cell_id GROUP BY c.model ORDER BY c.model")
    return [Spend(str(m), int(n), int(i or 0), int(o or 0), int(cr or 0), int(cw or 0),
                  float(d or 0.0)) for m, n, i, o, cr, cw, d in rows]


def servers(db: Database) -> list[dict[str, Any]]:
    """The newest `lab serve` record per endpoint (model, endpoint, version, up/stopped)."""
    rows = db.conn.execute(
        "SELECT model, served_model, endpoint, version, started_at, stopped_at FROM servers "
        "WHERE id IN (SELECT max(id) FROM servers GROUP BY endpoint) ORDER BY endpoint")
    cols = ("model", "served_model", "endpoint", "version", "started_at", "stopped_at")
    return [dict(zip(cols, r)) for r in rows]


def recent_events(db: Database, limit: int = 20) -> list[Event]:
    """The newest events, newest first: the events table (enqueue, pause, resume,
    cancel, retry), failed jobs with their last error line and frozen amendments."""
    events = [Event(str(a), str(k), str(d)) for a, k, d in db.conn.execute(
        "SELECT at, kind, detail FROM events ORDER BY id DESC LIMIT ?", (limit,))]
    events += [Event(str(at), "failed", f"job {jid}: {_last_line(err)}")
               for jid, at, err in db.conn.execute(
                   "SELECT id, updated_at, last_error FROM jobs WHERE state = 'failed' "
                   "ORDER BY updated_at DESC LIMIT ?", (limit,))]
    events += [Event(str(at), "freeze", f"amendment {aid} frozen: {title}")
               for aid, at, title in db.conn.execute(
                   "SELECT id, frozen_at, title FROM amendments WHERE frozen_at IS NOT NULL "
                   "ORDER BY frozen_at DESC LIMIT ?", (limit,))]
    events.sort(key=lambda e: e.at, reverse=True)
    return events[:limit]


@dataclass(frozen=True)
class JobRow:
    """One job of a grid with its cell and progress, for the console's Jobs tree.

    Attributes:
        id: job id.
        state: the ledger state.
        model, condition_spec, regime, seed, budget: the job's cell (condition as
            stored JSON: the caller labels it with `core.conditions.arm_label`).
        expected: questions in the job.
        stored: of those, episodes stored (errored included).
        errored: of those, episodes stored with an error.
        attempts: times a worker took it.
        last_error: the last line of its last error, if any.
    """

    id: int
    state: str
    model: str
    condition_spec: str
    regime: str
    seed: int
    budget: int
    expected: int
    stored: int
    errored: int
    attempts: int
    last_error: str | None


def job_rows(db: Database, grid_id: int) -> list[JobRow]:
    """The jobs of one grid with their cell and how many of their episodes are stored."""
    rows = db.conn.execute(
        "SELECT j.id, j.state, c.model, c.condition_spec, c.regime, c.seed, c.budget, "
        "json_array_length(j.question_ids), "
        "(SELECT count(*) FROM json_each(j.question_ids) q JOIN episodes e "
        " ON e.cell_id = j.cell_id AND e.question_id = q.value), "
        "(SELECT count(*) FROM json_each(j.question_ids) q JOIN episodes e "
        " ON e.cell_id = j.cell_id AND e.question_id = q.value WHERE e.error IS NOT NULL), "
        "j.attempts, j.last_error FROM jobs j JOIN cells c ON c.id = j.cell_id "
        "WHERE j.grid_id = ? ORDER BY j.id", (grid_id,))
    return [JobRow(int(i), str(st), str(m), str(cs), str(r), int(sd), int(b), int(n), int(s),
                   int(e), int(a), _last_line(err) if err else None)
            for i, st, m, cs, r, sd, b, n, s, e, a, err in rows]


@dataclass(frozen=True)
class LiveRow:
    """A running episode that other processes can tail."""

    id: int
    cell_id: int | None
    question_id: str
    label: str
    worker: str | None
    started_at: str
    steps: int


def running_episodes(db: Database, limit: int = 200) -> list[LiveRow]:
    """Running episodes (the live tables), newest first, with their committed step count."""
    rows = db.conn.execute(
        "SELECT l.id, l.cell_id, l.question_id, l.label, l.worker, l.started_at, "
        "(SELECT count(*) FROM live_steps s WHERE s.live_id = l.id) "
        "FROM live_episodes l ORDER BY l.id DESC LIMIT ?", (limit,))
    return [LiveRow(int(i), None if c is None else int(c), str(q), str(lb), w, str(at), int(n))
            for i, c, q, lb, w, at, n in rows]
