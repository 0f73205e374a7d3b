"""Typed model configurations, parsed once from a validated registry table.

`core.models.registry` checks a lab.toml table (one-line errors naming the file and
the model) and keeps the raw table for hashing; `spec_of` turns it into one of these
frozen dataclasses, which every reader uses instead of `params.get("…")` with its own
default. The defaults live here, once.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from core.models.cost import Prices
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
            (`sampling = "default"` or no sampling table).
        thinking: reasoning/extended thinking on.
        thinking_budget: tokens an acting turn may think (0 unless `thinking`).
        max_context: the model's context window in tokens, when known.
        retry: timeout, retries and backoff of one call.
        prices: dollars per million tokens (all 0 when the table gives none).
    """

    model: str
    sampling: Mapping[str, float] = field(default_factory=dict)
    thinking: bool = False
    thinking_budget: int = 0
    max_context: int | None = None
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    prices: Prices = field(default_factory=Prices)


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


def _served(params: Mapping[str, Any]) -> dict[str, Any]:
    sampling = params.get("sampling")
    thinking = bool(params.get("thinking", False))
    return {"model": str(params["model"]),
            "sampling": dict(sampling) if isinstance(sampling, Mapping) else {},
            "thinking": thinking,
            "thinking_budget": int(params.get("thinking_budget", 0)) if thinking else 0,
            "max_context": params.get("max_context"),
            "retry": RetryPolicy.from_params(params),
            "prices": Prices.from_params(params)}


def spec_of(backend: str, params: Mapping[str, Any]) -> OpenAISpec | AnthropicSpec | SimSpec:
    """The typed configuration of a validated registry table (`backend` left out).

    Args:
        backend: "openai", "anthropic" or "sim".
        params: the table `core.models.registry` validated.
    """
    if backend == "openai":
        tp = params.get("tensor_parallel_size")
        return OpenAISpec(**_served(params), endpoints=tuple(params.get("endpoints") or ()),
                          prompt_format=str(params.get("prompt_format", "react")),
                          transport=str(params.get("transport", "stream")),
                          tensor_parallel_size=None if tp is None else int(tp))
    if backend == "anthropic":
        return AnthropicSpec(**_served(params),
                             base_url=str(params.get("base_url") or DEFAULT_ANTHROPIC_URL))
    return SimSpec(**{k: v for k, v in params.items() if k != "concurrency"})
