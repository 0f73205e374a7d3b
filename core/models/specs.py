"""Typed model configurations, parsed once from a validated registry table.

`core.models.registry` checks a lab.toml table (one-line errors naming the file and
the model) and keeps the raw table for hashing; `spec_of` turns it into one of these
frozen dataclasses, which every reader uses instead of `params.get("…")` with its own
default. The defaults live here, once.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from core.models.cost import Prices
from core.models.generation import (SEED_NONE, SEED_PROMPT, THINKING_TIMEOUT_S, TOOLS_TEXT,
                                    default_act_max_tokens, default_sampling,
                                    default_thinking_budget)
from core.models.retry import RetryPolicy
from core.models.sim import SimSpec

DEFAULT_ANTHROPIC_URL = "https://api.anthropic.com"
"""The Anthropic API's address (`core.models.anthropic.DEFAULT_BASE_URL`)."""


@dataclass(frozen=True)
class ServedSpec:
    """What an OpenAI-compatible or Anthropic model's table says, typed.

    Attributes:
        model: the served model's name (sent with every request).
        sampling: sampling parameters sent as they are; empty = the server's defaults
            (`sampling = "default"`); without a table,
            `core.models.generation.default_sampling` (greedy for a served model).
        thinking: reasoning/extended thinking on.
        thinking_budget: tokens an acting turn may think on top of `act_max_tokens`
            (0 unless `thinking`).
        max_context: the model's context window in tokens, when known.
        retry: timeout, retries and backoff of one call (a thinking model's timeout
            defaults to `core.models.generation.THINKING_TIMEOUT_S`).
        prices: dollars per million tokens (all 0 when the table gives none).
        act_max_tokens: max_tokens of an acting turn (`max_tokens`, else by family:
            `core.models.generation.default_act_max_tokens`).
        seed: the per-request seed: SEED_PROMPT (derived from each request), SEED_NONE
            (none sent) or a fixed integer.
    """

    model: str
    sampling: Mapping[str, float] = field(default_factory=dict)
    thinking: bool = False
    thinking_budget: int = 0
    max_context: int | None = None
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    prices: Prices = field(default_factory=Prices)
    act_max_tokens: int = 400
    seed: int | str = SEED_NONE

    def generation(self) -> dict[str, Any]:
        """The resolved generation settings, hashed into the model's spec (defaults
        included, so a changed default never pools with results under the old one)."""
        return {"act_max_tokens": self.act_max_tokens, "thinking_budget": self.thinking_budget,
                "sampling": dict(self.sampling), "seed": self.seed}


@dataclass(frozen=True)
class OpenAISpec(ServedSpec):
    """A model served by vLLM or another OpenAI-compatible server.

    Attributes:
        endpoints: base URLs as written in lab.toml (credentials included: send them,
            never store or print them unredacted).
        prompt_format: "react" or "search_r1".
        transport: how requests are sent ("stream", "httpx" or "sdk").
        tensor_parallel_size: GPUs per vLLM server (`lab serve`), when set.
    """

    endpoints: tuple[str, ...] = ()
    prompt_format: str = "react"
    transport: str = "stream"
    tensor_parallel_size: int | None = None


@dataclass(frozen=True)
class AnthropicSpec(ServedSpec):
    """A Claude model through the Anthropic API.

    Attributes:
        base_url: the API's address (credentials in it are sent, never stored).
    """

    base_url: str = DEFAULT_ANTHROPIC_URL
    tools: str = TOOLS_TEXT
    """"text": ReAct in text, no tools declared (the paper's Claude runs); "native":
    search, lookup and finish declared as tools."""

    def generation(self) -> dict[str, Any]:
        """The resolved generation settings with the tools mode (see ServedSpec)."""
        return {**super().generation(), "tools": self.tools}


def _seed(params: Mapping[str, Any], sampling: Mapping[str, Any]) -> int | str:
    """The seed policy: sampling.seed or an integer `seed` fixes it; "none" sends none."""
    if isinstance(sampling.get("seed"), int):
        return int(sampling["seed"])
    seed = params.get("seed", SEED_PROMPT)
    return seed if isinstance(seed, int) or seed == SEED_NONE else SEED_PROMPT


def _served(backend: str, params: Mapping[str, Any]) -> dict[str, Any]:
    raw = params.get("sampling")
    thinking = bool(params.get("thinking", False))
    model = str(params["model"])
    sampling: dict[str, Any] = (dict(raw) if isinstance(raw, Mapping) else
                                default_sampling(backend, model, thinking) if raw is None
                                else {})
    act = int(params.get("max_tokens") or default_act_max_tokens(backend, model))
    budget = 0
    if thinking:
        budget = int(params.get("thinking_budget") or (
            default_thinking_budget(act) if backend == "openai" else 0))
    retry = RetryPolicy.from_params(params)
    if thinking and "timeout_s" not in params:
        retry = replace(retry, timeout_s=max(retry.timeout_s, THINKING_TIMEOUT_S))
    return {"model": model, "sampling": sampling, "thinking": thinking,
            "thinking_budget": budget, "max_context": params.get("max_context"),
            "retry": retry, "prices": Prices.from_params(params), "act_max_tokens": act,
            "seed": _seed(params, sampling) if backend == "openai" else SEED_NONE}


def spec_of(backend: str, params: Mapping[str, Any]) -> OpenAISpec | AnthropicSpec | SimSpec:
    """The typed configuration of a validated registry table (`backend` left out).

    Args:
        backend: "openai", "anthropic" or "sim".
        params: the table `core.models.registry` validated.
    """
    if backend == "openai":
        tp = params.get("tensor_parallel_size")
        return OpenAISpec(**_served(backend, params),
                          endpoints=tuple(params.get("endpoints") or ()),
                          prompt_format=str(params.get("prompt_format", "react")),
                          transport=str(params.get("transport", "stream")),
                          tensor_parallel_size=None if tp is None else int(tp))
    if backend == "anthropic":
        return AnthropicSpec(**_served(backend, params),
                             base_url=str(params.get("base_url") or DEFAULT_ANTHROPIC_URL),
                             tools=str(params.get("tools", TOOLS_TEXT)))
    return SimSpec(**{k: v for k, v in params.items() if k != "concurrency"})
