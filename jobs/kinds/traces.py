"""Trace collection as queue work: the second seed's depth-wise answer states (docs/traces.md).

`lab traces collect --set S --models M` validates the request, makes (and stores) each
question's fixed evidence plan (`core.plans`), plans the states still missing (every
question × model × depth 0–3 without a complete row: calls, tokens, dollars), then
stores jobs of kind "traces" in the same ledger as episode and replay jobs: one
job per ≤ 50 questions of a (run, model), taken by the same workers, leased,
heartbeated, retried and reconciled the same way. A job asks only the states not
stored yet, and a state is unique per (run, model, question, depth), so a second
call (or a job re-run after kill -9) stores nothing twice; a state whose call failed
is stored with its error and asked again by the next collect. A depth whose slice of
the plan is empty copies the state before it (the seed's App. B; `core.traces`) once
that state is stored, with no call; `--empty-slice ask` asks it instead.

Jobs need a cell (jobs.cell_id): each (run, model, question set) gets a trace cell
(condition "traces", no episodes) that records the model's spec, so a worker refuses
a registry model changed since the collect, as it does for episodes.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from sqlite_utils import Database

import prompts
from core import store
from core.canonical import canonical_hash
from core.conditions import Condition
from core.data import Question
from core.episode import prompt_set_sha256
from core.errors import ConfigError, StoreError
from core.models.base import ModelClient
from core.models.registry import ModelSpec, load_registry, resolve_model
from core.plans import DEFAULT_SIMILARITY, SIMILARITIES, EvidencePlan, build_plan
from core.regimes import parse_regime
from core.runner import CallGate, GatedSession
from core.scoring import DEFAULT_THRESHOLD
from core.store import jobs as ledger
from core.store import plans as plan_rows
from core.store import traces as rows
from core.store.traces import DEPTHS, TRACE_CONDITION, TraceRecord
from core.traces import (
    EMPTY_SLICE,
    EMPTY_SLICES,
    EXPECTED_OUTPUT_TOKENS,
    ask_state,
    copied_depth,
    estimate_prompt_tokens,
    state_view,
)
from jobs.grid import INT64_MAX, check_run_name
from jobs.kinds.base import Errored, JobContext
from jobs.pump import FLUSH_S, Pending, Work, pump

MAX_RETRIEVALS = len(DEPTHS) - 1
"""The budget a trace cell records: three retrievals (depths 1–3)."""


@dataclass(frozen=True)
class TraceRequest:
    """One `lab traces collect`.

    Attributes:
        question_set: the question set whose questions are asked.
        models: the answering models (registry names).
        run: the run the states are stored under (default: "traces-<set>").
        judge: an LLM judge model whose label is stored beside the scorer's.
        similarity: the distractor similarity term of the evidence plans.
        threshold: F1 at or above which a HotpotQA/MuSiQue answer is correct.
        priority: queue priority.
        empty_slice: a depth whose slice is empty: "copy" the state before it (the
            seed) or "ask" it again.
    """

    question_set: str
    models: tuple[str, ...]
    run: str | None = None
    judge: str | None = None
    similarity: str = DEFAULT_SIMILARITY
    threshold: float = DEFAULT_THRESHOLD
    priority: int = 0
    empty_slice: str = EMPTY_SLICE

    @property
    def run_name(self) -> str:
        """The run's name."""
        return self.run or f"traces-{self.question_set}"

    def params(self) -> str:
        """A trace job's params JSON."""
        return json.dumps({"kind": "traces", "similarity": self.similarity, "judge": self.judge,
                           "threshold": self.threshold, "empty_slice": self.empty_slice},
                          sort_keys=True)


@dataclass
class ModelPlan:
    """The states one model still needs (`calls` asked, `copies` copied without a call)."""

    model: ModelSpec
    question_ids: list[str]
    calls: int
    stored: int
    input_tokens: int
    output_tokens: int
    dollars: float
    copies: int = 0


@dataclass
class TracePlan:
    """What a trace request would queue and cost."""

    request: TraceRequest
    questions: int = 0
    models: list[ModelPlan] = field(default_factory=list)
    new_plans: int = 0
    judge_calls: int = 0

    @property
    def calls(self) -> int:
        """Answer calls of the missing states."""
        return sum(m.calls for m in self.models)

    @property
    def copies(self) -> int:
        """Missing states copied from the depth before (an empty slice), no call."""
        return sum(m.copies for m in self.models)

    def summary(self) -> dict[str, Any]:
        """JSON-ready summary."""
        return {
            "run": self.request.run_name, "set": self.request.question_set,
            "questions": self.questions, "models": len(self.models), "depths": len(DEPTHS),
            "states": self.questions * len(self.models) * len(DEPTHS), "calls": self.calls,
            "copies": self.copies, "empty_slice": self.request.empty_slice,
            "judge": self.request.judge, "max_judge_calls": self.judge_calls,
            "similarity": self.request.similarity, "new_plans": self.new_plans,
            "already_stored": sum(m.stored for m in self.models),
            "per_model": {m.model.name: {"calls": m.calls, "input_tokens": m.input_tokens,
                                         "output_tokens": m.output_tokens,
                                         "dollars": round(m.dollars, 4)} for m in self.models},
        }


def check_request(db: Database, request: TraceRequest, registry: Mapping[str, ModelSpec]
                  ) -> tuple[list[ModelSpec], ModelSpec | None, list[str]]:
    """Every check a collect makes before it writes, for the real run and `--dry-run` alike.

    Returns:
        (the models, de-duplicated in order; the judge or None; the set's question ids).

    Raises:
        ConfigError, StoreError: the first refusal, in one line.
    """
    if not request.models:
        raise ConfigError("give at least one model, e.g. --models qwen3-8b")
    check_run_name(request.run_name)
    check_numbers_priority(request.priority)
    if request.similarity not in SIMILARITIES:
        raise ConfigError(f"--similarity {request.similarity}: choose one of "
                          f"{', '.join(SIMILARITIES)}")
    if request.empty_slice not in EMPTY_SLICES:
        raise ConfigError(f"--empty-slice {request.empty_slice}: choose one of "
                          f"{', '.join(EMPTY_SLICES)}")
    if not 0 < request.threshold <= 1:
        raise ConfigError(f"--threshold {request.threshold}: an F1 threshold is in (0, 1], "
                          f"e.g. --threshold 0.6")
    models = [resolve_model(registry, m) for m in dict.fromkeys(request.models)]
    judge = resolve_model(registry, request.judge) if request.judge else None
    ids = list(store.question_set(db, request.question_set)["ids"])
    ledger.check_run_amendment(db, request.run_name, None)
    _check_run_cells(db, request.run_name)
    return models, judge, ids


def check_numbers_priority(priority: int) -> None:
    """Refuse a priority SQLite cannot store (as `lab enqueue` does).

    Raises:
        ConfigError: naming the value.
    """
    if not -INT64_MAX - 1 <= priority <= INT64_MAX:
        raise ConfigError(f"--priority {priority}: give an integer from {-INT64_MAX - 1:,} to "
                          f"{INT64_MAX:,}")


def _check_run_cells(db: Database, run: str) -> None:
    """Refuse a run that holds episode cells: a trace run holds trace cells only."""
    if rows.episode_cells(db, run):
        raise StoreError(f"run '{run}' holds episodes of `lab enqueue`; collect traces under "
                         f"another run name, e.g. --run traces-{run}")


def trace_cell_columns(model: ModelSpec, question_set: str) -> dict[str, Any]:
    """The `cells` row of a trace cell (no episodes: it carries trace jobs)."""
    spec = {"kind": TRACE_CONDITION, "model": model.spec(), "question_set": question_set}
    regime = parse_regime("clean")
    return {
        "model": model.name, "model_spec": model.to_json(), "condition": TRACE_CONDITION,
        "condition_spec": Condition(name="none").to_json(),
        "condition_hash": canonical_hash({"kind": TRACE_CONDITION}),
        "regime": regime.name, "regime_hash": regime.spec_hash(), "question_set": question_set,
        "budget": MAX_RETRIEVALS, "seed": 0, "replicate": 0, "spec_hash": canonical_hash(spec),
    }


def plan_traces(db: Database, request: TraceRequest, registry: Mapping[str, ModelSpec],
                store_plans: bool = False) -> tuple[TracePlan, dict[str, EvidencePlan]]:
    """The states a request still needs, with calls, tokens and dollars.

    Args:
        db: an open lab.db.
        request: the request.
        registry: models by name.
        store_plans: store the evidence plans not stored yet (the real collect; a dry
            run builds them in memory only).

    Returns:
        (the plan, the evidence plans by question id).
    """
    models, judge, ids = check_request(db, request, registry)
    questions = store.load_questions(db, ids=ids)
    plans: dict[str, EvidencePlan] = {}
    new = 0
    if store_plans:
        plans, new = plan_rows.ensure_plans(db, questions, request.similarity, build_plan)
    else:
        by_dataset: dict[str, list[Question]] = {}
        for q in questions:
            by_dataset.setdefault(q.dataset, []).append(q)
        for dataset, qs in by_dataset.items():
            stored = plan_rows.load_plans(db, dataset, [q.id for q in qs], request.similarity)
            for q in qs:
                plans[q.id] = stored.get(q.id) or build_plan(q, request.similarity)
                new += int(q.id not in stored)
    out = TracePlan(request, questions=len(questions), new_plans=new)
    cells = store.cell_ids_by_hash(db, request.run_name)
    for model in models:
        cell_id = cells.get(trace_cell_columns(model, request.question_set)["spec_hash"])
        pending = rows.pending_trace_questions(db, cell_id) if cell_id is not None else set()
        done = rows.stored_states(db, request.run_name, model.name, ids)
        need: list[str] = []
        calls = tok_in = kept = copies = 0
        for q in questions:
            depths = [d for d in DEPTHS if (q.id, d) not in done]
            kept += len(DEPTHS) - len(depths)
            if not depths or q.id in pending:
                continue
            need.append(q.id)
            asked = [d for d in depths if not _copies(request.empty_slice, plans[q.id], d)]
            calls += len(asked)
            copies += len(depths) - len(asked)
            tok_in += estimate_prompt_tokens(q, plans[q.id], asked)
        tok_out = calls * EXPECTED_OUTPUT_TOKENS
        dollars = model.prices.dollars(tok_in, tok_out)
        out.models.append(ModelPlan(model, need, calls, kept, tok_in, tok_out, dollars, copies))
    out.judge_calls = out.calls if judge is not None else 0
    return out, plans


def enqueue_traces(db: Database, request: TraceRequest, registry: Mapping[str, ModelSpec]
                   ) -> tuple[TracePlan, int | None, list[int]]:
    """Store the evidence plans and the request's trace jobs in one transaction.

    Returns:
        (plan, grid id or None when nothing is missing, job ids); the caller puts the
        jobs on the Huey queue (any worker's reconcile re-enqueues one left out).
    """
    with store.write(db):
        plan, _ = plan_traces(db, request, registry, store_plans=True)
        if plan.calls + plan.copies == 0:
            return plan, None, []
        run_id = store.ensure_run(db, request.run_name)
        grid_id = ledger.create_grid(db, run_id, {"traces": json.loads(request.params()),
                                                  "set": request.question_set,
                                                  "models": [m.model.name for m in plan.models]})
        jobs: list[int] = []
        for mp in plan.models:
            if not mp.question_ids:
                continue
            cell_id = store.ensure_cell(db, run_id, trace_cell_columns(mp.model,
                                                                       request.question_set))
            jobs += ledger.insert_jobs(db, grid_id, cell_id, mp.question_ids, request.priority,
                                       "traces", request.params())
    return plan, grid_id, jobs


class TraceWork(Work[tuple[str, int]]):
    """A trace job's missing states: one item per asked (question, depth); a state copied
    from the depth before it (an empty slice) is an extra task that takes no slot."""

    def __init__(self, db: Database, job: Mapping[str, Any], client: ModelClient,
                 judge: ModelClient | None, gate: CallGate | None, batch: int) -> None:
        todo, self.cell, self.params, self.questions, self.plans = _todo(db, job)
        empty_slice = self.params.get("empty_slice", EMPTY_SLICE)
        self.copies = {(q, d): o for q, d in todo
                       if (o := _copies(empty_slice, self.plans[q], d)) is not None}
        self.sources = rows.complete_records(db, self.cell["run"], self.cell["model"], sorted(
            {(q, o) for (q, _), o in self.copies.items()} - set(todo)))
        self.items = [s for s in todo if s not in self.copies]
        loop = asyncio.get_running_loop()
        self.answers: dict[tuple[str, int], asyncio.Future[TraceRecord | None]] = {
            s: loop.create_future() for s in self.items}
        self.client, self.judge, self.gate = client, judge, gate
        self.pending: Pending[TraceRecord] = Pending(partial(rows.write_traces, db), batch)

    async def run(self, item: tuple[str, int]) -> None:
        qid, depth = item
        record = await _ask(self.client, self.judge, self.gate, self.cell, self.params,
                            self.questions[qid], self.plans[qid], depth)
        self.pending.keep(record)
        self.answers[item].set_result(record)

    def ended(self, item: tuple[str, int]) -> None:
        if not self.answers[item].done():  # stopped or failed: its copies are not stored
            self.answers[item].set_result(None)

    def extra(self) -> list[Coroutine[Any, Any, None]]:
        return [self._copy(q, d, o) for (q, d), o in self.copies.items()]

    async def _copy(self, qid: str, depth: int, origin: int) -> None:
        source = self.sources.get((qid, origin))
        if source is None and (qid, origin) in self.answers:
            source = await self.answers[(qid, origin)]
        if source is not None:
            self.pending.keep(source.copied_to(depth))

    def clients(self) -> list[ModelClient]:
        return [self.client] + ([self.judge] if self.judge is not None else [])


async def collect_questions(db: Database, job: Mapping[str, Any], client: ModelClient,
                            concurrency: int | None, should_stop: Callable[[], bool] | None = None,
                            close_client: bool = True, judge: ModelClient | None = None,
                            slots: asyncio.Semaphore | None = None,
                            gate: CallGate | None = None,
                            on_admitted: Callable[[], None] | None = None,
                            flush_s: float = FLUSH_S, batch: int = 256) -> int:
    """Ask a trace job's missing states and store them in small batched transactions.

    Finished states are committed together every `flush_s` (or once `batch` have
    gathered): a kill -9 loses at most the states of the last `flush_s` and the calls
    in flight, which a resumed job asks again (a state is unique per run, model,
    question and depth, so nothing is stored twice). A state copied from the depth
    before it (an empty slice, params empty_slice "copy") takes no slot and no call:
    it is stored once its source is, from this job's answer or the stored row.

    Args:
        db: an open lab.db.
        job: the jobs row (params: similarity, judge, threshold).
        client: the model's client.
        judge: the judge model's client (params judge), or None.
        gate: the host-wide cap on the model's calls in flight.
        batch: at most this many states wait for a write.
        concurrency, should_stop, close_client, slots, on_admitted, flush_s: as
            `jobs.pump.pump` says (each asked state is one item).

    Returns:
        States stored.
    """
    return await pump(TraceWork(db, job, client, judge, gate, batch), client,
                      concurrency=concurrency, slots=slots, should_stop=should_stop,
                      on_admitted=on_admitted, flush_s=flush_s, close_client=close_client)


async def _ask(client: ModelClient, judge: ModelClient | None, gate: CallGate | None,
               cell: Mapping[str, Any], params: Mapping[str, Any], question: Question,
               plan: EvidencePlan, depth: int) -> TraceRecord:
    """One state, asked with fresh sessions, recorded with the prompt files it used."""
    view = state_view(question, plan, depth)
    with prompts.recording() as used:
        session = client.start(view)
        judged = judge.start(view) if judge is not None else None
        res = await ask_state(session if gate is None else GatedSession(session, gate),
                              question, plan, depth, float(params["threshold"]), judged)
    files = used.hashes()
    return TraceRecord(
        run=cell["run"], model=cell["model"], dataset=question.dataset,
        set_name=cell["question_set"] or "", question_id=question.id, depth=depth,
        plan_sha256=plan.sha256, answer=res.parsed.answer if res.parsed else None,
        confidence=res.parsed.confidence if res.parsed else None, parsed=res.parsed is not None,
        correct=res.correct, f1=res.f1, judge_correct=res.judge_correct,
        judge_model=params.get("judge") if res.parsed is not None and judge is not None else None,
        prompt_tokens=res.prompt_tokens, completion_tokens=res.completion_tokens,
        latency_ms=res.latency_ms, raw=res.raw, error=res.error,
        prompts_sha256=prompt_set_sha256(files) if files else None, prompt_files=files)


def _copies(empty_slice: str, plan: EvidencePlan, depth: int) -> int | None:
    """The depth a state copies under `empty_slice` "copy" (None: it is asked)."""
    return copied_depth(plan, depth) if empty_slice == "copy" else None


def _todo(db: Database, job: Mapping[str, Any]
          ) -> tuple[list[tuple[str, int]], dict[str, Any], dict[str, Any], dict[str, Question],
                     dict[str, EvidencePlan]]:
    """A trace job's (question, depth) states not stored complete yet, with what asking
    them needs: the cell, the params, the questions and their evidence plans."""
    params = json.loads(job["params"])
    cell = rows.trace_cell(db, job["cell_id"])
    qids = list(job["question_ids"])
    done = rows.stored_states(db, cell["run"], cell["model"], qids)
    todo = [(q, d) for q in qids for d in DEPTHS if (q, d) not in done]
    need = sorted({q for q, _ in todo})
    questions = {q.id: q for q in store.load_questions(db, ids=need)} if need else {}
    plans, _ = plan_rows.ensure_plans(db, list(questions.values()), params["similarity"],
                                      build_plan)
    return todo, cell, params, questions, plans


def judge_spec(registry: Mapping[str, ModelSpec], job: Mapping[str, Any]) -> ModelSpec | None:
    """The judge model a trace job's params name, or None.

    Raises:
        ConfigError: the judge is no longer in the registry.
    """
    name = json.loads(job["params"]).get("judge")
    return resolve_model(registry, name) if name else None


class TracesKind:
    """The second seed's depth-wise answer states (`jobs.kind` "traces")."""

    name = "traces"
    unit, job_word, respec = "trace state", "trace job", True

    def plan(self, db: Database, request: TraceRequest,
             registry: Mapping[str, ModelSpec]) -> TracePlan:
        return plan_traces(db, request, registry)[0]

    insert = staticmethod(enqueue_traces)

    async def run(self, db: Database, job: Mapping[str, Any], ctx: JobContext) -> int:
        judge = judge_spec(load_registry(ctx.settings.config_path), job)
        return await collect_questions(
            db, job, ctx.client, ctx.settings.concurrency, ctx.should_stop,
            close_client=ctx.close_client,
            judge=ctx.client_for(judge) if judge is not None else None, slots=ctx.slots,
            gate=ctx.gate, on_admitted=ctx.on_admitted)

    def errored(self, db: Database, jobs: Sequence[Mapping[str, Any]]) -> Errored:
        # questions with an errored state, asked again by new jobs of the same cell
        out: dict[tuple[int, int, int, str | None], list[str]] = {}
        taken: set[tuple[int, str]] = set()
        pending: dict[int, set[str]] = {}
        n = 0
        for job in jobs:
            cell_id = job["cell_id"]
            if cell_id not in pending:
                pending[cell_id] = rows.pending_trace_questions(db, cell_id)
            cell = rows.trace_cell(db, cell_id)
            per_question: dict[str, int] = {}
            for q, _ in rows.errored_states(db, cell["run"], cell["model"], job["question_ids"]):
                per_question[q] = per_question.get(q, 0) + 1
            for q in job["question_ids"]:
                if q in per_question and q not in pending[cell_id] and (cell_id, q) not in taken:
                    taken.add((cell_id, q))
                    out.setdefault((job["grid_id"], cell_id, job["priority"], job["params"]),
                                   []).append(q)
                    n += per_question[q]
        return Errored(out, n)

    def unsettled(self, db: Database, job: Mapping[str, Any], mark: int) -> set[str]:
        # its work is states: a question lacking a depth's row
        return rows.unsettled_trace_questions(db, job["cell_id"], job["question_ids"])


KIND = TracesKind()
