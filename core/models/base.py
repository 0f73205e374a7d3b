"""The ModelClient protocol every backend implements.

A client is long-lived (one per model); `start` opens a session for one episode.
The session is where a backend keeps per-episode state: the endpoint the episode
is pinned to (so its forks hit the same prefix cache), or a simulated agent's
private draws.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from core.data import Question

Message = dict[str, str]
"""A chat message: {"role": "system"|"user"|"assistant", "content": str}."""


@dataclass(frozen=True)
class Generation:
    """One model reply and what it cost.

    `reasoning` is thinking-mode text, kept out of `text` (which is what goes back into
    the acting history); `reasoning_tokens` are the output tokens it took (part of
    `output_tokens`), as the API reports them or else estimated
    (`core.models.reasoning.estimate_reasoning_tokens`).
    """

    text: str
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float = 0.0
    latency_ms: float = 0.0
    reasoning: str = ""
    reasoning_tokens: int = 0
    finish: str = "stop"
    """Why generation stopped, normalised across backends: FINISH_STOP (a stop string,
    end of turn, or a backend that does not say), FINISH_LENGTH (cut at max_tokens:
    vLLM's finish_reason "length", Anthropic's stop_reason "max_tokens") or
    FINISH_REFUSAL (Anthropic's stop_reason "refusal")."""


FINISH_STOP = "stop"
FINISH_LENGTH = "length"
FINISH_REFUSAL = "refusal"
END_TRUNCATED = "generation_truncated"
"""An episode's end_reason when an acting turn was cut at max_tokens (the paper counts
truncated generations apart from format failures)."""
END_REFUSAL = "refusal"
"""An episode's end_reason when the model refused to answer (Anthropic stop_reason)."""


@dataclass
class ObservationLabel:
    """What the harness knows about one observation (design label and source).

    `tool` is the source the tool call read: "primary", or "backup" for backup_search
    (and lookups on a backup article) in two-source arms.
    """

    index: int
    failed: bool
    source: str
    text: str = ""
    tool: str = "primary"


@dataclass
class EpisodeView:
    """What a session may know about its episode; updated by the episode loop.

    Real backends read only `seed` and `replicate` (for sampling seeds); the simulated
    agents read the design labels from it (they are simulations with known behaviour,
    not agents under study).
    """

    question: Question
    seed: int
    budget: int
    observations: list[ObservationLabel] = field(default_factory=list)
    replicate: int = 0
    """The cell's replicate: served backends mix it (with `seed`) into each request's
    sampling seed, so a replicate draws new seeds."""


class ModelSession(Protocol):
    """One episode's conversation with a model."""

    async def generate(
        self,
        messages: Sequence[Message],
        *,
        kind: str,
        max_tokens: int,
        stop: Sequence[str] = (),
    ) -> Generation:
        """Generate one reply.

        Args:
            messages: the full conversation, system message first.
            kind: "act" for acting turns, "judge" for side-channel forks, "probe" etc.
            max_tokens: generation limit.
            stop: stop sequences (e.g. "Observation:").

        Raises:
            core.errors.ModelError: the call failed; `retryable` says whether to retry.
        """
        ...


class ModelClient(Protocol):
    """A model backend."""

    name: str
    concurrency: int

    def start(self, view: EpisodeView) -> ModelSession:
        """Open a session for one episode."""
        ...


async def aclose(client: object) -> None:
    """Release a client's connections before its event loop ends (the `aclose`
    capability; a client without connections has none)."""
    close = getattr(client, "aclose", None)
    if close is not None:
        await close()


def batch_api(client: object) -> Any:
    """The client's batch API (the `batches` capability: Claude's Message Batches), or
    None when its backend has none."""
    batches = getattr(client, "batches", None)
    return batches() if batches is not None else None
