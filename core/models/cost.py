"""Dollars per call from the registry's prices, and the pre-run estimate of a grid's cost.

Token accounting convention (both HTTP backends): `Generation.input_tokens` is every
prompt token of the call, cached or not; `cache_read_tokens` and `cache_write_tokens`
say how many of them were read from / written to the prompt cache. Prices are
dollars per million tokens: `price_per_mtok = {input, output, cache_write, cache_read}`;
cache prices default to Anthropic's ratios (1.25× and 0.1× input) when absent.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import prompts

if TYPE_CHECKING:
    from core.models.registry import ModelSpec

CACHE_WRITE_RATIO = 1.25
CACHE_READ_RATIO = 0.10


@dataclass(frozen=True)
class Prices:
    """Dollars per million tokens."""

    input: float = 0.0
    output: float = 0.0
    cache_write: float = 0.0
    cache_read: float = 0.0

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> Prices:
        """Prices of a registry entry (all zero when it has no price_per_mtok)."""
        p = params.get("price_per_mtok") or {}
        inp = float(p.get("input", 0.0))
        return cls(input=inp, output=float(p.get("output", 0.0)),
                   cache_write=float(p.get("cache_write", inp * CACHE_WRITE_RATIO)),
                   cache_read=float(p.get("cache_read", inp * CACHE_READ_RATIO)))

    def dollars(self, input_tokens: int, output_tokens: int, cache_read: int = 0,
                cache_write: int = 0) -> float:
        """Cost of one call; `input_tokens` includes the cached ones (see module doc)."""
        plain = max(0, input_tokens - cache_read - cache_write)
        return (plain * self.input + cache_read * self.cache_read
                + cache_write * self.cache_write + output_tokens * self.output) / 1e6


@dataclass(frozen=True)
class Assumptions:
    """The heuristic's per-turn sizes, in tokens (≈ 4 characters per token).

    Attributes:
        question: the first user message (question and counter).
        action: one acting reply (thought, action, input).
        observation: one observation message (a page of HotpotQA is ~50–80 tokens).
        side_question: the side-channel question appended to a judgment fork.
        judge_output: tokens a judgment reply uses (the limit is 8).
        min_cache_tokens: shortest prefix the provider caches (4,096 for Haiku 4.5);
            shorter prefixes are billed at the plain input price.
    """

    question: int = 40
    action: int = 60
    observation: int = 80
    side_question: int = 30
    judge_output: int = 3
    min_cache_tokens: int = 4096


def estimate_cost(spec: ModelSpec, episodes: int, budget: int, *, judge: bool = False,
                  assume: Assumptions = Assumptions()) -> dict[str, float | int]:
    """Upper-bound estimate of calls, tokens and dollars for `episodes` episodes.

    Heuristic (stated so a reader can redo it by hand):
    - every episode uses its whole budget of `budget` actions (agents that answer
      early cost less, so this is an upper bound on calls);
    - acting call t (1-based) sends the system prompt (its length in characters ÷ 4),
      the question, and t−1 earlier (action + observation) pairs, and returns
      `assume.action` tokens;
    - with `judge` (conditions that ask side-channel judgments) each observation but
      the last adds a fork: the acting prefix after that observation plus the side
      question, returning `assume.judge_output` tokens;
    - caching (breakpoint on the newest stable turn, as the anthropic backend does):
      once a call's stable prefix (all but a fork's side question) reaches
      `assume.min_cache_tokens`, the part already in cache is read from it and the
      rest of the prefix is written to it; shorter prefixes are not cached. Cache
      tokens are reported for every backend; dollars are 0 without prices
      (self-hosted models).

    Args:
        spec: the model (its price_per_mtok is used).
        episodes: number of episodes (questions × cells).
        budget: actions per episode.
        judge: whether the condition asks a side-channel judgment per observation.
        assume: the per-turn sizes.

    Returns:
        {"calls", "input_tokens", "output_tokens", "cache_read_tokens",
        "cache_write_tokens", "dollars"} for all episodes together.
    """
    prices = spec.prices
    system = len(prompts.load("system")) // 4
    pair = assume.action + assume.observation
    calls = inp = out = read = write = 0
    cached = 0  # prompt tokens of the episode in the provider's cache so far
    plain_cost = 0.0
    for t in range(1, budget + 1):
        prompt = system + assume.question + (t - 1) * pair
        turns = [(prompt, assume.action)]
        if judge and t < budget:
            turns.append((prompt + pair + assume.side_question, assume.judge_output))
        for size, reply in turns:
            calls += 1
            inp += size
            out += reply
            stable = min(size, prompt + pair)  # a fork's side question is never cached
            if stable >= assume.min_cache_tokens:
                r = min(cached, stable)
                read += r
                write += stable - r
                plain_cost += prices.dollars(size, reply, r, stable - r)
                cached = stable
            else:
                plain_cost += prices.dollars(size, reply)
    return {"calls": calls * episodes, "input_tokens": inp * episodes,
            "output_tokens": out * episodes, "cache_read_tokens": read * episodes,
            "cache_write_tokens": write * episodes, "dollars": round(plain_cost * episodes, 4)}
