"""Depth-wise answer states of the second seed (matched trajectory replay, its §3.2, App. A.1, A.3).

At each depth t = 0…3 of a question's fixed evidence plan (`core.plans`) the model is
asked, with the seed's prompt in our wording (prompts/trace_answer.txt,
trace_question.txt), for one JSON object ``{"answer": "…", "confidence": 0–100}``.
A reply that is not exactly that (a JSON object with a non-empty string answer and a
finite number 0–100 as confidence, and no other field) is stored as missing: answer
and confidence NULL, parsed 0, never coerced. A parsed answer is scored by the
dataset's scorer (`core.scoring`: token F1 ≥ threshold against the answer and its
aliases for HotpotQA and MuSiQue, the exact label for FEVER) and, when a judge model is
given, labelled by it with the seed's judge prompt (App. A.3, prompts/trace_judge.txt),
its label stored beside the scorer's.

A depth whose slice of the plan is empty (a plan of fewer than three passages) shows
what the depth before it showed. The seed copies that state instead of asking again
(its App. B: four depth-three states of 2,457 traces); so does lab by default
(`EMPTY_SLICE` "copy": the state is stored with `copied_from` set, no call), or asks
again ("ask", `lab traces collect --empty-slice ask`).

A model sees a state through a fresh session whose `EpisodeView` carries the
question, seed 0 and as `budget` the retrievals left (3 − depth, the seed's b_t), with
one `ObservationLabel` per visible passage (source "gold" or "distractor"): what a
simulated backend may read; real backends read only the messages.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass

import prompts
from core.data import Question
from core.errors import ModelError
from core.json_reply import json_object, number_between
from core.models.base import EpisodeView, Generation, Message, ModelSession, ObservationLabel
from core.plans import SLICES, EvidencePlan, evidence_text
from core.scoring import DEFAULT_THRESHOLD, score_for_task

TRACE_KIND = "trace"
"""The `kind` of an answer-state call (ModelSession.generate)."""
JUDGE_KIND = "trace_judge"
"""The `kind` of a judge call."""
TRACE_MAX_TOKENS = 4096
"""Generation cap of an answer call (the seed's)."""
JUDGE_MAX_TOKENS = 256
JUDGE_ATTEMPTS = 3
"""Judge calls per state until one parses (the seed retries unparseable judge replies)."""
EXPECTED_OUTPUT_TOKENS = 30
"""Output tokens a JSON answer is expected to take (for `--dry-run` estimates)."""
EMPTY_SLICES = ("copy", "ask")
"""What a depth whose evidence slice is empty gets: a copy of the state before it (the
seed's rule) or a call of its own."""
EMPTY_SLICE = "copy"
LOG = logging.getLogger("lab.traces")


@dataclass(frozen=True)
class Parsed:
    """A reply that parsed: the answer and the stated confidence (0–100)."""

    answer: str
    confidence: float


def parse_answer(text: str | None) -> Parsed | None:
    """The reply's answer and confidence, or None unless it is exactly the required JSON.

    The JSON object may stand inside other text (a code fence); the object itself must
    have exactly the fields answer (a non-empty string) and confidence (a finite number,
    not a boolean, from 0 to 100). Nothing is coerced: "85" or 0.85 as a string fails.
    """
    data = json_object(text)
    if data is None or set(data) != {"answer", "confidence"}:
        return None
    answer, conf = data["answer"], data["confidence"]
    if not isinstance(answer, str) or not answer.strip() or not number_between(conf, 0, 100):
        return None
    return Parsed(answer.strip(), float(conf))


def parse_judge(text: str | None) -> bool | None:
    """The judge's label: the boolean `correct` of a JSON object with only that field."""
    data = json_object(text)
    if data is None or set(data) != {"correct"} or not isinstance(data["correct"], bool):
        return None
    return bool(data["correct"])


def references(question: Question) -> list[str]:
    """The accepted answers: the gold answer and its aliases (MuSiQue), in order, once each."""
    return list(dict.fromkeys([question.answer, *question.aliases]))


def score(answer: str, question: Question, threshold: float = DEFAULT_THRESHOLD
          ) -> tuple[bool, float]:
    """(correct, best F1) of an answer by the dataset's scorer, over every reference."""
    scores = [score_for_task(answer, ref, question.task, threshold) for ref in references(question)]
    return any(s.correct for s in scores), max(s.f1 for s in scores)


def answer_messages(question: Question, plan: EvidencePlan, depth: int) -> list[Message]:
    """The system and user messages of the state at `depth` (slices 1…depth visible)."""
    shown = evidence_text(question, plan, depth)
    evidence = "\n\n".join(f"[{i}] {title}: {text}" for i, (title, text) in enumerate(shown, 1))
    user = prompts.load("trace_question").replace("{question}", question.question).replace(
        "{evidence}", evidence or prompts.load("trace_no_evidence"))
    if question.task == "fever":
        user = prompts.load("trace_fever_note") + "\n\n" + user
    return [{"role": "system", "content": prompts.load("trace_answer")},
            {"role": "user", "content": user}]


def judge_messages(question: Question, answer: str) -> list[Message]:
    """The judge's system and user messages for one answer."""
    user = prompts.load("trace_judge_question").replace("{question}", question.question).replace(
        "{references}", json.dumps(references(question), ensure_ascii=False)).replace(
        "{answer}", answer)
    return [{"role": "system", "content": prompts.load("trace_judge")},
            {"role": "user", "content": user}]


def copied_depth(plan: EvidencePlan, depth: int) -> int | None:
    """The depth whose state the state at `depth` copies under the seed's rule: the
    nearest depth below that revealed evidence (or 0), when the slice of `depth` is
    empty; None when `depth` reveals new evidence or is 0."""
    if depth == 0 or plan.slice_passages(depth):
        return None
    origin = depth - 1
    while origin > 0 and not plan.slice_passages(origin):
        origin -= 1
    return origin


def state_view(question: Question, plan: EvidencePlan, depth: int) -> EpisodeView:
    """The view a session of the state at `depth` gets (see the module docstring)."""
    labels = [ObservationLabel(p.source_index, False, "gold" if p.supporting else "distractor")
              for p in plan.visible(depth)]
    return EpisodeView(question=question, seed=0, budget=SLICES - depth, observations=labels)


@dataclass
class StateResult:
    """What asking one state gave (the caller adds the keys and stores it)."""

    depth: int
    parsed: Parsed | None = None
    correct: bool | None = None
    f1: float | None = None
    judge_correct: bool | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_ms: float = 0.0
    raw: str | None = None
    error: str | None = None


async def ask_state(session: ModelSession, question: Question, plan: EvidencePlan, depth: int,
                    threshold: float = DEFAULT_THRESHOLD,
                    judge: ModelSession | None = None) -> StateResult:
    """Ask one state and score it; a model error is recorded, never raised.

    Args:
        session: a fresh session of the answering model (`state_view`).
        question: the question.
        plan: its evidence plan.
        depth: 0–3.
        threshold: F1 at or above which an answer is correct.
        judge: a session of the judge model, or None.

    Returns:
        The result (`error` set when the answer call failed after its retries).
    """
    try:
        gen: Generation = await session.generate(answer_messages(question, plan, depth),
                                                 kind=TRACE_KIND, max_tokens=TRACE_MAX_TOKENS)
    except ModelError as exc:
        return StateResult(depth, error=f"{exc.reason}: {exc}")
    out = StateResult(depth, prompt_tokens=gen.input_tokens,
                      completion_tokens=gen.output_tokens, latency_ms=gen.latency_ms,
                      raw=gen.text, parsed=parse_answer(gen.text))
    if out.parsed is not None:
        out.correct, out.f1 = score(out.parsed.answer, question, threshold)
        if judge is not None:
            out.judge_correct = await ask_judge(judge, question, out.parsed.answer)
    return out


async def ask_judge(session: ModelSession, question: Question, answer: str,
                    attempts: int = JUDGE_ATTEMPTS) -> bool | None:
    """The judge's label for an answer, asked until a reply parses (at most `attempts`
    calls); None when none parsed or the judge's call failed."""
    messages = judge_messages(question, answer)
    for _ in range(attempts):
        try:
            gen = await session.generate(messages, kind=JUDGE_KIND, max_tokens=JUDGE_MAX_TOKENS)
        except ModelError as exc:  # the state stands; its judge label stays NULL, said once
            LOG.warning("judge of question %s failed (%s: %s); judge_correct left NULL",
                        question.id, exc.reason, exc)
            return None
        label = parse_judge(gen.text)
        if label is not None:
            return label
    LOG.warning("judge of question %s: no parseable {\"correct\": …} in %d replies; "
                "judge_correct left NULL", question.id, attempts)
    return None


def estimate_prompt_tokens(question: Question, plan: EvidencePlan, depths: Sequence[int]
                           ) -> int:
    """Prompt tokens of the given states, estimated as characters / 4 (`core.limits`)."""
    return sum(sum(len(m["content"]) for m in answer_messages(question, plan, d)) // 4
               for d in depths)
