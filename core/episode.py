"""Records produced by one episode: its steps and its outcome (no I/O)."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime


def utc_now() -> str:
    """Current UTC time, ISO 8601 with microseconds."""
    return datetime.now(UTC).isoformat(timespec="microseconds")


def iso_time(ts: float) -> str:
    """Seconds since the epoch as lab stores a time (`utc_now`'s form), which compares
    as text in time order."""
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="microseconds")


@dataclass
class Step:
    """One agent turn (action t, 1-based) and what followed it.

    `judgment` is the agent's own verdict on the observation this step's tool call
    returned (asked before the next action); `stated_judgment` is read from the next
    thought; `rule_signal` is what the harness's rule acted on (arms with a rule);
    `streak` is the useless run after this step's observation (the rule signal's run
    for rule arms, the own-judgment run otherwise). `reasoning` is the turn's
    thinking-mode text and `reasoning_tokens` its tokens (part of `output_tokens`);
    neither is ever part of `raw` or fed back into the history.
    """

    t: int
    raw: str
    thought: str = ""
    action: str | None = None
    argument: str | None = None
    obs_index: int | None = None
    obs_failed: bool | None = None
    obs_source: str | None = None
    obs_ref: str | None = None
    obs_text: str | None = None
    judgment: str | None = None
    judgment_source: str | None = None
    judgment_raw: str | None = None
    rule_signal: str | None = None
    stated_judgment: str | None = None
    streak: int = 0
    forced: bool = False
    refused: bool = False
    format_failure: bool = False
    decision: str | None = None
    discarded: bool = False
    """A turn the stated-judgment rule discarded (same t as its forced re-ask)."""
    tool_source: str | None = None
    """"primary" or "backup" for a tool call in a two-source arm; None otherwise."""
    input_tokens: int = 0
    output_tokens: int = 0
    latency_ms: float = 0.0
    reasoning: str | None = None
    reasoning_tokens: int = 0
    decision_raw: str | None = field(default=None, compare=False)
    """The decide arm's decision-turn reply that `decision` was parsed from, as the model
    wrote it (the agent's history holds it, so probes rebuild it from here); None on
    other arms and on steps stored before lab.db had the column."""
    cut: str | None = field(default=None, compare=False)
    """Why the turn has no action although it is no format failure: "generation_truncated"
    (cut at max_tokens) or "refusal"; the episode ended on it (its end_reason says so)."""
    shown: str | None = field(default=None, compare=False)
    """The observation text the agent saw; kept in memory and in the live table only
    (the steps table stores obs_ref instead, and obs_text when not reconstructible)."""


@dataclass
class EpisodeResult:
    """The outcome of one episode with all its steps."""

    question_id: str
    answered: bool = False
    answer: str | None = None
    answer_action: int | None = None
    em: bool = False
    f1: float = 0.0
    correct: bool = False
    placeholder: bool = False
    tool_calls: int = 0
    extra_calls: int = 0
    format_failures: int = 0
    forced_turns: int = 0
    refused_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0
    cost_usd: float = 0.0
    wall_ms: float = 0.0
    end_reason: str = ""
    error: str | None = None
    server: str | None = None
    started_at: str = ""
    finished_at: str = ""
    steps: list[Step] = field(default_factory=list)
    prompts: dict[str, str] = field(default_factory=dict)
    """sha256 of each prompt file the episode used, keyed "prompts/<name>.txt"."""

    @property
    def prompts_sha256(self) -> str | None:
        """One hash for the prompt files used (None when none was recorded)."""
        return prompt_set_sha256(self.prompts) if self.prompts else None


def prompt_set_sha256(files: Mapping[str, str]) -> str:
    """sha256 of the sorted "file sha256" lines of a set of prompt files.

    Args:
        files: sha256 hex digest per prompt file path.
    """
    lines = "".join(f"{name} {digest}\n" for name, digest in sorted(files.items()))
    return hashlib.sha256(lines.encode()).hexdigest()
