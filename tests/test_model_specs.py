"""A registry table is parsed once into a typed, frozen spec (core.models.specs) with
the defaults in one place; readers use it instead of params.get with their own."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from core.models.cost import Prices
from core.models.registry import ModelSpec, load_registry
from core.models.retry import RetryPolicy
from core.models.sim import SimSpec
from core.models.specs import AnthropicSpec, OpenAISpec

TOML = """
[models.qwen]
backend = "openai"
model = "Qwen/Qwen3-8B"
endpoints = ["http://127.0.0.1:8000/v1", "http://127.0.0.1:8001/v1"]
sampling = { temperature = 0.7, top_p = 0.8 }
max_context = 32768
timeout_s = 90
price_per_mtok = { input = 0.1, output = 0.4 }
prompt_format = "search_r1"

[models.claude]
backend = "anthropic"
model = "claude-x"
thinking = true
thinking_budget = 2048
sampling = "default"
"""


@pytest.fixture()
def registry(tmp_path: Path) -> dict[str, ModelSpec]:
    path = tmp_path / "lab.toml"
    path.write_text(TOML)
    return load_registry(path)


def test_openai_table_becomes_a_typed_spec(registry: dict[str, ModelSpec]) -> None:
    spec = registry["qwen"]
    config = spec.config
    assert isinstance(config, OpenAISpec)
    assert config.endpoints == ("http://127.0.0.1:8000/v1", "http://127.0.0.1:8001/v1")
    assert config.request_sampling == {"temperature": 0.7, "top_p": 0.8}
    assert config.retry == RetryPolicy(timeout_s=90.0)  # the rest are RetryPolicy's defaults
    assert config.prices.input == 0.1 and config.prices.output == 0.4
    assert (spec.max_context, spec.prompt_format, config.transport) == (32768, "search_r1",
                                                                        "stream")
    assert spec.config is config  # parsed once
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.__setattr__("model", "other")  # `config.model = ...`, which mypy refuses


def test_anthropic_and_sim_specs_and_their_defaults(registry: dict[str, ModelSpec]) -> None:
    config = registry["claude"].config
    assert isinstance(config, AnthropicSpec)
    assert (config.thinking, config.thinking_budget, config.request_sampling) == (True, 2048,
                                                                                  {})
    assert config.base_url == "https://api.anthropic.com"
    assert registry["claude"].prices == Prices() and registry["claude"].max_context is None
    sim = registry["sim-own5"]
    assert isinstance(sim.config, SimSpec)
    assert (sim.prices, sim.max_context, sim.prompt_format) == (Prices(), None, "react")


def test_the_hash_is_of_the_table_not_of_the_typed_view(registry: dict[str, ModelSpec]) -> None:
    """Typing changes no cell: the spec hash still hashes what lab.toml says."""
    spec = registry["qwen"]
    _ = spec.config
    assert spec.spec()["max_context"] == 32768 and "config" not in spec.spec()
