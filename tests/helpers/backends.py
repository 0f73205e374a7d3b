"""Model specs for the loopback OpenAI-compatible and Anthropic servers.

No call may time out on a loaded machine (retries come only from injected faults), so
the servers' call counts are exact: every call gets `FAST["timeout_s"]` = 30 s. Only
tests of hang faults set a short timeout (`HANG_TIMEOUT_S`); the server then holds the
call until the test ends. With every call hanging, a short timeout races nothing (0.5 s
per attempt); with one hanging call, the others get 1.5 s each, a hundred times what a
loopback call takes, and one that still timed out on a loaded machine would only be
retried (those tests assert that every episode finishes, not the call count).
"""

from __future__ import annotations

from typing import Any

from core.models.registry import ModelSpec

FAST = {"timeout_s": 30.0, "max_retries": 2, "backoff_s": 0.01, "backoff_max_s": 0.05}
HANG_TIMEOUT_S = {"always": 0.5, "once": 1.5}
ANTHROPIC_KEY = "sk-ant-loopback-0123456789abcdef"
ANTHROPIC_PRICES = {"input": 1.0, "output": 5.0, "cache_write": 1.25, "cache_read": 0.10}


def openai_spec(*urls: str, **extra: Any) -> ModelSpec:
    """An `openai` backend spec on the loopback servers at `urls` (their /v1)."""
    params = {"model": "loopback-model", "endpoints": [f"{u}/v1" for u in urls],
              "sampling": {"temperature": 0.7, "top_p": 0.8, "top_k": 20, "min_p": 0.0},
              "thinking": False, "concurrency": 4, **FAST, **extra}
    return ModelSpec("vllm-test", "openai", params)


def anthropic_spec(url: str, **extra: Any) -> ModelSpec:
    """An `anthropic` backend spec on the loopback Messages API server at `url`."""
    params = {"model": "claude-loopback", "base_url": url, "sampling": "default",
              "price_per_mtok": ANTHROPIC_PRICES, "concurrency": 4, **FAST, **extra}
    return ModelSpec("claude-test", "anthropic", params)
