"""Replay jobs: probes of recorded trajectories as queue work (docs/replay.md).

`lab replay judgments|beliefs|answer-now --run R` and `lab repair --run R` plan the
probes still missing (calls, tokens and dollars first), then store jobs of kind
"replay" in the same ledger as episode jobs: one job per ≤ 50 questions of a cell,
taken by the same workers, leased, heartbeated, retried and reconciled the same
way. A replay job probes only what is not stored yet, and a probe is unique per
(episode, t, kind), so a second call (or a job re-run after kill -9) stores nothing
twice. Judgments are not asked where the episode recorded its own (the side channel,
in-run: a `judge = true` arm, a rule arm, a sim) unless `refresh` says so: on a paid
API a second copy of a judgment is money for nothing.

`lab replay answer-now --confidence` asks the answer-now branch with the second seed's
confidence request: its probes are of kind ``answer_now_confidence`` (the job's params
say so), keyed apart from the paper's branch at the same decision point, so both can
be stored and neither is taken for the other.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

from sqlite_utils import Database

import prompts
from core import store
from core.episode import prompt_set_sha256
from core.errors import ConfigError, StoreError
from core.models.base import ModelClient, batch_api
from core.models.registry import ModelSpec
from core.probes import (
    ANSWER_NOW,
    ANSWER_NOW_CONFIDENCE,
    COMMANDS,
    PROBE_MAX_TOKENS,
    At,
    ProbeRecord,
    RecordedEpisode,
    call_kind,
    messages_for,
    parse_at,
    probe_kind,
    probe_points,
    record_of,
    run_probe,
    view_at,
)
from core.runner import CallGate, GatedSession
from core.store import jobs as ledger
from core.store import probes as rows
from core.store.imports import NO_TEXT, imported_runs
from core.store.trajectories import question_lookup
from jobs.kinds.base import Errored, JobContext
from jobs.pump import FLUSH_S, Pending, Work, close_all, pump

BATCH_REQUESTS = 1000
"""Requests per Message Batch (the API takes up to 100,000; smaller ones end sooner)."""
BATCH_POLL_S = 15.0
BATCH_POLL_MAX_S = 120.0
BATCH_ROUNDS = 2
"""Submissions of a job's missing probes: the first, and one for errored/expired ones."""
_CUSTOM_ID = re.compile(r"^e(\d+)-t(\d+)-(\w+)$")
EXPECTED_OUTPUT = {"judgment": 3, "belief": 60, ANSWER_NOW: 60, "repair": 60,
                   ANSWER_NOW_CONFIDENCE: 65}
"""Output tokens a reply of each kind is expected to take (for the plan's estimate)."""
PROBE_TURN_TOKENS = {"judgment": 30, "belief": 110, ANSWER_NOW: 70, "repair": 50,
                     ANSWER_NOW_CONFIDENCE: 100}
"""Tokens the probe's own appended turn adds to the history."""


@dataclass(frozen=True)
class ReplayRequest:
    """One `lab replay` / `lab repair`.

    Attributes:
        run: the run whose trajectories are probed.
        kind: probe kind ("judgment", "belief", "answer_now", "answer_now_confidence"
            (the branch asking for a confidence) or "repair"); it is in the job's
            params and in every stored probe's key.
        at: where to probe (ignored by repair: the finish action).
        models: only the episodes of these models (default: all of the run's).
        batch: Claude: send through the Message Batches API.
        priority: queue priority.
        refresh: judgments only: ask also where the episode recorded its own judgment
            in-run (by default those steps are left alone). A replayed judgment already
            stored is never asked again either way.
    """

    run: str
    kind: str
    at: At = At("every")
    models: tuple[str, ...] = ()
    batch: bool = False
    priority: int = 0
    refresh: bool = False

    def params(self) -> str:
        """The job's params JSON (also what tells two requests' jobs apart); ``refresh``
        appears only when set, so the params of other jobs read as before."""
        out: dict[str, Any] = {"kind": self.kind, "at": self.at.text, "batch": self.batch}
        if self.refresh:
            out["refresh"] = True
        return json.dumps(out, sort_keys=True)


@dataclass
class ReplayCellPlan:
    """The probes one cell still needs."""

    cell_id: int
    model: str
    question_ids: list[str]
    calls: int
    input_tokens: int
    output_tokens: int


@dataclass
class ReplayPlan:
    """What a replay request would queue and cost."""

    request: ReplayRequest
    cells: list[ReplayCellPlan] = field(default_factory=list)
    episodes: int = 0
    stored: int = 0
    recorded: int = 0
    """Judgment points left alone because the episode recorded its own judgment there."""
    dollars: dict[str, float] = field(default_factory=dict)

    @property
    def calls(self) -> int:
        """Model calls the missing probes take."""
        return sum(c.calls for c in self.cells)

    def summary(self) -> dict[str, Any]:
        """JSON-ready summary (per model: calls, tokens, dollars)."""
        per: dict[str, dict[str, float]] = {}
        for c in self.cells:
            m = per.setdefault(c.model, {"calls": 0, "input_tokens": 0, "output_tokens": 0,
                                         "dollars": 0.0})
            m["calls"] += c.calls
            m["input_tokens"] += c.input_tokens
            m["output_tokens"] += c.output_tokens
        for model, m in per.items():
            m["dollars"] = round(self.dollars.get(model, 0.0), 4)
        return {"run": self.request.run, "kind": self.request.kind, "at": self.request.at.text,
                "episodes": self.episodes, "calls": self.calls, "already_stored": self.stored,
                "already_recorded": self.recorded, "refresh": self.request.refresh,
                "cells": sum(1 for c in self.cells if c.calls), "per_model": per,
                "batch": self.request.batch}


def plan_replay(db: Database, request: ReplayRequest, registry: Mapping[str, ModelSpec]
                ) -> ReplayPlan:
    """The probes a request still needs, with calls, tokens and dollars.

    Args:
        db: an open lab.db.
        request: the replay request.
        registry: models by name (prices).

    Returns:
        The plan; cells with nothing missing have calls == 0.

    Raises:
        StoreError: an unknown run or model, or a run with no finished episode.
        ConfigError: the run holds imported episodes (their histories were not released).
    """
    if request.run in imported_runs(db):
        raise ConfigError(f"run '{request.run}' holds imported episodes ({NO_TEXT}): a probe "
                          f"rebuilds the agent's history, whose text was not released")
    out = ReplayPlan(request)
    for cell in rows.run_cells(db, request.run, request.models):
        pending = set().union(*(rows.pending_replay(db, cell["cell_id"], p)
                                for p in _covering_params(request)))
        qids = [q for q in cell["question_ids"] if q not in pending]
        eids = rows.cell_episodes(db, cell["cell_id"], qids)
        by_eid = dict(zip(eids, rows.episode_question_ids(db, eids)))
        targets = _targets(db, request, eids)
        done = rows.probed(db, eids, request.kind)
        recorded = _recorded(db, request.kind, request.refresh, eids)
        calls = tok_in = 0
        need: set[str] = set()
        for eid, points in targets.items():
            for t, tokens in points:
                if (eid, t) in recorded:
                    out.recorded += 1
                    continue
                if (eid, t) in done:
                    out.stored += 1
                    continue
                calls += 1
                tok_in += tokens + PROBE_TURN_TOKENS[request.kind]
                need.add(by_eid[eid])
        out.episodes += len(targets)
        tok_out = calls * EXPECTED_OUTPUT[request.kind]
        spec = registry.get(cell["model"])
        if spec is not None:
            out.dollars[cell["model"]] = out.dollars.get(cell["model"], 0.0) + spec.prices.dollars(
                tok_in, tok_out) * _discount(request, spec)
        out.cells.append(ReplayCellPlan(cell["cell_id"], cell["model"], sorted(need), calls,
                                        tok_in, tok_out))
    return out


def _covering_params(request: ReplayRequest) -> list[str]:
    """The params of queued jobs that already cover a request's probes: its own, and for
    judgments without `refresh` also those of a `refresh` job (which asks a superset)."""
    params = [request.params()]
    if request.kind == "judgment" and not request.refresh:
        params.append(replace(request, refresh=True).params())
    return params


def _recorded(db: Database, kind: str, refresh: bool, eids: list[int]) -> set[tuple[int, int]]:
    """(episode, t) points not to ask: for judgments without `refresh`, the steps whose
    judgment the episode recorded in-run (none for other kinds)."""
    if kind != "judgment" or refresh:
        return set()
    return rows.recorded_judgments(db, eids)


def _discount(request: ReplayRequest, spec: ModelSpec) -> float:
    """Price factor of a request's calls: Claude through the Batches API pays half."""
    discount = spec.batch_discount if request.batch else None
    return 1.0 if discount is None else discount


def _targets(db: Database, request: ReplayRequest, eids: list[int]
             ) -> dict[int, list[tuple[int, int]]]:
    """Per episode, the (t, history tokens) to probe (`lab status` counts the same)."""
    return rows.probe_targets(db, request.kind, request.at, eids)


def enqueue_replay(db: Database, request: ReplayRequest, registry: Mapping[str, ModelSpec]
                   ) -> tuple[ReplayPlan, int | None, list[int]]:
    """Store the plan's replay jobs (one grid row for the request) in one transaction.

    Returns:
        (plan, grid id or None when nothing is missing, job ids); the caller puts the
        jobs on the Huey queue (any worker's reconcile re-enqueues one left out).
    """
    with store.write(db):
        plan = plan_replay(db, request, registry)
        if plan.calls == 0:
            return plan, None, []
        run_id = store.run_id(db, request.run)
        if run_id is None:  # plan_replay refuses an unknown run first
            raise StoreError(f"no run named '{request.run}'")
        grid_id = ledger.create_grid(db, run_id, {"replay": json.loads(request.params()),
                                                  "models": list(request.models)})
        jobs: list[int] = []
        for cp in plan.cells:
            if not cp.calls:
                continue
            jobs += ledger.insert_jobs(db, grid_id, cp.cell_id, cp.question_ids,
                                       request.priority, "replay", request.params())
    return plan, grid_id, jobs


async def probe_one(client: ModelClient, ep: RecordedEpisode, t: int, kind: str,
                    gate: CallGate | None = None) -> ProbeRecord:
    """One probe with a fresh session whose view ends at t, recording the prompt files used.

    With `gate` (the host-wide cap on the model's calls), the call holds one of its
    slots while in flight.
    """
    with prompts.recording() as used:
        session = client.start(view_at(ep, None if kind == "repair" else t))
        rec = await run_probe(session if gate is None else GatedSession(session, gate),
                              ep, t, kind)
    rec.prompt_files = used.hashes()
    rec.prompts_sha256 = prompt_set_sha256(rec.prompt_files) if rec.prompt_files else None
    return rec


class ReplayWork(Work[tuple[RecordedEpisode, int]]):
    """A replay job's missing probes: one item per (episode, t)."""

    def __init__(self, db: Database, todo: list[tuple[RecordedEpisode, int]], kind: str,
                 client: ModelClient, gate: CallGate | None, batch: int) -> None:
        self.db, self.items, self.kind, self.client, self.gate = db, todo, kind, client, gate
        self.pending: Pending[ProbeRecord] = Pending(partial(rows.write_probes, db), batch)

    async def run(self, item: tuple[RecordedEpisode, int]) -> None:
        ep, t = item
        self.pending.keep(await probe_one(self.client, ep, t, self.kind, self.gate))

    def finish(self) -> None:
        if self.kind == "judgment" and self.items:
            _rederive(self.db, sorted({ep.episode_id for ep, _ in self.items}))

    def clients(self) -> list[ModelClient]:
        return [self.client]


async def replay_questions(db: Database, job: Mapping[str, Any], client: ModelClient,
                           concurrency: int | None, should_stop: Callable[[], bool] | None = None,
                           batch: int = 256, close_client: bool = True,
                           batch_poll_s: float = BATCH_POLL_S,
                           slots: asyncio.Semaphore | None = None, gate: CallGate | None = None,
                           on_admitted: Callable[[], None] | None = None,
                           flush_s: float = FLUSH_S) -> int:
    """Run a replay job's missing probes and store them in small batched transactions.

    Finished probes are committed together every `flush_s` (or once `batch` have
    gathered): a kill -9 loses at most the probes of the last `flush_s` and the calls
    in flight, which a resumed job asks again (a probe is unique per episode, t and
    kind, so nothing is stored twice).

    Args:
        db: an open lab.db.
        job: the jobs row (params: kind, at).
        client: the cell's model client.
        batch: at most this many probes wait for a write.
        batch_poll_s: with params batch (Claude): first wait between polls of its
            Message Batches (`replay_batched`).
        gate: the host-wide cap on the model's calls in flight (`jobs.slots.CallSlots`).
        concurrency, should_stop, close_client, slots, on_admitted, flush_s: as
            `jobs.pump.pump` says (each probe is one item).

    Returns:
        Probes stored.
    """
    todo, kind = _todo(db, job)
    if json.loads(job["params"]).get("batch") and batch_api(client) is not None:
        if on_admitted is not None:
            on_admitted()  # polls a Message Batch: it holds no call slot
        try:
            return await replay_batched(db, job, client, todo, kind, should_stop,
                                        batch_poll_s)
        finally:
            if close_client:
                await close_all([client])
    return await pump(ReplayWork(db, todo, kind, client, gate, batch), client,
                      concurrency=concurrency, slots=slots, should_stop=should_stop,
                      on_admitted=on_admitted, flush_s=flush_s, close_client=close_client)


def _todo(db: Database, job: Mapping[str, Any]) -> tuple[list[tuple[RecordedEpisode, int]], str]:
    """A replay job's (episode, t) probes not stored yet (judgments: nor recorded by the
    episode in-run, unless the job's params say refresh), and their kind."""
    params = json.loads(job["params"])
    kind, at = params["kind"], parse_at(params["at"])
    eids = rows.cell_episodes(db, job["cell_id"], job["question_ids"])
    # stored probes, and (judgments, unless refresh) the episode's own in-run judgments
    skip = rows.probed(db, eids, kind) | _recorded(db, kind, bool(params.get("refresh")), eids)
    judged = rows.judgments(db, eids) if at.mode not in ("every", "t") else {}
    todo: list[tuple[RecordedEpisode, int]] = []
    question_of = question_lookup(db)
    for eid in eids:
        ep = rows.recorded_episode(db, eid, question_of)
        if kind == "repair":
            points = [ep.answer_action] if ep.placeholder and ep.answer_action else []
        else:
            points = probe_points(ep, at, judged.get(eid))
        todo += [(ep, t) for t in points if (eid, t) not in skip]
    return todo, kind


def custom_id(episode_id: int, t: int, kind: str) -> str:
    """A probe's custom_id in a batch (the API allows [a-zA-Z0-9_-], 64 characters)."""
    return f"e{episode_id}-t{t}-{kind}"


async def replay_batched(db: Database, job: Mapping[str, Any], client: ModelClient,
                         todo: list[tuple[RecordedEpisode, int]], kind: str,
                         should_stop: Callable[[], bool] | None = None,
                         poll_s: float = BATCH_POLL_S, rounds: int = BATCH_ROUNDS,
                         max_requests: int = BATCH_REQUESTS) -> int:
    """Run a replay job's probes through Claude's Message Batches API (`--batch`).

    A batch the job submitted earlier and never stored (a worker killed or stopped
    while it polled) is polled again, not submitted again. The probes are sent in
    batches of at most `max_requests`; each batch's results are stored as soon as it
    ends, so a long job keeps what has arrived. A request that errored or expired is
    stored with its error and sent once more in the next round (`rounds` in all); a
    probe already stored is never sent.

    Args:
        db: an open lab.db.
        job: the jobs row.
        client: a Claude model (AnthropicClient).
        todo: (episode, t) probes still missing.
        kind: the probe kind.
        should_stop: checked between polls; True: return, leaving the batches to a
            resumed job.
        poll_s: first wait between polls (doubles up to BATCH_POLL_MAX_S).
        rounds: submissions of the still-missing probes.
        max_requests: requests per batch.

    Returns:
        Probes stored (succeeded or errored).
    """
    api = batch_api(client)
    episodes = {ep.episode_id: ep for ep, _ in todo}
    stored = 0
    pending = rows.open_batches(db, job["id"])
    for round_no in range(rounds + 1):
        if not pending:
            if round_no == rounds:
                break
            done = rows.probed(db, sorted(episodes), kind)
            missing = [(ep, t) for ep, t in todo if (ep.episode_id, t) not in done]
            if not missing:
                break
            for i in range(0, len(missing), max_requests):
                chunk = missing[i:i + max_requests]
                requests = [(custom_id(ep.episode_id, t, kind), api.params(
                    messages_for(ep, t, kind), call_kind(kind),
                    PROBE_MAX_TOKENS[kind])) for ep, t in chunk]
                batch_id = await api.create(requests)
                rows.record_batch(db, job["id"], batch_id, "submitted", len(chunk))
                pending.append(batch_id)
        wait = poll_s
        while pending:
            for batch_id in list(pending):
                if not (await api.retrieve(batch_id)).ended:
                    continue
                n = _store_batch(db, await api.results(batch_id), episodes, kind)
                rows.record_batch(db, job["id"], batch_id, "stored", n)
                pending.remove(batch_id)
                stored += n
            if pending:
                if should_stop is not None and should_stop():
                    return stored
                await asyncio.sleep(wait)
                wait = min(BATCH_POLL_MAX_S, wait * 2)
    if kind == "judgment" and todo:
        _rederive(db, sorted(episodes))
    return stored


def _store_batch(db: Database, results: list[Any], episodes: Mapping[int, RecordedEpisode],
                 kind: str) -> int:
    """Store an ended batch's results (those of episodes this job still probes)."""
    records = []
    with prompts.recording() as used:
        for res in results:
            m = _CUSTOM_ID.match(res.custom_id)
            if not m or m.group(3) != kind or int(m.group(1)) not in episodes:
                continue
            ep, t = episodes[int(m.group(1))], int(m.group(2))
            if res.generation is None:
                records.append(ProbeRecord(ep.episode_id, t, kind, ep.model, error=res.error))
                continue
            messages_for(ep, t, kind)  # the prompt files the request was built from
            records.append(record_of(ep, t, kind, res.generation))
    files = used.hashes()
    for rec in records:
        rec.prompt_files = files
        rec.prompts_sha256 = prompt_set_sha256(files) if files else None
    return rows.write_probes(db, records)


def _rederive(db: Database, episode_ids: list[int]) -> None:
    """Recompute the stored decision points of episodes whose judgments were replayed.

    The stored decision table (`core.store.decisions`) reads replayed
    judgments where a step has none of its own; on a lab.db or checkout without it,
    analysis merges them when it reads the steps and there is nothing to recompute.
    """
    try:
        from core.store.decisions import rederive
    except ImportError:
        return
    if db["decisions"].exists():
        rederive(db, episode_ids)


def request_from(command: str, run: str, at: str, models: tuple[str, ...] = (),
                 batch: bool = False, priority: int = 0, refresh: bool = False,
                 confidence: bool = False) -> ReplayRequest:
    """A ReplayRequest from `lab replay COMMAND` options (`repair` for `lab repair`).

    Args:
        confidence: answer-now only: ask the branch with the confidence request (kind
            ``answer_now_confidence``, stored apart from the paper's branch).

    Raises:
        ConfigError: a bad --at, --refresh with anything but judgments, or
            --confidence with anything but answer-now.
    """
    kind = "repair" if command == "repair" else COMMANDS[command]
    if refresh and kind != "judgment":
        raise ConfigError(f"--refresh applies to `lab replay judgments` only (an episode "
                          f"records no {command} of its own); drop it, e.g. `lab replay "
                          f"{command} --run {run}`")
    if confidence and kind != ANSWER_NOW:
        raise ConfigError(f"--confidence applies to `lab replay answer-now` only (only the "
                          f"answer-now branch asks for a confidence); drop it, or use `lab "
                          f"replay answer-now --confidence --run {run}`")
    return ReplayRequest(run, probe_kind(kind, confidence), parse_at(at), models, batch,
                         priority, refresh)


class ReplayKind:
    """Probes of recorded trajectories (`jobs.kind` "replay")."""

    name = "replay"
    unit, job_word, respec = "probe", "replay job", False

    plan = staticmethod(plan_replay)
    insert = staticmethod(enqueue_replay)

    async def run(self, db: Database, job: Mapping[str, Any], ctx: JobContext) -> int:
        # each probe holds one of the model's slots (shared with the worker's episode
        # jobs) and, per call, one of the host-wide call slots
        return await replay_questions(db, job, ctx.client, ctx.settings.concurrency,
                                      ctx.should_stop, close_client=ctx.close_client,
                                      slots=ctx.slots, gate=ctx.gate,
                                      on_admitted=ctx.on_admitted)

    def errored(self, db: Database, jobs: Sequence[Mapping[str, Any]]) -> Errored:
        # questions whose probes errored, asked again by new jobs of the same request
        out: dict[tuple[int, int, int, str | None], list[str]] = {}
        taken: set[tuple[int, str, str]] = set()
        pending: dict[tuple[int, str], set[str]] = {}
        n = 0
        for job in jobs:
            cell_id, params = job["cell_id"], job["params"]
            key = (cell_id, params)
            if key not in pending:
                pending[key] = rows.pending_replay(db, cell_id, params)
            kind = json.loads(params)["kind"]
            for q, count in rows.errored_probe_questions(db, cell_id, job["question_ids"],
                                                         kind).items():
                if q not in pending[key] and (cell_id, params, q) not in taken:
                    taken.add((cell_id, params, q))
                    out.setdefault((job["grid_id"], cell_id, job["priority"], params),
                                   []).append(q)
                    n += count
        return Errored(out, n)

    def unsettled(self, db: Database, job: Mapping[str, Any], mark: int) -> set[str]:
        # a replay job's questions are those of stored episodes: settled as episodes are
        return ledger.unsettled_questions(db, job["cell_id"], job["question_ids"], mark)


KIND = ReplayKind()
