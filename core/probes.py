"""Probes on recorded trajectories (docs/replay.md): nothing is written back into them.

Every probe forks the acting conversation exactly as the agent saw it at a decision
point, rebuilt from the stored steps (`history_at`), appends one turn, and reads
the reply:

- judgment replay: the side-channel question, ≤ 8 tokens, parsed like the
  in-run judgment (`core.judges.parse_side_channel`, with the arm's `judge_parse`);
- belief probe: JSON ``{p_continue, p_answer_now, prefer, reason}`` without
  the remaining budget; a reply that does not parse is missing, never coerced;
- answer-now branch: the same history replayed with the rule's forced-finish
  instruction, nothing more (the main paper, App. C.4/D.2); a ``Confidence: N`` line
  the model writes anyway is still read;
- answer-now branch asking for a confidence (kind ``answer_now_confidence``, `lab
  replay answer-now --confidence`): the same fork with one more line asking for a
  verbalized confidence 0–100, which the second seed's confidence-gated controllers
  read; no such line in the reply → confidence missing. It is its own kind, so it is
  stored apart from the paper's branch at the same decision point and never pools
  with it (the request differs, and so may the answers);
- answer repair: the whole conversation with its finish turn, plus one fixed
  message asking for the actual answer; one attempt.

A probe's ``t`` is the step whose observation the decision point follows (the probe
precedes action t + 1), the same t as that step's in-run judgment; a repair's t is
the finish action. The module is pure apart from the model session it is given.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import prompts
from core.conditions import Condition
from core.data import Question
from core.episode import Step, utc_now
from core.errors import ConfigError, ModelError
from core.json_reply import json_object, number_between
from core.judges import USELESS, parse_side_channel
from core.models.base import EpisodeView, Generation, Message, ModelSession, ObservationLabel
from core.parser import parse_reply
from core.react import (
    JUDGE_MAX_TOKENS,
    UNPARSED,
    EpisodeSetup,
    counter,
    forced_messages,
    observation_message,
    opening_messages,
    side_channel_fork,
)
from core.regimes import ForeignPool, Regime
from core.scoring import score_for_task

ANSWER_NOW = "answer_now"
ANSWER_NOW_CONFIDENCE = "answer_now_confidence"
"""The answer-now branch with the request for a verbalized confidence appended."""
BRANCH_KINDS = (ANSWER_NOW, ANSWER_NOW_CONFIDENCE)
"""The two answer-now branch kinds: the paper's, and the one asking for a confidence."""
KINDS = ("judgment", "belief", ANSWER_NOW, "repair", ANSWER_NOW_CONFIDENCE)
"""Probe kinds as stored in `probes.kind` (part of a probe's key)."""
COMMANDS = {"judgments": "judgment", "beliefs": "belief", "answer-now": "answer_now"}
"""`lab replay` sub-commands and the probe kind each stores."""
PROBE_MAX_TOKENS = {"judgment": JUDGE_MAX_TOKENS, "belief": 160, ANSWER_NOW: 512,
                    "repair": 512, ANSWER_NOW_CONFIDENCE: 512}
FIRST_USELESS = 5
"""Run of USELESS judgments that `--at first-useless-5` probes at (paper App. D.2)."""

_CONFIDENCE_RE = re.compile(r"confidence\s*[:=]\s*(\d{1,3}(?:\.\d+)?)\s*%?", re.IGNORECASE)
_PREFER = ("continue", "answer_now", "unsure")


@dataclass(frozen=True)
class RecordedEpisode:
    """A stored episode with what is needed to rebuild its conversation.

    Attributes:
        episode_id: the episode.
        model: the cell's model name.
        question: the question.
        condition: the arm as it ran.
        regime: its regime.
        budget: its action budget.
        seed: its seed.
        steps: its stored steps in order (discarded turns included).
        observations: the observation text of each step as the agent saw it (None:
            the step had none), aligned with `steps`.
        answer: the final answer, or None.
        answer_action: the finish action, or None.
        placeholder: whether the answer is a placeholder.
        prompt_format: the model's prompt format ("react" or "search_r1").
    """

    episode_id: int
    model: str
    question: Question
    condition: Condition
    regime: Regime
    budget: int
    seed: int
    steps: tuple[Step, ...]
    observations: tuple[str | None, ...]
    answer: str | None = None
    answer_action: int | None = None
    placeholder: bool = False
    prompt_format: str = "react"

    def setup(self) -> EpisodeSetup:
        """The EpisodeSetup the prompt builders read (no pool is needed to rebuild)."""
        return EpisodeSetup(question=self.question, condition=self.condition,
                            regime=self.regime, budget=self.budget, seed=self.seed,
                            pool=ForeignPool([self.question]), prompt_format=self.prompt_format)


@dataclass
class ProbeRecord:
    """One probe's reply, parsed (a `probes` row)."""

    episode_id: int
    t: int
    kind: str
    model: str
    raw: str = ""
    judgment: str | None = None
    answer: str | None = None
    em: bool | None = None
    f1: float | None = None
    correct: bool | None = None
    placeholder: bool | None = None
    confidence: float | None = None
    p_continue: float | None = None
    p_answer_now: float | None = None
    prefer: str | None = None
    reason: str | None = None
    parse_ok: bool = False
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    latency_ms: float = 0.0
    error: str | None = None
    source: str = "replay"
    prompts_sha256: str | None = None
    created_at: str = field(default_factory=utc_now)
    prompt_files: dict[str, str] = field(default_factory=dict)
    """sha256 per prompt file the probe used (stored in prompt_sets, not a column)."""


def _acting(steps: Sequence[Step]) -> list[tuple[int, Step]]:
    """Steps that entered the history, with their index in `steps` (discarded turns out)."""
    return [(i, s) for i, s in enumerate(steps) if not getattr(s, "discarded", False)]


def _switch_notice(ep: RecordedEpisode, step: Step, seen_off: bool) -> bool:
    """Whether switch_rule switched the primary off after this step's result."""
    cond = ep.condition
    return (bool(getattr(cond.arm, "switch", False)) and not seen_off
            and getattr(step, "tool_source", None) == "primary" and step.streak >= cond.k)


def history_at(ep: RecordedEpisode, t: int | None = None, judging: bool = False
               ) -> list[Message]:
    """The acting conversation as the agent saw it after step t (all of it when t is None).

    Rebuilt like `core.react` built it: system prompt, question, then per step the
    agent's raw turn (a forced one after the forced lines, which stay), the format
    reminder after a failed turn the condition's format_retries allow, the forced or
    switch notice after a refused call, the observation message (with the counter on
    budget arms) and, on decide arms, the judgment, decision and act-consistent turns
    (the decision reply verbatim from the next step's `decision_raw`; a step stored
    before lab.db kept that reply has none, and there it reads "DECISION: <its
    decision>"). Discarded turns never entered the history.

    Args:
        ep: the recorded episode.
        t: the step after which to stop (None: through the last step).
        judging: stop before the decide line of step t, where the in-run side-channel
            fork was taken (judgment replay asks exactly there).

    Returns:
        The messages, system message first.
    """
    setup = ep.setup()
    pieces = setup.prompts
    messages: list[Message] = opening_messages(setup)
    failed_in_row = 0
    switched = False
    acting = _acting(ep.steps)
    for n, (i, step) in enumerate(acting):
        if t is not None and step.t > t:
            break
        if step.forced:
            messages[:] = forced_messages(setup, messages)
        messages.append({"role": "assistant", "content": step.raw})
        if step.format_failure:
            failed_in_row += 1
            if failed_in_row <= ep.condition.format_retries:
                messages.append({"role": "user", "content": pieces.load("format_reminder")})
            continue
        failed_in_row = 0
        if step.action == "finish":
            break
        if step.refused:
            text = pieces.load("forced_observation" if step.forced else "switch_notice")
            if ep.condition.arm.budget:
                text += "\n\n" + counter(ep.budget - step.t)
            messages.append({"role": "user", "content": text})
            continue
        observation = ep.observations[i] or ""
        messages.append({"role": "user",
                         "content": observation_message(setup, observation, step.t)})
        if step.t < ep.budget:
            fork_here = judging and step.t == t  # the in-run fork came before both
            if _switch_notice(ep, step, switched) and not fork_here:
                switched = True
                messages[-1]["content"] += "\n" + pieces.load("switch_notice")
            if ep.condition.arm.decide and not fork_here and n + 1 < len(acting):
                nxt = acting[n + 1][1]
                raw = nxt.decision_raw
                if raw is None:  # stored before steps.decision_raw existed
                    raw = f"DECISION: {nxt.decision}" if nxt.decision else UNPARSED
                messages += [
                    {"role": "user", "content": pieces.load("side_channel")},
                    {"role": "assistant", "content": step.judgment or UNPARSED},
                    {"role": "user", "content": pieces.load("decide").format(
                        judgment=step.judgment or UNPARSED, streak=step.streak)},
                    {"role": "assistant", "content": raw.strip() or UNPARSED},
                    {"role": "user", "content": pieces.load("decide_act")},
                ]
    return messages


def decision_points(ep: RecordedEpisode) -> list[int]:
    """Steps t after which the agent faced a decision: an observation, t < budget.

    Args:
        ep: the recorded episode.

    Returns:
        The t values in order.
    """
    return step_decision_points(ep.steps, ep.budget)


def step_decision_points(steps: Sequence[Step], budget: int) -> list[int]:
    """`decision_points` from the stored steps and the budget alone."""
    return [s.t for _, s in _acting(steps)
            if s.obs_index is not None and not s.refused and s.t < budget]


@dataclass(frozen=True)
class At:
    """Where to probe: every decision point, the first five-useless point, or given t."""

    mode: str
    ts: tuple[int, ...] = ()

    @property
    def text(self) -> str:
        """The option as typed."""
        return "t=" + ",".join(map(str, self.ts)) if self.mode == "t" else self.mode


def parse_at(text: str) -> At:
    """Parse `--at`: ``every``, ``first-useless-5`` or ``t=3,5``.

    Raises:
        ConfigError: anything else (the message shows the three forms).
    """
    value = text.strip()
    if value in ("every", f"first-useless-{FIRST_USELESS}"):
        return At(value)
    if value.startswith("t="):
        try:
            ts = tuple(sorted({int(x) for x in value[2:].split(",") if x.strip()}))
        except ValueError:
            ts = ()
        if ts and min(ts) >= 1:
            return At("t", ts)
    raise ConfigError(f"--at '{text}' is not understood; use every, first-useless-"
                      f"{FIRST_USELESS} or t=3,5 (steps after which to probe, ≥ 1)")


def useless_run_points(judgments: Sequence[tuple[int, str | None]], k: int) -> list[int]:
    """The first t at which consecutive USELESS judgments reach k (empty when never).

    Args:
        judgments: (t, judgment) of each decision point in order.
        k: the run length.

    Returns:
        [t] or [].
    """
    run = 0
    for t, judgment in judgments:
        run = run + 1 if judgment == USELESS else 0
        if run >= k:
            return [t]
    return []


def probe_points(ep: RecordedEpisode, at: At, judgments: dict[int, str | None] | None = None
                 ) -> list[int]:
    """The decision points of `ep` that `at` selects.

    Args:
        ep: the recorded episode.
        at: where to probe.
        judgments: judgment per t (recorded, else replayed) for ``first-useless-5``.

    Returns:
        The t values to probe, in order.
    """
    return select_points(decision_points(ep), at, judgments)


def select_points(points: Sequence[int], at: At,
                  judgments: dict[int, str | None] | None = None) -> list[int]:
    """The decision points among `points` that `at` selects (see `probe_points`)."""
    if at.mode == "every":
        return list(points)
    if at.mode == "t":
        return [t for t in points if t in at.ts]
    known = judgments or {}
    return useless_run_points([(t, known.get(t)) for t in points], FIRST_USELESS)


def probe_kind(kind: str, confidence: bool) -> str:
    """The stored probe kind of a request: ``answer_now`` with `confidence` is
    ANSWER_NOW_CONFIDENCE, any other kind is itself.

    Raises:
        ValueError: `confidence` with a kind other than answer_now (only the answer-now
            branch can ask for a confidence).
    """
    if not confidence:
        return kind
    if kind != ANSWER_NOW:
        raise ValueError(f"only the answer-now branch asks for a confidence, not {kind!r}")
    return ANSWER_NOW_CONFIDENCE


def call_kind(kind: str) -> str:
    """The `kind` a model session is called with for a probe of this stored kind: both
    answer-now branches are answer-now calls, the side-channel replay is a judge call."""
    if kind == "judgment":
        return "judge"
    return ANSWER_NOW if kind in BRANCH_KINDS else kind


def messages_for(ep: RecordedEpisode, t: int, kind: str, confidence: bool = False
                 ) -> list[Message]:
    """The forked conversation a probe sends.

    Args:
        ep: the recorded episode.
        t: the decision point (the finish action for a repair).
        kind: one of KINDS (ANSWER_NOW_CONFIDENCE appends the confidence request).
        confidence: answer_now: append the line asking for a verbalized confidence,
            as ANSWER_NOW_CONFIDENCE does (off by default: the paper's branch has no
            such request).

    Returns:
        The messages.

    Raises:
        ValueError: an unknown kind.
    """
    if kind == "judgment":
        return side_channel_fork(history_at(ep, t, judging=True), ep.setup().prompts)
    if kind == "belief":
        return [*history_at(ep, t), {"role": "user", "content": prompts.load("belief_probe")}]
    if kind in BRANCH_KINDS:
        out = forced_messages(ep.setup(), history_at(ep, t))
        if confidence or kind == ANSWER_NOW_CONFIDENCE:
            out[-1]["content"] += "\n" + prompts.load("answer_now_confidence")
        return out
    if kind == "repair":
        return [*history_at(ep), {"role": "user", "content": prompts.load("repair")}]
    raise ValueError(f"unknown probe kind {kind!r}; kinds: {', '.join(KINDS)}")


def parse_confidence(text: str) -> float | None:
    """The verbalized confidence of a reply as a probability (None when absent or > 100)."""
    m = _CONFIDENCE_RE.search(text or "")
    if m is None:
        return None
    value = float(m.group(1))
    return value / 100 if 0 <= value <= 100 else None


def parse_belief(text: str) -> dict[str, object] | None:
    """The belief probe's JSON, or None when it does not parse exactly (never coerced).

    Both probabilities must be numbers in [0, 1] and `prefer` one of continue,
    answer_now, unsure; `reason` is optional text.
    """
    data = json_object(text)
    if data is None:
        return None
    out: dict[str, object] = {}
    for key in ("p_continue", "p_answer_now"):
        value: Any = data.get(key)
        if not number_between(value, 0, 1):
            return None
        out[key] = float(value)
    if data.get("prefer") not in _PREFER:
        return None
    out["prefer"] = data["prefer"]
    reason = data.get("reason")
    out["reason"] = reason if isinstance(reason, str) else None
    return out


def read_reply(ep: RecordedEpisode, t: int, kind: str, text: str, model: str) -> ProbeRecord:
    """Parse one probe reply into a ProbeRecord (scores answers against the gold).

    Args:
        ep: the recorded episode.
        t: the decision point.
        kind: one of KINDS.
        text: the reply.
        model: the model asked.

    Returns:
        The record (tokens and cost are the caller's).
    """
    rec = ProbeRecord(ep.episode_id, t, kind, model, raw=text)
    if kind == "judgment":
        rec.judgment = parse_side_channel(text, ep.condition.judge_parse)
        rec.parse_ok = rec.judgment is not None
    elif kind == "belief":
        belief = parse_belief(text)
        rec.parse_ok = belief is not None
        if belief is not None:
            rec.p_continue = belief["p_continue"]  # type: ignore[assignment]
            rec.p_answer_now = belief["p_answer_now"]  # type: ignore[assignment]
            rec.prefer = belief["prefer"]  # type: ignore[assignment]
            rec.reason = belief["reason"]  # type: ignore[assignment]
    else:
        parsed = parse_reply(text, ep.prompt_format)
        answered = parsed is not None and parsed.name == "finish"
        rec.parse_ok = answered
        rec.answer = parsed.argument if answered and parsed is not None else None
        s = score_for_task(rec.answer, ep.question.answer, ep.question.task)
        rec.em, rec.f1, rec.correct, rec.placeholder = s.em, s.f1, s.correct, s.placeholder
        if kind in BRANCH_KINDS:
            rec.confidence = parse_confidence(text)
    return rec


def view_at(ep: RecordedEpisode, t: int | None) -> EpisodeView:
    """The EpisodeView of the episode up to step t (what a sim agent may know there)."""
    view = EpisodeView(question=ep.question, seed=ep.seed, budget=ep.budget)
    for step, text in zip(ep.steps, ep.observations):
        if t is not None and step.t > t:
            break
        if step.obs_index is not None and not getattr(step, "discarded", False):
            view.observations.append(ObservationLabel(step.obs_index, bool(step.obs_failed),
                                                      step.obs_source or "none", text or ""))
    return view


async def run_probe(session: ModelSession, ep: RecordedEpisode, t: int, kind: str
                    ) -> ProbeRecord:
    """Ask one probe and parse the reply; a model error is recorded, never raised.

    Args:
        session: a model session opened for this probe.
        ep: the recorded episode.
        t: the decision point (the finish action for a repair).
        kind: one of KINDS.

    Returns:
        The ProbeRecord (with `error` set when the call failed after its retries).
    """
    messages = messages_for(ep, t, kind)
    try:
        gen = await session.generate(messages, kind=call_kind(kind),
                                     max_tokens=PROBE_MAX_TOKENS[kind])
    except ModelError as exc:
        return ProbeRecord(ep.episode_id, t, kind, ep.model, error=f"{exc.reason}: {exc}")
    return record_of(ep, t, kind, gen)


def record_of(ep: RecordedEpisode, t: int, kind: str, gen: Generation) -> ProbeRecord:
    """The ProbeRecord of a probe's reply (parsed, with its tokens, cost and latency)."""
    rec = read_reply(ep, t, kind, gen.text, ep.model)
    rec.input_tokens, rec.output_tokens = gen.input_tokens, gen.output_tokens
    rec.cost_usd, rec.latency_ms = gen.cost_usd, gen.latency_ms
    return rec
