"""What the console's dashboard reads: queue, workers, throughput, spend, servers, events.

Every function takes an injectable `now` (seconds since the epoch) so that tests and
snapshots can freeze the clock, and those that judge whether a worker still lives an
injectable `alive` (pid → bool) and `host`. Reads only; cheap on a 100,000-episode lab.db
(aggregates over indexed or small tables); the Dashboard's counts over every episode,
read again every second, are kept between reads (`core.store.tally`).
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from sqlite_utils import Database

from core.episode import iso_time
from core.store.tally import QueueTally, SpendTally

JOB_STATES = ("queued", "running", "paused", "done", "failed", "cancelled")
EVENT_KINDS = ("freeze", "enqueue", "failed", "retry", "cancel", "pause", "resume")


def window_rate(stamps: Iterable[float], now: float, window_s: float) -> tuple[float, float]:
    """Units per second over the `window_s` before `now`, counted from the first unit
    stored in that window (at least one second), and the seconds that covers.

    The Dashboard, the Jobs tree, `lab status` and the ETAs all read this one rate, so
    the same units read the same number on every screen. Counted from the first unit in
    the window rather than over the whole window, a grid that began 10 s ago reads its
    own pace, not a sixth of it.

    Args:
        stamps: when each unit was stored (seconds since the epoch).
        now: the clock.
        window_s: how far back units count.

    Returns:
        (rate, seconds covered): (0.0, window_s) when none was stored in the window.
    """
    window = [ts for ts in stamps if now - ts <= window_s]
    return _pace(len(window), min(window, default=now), now, window_s)


def _pace(count: int, first: float, now: float, window_s: float) -> tuple[float, float]:
    """`window_rate` of `count` units in the window, the first stored at `first`."""
    if not count:
        return 0.0, window_s
    span = max(now - first, 1.0)
    return count / span, min(span, window_s)


@dataclass(frozen=True)
class QueueCounts:
    """Jobs per state, and finished episodes stored with an error (excluded from analysis).

    Attributes:
        rate: episodes stored per second over the last `window_s`, at the read's clock
            (`window_rate`).
    """

    jobs: dict[str, int]
    episodes: int
    errored: int
    rate: float = 0.0
    probes: int = 0
    """Complete probes stored (`lab replay`/`lab repair`)."""
    probes_errored: int = 0
    """Probes stored with an error (`lab retry --errored` asks them again)."""
    probe_rate: float = 0.0
    """Probes stored per second over the last `window_s`, at the read's clock
    (`window_rate`)."""
    truncated: int = 0
    """Complete episodes that ended with a generation cut at max_tokens
    (`core.end_reasons`: not errors, not format failures; counted as not answering)."""
    refused: int = 0
    """Complete episodes that ended with the model's refusal (`core.end_reasons`)."""
    recent: tuple[float, ...] = ()
    """When each episode stored within `window_s` before the read finished (seconds since
    the epoch): what `rate_at` counts, so the rate can fall without another read."""
    window_s: float = 60.0

    def rate_at(self, now: float) -> tuple[float, float]:
        """(episodes stored per second, seconds that covers) over the `window_s` before
        `now` (`window_rate`), from the episodes this read saw: the read's `rate` at the
        read's clock, falling as time passes without another read."""
        return window_rate(self.recent, now, self.window_s)


@dataclass(frozen=True)
class WorkerRow:
    """One worker process as the dashboard shows it.

    Attributes:
        id: host:pid.
        state: running, stopping or stopped as the worker last wrote it, or "lost"
            when it claims to run but its heartbeat is older than the lease.
        age_s: seconds since its last heartbeat.
        jobs: jobs it holds now (state running).
        heartbeat_at: its last heartbeat (seconds since the epoch).
    """

    id: str
    state: str
    age_s: float
    jobs: int
    heartbeat_at: float = 0.0

    def at(self, now: float, lease_s: float, host: str | None = None,
           alive: Callable[[int], bool] | None = None) -> WorkerRow:
        """This row as it reads at `now` without reading lab.db again: its age from the
        stored heartbeat, and lost once that is older than the lease or its process (of
        this host) is gone. A stopped worker stays stopped."""
        age = max(0.0, now - self.heartbeat_at)
        state = self.state
        if state in ("running", "stopping") and (
                age > lease_s or process_gone(self.id, host, alive or pid_alive)):
            state = "lost"
        return replace(self, age_s=age, state=state)

    @property
    def live(self) -> bool:
        """Whether it runs jobs (running or stopping, not lost or stopped)."""
        return self.state in ("running", "stopping")


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


def last_line(text: str | None) -> str:
    """The last line of an error text (at most 200 characters), what a row shows."""
    lines = (text or "").strip().splitlines()
    return lines[-1][:200] if lines else "(no error recorded)"


_PROBE_COUNTS = (
    "SELECT (SELECT count(*) FROM probes) - (SELECT count(*) FROM probes WHERE error IS NOT "
    "NULL), (SELECT count(*) FROM probes WHERE error IS NOT NULL), (SELECT count(*) FROM "
    "probes WHERE error IS NULL AND created_at >= ?), (SELECT min(created_at) FROM probes "
    "WHERE error IS NULL AND created_at >= ?)")
"""The probes complete, errored, and complete since a time with the first of those, in
one statement (one snapshot): a count of the narrowest index and reads of the partial
indexes of migration 0023 (errored probes, complete ones by time), not a scan of every
probe."""


def queue_counts(db: Database, window_s: float = 60.0, now: float | None = None,
                 tally: QueueTally | None = None) -> QueueCounts:
    """Jobs per state (every state present, zeros included), episode counts and the
    episodes/s over the last `window_s` seconds, and the complete episodes that ended
    truncated or refused (`core.end_reasons.APART`); the same for probes (complete,
    errored, per second) in one scan of `probes`.

    Args:
        tally: the episodes counted by earlier reads (`core.store.tally`), which this
            read brings up to date by counting only the episodes stored since; none:
            every episode is counted.
    """
    now = time.time() if now is None else now
    jobs = dict.fromkeys(JOB_STATES, 0)
    jobs.update(db.conn.execute("SELECT state, count(*) FROM jobs GROUP BY state").fetchall())
    since = iso_time(now - window_s)
    total, errored, truncated, refused, finished = (tally or QueueTally()).read(db, since)
    probes, probes_errored, probes_recent, probes_first = db.conn.execute(
        _PROBE_COUNTS, (since, since)).fetchone()
    stamps = tuple(datetime.fromisoformat(f).timestamp() for f in finished)
    first = datetime.fromisoformat(probes_first).timestamp() if probes_first else now
    probe_rate, _ = _pace(int(probes_recent or 0), first, now, window_s)
    return QueueCounts(jobs, int(total), int(errored or 0), window_rate(stamps, now, window_s)[0],
                       int(probes or 0), int(probes_errored or 0), probe_rate,
                       int(truncated or 0), int(refused or 0), stamps, window_s)


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid runs on this host (a zombie counts as dead)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive
        return True
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rpartition(b")")[2].split()[0] != b"Z"
    except (OSError, IndexError):
        return True  # no /proc (not Linux): trust kill(pid, 0)


def process_gone(worker: str | None, host: str | None = None,
                 alive: Callable[[int], bool] = pid_alive) -> bool:
    """Whether `worker` ("host:pid") names a process of this host that no longer exists.

    A worker of another host, or an id that is not host:pid, is never judged gone
    here: only its lease can tell.
    """
    if not worker:
        return False
    host = socket.gethostname() if host is None else host
    name, _, pid = worker.rpartition(":")
    return name == host and pid.isdigit() and int(pid) != os.getpid() and not alive(int(pid))


def workers(db: Database, lease_s: float, now: float | None = None, host: str | None = None,
            alive: Callable[[int], bool] = pid_alive) -> list[WorkerRow]:
    """Worker rows, newest heartbeat first; a dead or silent "running" worker shows as "lost".

    Args:
        lease_s: a worker whose heartbeat is older than this no longer holds its jobs
            (any other worker re-takes them), so it is shown as lost.
        now: the clock (default: time.time()).
        host, alive: this host's name and the pid check (tests inject both); a worker
            of this host whose process is gone is lost at once.
    """
    now = time.time() if now is None else now
    held = dict(db.conn.execute(
        "SELECT worker, count(*) FROM jobs WHERE state = 'running' GROUP BY worker").fetchall())
    out = []
    for wid, state, beat in db.conn.execute(
            "SELECT id, state, heartbeat_at FROM workers ORDER BY heartbeat_at DESC, id"):
        age = max(0.0, now - float(beat))
        if state != "stopped" and (age > lease_s or process_gone(str(wid), host, alive)):
            state = "lost"
        out.append(WorkerRow(str(wid), str(state), age, int(held.get(wid, 0)), float(beat)))
    return out


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
    events += [Event(str(at), "failed", f"job {jid}: {last_line(err)}")
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
class LiveRow:
    """An episode in the live tables that other processes can tail.

    Attributes:
        worker: the worker (host:pid) that runs it.
        state: "running", or "lost" when its worker died, stopped or no longer holds
            the episode's job under a live lease (the row is a leftover that the next
            reconcile removes; the episode itself runs again in a retaken job).
        why: for a lost row, one line saying why.
    """

    id: int
    cell_id: int | None
    question_id: str
    label: str
    worker: str | None
    started_at: str
    steps: int
    state: str = "running"
    why: str | None = None


_LIVE_SQL = (
    "SELECT l.id, l.cell_id, l.question_id, l.label, l.worker, l.started_at, "
    "(SELECT count(*) FROM live_steps s WHERE s.live_id = l.id), "
    # stored: an episode of the pair finished after this row started (the row's own, or
    # another worker's run of the same question: either way this one is not awaited)
    "EXISTS (SELECT 1 FROM episodes e WHERE e.cell_id = l.cell_id AND "
    "e.question_id = l.question_id AND e.finished_at > l.started_at), "
    "w.state, "
    # held: a running job of its worker holds the pair under a lease not yet expired
    "EXISTS (SELECT 1 FROM jobs j, json_each(j.question_ids) q WHERE j.cell_id = l.cell_id "
    "AND j.state = 'running' AND j.worker = l.worker AND j.lease_until >= :now "
    "AND q.value = l.question_id) "
    "FROM live_episodes l LEFT JOIN workers w ON w.id = l.worker {where} "
    "ORDER BY l.id DESC LIMIT :limit")


def _lost_why(worker: str | None, worker_state: str | None, held: bool, host: str | None,
              alive: Callable[[int], bool]) -> str | None:
    """Why a live row that is not stored is a leftover, or None while it may still run."""
    if worker is None:
        return "no worker recorded"
    if process_gone(worker, host, alive):
        return f"worker {worker} is gone"
    if worker_state is None:  # not a `lab worker` (a test, a one-off run): its pid tells
        return None
    if worker_state in ("stopped", "lost"):
        return f"worker {worker} {worker_state}"
    if not held:
        return f"worker {worker} no longer holds its job (lease expired or released)"
    return None


def live_rows(db: Database, now: float | None = None, host: str | None = None,
              alive: Callable[[int], bool] = pid_alive, limit: int = 200,
              live_id: int | None = None) -> list[LiveRow]:
    """The live tables' episodes, newest first, each running or lost; stored ones left out.

    A row belongs to the worker that wrote it and to the lease of the job it runs
    under: it is lost when that worker's process is gone (this host), the worker
    stopped or was found lost, or no running job of the worker holds the episode's
    question under an unexpired lease. A row whose episode is already stored is a
    leftover too and is not returned at all.

    Args:
        now: the clock (default: time.time()).
        host, alive: this host's name and the pid check (tests inject both).
        limit: at most this many rows.
        live_id: only this row.
    """
    now = time.time() if now is None else now
    where = "" if live_id is None else "WHERE l.id = :live_id"
    out = []
    for i, c, q, lb, w, at, n, stored, wstate, held in db.conn.execute(
            _LIVE_SQL.format(where=where), {"now": now, "limit": limit, "live_id": live_id}):
        if stored:
            continue
        why = _lost_why(w, wstate, bool(held), host, alive)
        out.append(LiveRow(int(i), None if c is None else int(c), str(q), str(lb), w, str(at),
                           int(n), "running" if why is None else "lost", why))
    return out


def stale_live_ids(db: Database, now: float | None = None, host: str | None = None,
                   alive: Callable[[int], bool] = pid_alive) -> dict[int, str]:
    """Live rows that no longer stand for a running episode: id → why (stored, or lost)."""
    now = time.time() if now is None else now
    out = {}
    for i, _, _, _, w, _, _, stored, wstate, held in db.conn.execute(
            _LIVE_SQL.format(where=""), {"now": now, "limit": -1, "live_id": None}):
        why = "episode stored" if stored else _lost_why(w, wstate, bool(held), host, alive)
        if why is not None:
            out[int(i)] = why
    return out


def running_episodes(db: Database, limit: int = 200, now: float | None = None,
                     host: str | None = None,
                     alive: Callable[[int], bool] = pid_alive) -> list[LiveRow]:
    """Running episodes (the live tables), newest first, with their committed step count;
    rows of a lost worker come with state "lost" (see `live_rows`)."""
    return live_rows(db, now=now, host=host, alive=alive, limit=limit)


def newest_running(db: Database, now: float | None = None, host: str | None = None,
                   alive: Callable[[int], bool] = pid_alive) -> int | None:
    """Id of the most recently started episode that is running (not lost), or None."""
    rows = [r for r in live_rows(db, now=now, host=host, alive=alive, limit=-1)
            if r.state == "running"]
    return rows[0].id if rows else None


def live_counts(db: Database, cell_ids: list[int] | None = None, now: float | None = None,
                host: str | None = None,
                alive: Callable[[int], bool] = pid_alive) -> dict[str, int]:
    """Live rows by state ("running", "lost"), of the given cells or all of them."""
    out = {"running": 0, "lost": 0}
    wanted = None if cell_ids is None else set(cell_ids)
    for r in live_rows(db, now=now, host=host, alive=alive, limit=-1):
        if wanted is None or r.cell_id in wanted:
            out[r.state] += 1
    return out


# --- errors where the researcher looks (counted in every status view) ---------------

_NOT_REPLAY = "coalesce(j.kind, '') NOT IN ('replay', 'traces')"
"""Episode jobs only: replay and trace jobs count their probes and states
(`core.store.progress.job_rows`)."""
_STILL_ERRORED = ("e.error IS NOT NULL AND NOT EXISTS (SELECT 1 FROM episodes c WHERE "
                  "c.cell_id = e.cell_id AND c.question_id = e.question_id AND c.error IS NULL)")


@dataclass(frozen=True)
class JobErrors:
    """What one episode job's questions came to (pairs, not records: a pair errored
    twice counts once).

    Attributes:
        complete: questions with a complete episode.
        errored: questions whose every episode errored (what `lab retry --errored` re-runs).
        last_error: the last line of the newest error among those, or None.
    """

    complete: int
    errored: int
    last_error: str | None


def job_errors(db: Database, grid_id: int,
               complete: Mapping[int, int] | None = None) -> dict[int, JobErrors]:
    """Per episode job of the grid (replay and trace jobs left out): complete and errored
    questions and the newest error line (see `JobErrors`).

    Two reads: the complete episodes, a pass over the grid's questions that looks each up
    in the index of complete episodes; and the errors, which start from the errored
    records still standing (few) and find the grid's jobs that hold them.

    Args:
        complete: each episode job's complete questions when the caller counted them
            already (`core.store.progress.job_rows`: a job's stored records less its
            errored ones), which saves the first read's pass over the grid.
    """
    if complete is None:
        complete = dict(db.conn.execute(
            "SELECT j.id, count(c.id) FROM jobs j LEFT JOIN json_each(j.question_ids) q "
            "LEFT JOIN episodes c ON c.cell_id = j.cell_id AND c.question_id = q.value AND "
            f"c.error IS NULL WHERE j.grid_id = ? AND {_NOT_REPLAY} GROUP BY j.id",
            (grid_id,)).fetchall())
    errored = {int(i): (int(n), int(last)) for i, n, last in db.conn.execute(
        # materialized, so SQLite starts from the errored records, not every job's episodes
        "WITH still AS MATERIALIZED (SELECT e.id, e.cell_id, e.question_id FROM episodes e "
        f"WHERE {_STILL_ERRORED}) SELECT j.id, count(DISTINCT s.question_id), max(s.id) "
        "FROM still s JOIN jobs j ON j.cell_id = s.cell_id WHERE j.grid_id = ? AND "
        f"{_NOT_REPLAY} AND EXISTS (SELECT 1 FROM json_each(j.question_ids) q "
        "WHERE q.value = s.question_id) GROUP BY j.id", (grid_id,))}
    ids = sorted({last for _, last in errored.values()})
    text = dict(db.conn.execute(f"SELECT id, error FROM episodes WHERE id IN "
                                f"({', '.join('?' * len(ids))})", ids).fetchall()
                ) if ids else {}
    out = {}
    for i, c in sorted(complete.items()):
        n, last = errored.get(int(i), (0, None))
        err = text.get(last) if last is not None else None
        out[int(i)] = JobErrors(int(c), n, last_line(err) if err else None)
    return out


def grid_last_errors(db: Database) -> dict[int, str]:
    """Grid id → the last line of its newest error that still stands: an episode of a
    question with no complete episode, or (a replay grid) a probe stored with an error.
    Grids without one are left out. Starts from the errored records (few), not the jobs."""
    out: dict[int, tuple[str, str]] = {}
    for gid, _, err in db.conn.execute(
            "SELECT j.grid_id, max(e.id), e.error FROM episodes e JOIN jobs j ON "
            f"j.cell_id = e.cell_id AND {_NOT_REPLAY} WHERE {_STILL_ERRORED} AND EXISTS "
            "(SELECT 1 FROM json_each(j.question_ids) q WHERE q.value = e.question_id) "
            "GROUP BY j.grid_id"):
        out[int(gid)] = ("", last_line(err))
    for gid, at, err in db.conn.execute(
            "SELECT j.grid_id, max(p.created_at), p.error FROM probes p "
            "JOIN episodes e ON e.id = p.episode_id JOIN jobs j ON j.cell_id = e.cell_id AND "
            "j.kind = 'replay' AND p.kind = json_extract(j.params, '$.kind') "
            "WHERE p.error IS NOT NULL AND EXISTS (SELECT 1 FROM json_each(j.question_ids) q "
            "WHERE q.value = e.question_id) GROUP BY j.grid_id"):
        if int(gid) not in out or str(at) > out[int(gid)][0]:
            out[int(gid)] = (str(at), last_line(err))
    return {g: line for g, (_, line) in out.items()}


def error_reason(text: str | None) -> str:
    """A short reason for grouping error texts: the tag before the first ':' of the first
    line when it is one word (the model errors' reason: connection, timeout, auth,
    context_overflow …), else the first line up to 40 characters."""
    first = (text or "").strip().splitlines()[0] if (text or "").strip() else ""
    tag, sep, _ = first.partition(":")
    if sep and tag and len(tag) <= 32 and " " not in tag.strip():
        return tag.strip()
    return first[:40] or "(no error text)"


@dataclass(frozen=True)
class ErrorReason:
    """Errored records with one reason.

    Attributes:
        unit: "episodes" or "probes".
        reason: see `error_reason`.
        count: errored records with this reason (every record, as `QueueCounts.errored`).
        example: the last line of the newest of them.
    """

    unit: str
    reason: str
    count: int
    example: str


def errored_by_reason(db: Database) -> list[ErrorReason]:
    """Errored episodes and probes grouped by `error_reason`, most frequent first (an
    episodes reason before a probes one on a tie). Reads only the errored records."""
    groups: dict[tuple[str, str], list] = {}
    for unit, sql in (("episodes", "SELECT error FROM episodes WHERE error IS NOT NULL "
                                   "ORDER BY id"),
                      ("probes", "SELECT error FROM probes WHERE error IS NOT NULL "
                                 "ORDER BY created_at")):
        for (err,) in db.conn.execute(sql):
            g = groups.setdefault((unit, error_reason(err)), [0, ""])
            g[0] += 1
            g[1] = err
    rows = [ErrorReason(u, r, n, last_line(ex)) for (u, r), (n, ex) in groups.items()]
    return sorted(rows, key=lambda x: (-x.count, x.unit != "episodes", x.reason))


@dataclass(frozen=True)
class SpendCounted:
    """`spend` with errored episodes counted only where they made calls.

    Attributes:
        rows: one per model; `episodes` are the complete ones plus the errored ones that
            used tokens or dollars (a refused connection costs nothing and is not spend).
        errored_with_calls: errored episodes counted in `rows` (their tokens are spent).
        errored_without_calls: errored episodes left out (no call answered).
        made_elsewhere: complete episodes left out because they counted no token or
            dollar: their calls were made elsewhere (the paper's released episodes,
            imported, carry none).
    """

    rows: list[Spend]
    errored_with_calls: int
    errored_without_calls: int
    made_elsewhere: int = 0


def spend_counted(db: Database, tally: SpendTally | None = None) -> SpendCounted:
    """Tokens and dollars per model of the episodes, complete or errored, that made calls
    here; the others are only counted (see `SpendCounted`).

    Args:
        tally: the spend counted by earlier reads (`core.store.tally`), brought up to
            date by counting only the episodes stored since; none: every episode is
            counted.
    """
    rows, with_calls, without, elsewhere = (tally or SpendTally()).read(db)
    spent = [Spend(m, n, i, o, cr, cw, d) for m, n, i, o, cr, cw, d in rows]
    return SpendCounted(spent, with_calls, without, elsewhere)


def collapse_stopped(rows: list[WorkerRow], older_than_s: float = 3600.0
                     ) -> tuple[list[WorkerRow], int]:
    """The workers to list one by one, and how many stopped workers older than
    `older_than_s` (heartbeat) were folded away (the Dashboard shows them as one line)."""
    old = [w for w in rows if w.state == "stopped" and w.age_s > older_than_s]
    return [w for w in rows if w not in old], len(old)
