"""`lab retry`: queue again what did not produce a complete episode (docs/queue.md).

Four things can be retried for a run, a grid or a job: jobs that failed or were
cancelled (re-opened), errored probes of replay jobs (new replay jobs of the same
request ask exactly those again), errored trace states of `lab traces collect` jobs
(new trace jobs of the same request ask the questions' states not stored complete,
as a second collect would), and errored episodes — pairs (cell, question) whose every
episode ended in a model error (refused connection, 5xx after retries, context
overflow). Each job kind finds its own errored work (`jobs.kinds.base.JobKind.errored`)
and says whether its cells may take a new spec; `retry` loops over the kinds. The
errored questions get new jobs of their kind in the same grid, through the normal
ledger; their errored records stay (an errored trace state is replaced when its retry succeeds).
A cell whose model changed in the registry only by a larger `max_context` (the fix
for a context overflow) takes the new spec; under a governing amendment that is
logged as a deviation.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sqlite_utils import Database

from core import store
from core.conditions import arm_label
from core.errors import ConfigError, LabError
from core.models.registry import ModelSpec, load_registry
from core.store import jobs as ledger
from core.store import traces as trace_rows
from core.store.prereg import add_deviation
from core.store.traces import TRACE_CONDITION
from core.wording import plural
from jobs.kinds import KINDS, job_kind
from jobs.kinds.traces import trace_cell_columns
from jobs.queue import put_on_queue
from jobs.settings import WorkerSettings
from jobs.tasks import cell_from_row

RESPECABLE = frozenset({"max_context"})
"""Model fields a retry may take from a changed registry (only ever larger)."""


@dataclass(frozen=True)
class KindRetry:
    """What `lab retry` asked again of one job kind.

    Attributes:
        kind: the job kind (`jobs.kinds.KINDS`).
        unit: one errored result of it ("episode", "probe", "trace state").
        job_word: one job of it ("job", "replay job", "trace job").
        jobs: the new jobs holding the errored questions.
        units: errored results those jobs ask again.
    """

    kind: str
    unit: str
    job_word: str
    jobs: tuple[int, ...]
    units: int

    @property
    def text(self) -> str:
        """'N errored UNIT(s) in M new JOB(s)'."""
        return (f"{self.units} errored {self.unit}(s) in {len(self.jobs)} new "
                f"{self.job_word}(s)")


@dataclass(frozen=True)
class RetryResult:
    """What one `lab retry` queued.

    Attributes:
        reopened: failed or cancelled jobs queued again.
        kinds: per job kind, what was asked again: episodes always, then every other
            kind the run, grid or job retried has jobs of, in `jobs.kinds.KINDS` order.
        notes: one line per cell that took a new model spec.
        deviations: (amendment id, deviation id, text) logged for governed runs.
    """

    reopened: tuple[int, ...]
    kinds: tuple[KindRetry, ...]
    notes: tuple[str, ...] = ()
    deviations: tuple[tuple[str, int, str], ...] = ()

    @property
    def created(self) -> list[int]:
        """The new jobs holding errored questions, kind by kind."""
        return [j for k in self.kinds for j in k.jobs]

    @property
    def errored(self) -> int:
        """Errored (cell, question) pairs of episode jobs queued again."""
        return sum(k.units for k in self.kinds if k.kind == "episodes")

    @property
    def jobs(self) -> list[int]:
        """Every job queued (re-opened, then created)."""
        return [*self.reopened, *self.created]


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
        overflows = trace_rows.context_overflows(db, run["name"], name)
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
        present = {j["kind"] for j in rows}
        kinds: list[KindRetry] = []
        cells = {j["cell_id"] for j in ledger.jobs_rows(db, reopened)}
        for name in (n for n in KINDS if n == "episodes" or n in present):
            kind = job_kind(name)
            found = kind.errored(db, [j for j in rows if j["kind"] == name])
            created: list[int] = []
            for (grid_id, cell_id, priority, params), qids in found.groups.items():
                created += ledger.insert_jobs(db, grid_id, cell_id, qids, priority, name,
                                              params)
            kinds.append(KindRetry(name, kind.unit, kind.job_word, tuple(created),
                                   found.units))
            if kind.respec:
                cells |= {cell_id for _, cell_id, _, _ in found.groups}
        for cell_id in sorted(cells):
            changed = respec(db, cell_id, models)
            if changed is not None:
                notes.append(changed[0])
                if changed[1] is not None:
                    deviations.append(changed[1])
        result = RetryResult(tuple(reopened), tuple(kinds), tuple(notes), tuple(deviations))
        ledger.log_event(db, "retry", f"{target} {value}: "
                         f"{plural(len(reopened), 'failed/cancelled job')} re-opened, "
                         + ", ".join(k.text for k in kinds)
                         + (" (--errored)" if errored_only else ""))
    if result.jobs:
        put_on_queue(settings, ((job_id, (ledger.job(db, job_id) or {}).get("priority", 0))
                                for job_id in result.jobs))
    return result
