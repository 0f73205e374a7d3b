"""lab.toml: clear errors for unknown backends, missing fields and bad values."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.errors import ConfigError
from core.models.registry import builtin_models, load_registry, registry_now, resolve_model

BUILTINS = {"sim-never", "sim-deadline", "sim-clock4", "sim-clock6", "sim-hazard-time",
            "sim-own3", "sim-own5", "sim-own7", "sim-design3", "sim-design5", "sim-hazard-own",
            "sim-backup-own3", "sim-backup-clock4", "sim-stated", "sim-stated-own3", "sim-trace"}


def test_builtins_without_file(tmp_path: Path) -> None:
    assert set(builtin_models()) == BUILTINS
    assert set(load_registry(tmp_path / "missing.toml")) == BUILTINS


def test_valid_registry(tmp_path: Path) -> None:
    f = tmp_path / "lab.toml"
    f.write_text("""
[models.qwen3-8b]
backend = "openai"
model = "Qwen/Qwen3-8B"
endpoints = ["http://127.0.0.1:8000/v1"]
sampling = { temperature = 0.7, top_p = 0.8, top_k = 20, min_p = 0.0 }
thinking = false
max_context = 16384
concurrency = 128

[models.claude-haiku-4-5]
backend = "anthropic"
model = "claude-haiku-4-5"
sampling = "default"
price_per_mtok = { input = 1.0, output = 5.0, cache_write = 1.25, cache_read = 0.10 }
concurrency = 16

[models.my-own4]
backend = "sim"
policy = "own_count"
k = 4
""")
    models = load_registry(f)
    assert models["qwen3-8b"].concurrency == 128
    assert models["my-own4"].params["k"] == 4
    a = models["qwen3-8b"]
    assert "endpoints" not in a.spec()  # where it is served is not what it is


@pytest.mark.parametrize("body, message", [
    ('[models.x]\nbackend = "vllm"\nmodel = "m"', "unknown backend 'vllm'"),
    ('[models.x]\nmodel = "m"', "missing field 'backend'"),
    ('[models.x]\nbackend = "openai"\nmodel = "m"', "missing field 'endpoints'"),
    ('[models.x]\nbackend = "openai"\nmodel = "m"\nendpoints = "http://a"', "endpoints must be"),
    ('[models.x]\nbackend = "openai"\nmodel = "m"\nendpoints = ["http://a"]\nconcurrency = 0',
     r"concurrency must be in \[1, 4096\]"),
    ('[models.x]\nbackend = "openai"\nmodel = "m"\nendpoints = ["http://a"]\nthinking = "no"',
     "thinking must be true or false"),
    ('[models.x]\nbackend = "anthropic"\nmodel = "m"\ntemperature = 1',
     "unknown field 'temperature'"),
    ('[models.x]\nbackend = "sim"\npolicy = "psychic"',
     "policy must be one of never, deadline.*got 'psychic'"),
    ('[models.x]\nbackend = "sim"\npolicy = "own_count"\np_guess = 2.0', "p_guess must be in"),
    ('[models.x\nbackend = "sim"', "invalid TOML"),
    ('[models.x]\nbackend = "anthropic"\nmodel = "m"\nprice_per_mtok = { input = 1 }',
     "price_per_mtok needs"),
])
def test_registry_errors(tmp_path: Path, body: str, message: str) -> None:
    f = tmp_path / "lab.toml"
    f.write_text(body)
    with pytest.raises(ConfigError, match=message) as info:
        load_registry(f)
    text = str(info.value)
    assert "\n" not in text and "models.x" in text or "TOML" in text


def test_unknown_model_lists_known() -> None:
    with pytest.raises(ConfigError, match="unknown model 'gpt'.*sim-own5"):
        resolve_model(builtin_models(), "gpt")


REGISTRY_K5 = """
[models.sim-k]
backend = "sim"
policy = "own_count"
k = 5
"""


def test_registry_now_parses_again_only_when_the_bytes_change(tmp_path: Path) -> None:
    import os

    path = tmp_path / "lab.toml"
    path.write_text(REGISTRY_K5)
    first, again = registry_now(path), registry_now(path)
    assert first == load_registry(path) and first is not again  # a fresh dict each time
    assert first["sim-k"] is again["sim-k"]  # unchanged bytes: not parsed again
    st = path.stat()
    path.write_text(REGISTRY_K5.replace("k = 5", "k = 4"))  # same size, same times
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert registry_now(path)["sim-k"] == load_registry(path)["sim-k"] != first["sim-k"]
    path.write_bytes(REGISTRY_K5.replace("\n", "\r\n").encode())  # read as the file reads
    assert registry_now(path) == load_registry(path) == first
    path.write_text("[models.x\n")
    for _ in range(2):  # an invalid file is refused every time
        with pytest.raises(ConfigError, match="invalid TOML"):
            registry_now(path)
    path.unlink()
    assert registry_now(path) == builtin_models() == registry_now(None)
