"""Model spec hashes key every stored cell: how a backend's table is declared and
validated must never change one.

The hashes below were computed before the backends' tables were declared by their
dataclasses; a change of declaration, default or validation that moves any of them
would split new results from the cells already stored under the old hash.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from core.models.registry import load_registry

TOML = """[models.qwen3-plain]
backend = "openai"
model = "Qwen/Qwen3-8B"
endpoints = ["http://127.0.0.1:8000/v1"]

[models.qwen3-everything]
backend = "openai"
model = "Qwen/Qwen3-32B"
endpoints = ["http://127.0.0.1:8000/v1", "http://u:p@10.0.0.2:8001/v1"]
sampling = { temperature = 0.6, top_p = 0.95, top_k = 20, min_p = 0.0 }
thinking = true
thinking_budget = 4096
max_context = 32768
max_tokens = 512
seed = 7
prompt_format = "search_r1"
transport = "httpx"
tensor_parallel_size = 2
timeout_s = 90
max_retries = 1
backoff_s = 0.5
backoff_max_s = 5
down_after = 5
outage_wait_s = 60
probe_s = 1.5
concurrency = 64
price_per_mtok = { input = 0.1, output = 0.4 }

[models.llama-default]
backend = "openai"
model = "meta-llama/Llama-3.1-8B-Instruct"
endpoints = ["http://127.0.0.1:8000/v1"]
sampling = "default"
seed = "none"
thinking = true

[models.qwen-sampling-seed]
backend = "openai"
model = "Qwen/Qwen2.5-7B-Instruct"
endpoints = ["http://127.0.0.1:8000/v1"]
sampling = { temperature = 0.7, seed = 3 }
seed = "prompt"

[models.haiku]
backend = "anthropic"
model = "claude-haiku-4-5"

[models.claude-thinking]
backend = "anthropic"
model = "claude-sonnet-4-5"
thinking = true
thinking_budget = 2048
sampling = "default"
max_context = 200000

[models.claude-native]
backend = "anthropic"
model = "claude-opus-4-1"
tools = "native"
base_url = "https://proxy.example/anthropic"
sampling = { top_p = 0.9 }
max_tokens = 2048
price_per_mtok = { input = 15.0, output = 75.0, cache_write = 18.75, cache_read = 1.5 }
timeout_s = 120
concurrency = 8

[models.my-own4]
backend = "sim"
policy = "own_count"
k = 4

[models.my-slow-switch]
backend = "sim"
policy = "deadline"
switch = "clock"
switch_at = 3
latency_ms = 5
concurrency = 32
stated = true
p_silent = 0.1
p_guess = 0.2
"""

HASHES = {
    "claude-native": "ed118c5568176718b14419056cfb45427fac8e716145ccca784b5fafde9d8584",
    "claude-thinking": "e2dcbcbc89875c89d8a106aa0f46e4affc12dc3bd620dea7ad88a773aa219e7b",
    "haiku": "ed0fda44614e5b3b0ae931ccfa7b2aa5ae25629af61f8b940bc2ad7fb69c708d",
    "llama-default": "d11e8967911bc7f55448602436d5781ab19d770e0667c2a23e376acf180fde20",
    "my-own4": "ed351700dc06b1855f08b5a903d3e6daa276538d64808cfb95189bba910dbe18",
    "my-slow-switch": "8355d42ee8634ced312d7259c800549b0afa1e56102c60ec96843281cbbd1817",
    "qwen-sampling-seed": "133e1eee1ca406de57846b1b9e6ee3bcec0df70fe6fd0016d969021f9a54ce75",
    "qwen3-everything": "9acc34be4412172bf061d8e64daf8d32ec282fbc8b47cbf8bcf5e8cacd79d1e6",
    "qwen3-plain": "69e4cd5787fa66c987c4d3cfdc9ad1b0501d802214956716c5a3e027fe20fd28",
    "sim-backup-clock4": "f5ed57e31cc4d153905eba27e6919f43dbcd25667ece514e06642bfb8a655944",
    "sim-backup-own3": "7e13f52d3b0d9ccb1063f8f092a4daca2303375e2e8cff95314ce7c65b097f38",
    "sim-clock4": "31be84b26658f3c1e2bb4ae1ecd794dfe50f58e2bdb727093cd93a2583ea891f",
    "sim-clock6": "e4a4d60e6e4cea8428da53d39aeaf61ae543870440b15cc21ecce2be81761be3",
    "sim-deadline": "f393795bb89eaab6bce20bcd6081ba1f72367d1ccdd4b8669d5e8174a22b3f6c",
    "sim-design3": "c747dfbd4830dac1a39d80a05f3530bafc2ecd898abdc37b7ee842cf229b62e3",
    "sim-design5": "ee526b164182af1cb9a61f3a8de99d375a5b9a1d12bc2fea5e3e50546135e301",
    "sim-hazard-own": "7853dd231d0a7af64f628a913cc0338505df4937bf5e329a26f9725692601a52",
    "sim-hazard-time": "f884b7a20c1b6c8a8813dadf2173849cf0fc0b24ee6a4be1eae16ef9fe9370e2",
    "sim-never": "120b1e6936ad290d84434de42f6dee564757472a1377cdba36cff364793ee4f6",
    "sim-own3": "5c3e4701e01d82d2a14ed2a4f767d2af1fc4ca3a61a43787bdf86d7a03c7a784",
    "sim-own5": "beccc254424d07d288704be9c51cd478555188d445c6a23cf13d2bae90e92655",
    "sim-own7": "5c23ff9c567e93c3115dfdf31bed2c476241818eff132dbff850553838e53f72",
    "sim-stated": "75698c1682c9ca4032edcdc27bec6e037fadc25cea27728be28d1b903560324e",
    "sim-stated-own3": "009c09d2e431a1338523c464a548a70b82b8a87565c8d708a462a4bbc06e7d4d",
    "sim-trace": "c5ec11b8c5bc0e40b55fe83a821ac3eb594b1f334449d551966ef3f72f937114",
}


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> dict:
    path: Path = tmp_path_factory.mktemp("hashes") / "lab.toml"
    path.write_text(TOML, encoding="utf-8")
    return load_registry(path)


def test_every_representative_spec_keeps_its_hash(registry: dict) -> None:
    assert {name: spec.spec_hash() for name, spec in registry.items()} == HASHES


def test_serving_settings_change_no_hash(registry: dict) -> None:
    """Where and how a model is served (endpoints, timeouts, concurrency, outages) is
    not what it is: the hash ignores them."""
    everything = registry["qwen3-everything"]
    assert everything.concurrency == 64 and registry["qwen3-plain"].concurrency == 16
    assert registry["my-slow-switch"].concurrency == 32
    assert registry["sim-never"].concurrency == 1024
    for key in ("endpoints", "concurrency", "timeout_s", "max_retries", "backoff_s",
                "backoff_max_s", "down_after", "outage_wait_s", "probe_s", "transport",
                "tensor_parallel_size"):
        assert key in everything.params and key not in everything.spec()
    assert "latency_ms" in registry["my-slow-switch"].params
    assert "latency_ms" not in registry["my-slow-switch"].spec()
