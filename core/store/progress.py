"""How far each grid, and each job of a grid, has got: what `lab status` and the
console's Jobs view show.

An episode job's work is its questions' episodes; a replay job's (`lab replay`,
`lab repair`) is the probes it asks (`core.store.probes.replay_progress`), and a trace
job's (`lab traces collect`) the answer states it asks for
(`core.store.traces.trace_progress`), so each is counted in its own unit.

A module of its own above the ledger (`core.store.jobs`), the live rows
(`core.store.monitor`), the probes and the traces, whose counts it reads: the episode
store imports the live rows and the probes import the episode store, so none of them
could count a replay job's probes without an import cycle.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from sqlite_utils import Database

from core.conditions import arm_label
from core.end_reasons import APART, APART_FIELDS, apart_sql
from core.episode import iso_time
from core.store.episodes import COMPLETE
from core.store.jobs import ACTIVE, WAITING
from core.store.monitor import last_line, live_counts
from core.store.probes import replay_progress
from core.store.traces import DEPTHS, trace_progress

STALE_AFTER_S = 3.0
"""A running job whose last heartbeat is older than this is stale: its worker is
probably lost (workers renew every job about once a second, so this is two missed
heartbeats and some slack for a busy machine)."""


_PAIRS = ("WITH pairs AS (SELECT DISTINCT j.cell_id AS cell_id, q.value AS qid "
          "FROM jobs j, json_each(j.question_ids) q WHERE j.grid_id = ?) ")
"""The grid's (cell, question) pairs, each once (two jobs may hold one pair)."""

_PAIR_COUNTS = (
    _PAIRS + "SELECT count(*), count(e.id), " + apart_sql("e.end_reason", "e.error") + ", "
    "json_group_array(e.finished_at) FILTER (WHERE e.finished_at >= ?), "
    "json_group_array(json_array(p.cell_id, p.qid)) FILTER (WHERE e.id IS NULL AND EXISTS "
    "(SELECT 1 FROM episodes x WHERE x.cell_id = p.cell_id AND x.question_id = p.qid "
    "AND x.error IS NOT NULL)) "
    "FROM pairs p LEFT JOIN episodes e ON e.cell_id = p.cell_id AND e.question_id = p.qid "
    f"AND e.{COMPLETE}")
"""Over a grid's pairs, in one pass that looks each pair up in the index of complete
episodes: the stored pairs, their APART counts, the finish times at or after a bound
(ISO text, compared as stored), and the pairs without a complete episode that have an
errored one, as a JSON array of [cell, question]."""


def grid_progress(db: Database, now: float | None = None,
                  since: float | None = None) -> list[dict[str, Any]]:
    """Per grid: run, expected/stored/errored pairs (probes for a replay grid) and job
    states.

    "stored" counts pairs with a complete episode; "errored" pairs whose episodes
    all errored, but for those a queued or paused job holds ("rerun": that job runs them
    again when it starts, as after a worker stopped mid-job); "retryable" the errored
    pairs no queued, running or paused job holds (what `lab retry --errored` re-runs);
    "stale" running jobs
    whose heartbeat is older than STALE_AFTER_S at `now`. "unit" is "episodes", or
    "probes" for a grid of `lab replay`/`lab repair` jobs: its expected, stored,
    errored and finished count the probes its jobs ask (`core.store.probes.
    replay_progress`), "kind" says which, and "running" is 0 (probes have no live rows).
    A grid of `lab traces collect` jobs counts its answer states the same way (unit
    "states", kind "trace": `core.store.traces.trace_progress`).

    "truncated" and "refused" count the stored pairs whose complete episode ended with
    a truncated generation or a refusal (`core.end_reasons.APART`: complete, not
    errored; 0 for a probes or states grid).

    "finished" lists the stored pairs' finish times (ISO text, sorted). With `since`
    (seconds since the epoch) an episode grid lists only the times at or after it,
    compared as the text lab stores (UTC, as `core.episode.utc_now` writes it; the
    Dashboard's window compares so too): a caller that wants a rate window passes a
    little less than its start and tests each time itself. The pairs are counted in
    SQLite, so a read costs a pass over the grid's pairs in C, not Python sets of them
    (a Jobs view of a paper-scale grid reads again every few seconds).
    """
    now = time.time() if now is None else now
    bound = "" if since is None else iso_time(since)
    grids = list(db.query("SELECT g.id AS grid, r.name AS run, g.created_at FROM grids g "
                          "JOIN runs r ON r.id = g.run_id ORDER BY g.id"))
    for g in grids:
        jobs = list(db.query("SELECT cell_id, question_ids, state, heartbeat_at, kind, "
                             "params, json_array_length(question_ids) AS n FROM jobs "
                             "WHERE grid_id = ?", (g["grid"],)))
        cells = sorted({j["cell_id"] for j in jobs if j["n"]})
        g.update(cells=len(cells),
                 jobs={s: sum(j["state"] == s for j in jobs) for s in
                       ("queued", "running", "paused", "done", "failed", "cancelled")},
                 stale=sum(j["state"] == "running"
                           and now - (j["heartbeat_at"] or 0) > STALE_AFTER_S for j in jobs))
        replay = [j for j in jobs if j["kind"] == "replay"]
        traces = [j for j in jobs if j["kind"] == "traces"]
        if traces:  # a trace grid's work is its answer states, not episodes
            states = trace_progress(db, traces)
            g.update(expected=states["expected"], stored=states["stored"],
                     errored=states["errored"], rerun=0, retryable=states["errored"],
                     finished=states["finished"], running=0,
                     unit="states", truncated=0, refused=0, kind=states["kind"])
        elif replay:  # a replay grid's work is its probes, not the episodes they read
            probes = replay_progress(db, replay)
            g.update(expected=probes["expected"], stored=probes["stored"],
                     errored=probes["errored"], rerun=0, retryable=probes["errored"],
                     finished=probes["finished"], running=0,
                     unit="probes", truncated=0, refused=0, kind=probes["kind"])
        else:
            g.update(_episode_counts(db, g["grid"], jobs, bound),
                     # a dead or stopped worker's leftover live rows are not running
                     running=live_counts(db, cells, now=now)["running"],
                     unit="episodes", kind=None)
    return grids


def _episode_counts(db: Database, grid: int, jobs: list[dict[str, Any]],
                    bound: str) -> dict[str, Any]:
    """An episode grid's expected, stored, errored, rerun, retryable, APART and finished
    counts (`grid_progress`), its pairs counted by `_PAIR_COUNTS`."""
    expected, stored, *apart, finished, failed_json = db.conn.execute(
        _PAIR_COUNTS, (grid, bound)).fetchone()
    failed = {(c, q) for c, q in json.loads(failed_json)}
    if failed:  # which of them a job still holds (few pairs: only their cells' jobs)
        failed_cells = {c for c, _ in failed}
        holding = [j for j in jobs if j["cell_id"] in failed_cells]
        waiting = _held(holding, WAITING) & failed
        retryable = len(failed - _held(holding, ACTIVE))
    else:
        waiting, retryable = set(), 0
    return dict(zip((APART_FIELDS[r] for r in APART), apart, strict=True),
                expected=expected, stored=stored, errored=len(failed - waiting),
                rerun=len(waiting), retryable=retryable, finished=sorted(json.loads(finished)))


def _held(jobs: list[dict[str, Any]], states: tuple[str, ...]) -> set[tuple[int, str]]:
    """The (cell, question) pairs of the jobs in `states`."""
    return {(j["cell_id"], q) for j in jobs if j["state"] in states
            for q in json.loads(j["question_ids"])}


@dataclass(frozen=True)
class JobRow:
    """One job of a grid with its cell and progress, for the console's Jobs tree.

    Attributes:
        id: job id.
        state: the ledger state.
        model, condition_spec, regime, seed, budget: the job's cell (condition as
            stored JSON; `arm` labels it).
        expected: questions in the job (a replay job: the probes it asks).
        stored: of those, episodes stored (errored included); a replay job: probes
            stored (errored included).
        errored: of those, episodes stored with an error; a replay job: probes stored
            with an error.
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
    unit: str = "episodes"
    """"episodes"; "probes" for a `lab replay`/`lab repair` job, "states" for a
    `lab traces collect` job."""
    kind: str | None = None
    """A replay job's probe kind ("trace" for a trace job)."""
    truncated: int = 0
    """Of the stored episodes, complete ones that ended with a generation cut at
    max_tokens (`core.end_reasons`); 0 for a replay or trace job."""
    refused: int = 0
    """Of the stored episodes, complete ones that ended with a refusal."""

    @property
    def arm(self) -> str:
        """The arm as lists name it: the condition's label (`core.conditions.arm_label`),
        or what a trace job collects, "traces · depths 0–3" (a trace cell stores the
        condition "traces" with a placeholder spec of no arm)."""
        if self.unit == "states":
            return f"traces · depths {DEPTHS[0]}–{DEPTHS[-1]}"
        return arm_label(self.condition_spec)


def job_rows(db: Database, grid_id: int) -> list[JobRow]:
    """The jobs of one grid with their cell and how many of their episodes are stored (a
    replay job: how many of its probes are stored or errored, unit "probes")."""
    rows = db.conn.execute(
        "SELECT j.id, j.state, c.model, c.condition_spec, c.regime, c.seed, c.budget, "
        "json_array_length(j.question_ids), count(e.id), count(e.error), "
        + apart_sql("e.end_reason", "e.error") + ", "
        "j.attempts, j.last_error, j.kind, j.params, j.cell_id, j.question_ids "
        "FROM jobs j JOIN cells c ON c.id = j.cell_id "
        "LEFT JOIN json_each(j.question_ids) q "
        "LEFT JOIN episodes e ON e.cell_id = j.cell_id AND e.question_id = q.value "
        "WHERE j.grid_id = ? GROUP BY j.id ORDER BY j.id", (grid_id,)).fetchall()
    out = []
    for i, st, m, cs, r, sd, b, n, s, e, cut, no, a, err, kind, params, cell_id, qids in rows:
        unit, probe_kind = "episodes", None
        if kind == "replay":  # its work is probes, not the episodes they read
            p = replay_progress(db, [{"cell_id": cell_id, "question_ids": qids,
                                      "params": params}])
            n, s, e = p["expected"], p["stored"] + p["errored"], p["errored"]
            unit, probe_kind, cut, no = "probes", p["kind"], 0, 0
        elif kind == "traces":  # its work is answer states, not episodes
            p = trace_progress(db, [{"cell_id": cell_id, "question_ids": qids}])
            n, s, e = p["expected"], p["stored"] + p["errored"], p["errored"]
            unit, probe_kind, cut, no = "states", p["kind"], 0, 0
        out.append(JobRow(int(i), str(st), str(m), str(cs), str(r), int(sd), int(b), int(n),
                          int(s), int(e), int(a), last_line(err) if err else None, unit,
                          probe_kind, int(cut), int(no)))
    return out
