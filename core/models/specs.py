"""The served backends' configurations: each frozen dataclass is its lab.toml table.

A field per key the table may hold, typed, with its default and bounds
(`core.models.declared` derives the registry's validation from them); the resolved
values the clients use (`retry`, `prices`, `request_sampling`, `act_max_tokens`,
`thinking_tokens`, `seed_policy`) are properties, so a default lives in one place
and the raw table stays what is hashed.
"""

from __future__ import annotations

import functools
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, ClassVar
from urllib.parse import urlsplit, urlunsplit

from core.bounds import MAX_PRICE, MAX_RETRIES, MAX_TIMEOUT_S, MAX_TOKENS, Bounds
from core.errors import ConfigError
from core.models.cost import Prices
from core.models.declared import (
    BackendConfig,
    Check,
    check_fields,
    concurrency_setting,
    setting,
)
from core.models.generation import (
    SEED_NONE,
    SEED_PROMPT,
    THINKING_TIMEOUT_S,
    TOOLS_MODES,
    TOOLS_TEXT,
    default_act_max_tokens,
    default_sampling,
    default_thinking_budget,
)
from core.models.retry import RetryPolicy
from core.prompt_set import PROMPT_FORMATS

DEFAULT_ANTHROPIC_URL = "https://api.anthropic.com"
"""The Anthropic API's address (`core.models.anthropic.DEFAULT_BASE_URL`)."""
ANTHROPIC_MIN_THINKING = 1024
"""The smallest extended-thinking budget the Anthropic API accepts (budget_tokens)."""
BATCH_DISCOUNT = 0.5
"""Price factor of a call through Claude's Message Batches API (half the direct price)."""
TRANSPORTS = ("stream", "httpx", "sdk")
"""How an OpenAI-compatible model's calls are sent (`transport`): "stream", the
keep-alive pool of core.models.transport for http endpoints (httpx for https); "httpx",
httpx.AsyncClient always; "sdk", the openai SDK's AsyncOpenAI (bench/concurrency.py
--transport compares their CPU cost on the worker's path)."""
SAMPLING_KEYS = frozenset({"temperature", "top_p", "top_k", "min_p", "presence_penalty",
                           "frequency_penalty", "repetition_penalty", "seed"})
"""Keys a `sampling = { … }` table may hold (sent to the server as they are)."""
REPLICAS_WITH_RAY = (
    "replicas runs copies of a model on the GPUs of one box; with ray_address one vLLM "
    "server spans the Ray cluster: set data_parallel_size for copies across it instead")
"""Why `replicas` and `ray_address` do not go together."""
_PRICE_KEYS = ("input", "output", "cache_write", "cache_read")
_SECONDS = {"unit": "seconds", "le": MAX_TIMEOUT_S, "serving": True}


PORT_BOUNDS = Bounds(ge=1, le=65535, integer=True)
"""A TCP port."""


def url_error(value: Any) -> str | None:
    """What is wrong with an endpoint URL (not http(s), no host, a control character or
    space, a port outside 1–65535), or None; the URL itself is never quoted (it may hold
    credentials)."""
    if not isinstance(value, str) or not value.startswith(("http://", "https://")):
        return "must be an http(s) URL"
    if any(ch.isspace() or unicodedata.category(ch) == "Cc" for ch in value):
        return "holds a space or control character"
    try:
        parts = urlsplit(value)
        port = parts.port
    except ValueError:
        return f"has a port that is not an integer {PORT_BOUNDS.range_text()}"
    if not parts.hostname:
        return "has no host"
    if port is not None and PORT_BOUNDS.error("port", port) is not None:
        return f"has a port that is not an integer {PORT_BOUNDS.range_text()}, got {port}"
    return None


def _urls(key: str, value: Any) -> str | None:
    example = "e.g. [\"http://127.0.0.1:8000/v1\"]"
    if not isinstance(value, (list, tuple)) or not value:
        return f"{key} must be a non-empty list of http(s) URLs, {example}"
    for i, url in enumerate(value):
        error = url_error(url)
        if error is not None:
            return f"{key}[{i}] {error}; {key} must be a non-empty list of http(s) URLs, {example}"
    return None


def ray_address_problem(key: str, value: Any) -> str | None:
    """What is wrong with a Ray address (None: nothing, or none given)."""
    if value is None or (isinstance(value, str) and value.strip() and " " not in value):
        return None
    return f"{key} must be the Ray cluster's address, e.g. \"10.0.0.1:6379\" or \"auto\""


def replica_urls(url: str, replicas: int) -> tuple[str, ...]:
    """`url` and the next `replicas - 1` ports of its host (one vLLM replica on each).

    Userinfo, path and query are kept, so a credential reaches every replica. A URL
    without a port stands for the scheme's (80 or 443).
    """
    if replicas <= 1:
        return (url,)
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    head = parts.netloc.rsplit("@", 1)[0] + "@" if "@" in parts.netloc else ""
    host = parts.hostname or ""
    host = f"[{host}]" if ":" in host else host
    return tuple(urlunsplit(parts._replace(netloc=f"{head}{host}:{port + i}"))
                 for i in range(replicas))


def _url(key: str, value: Any) -> str | None:
    error = url_error(value)
    if error is None:
        return None
    return f"{key} {error}; it must be an http(s) URL, e.g. \"{DEFAULT_ANTHROPIC_URL}\""


SAMPLING_BOUNDS = {
    "temperature": Bounds(ge=0, le=2), "top_p": Bounds(ge=0, le=1),
    "top_k": Bounds(ge=-1, le=MAX_TOKENS, integer=True), "min_p": Bounds(ge=0, le=1),
    "presence_penalty": Bounds(ge=-2, le=2), "frequency_penalty": Bounds(ge=-2, le=2),
    "repetition_penalty": Bounds(gt=0, le=10), "seed": Bounds(ge=0, le=2 ** 63 - 1,
                                                              integer=True)}
"""What each sampling key's value may be: the OpenAI API's ranges (temperature 0–2,
penalties -2–2), vLLM's for its own keys (top_k -1 = off, min_p, repetition_penalty >
0), a seed SQLite can store; the Anthropic API narrows temperature to 0–1."""
ANTHROPIC_MAX_TEMPERATURE = 1.0
"""The Anthropic API's largest temperature."""
PRICE_BOUNDS = Bounds(ge=0, le=MAX_PRICE, unit="dollars per million tokens")
"""A price in dollars per million tokens."""
MAX_GPUS = 1024
"""The most GPUs one vLLM server may be given (`tensor_parallel_size`; also the bound of
the pipeline and data parallel sizes and of `replicas`)."""


def _sampling_check(max_temperature: float) -> Check:
    """The check of a `sampling` table whose temperature may reach `max_temperature`."""
    def check(key: str, value: Any) -> str | None:
        if value is None or value == "default":
            return None
        if not (isinstance(value, Mapping) and all(
                isinstance(v, (int, float)) and not isinstance(v, bool)
                for v in value.values())):
            return (f"{key} must be \"default\" or a table of numbers, "
                    f"e.g. {{ temperature = 0.7, top_p = 0.8 }}")
        unknown = sorted(set(value) - SAMPLING_KEYS)
        if unknown:
            return f"unknown {key} key '{unknown[0]}' (known: {', '.join(sorted(SAMPLING_KEYS))})"
        for name, v in value.items():
            bounds = SAMPLING_BOUNDS[name]
            if name == "temperature":
                bounds = replace(bounds, le=max_temperature)
            error = bounds.error(f"{key}.{name}", v)
            if error is not None:
                return error
        return None
    return check


_sampling = _sampling_check(SAMPLING_BOUNDS["temperature"].le or 2)


def _prices(key: str, value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, Mapping) or "input" not in value or "output" not in value:
        return f"{key} needs input and output, e.g. {{ input = 1.0, output = 5.0 }}"
    for name, v in value.items():
        if name not in _PRICE_KEYS:
            return f"{key}.{name} is not a price (known: {', '.join(_PRICE_KEYS)})"
        error = PRICE_BOUNDS.error(f"{key}.{name}", v)
        if error is not None:
            return error
    return None


def _seed(key: str, value: Any) -> str | None:
    if (isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2 ** 63) or (
            value in (SEED_PROMPT, SEED_NONE)):
        return None
    return (f"{key} must be an integer >= 0, \"{SEED_PROMPT}\" (derived from each request) "
            f"or \"{SEED_NONE}\", got {value!r}")


@dataclass(frozen=True, kw_only=True)
class ServedSpec(BackendConfig):
    """What an OpenAI-compatible or Anthropic model's table may say (see docs/models.md).

    Attributes:
        model: the served model's name (sent with every request).
        sampling: sampling parameters sent as they are; "default": the server's
            defaults; unset: `core.models.generation.default_sampling` (see
            `request_sampling`).
        thinking: reasoning/extended thinking on.
        thinking_budget: tokens an acting turn may think on top of its max_tokens
            (only with thinking; unset: `thinking_tokens`' default).
        max_context: the model's context window in tokens, when known.
        max_tokens: max_tokens of an acting turn (unset: by family, `act_max_tokens`).
        price_per_mtok: dollars per million tokens (input, output, cache_write,
            cache_read).
        timeout_s, max_retries, backoff_s, backoff_max_s: one call's timeout and
            retries (`retry`; a thinking model's timeout defaults to
            `core.models.generation.THINKING_TIMEOUT_S`).
        down_after, outage_wait_s, probe_s: how the model's endpoint outages are
            handled (`core.models.health`).
        concurrency: concurrent episodes allowed against the model.
    """

    model: str = setting()
    sampling: Mapping[str, float] | str | None = setting(None, check=_sampling)
    thinking: bool = setting(False)
    thinking_budget: int | None = setting(None, ge=1, le=MAX_TOKENS, unit="tokens")
    max_context: int | None = setting(None, ge=1, le=MAX_TOKENS)
    max_tokens: int | None = setting(None, ge=1, le=MAX_TOKENS)
    price_per_mtok: Mapping[str, float] | None = setting(None, check=_prices)
    timeout_s: float | None = setting(None, gt=0, **_SECONDS)
    max_retries: int = setting(RetryPolicy.max_retries, ge=0, le=MAX_RETRIES, serving=True)
    backoff_s: float = setting(RetryPolicy.backoff_s, ge=0, **_SECONDS)
    backoff_max_s: float = setting(RetryPolicy.backoff_max_s, ge=0, **_SECONDS)
    down_after: int = setting(RetryPolicy.down_after, ge=1, le=MAX_RETRIES, serving=True)
    outage_wait_s: float = setting(RetryPolicy.outage_wait_s, gt=0, **_SECONDS)
    probe_s: float = setting(RetryPolicy.probe_s, gt=0, **_SECONDS)
    concurrency: int = concurrency_setting(16)

    backend: ClassVar[str] = ""
    """The backend's registry name (the defaults by family depend on it)."""

    def __post_init__(self) -> None:
        check_fields(self)
        if self.thinking_budget is not None and not self.thinking:
            raise ConfigError("thinking_budget is set but thinking is not true; add "
                              "thinking = true or remove thinking_budget")

    @property
    def detail(self) -> str:
        """The served model's name."""
        return self.model

    @property
    def prices(self) -> Prices:
        """Dollars per million tokens (all 0 when the table gives none)."""
        return Prices.from_params({"price_per_mtok": self.price_per_mtok})

    @functools.cached_property
    def retry(self) -> RetryPolicy:
        """Timeout, retries, backoff and outage handling of one call."""
        timeout = self.timeout_s if self.timeout_s is not None else (
            max(RetryPolicy.timeout_s, THINKING_TIMEOUT_S) if self.thinking
            else RetryPolicy.timeout_s)
        return RetryPolicy(timeout_s=float(timeout), max_retries=self.max_retries,
                           backoff_s=float(self.backoff_s),
                           backoff_max_s=float(self.backoff_max_s), down_after=self.down_after,
                           outage_wait_s=float(self.outage_wait_s), probe_s=float(self.probe_s))

    @functools.cached_property
    def request_sampling(self) -> dict[str, Any]:
        """What every request sends: the table, nothing for "default", else by family."""
        if isinstance(self.sampling, Mapping):
            return dict(self.sampling)
        if self.sampling is None:
            return default_sampling(self.backend, self.model, self.thinking)
        return {}

    @property
    def act_max_tokens(self) -> int:
        """max_tokens of an acting turn (`max_tokens`, else by family)."""
        return self.max_tokens or default_act_max_tokens(self.backend, self.model)

    @property
    def thinking_tokens(self) -> int:
        """Tokens an acting turn may think on top of `act_max_tokens` (0 unless thinking)."""
        if not self.thinking:
            return 0
        return self.thinking_budget or self._default_thinking()

    def _default_thinking(self) -> int:
        return 0

    @property
    def seed_policy(self) -> int | str:
        """The per-request seed: SEED_PROMPT, SEED_NONE or a fixed integer."""
        return SEED_NONE

    def generation(self) -> dict[str, Any]:
        """The resolved generation settings, hashed into the model's spec (defaults
        included, so a changed default never pools with results under the old one)."""
        return {"act_max_tokens": self.act_max_tokens, "thinking_budget": self.thinking_tokens,
                "sampling": dict(self.request_sampling), "seed": self.seed_policy}


@dataclass(frozen=True, kw_only=True)
class OpenAISpec(ServedSpec):
    """A model served by vLLM or another OpenAI-compatible server.

    Attributes:
        endpoints: base URLs as written in lab.toml (credentials included: send them,
            never store or print them unredacted).
        prompt_format: "react" or "search_r1".
        transport: how requests are sent ("stream", "httpx" or "sdk").
        tensor_parallel_size, pipeline_parallel_size, data_parallel_size: vLLM's
            parallelism of each server `lab serve` starts, when set.
        ray_address: the Ray cluster one server spans (`lab serve` starts vLLM with
            its Ray executor there: a model larger than one box).
        replicas: vLLM servers of this model on one box, each on its own GPUs and on
            consecutive ports: each URL in `endpoints` stands for itself and the next
            `replicas - 1` ports of its host (`served_at`).
        seed: the per-request seed: "prompt" (derived from each request), "none" (none
            sent) or a fixed integer; an integer sampling.seed fixes it too.
    """

    endpoints: tuple[str, ...] = setting(check=_urls, serving=True)
    prompt_format: str = setting("react", choices=PROMPT_FORMATS,
                                 note=" (\"search_r1\": Search-R1's <search>/<answer> tags)")
    transport: str = setting("stream", choices=TRANSPORTS, serving=True)
    tensor_parallel_size: int | None = setting(None, ge=1, le=MAX_GPUS, serving=True)
    pipeline_parallel_size: int | None = setting(None, ge=1, le=MAX_GPUS, serving=True)
    data_parallel_size: int | None = setting(None, ge=1, le=MAX_GPUS, serving=True)
    ray_address: str | None = setting(None, check=ray_address_problem, serving=True)
    replicas: int = setting(1, ge=1, le=MAX_GPUS, serving=True)
    seed: int | str = setting(SEED_PROMPT, check=_seed)

    backend: ClassVar[str] = "openai"
    server: ClassVar[str] = "vLLM"

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.replicas > 1 and self.ray_address is not None:
            raise ConfigError(REPLICAS_WITH_RAY)

    def served_at(self) -> tuple[str, ...]:
        """The endpoints, each with its replicas' ports (`replicas`), in order."""
        return tuple(dict.fromkeys(u for url in self.endpoints
                                   for u in replica_urls(url, self.replicas)))

    def check_server(self, url: str, timeout_s: float) -> str:
        """GET /v1/models and vLLM's /health (`core.models.server_checks`)."""
        from core.models.server_checks import check_endpoint
        return check_endpoint(url, self.model, timeout_s)

    def _default_thinking(self) -> int:
        return default_thinking_budget(self.act_max_tokens)

    @property
    def seed_policy(self) -> int | str:
        """An integer sampling.seed or `seed` fixes it; "none" sends none."""
        sampling = self.request_sampling
        if isinstance(sampling.get("seed"), int):
            return int(sampling["seed"])
        return self.seed


@dataclass(frozen=True, kw_only=True)
class AnthropicSpec(ServedSpec):
    """A Claude model through the Anthropic API.

    Attributes:
        base_url: the API's address (credentials in it are sent, never stored).
        tools: "text": ReAct in text, no tools declared (the paper's Claude runs);
            "native": search, lookup and finish declared as tools.
        thinking_budget: extended thinking needs one of at least 1,024 tokens.
    """

    base_url: str = setting(DEFAULT_ANTHROPIC_URL, check=_url, serving=True)
    sampling: Mapping[str, float] | str | None = setting(
        None, check=_sampling_check(ANTHROPIC_MAX_TEMPERATURE))
    tools: str = setting(TOOLS_TEXT, choices=TOOLS_MODES,
                         note=" (\"text\": ReAct in text, \"native\": tool-use blocks)")
    thinking_budget: int | None = setting(None, ge=ANTHROPIC_MIN_THINKING, le=MAX_TOKENS,
                                          unit="tokens")

    backend: ClassVar[str] = "anthropic"
    batch_discount: ClassVar[float | None] = BATCH_DISCOUNT
    server: ClassVar[str] = "Claude"
    check_needs_key: ClassVar[bool] = True

    def served_at(self) -> tuple[str, ...]:
        """The API's address."""
        return (self.base_url,)

    def check_server(self, url: str, timeout_s: float) -> str:
        """Is the key set and accepted (`core.models.server_checks`)."""
        from core.models.server_checks import check_anthropic
        return check_anthropic(url, timeout_s)

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.thinking and self.thinking_budget is None:
            raise ConfigError(f"thinking = true needs thinking_budget (tokens of extended "
                              f"thinking per turn, >= {ANTHROPIC_MIN_THINKING}), e.g. "
                              f"thinking_budget = 4096")
        fixed = sorted({"temperature", "top_k"} & set(self.sampling)) if isinstance(
            self.sampling, Mapping) and self.thinking else []
        if fixed:
            raise ConfigError(f"extended thinking accepts no {fixed[0]}; use sampling = "
                              f"\"default\" (or only top_p between 0.95 and 1)")

    def generation(self) -> dict[str, Any]:
        """The resolved generation settings with the tools mode (see ServedSpec)."""
        return {**super().generation(), "tools": self.tools}

