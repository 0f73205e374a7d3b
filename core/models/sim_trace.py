"""The trace sim: the second seed's answer states from a known model (docs/traces.md).

A built-in sim whose policy is "trace" (`sim-trace`) answers `lab traces collect`'s
calls, so the whole protocol (plans, collection, Tables 1–3) runs on the demo data
without a model. Question q of dataset D has an ability z = U(seed, "z", model, D, q)
(a keyed uniform draw in [0, 1)); at depth t its answer is right with probability

    p_t(z) = clip(BASE[t] + SPREAD · (z − 0.5), 0, 1),

BASE rising with depth (evidence helps), drawn independently per depth by
U(seed, "y", model, D, q, t) < p_t(z) (so a later state can lose a right answer:
harmful transitions exist), and it states the confidence round(100 · min(1, p_t(z) +
OVERSTATE)): over-confident by a known amount, which an isotonic map fitted on
depth 0 must remove there. Every draw is keyed by (seed, model, dataset, question,
depth), nothing else: a state does not depend on other questions, models, jobs or the
order they run in. `analysis.replay.trace_sim` draws the same frames without a
database (the same functions).

A right answer is the gold answer (a FEVER claim's label); a wrong one is a string
the dataset's scorer gives F1 0 against every reference (another label for a claim).
The depth is the one the collector's session view says: `budget` = 3 − depth
(`core.traces.state_view`). Asked as the judge (`--judge sim-trace`), it labels the
predicted answer with the dataset's scorer at F1 ≥ 0.6. Any other call (a ReAct
episode) is answered as `sim-never` would.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from core.canonical import keyed_uniform
from core.data import TASK_FEVER, Question
from core.models.base import EpisodeView, Message
from core.scoring import FEVER_LABELS, normalize_answer
from core.traces import JUDGE_KIND, TRACE_KIND, references, score

TRACE_POLICY = "trace"
"""The sim policy of a trace sim."""
BASE = (0.35, 0.50, 0.65, 0.80)
"""P(right) at depths 0–3 for a question of average ability (z = 0.5)."""
SPREAD = 0.8
"""How much ability moves P(right)."""
OVERSTATE = 0.25
"""How far the stated confidence exceeds the true chance (before the cap at 100)."""
MAX_DEPTH = len(BASE) - 1
_FILLERS = ("no idea", "unknown entity", "none of them")
"""Wrong answers of last resort, tried when every passage title shares a word with a
reference."""


def chance(z: float, depth: int, base: Sequence[float] = BASE, spread: float = SPREAD
           ) -> float:
    """The true P(right) of a question of ability z at a depth."""
    return float(min(1.0, max(0.0, base[depth] + spread * (z - 0.5))))


def ability(seed: int, model: str, dataset: str, question_id: str) -> float:
    """A question's ability z for a model (uniform in [0, 1))."""
    return keyed_uniform(seed, "z", model, dataset, question_id)


def is_right(seed: int, model: str, dataset: str, question_id: str, depth: int, p: float
             ) -> bool:
    """Whether the state at `depth` is right, given its chance p."""
    return keyed_uniform(seed, "y", model, dataset, question_id, depth) < p


def stated(p: float, overstate: float = OVERSTATE) -> float:
    """The stated confidence (0–100) of a state whose true chance is p."""
    return float(round(100 * min(1.0, p + overstate)))


def wrong_answer(question: Question) -> str:
    """An answer the dataset's scorer marks wrong against every reference: another
    label for a claim; else the first passage title (or filler) that shares no
    normalised word with any reference."""
    if question.task == TASK_FEVER:
        return next(label for label in FEVER_LABELS if label != question.answer)
    ref_words = {w for ref in references(question) for w in normalize_answer(ref).split()}
    for text in (*(p.title for p in question.paragraphs), *_FILLERS):
        words = set(normalize_answer(text).split())
        if words and not words & ref_words:
            return text
    return "cannot say whatsoever"


def trace_state(model: str, question: Question, depth: int, seed: int = 0
                ) -> tuple[str, float, bool]:
    """(answer, stated confidence 0–100, right) of the sim's state at `depth`."""
    p = chance(ability(seed, model, question.dataset, question.id), depth)
    right = is_right(seed, model, question.dataset, question.id, depth, p)
    return (question.answer if right else wrong_answer(question)), stated(p), right


def depth_of(view: EpisodeView) -> int:
    """The depth of a trace state's session: 3 − the retrievals left (`state_view`)."""
    return min(MAX_DEPTH, max(0, MAX_DEPTH - view.budget))


def predicted_answer(messages: Sequence[Message]) -> str | None:
    """The candidate answer of a judge prompt (its "Predicted answer: …" line), if any."""
    text = messages[-1]["content"] if messages else ""
    marker = "Predicted answer:"
    at = text.rfind(marker)
    return text[at + len(marker):].strip() if at >= 0 else None


def trace_reply(model: str, view: EpisodeView, messages: Sequence[Message], kind: str
                ) -> str | None:
    """The sim's reply to a trace or judge call, or None for any other kind of call.

    Args:
        model: the sim's registry name (part of every draw).
        view: the session's view (question, seed, budget = retrievals left).
        messages: the call's messages (the judge's carry the predicted answer).
        kind: the call's kind.

    Returns:
        One JSON object: {"answer", "confidence"} for a trace call, {"correct"} for a
        judge call (non-JSON when the judge prompt names no predicted answer).
    """
    if kind == TRACE_KIND:
        answer, confidence, _ = trace_state(model, view.question, depth_of(view), view.seed)
        return json.dumps({"answer": answer, "confidence": int(confidence)})
    if kind == JUDGE_KIND:
        predicted = predicted_answer(messages)
        if predicted is None:
            return "I cannot find the predicted answer."
        return json.dumps({"correct": score(predicted, view.question)[0]})
    return None
