"""The model registry: lab.toml plus the built-in simulated models (SPEC §9).

A model is a frozen spec; its canonical JSON (minus endpoints, which say where
it is served rather than what it is) is hashed into every cell.
"""

from __future__ import annotations

import functools
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from core.canonical import canonical_json, sha256_hex
from core.errors import ConfigError
from core.models.base import ModelClient
from core.models.sim import BUILTIN_SIMS, POLICIES, SimClient, SimSpec
from core.models.cost import Prices
from core.models.generation import SEED_NONE, SEED_PROMPT, TOOLS_MODES
from core.models.specs import AnthropicSpec, OpenAISpec, ServedSpec, spec_of
from core.prompt_set import PROMPT_FORMATS

BACKENDS = ("openai", "anthropic", "sim")
_COMMON = frozenset({"backend", "concurrency"})
OUTAGE_FIELDS = ("down_after", "outage_wait_s", "probe_s")
"""How a served model's endpoint outages are handled (`core.models.health`): serving
settings, never hashed."""
_SERVED = _COMMON | set(OUTAGE_FIELDS)
_FIELDS: Mapping[str, frozenset[str]] = MappingProxyType({
    "openai": _SERVED | {"model", "endpoints", "sampling", "thinking", "thinking_budget",
                         "max_context", "timeout_s", "max_retries", "price_per_mtok",
                         "backoff_s", "backoff_max_s", "tensor_parallel_size", "prompt_format",
                         "transport", "max_tokens", "seed"},
    "anthropic": _SERVED | {"model", "sampling", "thinking", "thinking_budget", "max_context",
                            "timeout_s", "max_retries", "price_per_mtok", "base_url",
                            "backoff_s", "backoff_max_s", "max_tokens", "tools"},
    "sim": _COMMON | {"policy", "k", "c", "p_useless_failed", "p_useless_real",
                      "p_answer_useful", "hazard_slope", "p_guess", "latency_ms", "switch",
                      "switch_k", "switch_at", "stated", "p_silent"},
})
_PRICE_KEYS = ("input", "output", "cache_write", "cache_read")
TOP_LEVEL = ("models",)
"""The tables lab.toml may have at its top level."""
SAMPLING_KEYS = frozenset({"temperature", "top_p", "top_k", "min_p", "presence_penalty",
                           "frequency_penalty", "repetition_penalty", "seed"})
"""Keys a `sampling = { … }` table may hold (sent to the server as they are)."""
SERVING_FIELDS = ("endpoints", "concurrency", "base_url", "timeout_s", "max_retries", "backoff_s",
                  "backoff_max_s", "tensor_parallel_size", "latency_ms", "transport",
                  *OUTAGE_FIELDS)
"""Where and how a model is served, not what it is: left out of the hashed spec."""
_REQUIRED = MappingProxyType({"openai": ("model", "endpoints"), "anthropic": ("model",),
                              "sim": ("policy",)})


@dataclass(frozen=True)
class ModelSpec:
    """One registered model.

    Attributes:
        name: registry name (the `[models.NAME]` key).
        backend: "openai" (vLLM), "anthropic" or "sim".
        params: the validated table from lab.toml, minus `backend`.
    """

    name: str
    backend: str
    params: Mapping[str, Any] = field(default_factory=dict)

    @functools.cached_property
    def config(self) -> OpenAISpec | AnthropicSpec | SimSpec:
        """The table typed, parsed once (`core.models.specs`): what readers use."""
        return spec_of(self.backend, self.params)

    @property
    def prices(self) -> Prices:
        """Dollars per million tokens (0 for sims and unpriced models)."""
        if self.backend == "sim":  # a scripted test model may have no sim policy at all
            return Prices()
        return self.config.prices if isinstance(self.config, ServedSpec) else Prices()

    @property
    def max_context(self) -> int | None:
        """The context window in tokens, when the registry gives it (never for sims)."""
        if self.backend == "sim":
            return None
        return self.config.max_context if isinstance(self.config, ServedSpec) else None

    @property
    def prompt_format(self) -> str:
        """"react", or "search_r1" for an OpenAI-compatible model that asks for it."""
        if self.backend != "openai":
            return "react"
        return self.config.prompt_format if isinstance(self.config, OpenAISpec) else "react"

    @property
    def act_max_tokens(self) -> int | None:
        """max_tokens of an acting turn (`core.models.generation`); None for sims, which
        generate no tokens (the episode loop's default applies)."""
        if self.backend == "sim":
            return None
        return self.config.act_max_tokens if isinstance(self.config, ServedSpec) else None

    @property
    def thinking_budget(self) -> int:
        """Tokens an acting turn may think on top of `act_max_tokens` (0 without thinking)."""
        if self.backend == "sim":
            return 0
        return self.config.thinking_budget if isinstance(self.config, ServedSpec) else 0

    @property
    def concurrency(self) -> int:
        """Concurrent episodes allowed against this model."""
        return int(self.params.get("concurrency", 1024 if self.backend == "sim" else 16))

    def spec(self) -> dict[str, Any]:
        """What the model is (not where it is served): hashed into every cell.

        A served model's resolved generation settings (max_tokens, thinking budget,
        sampling, seed policy, Claude's tools mode) are part of it under "generation",
        defaults included, so a change of default never pools with older results.
        """
        out = {k: v for k, v in self.params.items() if k not in SERVING_FIELDS}
        out.update(name=self.name, backend=self.backend)
        if self.backend != "sim" and isinstance(self.config, ServedSpec):
            out["generation"] = self.config.generation()
        return out

    def to_json(self) -> str:
        """Canonical JSON (sorted keys, no spaces)."""
        return canonical_json(self.spec())

    def spec_hash(self) -> str:
        """sha256 hex of the canonical JSON."""
        return sha256_hex(self.to_json())


def builtin_models() -> dict[str, ModelSpec]:
    """The simulated models available without any registry file."""
    return {name: ModelSpec(name, "sim", _sim_params(spec)) for name, spec in BUILTIN_SIMS.items()}


def _sim_params(spec: SimSpec) -> dict[str, Any]:
    return spec.spec()


def _check_type(where: str, key: str, value: Any, kind: type | tuple[type, ...]) -> None:
    if isinstance(value, bool) and kind is not bool and bool not in (
            kind if isinstance(kind, tuple) else (kind,)):
        raise ConfigError(f"{where}: {key} must be {_kind_name(kind)}, got {value!r}")
    if not isinstance(value, kind):
        raise ConfigError(f"{where}: {key} must be {_kind_name(kind)}, got {value!r}")


def _kind_name(kind: type | tuple[type, ...]) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    names = {int: "an integer", float: "a number", str: "a string", bool: "true or false",
             list: "a list", dict: "a table"}
    return " or ".join(names.get(k, k.__name__) for k in kinds)


def _check_outage(where: str, params: Mapping[str, Any]) -> None:
    """down_after (an integer >= 1), outage_wait_s and probe_s (positive seconds)."""
    if "down_after" in params:
        _check_type(where, "down_after", params["down_after"], int)
        if params["down_after"] < 1:
            raise ConfigError(f"{where}: down_after must be >= 1, got {params['down_after']}")
    for key in ("outage_wait_s", "probe_s"):
        if key in params:
            _check_type(where, key, params[key], (int, float))
            if params[key] <= 0:
                raise ConfigError(f"{where}: {key} must be a positive number of seconds, "
                                  f"got {params[key]}")


def _validate(where: str, name: str, table: Mapping[str, Any]) -> ModelSpec:
    backend = table.get("backend")
    if backend is None:
        raise ConfigError(f"{where}: missing field 'backend' (one of: {', '.join(BACKENDS)})")
    if backend not in BACKENDS:
        raise ConfigError(f"{where}: unknown backend '{backend}' (one of: {', '.join(BACKENDS)})")
    unknown = sorted(set(table) - _FIELDS[backend])
    if unknown:
        raise ConfigError(f"{where}: unknown field '{unknown[0]}' for backend '{backend}' "
                          f"(known: {', '.join(sorted(_FIELDS[backend]))})")
    for key in _REQUIRED[backend]:
        if key not in table:
            raise ConfigError(f"{where}: missing field '{key}' (backend '{backend}' needs "
                              f"{', '.join(_REQUIRED[backend])})")
    params = {k: v for k, v in table.items() if k != "backend"}
    if "concurrency" in params:
        _check_type(where, "concurrency", params["concurrency"], int)
        if params["concurrency"] < 1:
            raise ConfigError(f"{where}: concurrency must be >= 1, got {params['concurrency']}")
    if "model" in params:
        _check_type(where, "model", params["model"], str)
    if "endpoints" in params:
        eps = params["endpoints"]
        if not isinstance(eps, list) or not eps or not all(
                isinstance(e, str) and e.startswith(("http://", "https://")) for e in eps):
            raise ConfigError(f"{where}: endpoints must be a non-empty list of http(s) URLs, "
                              f"e.g. [\"http://127.0.0.1:8000/v1\"]")
    if "sampling" in params:
        s = params["sampling"]
        if s != "default" and not (isinstance(s, dict) and all(
                isinstance(v, (int, float)) and not isinstance(v, bool) for v in s.values())):
            raise ConfigError(f"{where}: sampling must be \"default\" or a table of numbers, "
                              f"e.g. {{ temperature = 0.7, top_p = 0.8 }}")
        unknown = sorted(set(s) - SAMPLING_KEYS) if isinstance(s, dict) else []
        if unknown:
            raise ConfigError(f"{where}: unknown sampling key '{unknown[0]}' "
                              f"(known: {', '.join(sorted(SAMPLING_KEYS))})")
    if "thinking" in params:
        _check_type(where, "thinking", params["thinking"], bool)
    _check_generation(where, params)
    if "prompt_format" in params and params["prompt_format"] not in PROMPT_FORMATS:
        raise ConfigError(f"{where}: prompt_format must be one of {', '.join(PROMPT_FORMATS)} "
                          f"(\"search_r1\": Search-R1's <search>/<answer> tags), "
                          f"got {params['prompt_format']!r}")
    _check_thinking(where, backend, params)
    for key in ("max_context", "max_retries", "tensor_parallel_size"):
        if key in params:
            _check_type(where, key, params[key], int)
            if params[key] < (0 if key == "max_retries" else 1):
                raise ConfigError(f"{where}: {key} must be >= "
                                  f"{0 if key == 'max_retries' else 1}, got {params[key]}")
    for key in ("timeout_s", "backoff_s", "backoff_max_s"):
        if key in params:
            _check_type(where, key, params[key], (int, float))
            if params[key] < 0 or (key == "timeout_s" and params[key] == 0):
                raise ConfigError(f"{where}: {key} must be a positive number of seconds, "
                                  f"got {params[key]}")
    _check_outage(where, params)
    if "base_url" in params and not (isinstance(params["base_url"], str)
                                     and params["base_url"].startswith(("http://", "https://"))):
        raise ConfigError(f"{where}: base_url must be an http(s) URL, "
                          f"e.g. \"https://api.anthropic.com\"")
    if "price_per_mtok" in params:
        p = params["price_per_mtok"]
        if not isinstance(p, dict) or "input" not in p or "output" not in p:
            raise ConfigError(f"{where}: price_per_mtok needs input and output, "
                              f"e.g. {{ input = 1.0, output = 5.0 }}")
        for key, value in p.items():
            if key not in _PRICE_KEYS or isinstance(value, bool) or not isinstance(
                    value, (int, float)) or value < 0:
                raise ConfigError(f"{where}: price_per_mtok.{key} must be one of "
                                  f"{', '.join(_PRICE_KEYS)} with a number >= 0, got {value!r}")
    if backend == "sim":
        if params["policy"] not in POLICIES:
            raise ConfigError(f"{where}: unknown sim policy '{params['policy']}' "
                              f"(one of: {', '.join(POLICIES)})")
        try:
            params = SimSpec(**{k: v for k, v in params.items() if k != "concurrency"}).spec() | (
                {"concurrency": params["concurrency"]} if "concurrency" in params else {})
        except TypeError as exc:
            raise ConfigError(f"{where}: {exc}") from None
        except ConfigError as exc:
            raise ConfigError(f"{where}: {exc}") from None
    return ModelSpec(name, backend, params)


def _check_generation(where: str, params: Mapping[str, Any]) -> None:
    """max_tokens (an integer >= 1), seed (an integer >= 0, "prompt" or "none") and
    tools ("text" or "native")."""
    if "max_tokens" in params:
        _check_type(where, "max_tokens", params["max_tokens"], int)
        if params["max_tokens"] < 1:
            raise ConfigError(f"{where}: max_tokens must be >= 1, got {params['max_tokens']}")
    if "seed" in params:
        seed = params["seed"]
        if not ((isinstance(seed, int) and not isinstance(seed, bool) and 0 <= seed < 2 ** 63)
                or seed in (SEED_PROMPT, SEED_NONE)):
            raise ConfigError(f"{where}: seed must be an integer >= 0, \"{SEED_PROMPT}\" (derived "
                              f"from each request) or \"{SEED_NONE}\", got {seed!r}")
    if "tools" in params and params["tools"] not in TOOLS_MODES:
        raise ConfigError(f"{where}: tools must be one of {', '.join(TOOLS_MODES)} (\"text\": "
                          f"ReAct in text, \"native\": tool-use blocks), got {params['tools']!r}")


ANTHROPIC_MIN_THINKING = 1024
"""The smallest extended-thinking budget the Anthropic API accepts (budget_tokens)."""


def _check_thinking(where: str, backend: str, params: Mapping[str, Any]) -> None:
    """thinking_budget: tokens an acting turn may think, only with thinking = true;
    Claude needs one (≥ 1024) and accepts no temperature or top_k while thinking."""
    thinking = params.get("thinking") is True
    if "thinking_budget" in params:
        budget = params["thinking_budget"]
        _check_type(where, "thinking_budget", budget, int)
        if not thinking:
            raise ConfigError(f"{where}: thinking_budget is set but thinking is not true; "
                              f"add thinking = true or remove thinking_budget")
        low = ANTHROPIC_MIN_THINKING if backend == "anthropic" else 1
        if budget < low:
            raise ConfigError(f"{where}: thinking_budget must be >= {low} tokens, got {budget}")
    if backend == "anthropic" and thinking:
        if "thinking_budget" not in params:
            raise ConfigError(f"{where}: thinking = true needs thinking_budget (tokens of "
                              f"extended thinking per turn, >= {ANTHROPIC_MIN_THINKING}), "
                              f"e.g. thinking_budget = 4096")
        sampling = params.get("sampling")
        fixed = sorted({"temperature", "top_k"} & set(sampling)) if isinstance(
            sampling, dict) else []
        if fixed:
            raise ConfigError(f"{where}: extended thinking accepts no {fixed[0]}; use "
                              f"sampling = \"default\" (or only top_p between 0.95 and 1)")


def load_registry(path: Path | None) -> dict[str, ModelSpec]:
    """Built-in sim models plus the models of `path` (lab.toml) when it exists.

    Args:
        path: the registry file; None or a missing default file means built-ins only.

    Raises:
        ConfigError: unreadable or non-UTF-8 TOML, an unknown top-level table, a
            model that redefines a built-in sim, unknown backend, missing field or
            bad value, naming the file and the model.
    """
    models = builtin_models()
    if path is None or not path.exists():
        return models
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not a UTF-8 text file (byte {exc.start}); lab.toml "
                          f"must be TOML text") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read ({exc.strerror})") from None
    unknown = sorted(set(data) - set(TOP_LEVEL))
    if unknown:
        raise ConfigError(f"{path}: unknown top-level table or key '{unknown[0]}' (known: "
                          f"{', '.join(TOP_LEVEL)}; a model is [models.NAME])")
    tables = data.get("models", {})
    if not isinstance(tables, dict):
        raise ConfigError(f"{path}: [models] must be a table of [models.NAME] tables")
    for name, table in tables.items():
        where = f"{path}: models.{name}"
        if not isinstance(table, dict):
            raise ConfigError(f"{where}: must be a table")
        if name in BUILTIN_SIMS:
            raise ConfigError(f"{where}: '{name}' is a built-in sim model and cannot be "
                              f"redefined; give your entry another name (built-ins: "
                              f"{', '.join(BUILTIN_SIMS)})")
        models[name] = _validate(where, name, table)
    return models


def resolve_model(models: Mapping[str, ModelSpec], name: str) -> ModelSpec:
    """Look a model up by name with an error that lists what exists."""
    try:
        return models[name]
    except KeyError:
        raise ConfigError(f"unknown model '{name}'; known: {', '.join(sorted(models))}") from None


def make_client(spec: ModelSpec) -> ModelClient:
    """Build the client for a model spec.

    Raises:
        ConfigError: an unknown backend, or an anthropic model without
            ANTHROPIC_API_KEY in the environment.
    """
    config = spec.config
    if isinstance(config, SimSpec):
        return SimClient(spec.name, config, spec.concurrency)
    if isinstance(config, OpenAISpec):
        from core.models.openai_compat import OpenAIClient
        return OpenAIClient(spec.name, config, spec.concurrency)
    if isinstance(config, AnthropicSpec):
        from core.models.anthropic import AnthropicClient
        return AnthropicClient(spec.name, config, spec.concurrency)
    raise ConfigError(f"model '{spec.name}': unknown backend '{spec.backend}' "
                      f"(one of: {', '.join(BACKENDS)})")
