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
from core.end_reasons import APART, apart_counts
from core.store.episodes import COMPLETE
from core.store.jobs import ACTIVE, WAITING, errored_questions
from core.store.monitor import last_line, live_counts
from core.store.probes import replay_progress
from core.store.traces import DEPTHS, trace_progress

STALE_AFTER_S = 3.0
"""A running job whose last heartbeat is older than this is stale: its worker is
probably lost (workers renew every job about once a second, so this is two missed
heartbeats and some slack for a busy machine)."""


def grid_progress(db: Database, now: float | None = None) -> list[dict[str, Any]]:
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
    """
    now = time.time() if now is None else now
    grids = list(db.query("SELECT g.id AS grid, r.name AS run, g.created_at FROM grids g "
                          "JOIN runs r ON r.id = g.run_id ORDER BY g.id"))
    for g in grids:
        jobs = list(db.query("SELECT cell_id, question_ids, state, heartbeat_at, kind, "
                             "params FROM jobs WHERE grid_id = ?", (g["grid"],)))
        pairs = {(j["cell_id"], q) for j in jobs for q in json.loads(j["question_ids"])}
        cells = sorted({c for c, _ in pairs})
        complete: dict[tuple[int, str], str] = {}
        ended: dict[tuple[int, str], str] = {}
        errored: set[tuple[int, str]] = set()
        for cell_id in cells:
            for qid, fin, why in db.conn.execute(
                    f"SELECT question_id, finished_at, end_reason FROM episodes "
                    f"WHERE cell_id = ? AND {COMPLETE}", (cell_id,)):
                complete[(cell_id, qid)] = fin
                ended[(cell_id, qid)] = why
            errored.update((cell_id, q) for q in errored_questions(db, cell_id))
        done = [complete[p] for p in pairs if p in complete]
        failed = errored & pairs
        waiting = _held(jobs, WAITING) & failed
        g.update(
            apart_counts(ended[p] for p in pairs if p in ended),
            cells=len(cells), expected=len(pairs), stored=len(done),
            errored=len(failed - waiting), rerun=len(waiting),
            retryable=len(failed - _held(jobs, ACTIVE)), finished=sorted(done),
            jobs={s: sum(j["state"] == s for j in jobs) for s in
                  ("queued", "running", "paused", "done", "failed", "cancelled")},
            stale=sum(j["state"] == "running" and now - (j["heartbeat_at"] or 0) > STALE_AFTER_S
                      for j in jobs),
            # a dead or stopped worker's leftover live rows are not running (`live_rows`)
            running=live_counts(db, cells, now=now)["running"], unit="episodes", kind=None)
        replay = [j for j in jobs if j["kind"] == "replay"]
        if replay:  # a replay grid's work is its probes, not the episodes they read
            probes = replay_progress(db, replay)
            g.update(expected=probes["expected"], stored=probes["stored"],
                     errored=probes["errored"], rerun=0, retryable=probes["errored"],
                     finished=probes["finished"], running=0,
                     unit="probes", truncated=0, refused=0, kind=probes["kind"])
        traces = [j for j in jobs if j["kind"] == "traces"]
        if traces:  # a trace grid's work is its answer states, not episodes
            states = trace_progress(db, traces)
            g.update(expected=states["expected"], stored=states["stored"],
                     errored=states["errored"], rerun=0, retryable=states["errored"],
                     finished=states["finished"], running=0,
                     unit="states", truncated=0, refused=0, kind=states["kind"])
    return grids


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
        "json_array_length(j.question_ids), "
        "(SELECT count(*) FROM json_each(j.question_ids) q JOIN episodes e "
        " ON e.cell_id = j.cell_id AND e.question_id = q.value), "
        "(SELECT count(*) FROM json_each(j.question_ids) q JOIN episodes e "
        " ON e.cell_id = j.cell_id AND e.question_id = q.value WHERE e.error IS NOT NULL), "
        + "".join("(SELECT count(*) FROM json_each(j.question_ids) q JOIN episodes e ON "
                  "e.cell_id = j.cell_id AND e.question_id = q.value WHERE e.error IS NULL "
                  f"AND e.end_reason = '{reason}'), " for reason in APART) +
        "j.attempts, j.last_error, j.kind, j.params, j.cell_id, j.question_ids "
        "FROM jobs j JOIN cells c ON c.id = j.cell_id WHERE j.grid_id = ? ORDER BY j.id",
        (grid_id,)).fetchall()
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
