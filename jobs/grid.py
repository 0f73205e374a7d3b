"""Grids: models × conditions × regimes × question set × budgets × seeds → cells → jobs.

Enqueueing a cell that already exists resumes it: only questions with no stored
episode and no active job are queued, so nothing ever runs twice. Every plan
passes the pre-registration gate first (core.prereg.gate).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from itertools import product
from typing import Any

from sqlite_utils import Database

from core import prereg, store
from core.bounds import MAX_BUDGET
from core.conditions import Condition, parse_condition, with_rate
from core.errors import ConfigError
from core.limits import too_long
from core.models.cost import estimate_cost
from core.models.registry import ModelSpec, resolve_model
from core.regimes import parse_regime
from core.runner import CellSpec
from core.store import jobs as ledger
from core.store import prompt_packs
from core.store.imports import imported_runs

INT64_MAX = 2**63 - 1
"""The largest integer SQLite stores (seeds, replicate, priority are stored)."""


@dataclass(frozen=True)
class GridRequest:
    """One `lab enqueue`."""

    models: tuple[str, ...]
    conditions: tuple[str, ...]
    regimes: tuple[str, ...]
    question_set: str
    budgets: tuple[int, ...] = (8,)
    seeds: tuple[int, ...] = (0,)
    replicate: int = 0
    run: str = "default"
    amendment: str | None = None
    priority: int = 0


@dataclass
class CellPlan:
    """A cell and the questions it still needs."""

    cell: CellSpec
    missing: list[str]
    max_calls: int


@dataclass
class GridPlan:
    """What an enqueue would do."""

    request: GridRequest
    cells: list[CellPlan] = field(default_factory=list)
    question_ids: list[str] = field(default_factory=list)
    mode: str = "exploratory"
    notes: tuple[str, ...] = ()
    """What `deduplicate` dropped from the request, one line each."""

    @property
    def episodes(self) -> int:
        """Episodes that would run."""
        return sum(len(c.missing) for c in self.cells)

    @property
    def jobs(self) -> int:
        """Jobs that would be queued."""
        return sum(-(-len(c.missing) // ledger.JOB_SIZE) for c in self.cells)

    @property
    def max_model_calls(self) -> int:
        """Upper bound on model calls: acting turns plus judgment forks."""
        return sum(c.max_calls * len(c.missing) for c in self.cells)

    def estimate(self) -> dict[str, dict[str, float | int]]:
        """Upper-bound calls, tokens and dollars per real (non-sim) model, before running."""
        out: dict[str, dict[str, float | int]] = {}
        for c in self.cells:
            if c.cell.model.in_process or not c.missing:
                continue
            est = estimate_cost(c.cell.model, len(c.missing), c.cell.budget,
                                judge=c.cell.condition.asks_judgments)
            total = out.setdefault(c.cell.model.name, dict.fromkeys(est, 0))
            for key, value in est.items():
                total[key] += value
        return out

    def summary(self) -> dict[str, Any]:
        """Counts as a dict (the --json output)."""
        sims = sum(len(c.missing) for c in self.cells if c.cell.model.in_process)
        return {
            "cells": len(self.cells), "new_episodes": self.episodes, "jobs": self.jobs,
            "max_model_calls": self.max_model_calls, "sim_episodes": sims,
            "estimate": self.estimate(),
            "already_stored_or_queued": sum(
                len(self.question_ids) - len(c.missing) for c in self.cells),
            "mode": self.mode, "request": asdict(self.request), "notes": list(self.notes),
        }


def _keep_first(option: str, values: Sequence[Any], key: Callable[[Any], Any],
                notes: list[str]) -> tuple[Any, ...]:
    groups: dict[Any, list[Any]] = {}
    for value in values:
        groups.setdefault(key(value), []).append(value)
    for same in groups.values():
        if len(same) > 1 and len(set(map(str, same))) == 1:
            notes.append(f"{option}: {same[0]} is listed {len(same)} times; queued once")
        elif len(same) > 1:
            notes.append(f"{option}: {', '.join(map(str, same))} are the same; queued once "
                         f"as {same[0]}")
    return tuple(same[0] for same in groups.values())


def deduplicate(request: GridRequest) -> tuple[GridRequest, tuple[str, ...]]:
    """The request with every repeated model, condition, regime, budget and seed kept once.

    Conditions and regimes are repeats when they parse to the same spec
    (`enforced_rule` and `enforced_rule:k=5` are one arm), so a grid never queues the
    same cell twice (which would run, and pay for, its episodes twice).

    Returns:
        (the de-duplicated request, one note per repeated value).

    Raises:
        ConfigError: an unknown condition or regime (as `expand` would).
    """
    notes: list[str] = []
    out = replace(
        request,
        models=_keep_first("--models", request.models, str, notes),
        conditions=_keep_first("--conditions", request.conditions,
                               lambda c: parse_condition(c).label(), notes),
        regimes=_keep_first("--regimes", request.regimes,
                            lambda r: parse_regime(r).spec_hash(), notes),
        budgets=_keep_first("--budget", request.budgets, int, notes),
        seeds=_keep_first("--seeds", request.seeds, int, notes))
    return out, tuple(notes)


def check_context(db: Database, cells: Sequence[CellSpec], ids: Sequence[str]) -> None:
    """Refuse cells whose model cannot fit a question of the set in its max_context.

    Counted: the smallest prompt an episode of the question sends, estimated as
    characters / 4 (core.limits), plus what one acting turn may generate (the model's
    max_tokens and, for a thinking model, its thinking budget), as the server refuses
    a request whose prompt plus max_tokens exceeds the context. Only models with a
    `max_context` in lab.toml are checked (sims have none).

    Raises:
        ConfigError: naming the model, the question, each term and the one that overflows.
    """
    checked: set[tuple[str, str]] = set()
    questions: list | None = None
    for cell in cells:
        max_context = cell.model.max_context
        if not max_context:
            continue
        system = cell.condition.system_prompt(cell.budget)
        if (cell.model.name, system) in checked:
            continue
        checked.add((cell.model.name, system))
        if questions is None:
            questions = store.load_questions(db, ids=list(ids))
        bad = too_long(questions, system, int(max_context),
                       cell.model.act_max_tokens or 0, cell.model.thinking_budget)
        if bad:
            more = f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""
            fix = ("use a question set without it" if bad[0].overflowing() == "the prompt"
                   else "lower max_tokens or thinking_budget there")
            raise ConfigError(
                f"{bad[0].describe(cell.model.name)}{more}; raise max_context in lab.toml or "
                f"{fix}")


def resolve_rate(db: Database | None, model: str, condition: Condition) -> Condition:
    """random_rule without a rate gets the model's dev-set USELESS rate from lab.db.

    Raises:
        ConfigError: no recorded judgments of the model on a dev question set.
    """
    if condition.arm.rule != "random" or condition.rate is not None:
        return condition
    rate, n = store.useless_rate(db, model) if db is not None else (None, 0)
    if rate is None:
        raise ConfigError(
            f"random_rule for {model}: no side-channel judgments of {model} on a dev question "
            f"set in lab.db to take its USELESS rate from; run a judged arm on a dev set "
            f"first or give the rate, e.g. random_rule:rate=0.6")
    return with_rate(condition, round(rate, 4))


def expand(request: GridRequest, models: Mapping[str, ModelSpec],
           db: Database | None = None) -> list[CellSpec]:
    """All cells of a grid, validated (unknown names fail before anything is stored).

    Args:
        request: the grid.
        models: the registry.
        db: lab.db, to resolve random_rule's default rate (the model's dev-set rate)
            and to read the active prompt pack, which the cells run with.
    """
    if not (request.models and request.conditions and request.regimes):
        raise ConfigError("a grid needs at least one model, condition and regime")
    specs = [resolve_model(models, m) for m in request.models]
    conditions = [parse_condition(c) for c in request.conditions]
    regimes = [parse_regime(r) for r in request.regimes]
    check_numbers(request)
    pack = prompt_packs.active_sha(db) if db is not None else None
    return [CellSpec(m, resolve_rate(db, m.name, c), r, request.question_set, b, s,
                     request.replicate, prompt_pack=pack)
            for m, c, r, b, s in product(specs, conditions, regimes, request.budgets,
                                         request.seeds)]


def _max_calls(cell: CellSpec) -> int:
    judge = cell.condition.asks_judgments or cell.model.config.always_judge
    return cell.budget + (cell.budget - 1 if judge else 0)


def check_run_name(name: str) -> str:
    """A run name that can be shown and typed: not empty, no control characters.

    Raises:
        ConfigError: naming the bad name and an example.
    """
    if not name.strip():
        raise ConfigError(f"run name {name!r}: give a non-empty name, e.g. --run pilot")
    bad = next((c for c in name if not c.isprintable()), None)
    if bad is not None:
        raise ConfigError(f"run name {name!r} holds the control character {bad!r}; use "
                          f"printable characters, e.g. --run pilot")
    return name


def check_numbers(request: GridRequest) -> None:
    """Refuse budgets outside 1…MAX_BUDGET and seeds, replicate or priority SQLite cannot
    store (seeds and replicate are ≥ 0).

    Raises:
        ConfigError: naming the option and the value.
    """
    for b in request.budgets:
        if not 1 <= b <= MAX_BUDGET:
            raise ConfigError(f"--budget {b}: a budget is 1 to {MAX_BUDGET} actions, e.g. "
                              f"--budgets 8,16")
    for option, values, lo in (("--seeds", request.seeds, 0),
                               ("--replicate", (request.replicate,), 0),
                               ("--priority", (request.priority,), -INT64_MAX - 1)):
        for v in values:
            if not lo <= v <= INT64_MAX:
                raise ConfigError(f"{option} {v}: give an integer from {lo:,} to "
                                  f"{INT64_MAX:,}")


def check_request(db: Database, request: GridRequest, models: Mapping[str, ModelSpec]
                  ) -> tuple[GridRequest, tuple[str, ...], list[CellSpec], list[str], str]:
    """Every check an enqueue makes before it writes, for `lab enqueue` and its
    `--dry-run` alike (`plan` runs it; `enqueue` runs `plan` in its transaction).

    Returns:
        (the de-duplicated request, its notes, the cells, the set's question ids, the
        mode: "governed" or "exploratory").

    Raises:
        ConfigError, StoreError, GateError: the first refusal, in one line.
    """
    check_run_name(request.run)
    if request.run in imported_runs(db):
        raise ConfigError(f"run '{request.run}' holds imported episodes; runs made here never "
                          f"mix with them: give another --run")
    check_numbers(request)
    request, notes = deduplicate(request)
    ids = store.question_set(db, request.question_set)["ids"]
    cells = expand(request, models, db)
    check_context(db, cells, ids)
    mode = prereg.gate(db, request.amendment, cells, models)
    ledger.check_run_amendment(db, request.run, request.amendment)
    return request, notes, cells, list(ids), mode


def plan(db: Database, request: GridRequest, models: Mapping[str, ModelSpec]) -> GridPlan:
    """What enqueueing `request` would store and run, without writing anything (every
    check of a real enqueue runs: `check_request`)."""
    request, notes, cells, ids, mode = check_request(db, request, models)
    out = GridPlan(request, question_ids=ids, mode=mode, notes=notes)
    stored_cells = store.cell_ids_by_hash(db, request.run)
    for cell in cells:
        done: set[str] = set()
        cell_id = stored_cells.get(cell.columns()["spec_hash"])
        if cell_id is not None:
            done = ledger.stored_questions(db, cell_id) | ledger.pending_questions(db, cell_id)
        out.cells.append(CellPlan(cell, [q for q in ids if q not in done], _max_calls(cell)))
    return out


def enqueue(db: Database, request: GridRequest, models: Mapping[str, ModelSpec],
            ) -> tuple[GridPlan, int | None, list[int]]:
    """Store the grid's cells and queued jobs in lab.db.

    Returns:
        (plan, grid id, job ids); the caller puts the jobs on the
        Huey queue (a job left out is re-enqueued by any worker's reconcile). When
        every episode is already stored or queued nothing is written and the grid
        id is None.
    """
    with store.write(db):  # the whole grid or nothing
        grid_plan = plan(db, request, models)
        if grid_plan.episodes == 0:
            return grid_plan, None, []
        run_id = store.ensure_run(db, request.run, request.amendment)
        grid_id = ledger.create_grid(db, run_id, asdict(grid_plan.request))
        jobs = []
        for cp in grid_plan.cells:
            cell_id = store.ensure_cell(db, run_id, cp.cell.columns())
            jobs += ledger.insert_jobs(db, grid_id, cell_id, cp.missing, request.priority)
    return grid_plan, grid_id, jobs
