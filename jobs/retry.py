"""`lab retry`: queue again what did not produce a complete episode (docs/queue.md).

Four things can be retried for a run, a grid or a job: jobs that failed or were
cancelled (re-opened), errored probes of replay jobs (new replay jobs of the same
request ask exactly those again), errored trace states of `lab traces collect` jobs
(new trace jobs of the same request ask the questions' states not stored complete,
as a second collect would), and errored episodes — pairs (cell, question) whose every
episode ended in a model error (refused connection, 5xx after retries, context
overflow). Those get new jobs in the same grid, through the normal ledger; their
errored records stay (an errored trace state is replaced when its retry succeeds).
A cell whose model changed in the registry only by a larger `max_context` (the fix
for a context overflow) takes the new spec; under a governing amendment that is
logged as a deviation.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlite_utils import Database

from core import store
from core.conditions import arm_label
from core.errors import ConfigError, LabError
from core.models.registry import ModelSpec, load_registry
from core.store import jobs as ledger
from core.store import probes as probe_rows
from core.store import traces as trace_rows
from core.store.prereg import add_deviation
from core.store.traces import TRACE_CONDITION
from jobs.kinds.traces import trace_cell_columns
from jobs.queue import enqueue_job, make_huey
from jobs.settings import WorkerSettings
from jobs.tasks import cell_from_row

RESPECABLE = frozenset({"max_context"})
"""Model fields a retry may take from a changed registry (only ever larger)."""


@dataclass(frozen=True)
class RetryResult:
    """What one `lab retry` queued.

    Attributes:
        reopened: failed or cancelled jobs queued again.
        created: new jobs holding errored questions (episode jobs, then replay jobs
            for errored probes).
        errored: errored (cell, question) pairs queued again.
        notes: one line per cell that took a new model spec.
        deviations: (amendment id, deviation id, text) logged for governed runs.
    """

    reopened: tuple[int, ...]
    created: tuple[int, ...]
    errored: int
    notes: tuple[str, ...] = ()
    deviations: tuple[tuple[str, int, str], ...] = ()
    probe_jobs: tuple[int, ...] = ()
    """Of `created`, the replay jobs that ask errored probes again."""
    errored_probes: int = 0
    """Errored probes those replay jobs ask again."""
    replay: bool = False
    """Whether the run, grid or job retried has replay jobs at all."""
    trace_jobs: tuple[int, ...] = ()
    """Of `created`, the trace jobs that ask errored trace states again."""
    errored_states: int = 0
    """Errored trace states those trace jobs ask again."""
    traces: bool = False
    """Whether the run, grid or job retried has trace jobs at all."""

    @property
    def jobs(self) -> list[int]:
        """Every job queued (re-opened, then created)."""
        return [*self.reopened, *self.created]


def errored_groups(db: Database, jobs: Sequence[dict[str, Any]]
                   ) -> dict[tuple[int, int, int], list[str]]:
    """Errored questions of the given jobs not already held by an active job.

    Args:
        jobs: jobs rows with question_ids decoded (ledger.jobs_rows).

    Returns:
        Question ids (in job order, each pair once) by (grid id, cell id, priority).
    """
    errored: dict[int, dict[str, str]] = {}
    pending: dict[int, set[str]] = {}
    out: dict[tuple[int, int, int], list[str]] = {}
    taken: set[tuple[int, str]] = set()
    for job in jobs:
        cell_id = job["cell_id"]
        if cell_id not in errored:
            errored[cell_id] = ledger.errored_questions(db, cell_id)
            pending[cell_id] = ledger.pending_questions(db, cell_id)
        for q in job["question_ids"]:
            if q in errored[cell_id] and q not in pending[cell_id] and (cell_id, q) not in taken:
                taken.add((cell_id, q))
                out.setdefault((job["grid_id"], cell_id, job["priority"]), []).append(q)
    return out


def errored_probe_groups(db: Database, jobs: Sequence[dict[str, Any]]
                         ) -> tuple[dict[tuple[int, int, int, str], list[str]], int]:
    """Questions of the given replay jobs whose probes errored, not already held by an
    active replay job of the same request.

    Args:
        jobs: replay jobs rows with question_ids decoded (ledger.jobs_rows).

    Returns:
        (question ids by (grid id, cell id, priority, params), errored probes in all).
    """
    out: dict[tuple[int, int, int, str], list[str]] = {}
    taken: set[tuple[int, str, str]] = set()
    pending: dict[tuple[int, str], set[str]] = {}
    n = 0
    for job in jobs:
        cell_id, params = job["cell_id"], job["params"]
        key = (cell_id, params)
        if key not in pending:
            pending[key] = probe_rows.pending_replay(db, cell_id, params)
        kind = json.loads(params)["kind"]
        for q, count in probe_rows.errored_probe_questions(db, cell_id, job["question_ids"],
                                                          kind).items():
            if q not in pending[key] and (cell_id, params, q) not in taken:
                taken.add((cell_id, params, q))
                out.setdefault((job["grid_id"], cell_id, job["priority"], params), []).append(q)
                n += count
    return out, n


def errored_trace_groups(db: Database, jobs: Sequence[dict[str, Any]]
                         ) -> tuple[dict[tuple[int, int, int, str], list[str]], int]:
    """Questions of the given trace jobs with an errored state, not already held by an
    active trace job of the same cell.

    Args:
        jobs: trace jobs rows with question_ids decoded (ledger.jobs_rows).

    Returns:
        (question ids by (grid id, cell id, priority, params), errored states in all).
    """
    out: dict[tuple[int, int, int, str], list[str]] = {}
    taken: set[tuple[int, str]] = set()
    pending: dict[int, set[str]] = {}
    n = 0
    for job in jobs:
        cell_id = job["cell_id"]
        if cell_id not in pending:
            pending[cell_id] = trace_rows.pending_trace_questions(db, cell_id)
        cell = trace_rows.trace_cell(db, cell_id)
        errored = trace_rows.errored_states(db, cell["run"], cell["model"], job["question_ids"])
        per_question: dict[str, int] = {}
        for q, _ in errored:
            per_question[q] = per_question.get(q, 0) + 1
        for q in job["question_ids"]:
            if q in per_question and q not in pending[cell_id] and (cell_id, q) not in taken:
                taken.add((cell_id, q))
                out.setdefault((job["grid_id"], cell_id, job["priority"], job["params"]),
                               []).append(q)
                n += per_question[q]
    return out, n


def _larger(old: Any, new: Any) -> bool:
    return isinstance(new, int) and (old is None or (isinstance(old, int) and new > old))


def respec(db: Database, cell_id: int, models: Mapping[str, ModelSpec]
           ) -> tuple[str, tuple[str, int, str] | None] | None:
    """Give a cell its registry model's spec when only a larger max_context changed.

    Returns:
        None when the registry still matches the cell; else (note, deviation) where
        deviation is (amendment id, deviation id, text) for a governed run.

    Raises:
        ConfigError: the model is gone from the registry, or changed in anything
            but a larger max_context.
    """
    row = ledger.cell(db, cell_id)
    name = row["model"]
    model = models.get(name)
    if model is None:
        raise ConfigError(f"cell {cell_id}: model '{name}' is no longer in the registry; "
                          f"restore it to retry this cell")
    if model.to_json() == row["model_spec"]:
        return None
    old, new = json.loads(row["model_spec"]), model.spec()
    changed = sorted(k for k in old.keys() | new.keys() if old.get(k) != new.get(k))
    if set(changed) - RESPECABLE or not _larger(old.get("max_context"),
                                                new.get("max_context")):
        raise ConfigError(f"model '{name}' changed in the registry since cell {cell_id} was "
                          f"enqueued ({', '.join(changed)}); a retry may only raise "
                          f"max_context: restore the rest or enqueue a new run")
    run = ledger.cell_run(db, cell_id)
    if row["condition"] == TRACE_CONDITION:  # a trace cell: its own spec hash, its states
        ledger.respec_cell(db, cell_id, model.to_json(),
                           trace_cell_columns(model, row["question_set"])["spec_hash"])
        overflows = db.conn.execute(
            "SELECT count(*) FROM traces WHERE run = ? AND model = ? AND error LIKE "
            "'context_overflow%'", (run["name"], name)).fetchone()[0]
        what = f"{name} / traces / {row['question_set']}"
        unit = "trace states"
    else:
        ledger.respec_cell(db, cell_id, model.to_json(),
                           cell_from_row(row, model).columns()["spec_hash"])
        overflows = sum(e.startswith("context_overflow")
                        for e in ledger.errored_questions(db, cell_id).values())
        what = f"{name} / {arm_label(row['condition_spec'])} / {row['regime']}"
        unit = "episodes"
    note = (f"cell {cell_id} ({what}, run {run['name']}) retried with max_context "
            f"{old.get('max_context')} → {new['max_context']} ({overflows} context_overflow "
            f"{unit})")
    ledger.log_event(db, "respec", note)
    if run["amendment_id"] is None:
        return note, None
    text = f"lab retry: {note}"
    return note, (run["amendment_id"], add_deviation(db, run["amendment_id"], text), text)


def retry(db: Database, settings: WorkerSettings, target: str, value: str | int,
          errored_only: bool = False) -> RetryResult:
    """Queue again a run's, grid's or job's failed/cancelled jobs and errored questions.

    All of it in one transaction (nothing is queued when a cell cannot be retried),
    then the jobs go on the Huey queue. An event is logged.

    Args:
        target: "run", "grid" or "job".
        value: its name or id.
        errored_only: only the errored questions (`--errored`); leave failed and
            cancelled jobs as they are.

    Raises:
        LabError: no such run, grid or job.
        ConfigError: a retried cell's model changed in the registry in more than a
            larger max_context.
    """
    ids = ledger.select_jobs(db, target, value)
    if not ids:
        raise LabError(f"no jobs for {target} {value!r}")
    models = load_registry(settings.config_path)
    notes: list[str] = []
    deviations: list[tuple[str, int, str]] = []
    with store.write(db):  # all or nothing
        reopened: list[int] = []
        if not errored_only:
            reopened = ledger.transition(db, ids, ("failed", "cancelled"), "queued")
            ledger.reset_attempts(db, reopened)
        rows = ledger.jobs_rows(db, ids)
        replay = [j for j in rows if j["kind"] == "replay"]
        traces = [j for j in rows if j["kind"] == "traces"]
        groups = errored_groups(db, [j for j in rows if j["kind"] not in ("replay", "traces")])
        created: list[int] = []
        for (grid_id, cell_id, priority), qids in groups.items():
            created += ledger.insert_jobs(db, grid_id, cell_id, qids, priority)
        probe_groups, n_probes = errored_probe_groups(db, replay)
        probe_jobs: list[int] = []
        for (grid_id, cell_id, priority, params), qids in probe_groups.items():
            probe_jobs += ledger.insert_jobs(db, grid_id, cell_id, qids, priority, "replay",
                                             params)
        created += probe_jobs
        state_groups, n_states = errored_trace_groups(db, traces)
        trace_jobs: list[int] = []
        for (grid_id, cell_id, priority, params), qids in state_groups.items():
            trace_jobs += ledger.insert_jobs(db, grid_id, cell_id, qids, priority, "traces",
                                             params)
        created += trace_jobs
        cells = ({j["cell_id"] for j in ledger.jobs_rows(db, reopened)}
                 | {c for _, c, _ in groups} | {c for _, c, _, _ in state_groups})
        for cell_id in sorted(cells):
            changed = respec(db, cell_id, models)
            if changed is not None:
                notes.append(changed[0])
                if changed[1] is not None:
                    deviations.append(changed[1])
        n_errored = sum(len(q) for q in groups.values())
        ledger.log_event(db, "retry", f"{target} {value}: {len(reopened)} failed/cancelled jobs "
                         f"re-opened, {n_errored} errored episodes in "
                         f"{len(created) - len(probe_jobs) - len(trace_jobs)} new jobs"
                         + (f", {n_probes} errored probes in {len(probe_jobs)} new replay jobs"
                            if replay else "")
                         + (f", {n_states} errored trace states in {len(trace_jobs)} new trace "
                            f"jobs" if traces else "")
                         + (" (--errored)" if errored_only else ""))
    result = RetryResult(tuple(reopened), tuple(created), n_errored, tuple(notes),
                         tuple(deviations), tuple(probe_jobs), n_probes, bool(replay),
                         tuple(trace_jobs), n_states, bool(traces))
    if result.jobs:
        huey, task = make_huey(settings)
        for job_id in result.jobs:
            enqueue_job(huey, task, job_id, (ledger.job(db, job_id) or {}).get("priority", 0))
    return result
