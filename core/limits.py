"""Size limits on questions: a warning at import, a refusal at enqueue.

A question whose knowledge base is huge is imported with a warning (one 1 MB page
sends millions of tokens over a grid), and a cell is refused when even its shortest
possible episode cannot fit the model's `max_context`.

Token counts are estimated as characters / 4 (no tokenizer is loaded: the figure only
has to catch questions that are wildly too large, not to count exactly).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from core.data import Question

CHARS_PER_TOKEN = 4
"""The estimate used for every non-sim model: tokens ≈ characters / 4."""
DEFAULT_WARN_KB = 64
"""Default of `lab data import --warn-kb`: context text (question plus pages) above this
many kilobytes gets a warning."""
MAX_WARN_KB = 1_048_576.0
"""The largest `--warn-kb` (a gigabyte of text)."""


def context_chars(question: Question) -> int:
    """Characters of the question and every page of its knowledge base (titles and text)."""
    return len(question.question) + sum(len(p.title) + len(p.text) for p in question.paragraphs)


def estimate_tokens(chars: int) -> int:
    """Tokens estimated from characters (characters / 4, rounded up)."""
    return -(-chars // CHARS_PER_TOKEN)


def oversized(questions: Iterable[Question], limit_kb: float) -> list[tuple[str, int]]:
    """(question id, context characters) of the questions above `limit_kb` kilobytes."""
    limit = limit_kb * 1024
    return [(q.id, n) for q in questions if (n := context_chars(q)) > limit]


def min_episode_chars(question: Question, system_prompt: str) -> int:
    """Characters of the smallest prompt an episode can send that reads a page: the
    system prompt, the question and the longest page (any search may return it)."""
    longest = max((len(p.title) + len(p.text) for p in question.paragraphs), default=0)
    return len(system_prompt) + len(question.question) + longest


@dataclass(frozen=True)
class TooLong:
    """A question that cannot fit a model's context window.

    Attributes:
        question_id: the question.
        tokens: its smallest prompt, estimated.
        max_context: the model's context window.
        max_tokens: what an acting turn may generate (0: not counted).
        thinking_budget: what a thinking turn may reason on top of it (0: none).
    """

    question_id: str
    tokens: int
    max_context: int
    max_tokens: int = 0
    thinking_budget: int = 0

    def overflowing(self) -> str:
        """The term that takes the sum past max_context: "the prompt", "max_tokens" or
        "the thinking budget"."""
        if self.tokens > self.max_context:
            return "the prompt"
        if self.tokens + self.max_tokens > self.max_context:
            return "max_tokens"
        return "the thinking budget"

    def describe(self, model: str) -> str:
        """One line for the refusal, naming the term that overflows."""
        terms = [f"≈ {self.tokens:,} prompt tokens (characters / 4)"]
        if self.max_tokens:
            terms.append(f"{self.max_tokens:,} max_tokens")
        if self.thinking_budget:
            terms.append(f"{self.thinking_budget:,} thinking budget")
        total = self.tokens + self.max_tokens + self.thinking_budget
        sum_ = f" = {total:,}" if len(terms) > 1 else ""
        return (f"question {self.question_id} needs {' + '.join(terms)}{sum_} tokens before any "
                f"answer, more than {model}'s max_context {self.max_context:,} "
                f"({self.overflowing()} overflows it)")


def too_long(questions: Iterable[Question], system_prompt: str, max_context: int,
             max_tokens: int = 0, thinking_budget: int = 0) -> list[TooLong]:
    """The questions whose smallest episode prompt plus an acting turn's `max_tokens` and
    `thinking_budget` exceeds `max_context` (the prompt estimated)."""
    out = []
    for q in questions:
        tokens = estimate_tokens(min_episode_chars(q, system_prompt))
        if tokens + max_tokens + thinking_budget > max_context:
            out.append(TooLong(q.id, tokens, max_context, max_tokens, thinking_budget))
    return out


INT64_MAX = 2**63 - 1
"""The largest integer SQLite stores: seeds, replicates, priorities and job ids above it
are refused with one line."""
