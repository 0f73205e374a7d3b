"""One episode of a cell and its live rows: the glue between the loop and lab.db.

A cell is (model, condition, regime, question set, budget, seed, replicate); its
canonical JSON is hashed. The concurrent loop that runs a job's episodes is
`jobs.kinds.episodes.run_questions`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from sqlite_utils import Database

from core import store
from core.canonical import canonical_hash
from core.conditions import Condition
from core.data import Question
from core.episode import EpisodeResult, Step
from core.models.base import EpisodeView, ModelClient
from core.models.registry import ModelSpec
from core.models.retry import call_stop
from core.react import EpisodeSetup, run_episode
from core.regimes import ForeignPool, Regime
from core.store.episodes import write_live_steps


@dataclass(frozen=True)
class CellSpec:
    """One cell of a grid."""

    model: ModelSpec
    condition: Condition
    regime: Regime
    question_set: str | None
    budget: int
    seed: int
    replicate: int = 0
    prompt_pack: str | None = None
    """sha256 of the prompt pack the cell runs with (None: the built-in wording)."""

    def arm_hash(self) -> str:
        """The arm's hash: the condition's spec hash, combined with the prompt pack's when
        the cell runs with one, so results under another wording never pool."""
        if self.prompt_pack is None:
            return self.condition.spec_hash()
        return canonical_hash({"condition": self.condition.spec_hash(),
                               "prompt_pack": self.prompt_pack})

    def columns(self) -> dict[str, Any]:
        """The `cells` row (without run_id), including the cell's spec hash."""
        spec = {
            "model": self.model.spec(), "condition": self.condition.spec(),
            "regime": self.regime.name, "question_set": self.question_set,
            "budget": self.budget, "seed": self.seed, "replicate": self.replicate,
        }
        if self.prompt_pack is not None:  # absent otherwise: older cells keep their hash
            spec["prompt_pack"] = self.prompt_pack
        return {
            "model": self.model.name, "model_spec": self.model.to_json(),
            "condition": self.condition.name, "condition_spec": self.condition.to_json(),
            "condition_hash": self.arm_hash(), "regime": self.regime.name,
            "regime_hash": self.regime.spec_hash(), "question_set": self.question_set,
            "budget": self.budget, "seed": self.seed, "replicate": self.replicate,
            "spec_hash": store.cell_hash(spec), "prompt_pack": self.prompt_pack,
        }


def setup_for(cell: CellSpec, question: Question, pool: ForeignPool,
              client: ModelClient) -> EpisodeSetup:
    """The EpisodeSetup of one question in a cell."""
    return EpisodeSetup(question=question, condition=cell.condition, regime=cell.regime,
                        budget=cell.budget, seed=cell.seed, pool=pool,
                        always_judge=bool(getattr(client, "always_judge", False)),
                        prompt_format=cell.model.prompt_format, replicate=cell.replicate,
                        **({} if cell.model.act_max_tokens is None
                           else {"act_max_tokens": cell.model.act_max_tokens}))


class CallGate(Protocol):
    """A cap on a model's calls in flight shared beyond one job (jobs.slots.CallSlots)."""

    def try_acquire(self) -> int | None:
        """A call slot now if one is free, else None (without waiting)."""
        ...

    async def acquire(self) -> int:
        """Wait for a call slot; returns its number."""
        ...

    def release(self, slot: int) -> None:
        """Give the slot back when the call has ended."""
        ...


class GatedSession:
    """A model session whose every call holds one slot of a CallGate while in flight."""

    def __init__(self, session: Any, gate: CallGate) -> None:
        self.session = session
        self.gate = gate

    async def generate(self, messages: Sequence[Any], **kw: Any) -> Any:
        """The session's generate, inside a slot of the gate.

        Raises:
            ModelError: reason "interrupted": the worker is stopping (no slot is
                waited for), or stopped while this call waited for one.
        """
        stop = call_stop()
        stop.check("call slot")
        slot = self.gate.try_acquire()  # a free slot: no wait, so no cut-able scope
        if slot is None:
            async with stop.scope("call slot", None):
                slot = await self.gate.acquire()
        try:
            return await self.session.generate(messages, **kw)
        finally:
            self.gate.release(slot)


async def run_one(setup: EpisodeSetup, client: ModelClient,
                  on_step: Callable[[Step], None] | None = None,
                  gate: CallGate | None = None) -> EpisodeResult:
    """Run one episode with a fresh session of `client` (each call inside `gate`, if any)."""
    view = EpisodeView(question=setup.question, seed=setup.seed, budget=setup.budget,
                       replicate=setup.replicate)
    session = client.start(view)
    result = await run_episode(setup, session if gate is None else GatedSession(session, gate),
                               on_step=on_step, view=view)
    result.server = getattr(session, "server", None)  # the endpoint that served it
    return result


class LiveBuffer:
    """Live rows, their steps and finished episodes of one job, committed together.

    Committing every step and every finished episode in its own transaction cost
    about a third of the worker's CPU per model call at 128 episodes in flight
    (py-spy, bench/concurrency.py); `flush` writes what gathered since the last one
    in one transaction, every `flush_s`. An episode that starts and ends between two
    flushes never gets a live row; a kill -9 loses at most `flush_s` of finished
    episodes, which are then run again (never a partial one).
    """

    def __init__(self, db: Database, cell_id: int, label: str,
                 worker: str | None = None) -> None:
        self.db = db
        self.cell_id = cell_id
        self.label = label
        self.worker = worker  # owner of the live rows (host:pid; None: this process)
        self._ids: dict[int, int] = {}  # token → live_episodes id, once inserted
        self._new: list[tuple[int, str]] = []
        self._steps: list[tuple[int, Step]] = []
        self._done: list[tuple[int, EpisodeResult]] = []
        self._dropped: list[int] = []
        self._next = 0

    def start(self, question_id: str) -> int:
        """Register a running episode; returns its token."""
        self._next += 1
        self._new.append((self._next, question_id))
        return self._next

    def step(self, token: int, step: Step) -> None:
        """A step of a running episode."""
        self._steps.append((token, step))

    def finish(self, token: int, result: EpisodeResult) -> None:
        """The episode ended: store it at the next flush (its live row goes)."""
        self._done.append((token, result))

    def drop(self, token: int) -> None:
        """The episode ended without a result: remove its live row at the next flush."""
        self._dropped.append(token)

    def flush(self) -> int:
        """Write everything gathered in one transaction; returns the episodes stored."""
        if not (self._new or self._steps or self._done or self._dropped):
            return 0
        ended = {t for t, _ in self._done} | set(self._dropped)
        new, steps, done, dropped = self._new, self._steps, self._done, self._dropped
        self._new, self._steps, self._done, self._dropped = [], [], [], []
        db = self.db
        ids_now = dict(self._ids)  # kept only once the transaction commits
        try:
            with store.write(db):
                for token, qid in new:
                    if token not in ended:
                        ids_now[token] = store.live_start(db, self.cell_id, qid, self.label,
                                                          self.worker)
                # an ended episode's live row goes: skip its steps
                write_live_steps(db, [(ids_now[token], step) for token, step in steps
                                      if token in ids_now and token not in ended])
                for token in dropped:
                    if token in ids_now:
                        store.live_end(db, ids_now[token])
                ids = store.write_episodes(
                    db, [(self.cell_id, r, ids_now.get(t)) for t, r in done]) if done else []
        except BaseException:  # rolled back (a full disk): all of it waits for the next flush
            self._new, self._steps = new + self._new, steps + self._steps
            self._done, self._dropped = done + self._done, dropped + self._dropped
            raise
        self._ids = {t: i for t, i in ids_now.items() if t not in ended}
        return sum(i is not None for i in ids)
