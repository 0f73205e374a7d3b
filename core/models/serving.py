"""Serving checks: is an endpoint up and serving the model, is the Anthropic key
accepted, and the vLLM process `lab serve` starts (its command line, port and health).

Used by `lab models`, `lab serve` and the console's Dashboard.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path
from urllib.parse import urlsplit

import httpx

from core.errors import ConfigError, LabError
from core.models.anthropic import API_KEY_ENV, DEFAULT_BASE_URL
from core.models.endpoint_url import parse_endpoint
from core.models.registry import ModelSpec
from core.models.specs import AnthropicSpec, OpenAISpec

ANTHROPIC_VERSION = "2023-06-01"


def server_root(endpoint: str) -> str:
    """The server's root URL of an OpenAI-style endpoint (".../v1" removed)."""
    return endpoint.rstrip("/").removesuffix("/v1")


def check_endpoint(endpoint: str, model: str, timeout_s: float) -> str:
    """One line on an OpenAI-compatible endpoint: GET /v1/models and vLLM's /health.

    Credentials in `endpoint` (user:password@, an api_key query) go with both requests;
    the line returned never repeats the URL.
    """
    address = parse_endpoint(endpoint)
    auth = {"authorization": address.basic_auth} if address.basic_auth else {}
    try:
        with httpx.Client(timeout=timeout_s, headers=auth,
                          params=address.query) as http:
            r = http.get(address.base.rstrip("/") + "/models")
            if r.status_code != 200:
                return f"unreachable (GET /models: HTTP {r.status_code})"
            served = [m.get("id") for m in r.json().get("data", []) if isinstance(m, dict)]
            health = http.get(server_root(address.base) + "/health").status_code
    except (httpx.HTTPError, ValueError, AttributeError) as exc:
        return f"unreachable ({type(exc).__name__})"
    state = "ok" if model in served else f"ok, but serves {', '.join(map(str, served)) or '-'}"
    return f"{state}; health {'ok' if health == 200 else f'n/a (HTTP {health})'}"


def check_anthropic(spec: ModelSpec, timeout_s: float) -> str:
    """One line on the Anthropic API: is the key set and accepted (GET /v1/models)."""
    key = os.environ.get(API_KEY_ENV)
    if not key:
        return f"{API_KEY_ENV} is not set"
    base_url = spec.config.base_url if isinstance(spec.config, AnthropicSpec) else DEFAULT_BASE_URL
    address = parse_endpoint(base_url)
    headers = {"x-api-key": key, "anthropic-version": ANTHROPIC_VERSION}
    if address.basic_auth:
        headers["authorization"] = address.basic_auth
    try:
        r = httpx.get(f"{address.base.rstrip('/')}/v1/models", timeout=timeout_s,
                      headers=headers, params=address.query)
    except httpx.HTTPError as exc:
        return f"unreachable ({type(exc).__name__})"
    if r.status_code in (401, 403):
        return f"key refused (HTTP {r.status_code})"
    return "ok" if r.status_code == 200 else f"unreachable (HTTP {r.status_code})"


def vllm_command(spec: ModelSpec, host: str, port: int, executable: str = "vllm") -> list[str]:
    """The `vllm serve` command line of a registry model.

    Prefix caching on, vLLM's own generation defaults (`--generation-config vllm`, so
    the model's generation_config.json cannot change sampling), and the registry's
    max_context and tensor_parallel_size. vLLM's own default temperature is 1.0, so
    greedy decoding never rests on it: every request states its sampling (a model
    without a `sampling` table sends temperature 0.0 and top_p 1.0,
    `core.models.generation.GREEDY`); only `sampling = "default"` leaves it to the server.

    Raises:
        ConfigError: the model is not served by vLLM (backend other than openai).
    """
    config = spec.config
    if not isinstance(config, OpenAISpec):
        raise ConfigError(f"model '{spec.name}' has backend '{spec.backend}'; lab serve starts "
                          f"vLLM for backend = \"openai\" models only")
    cmd = [executable, "serve", config.model, "--host", host, "--port", str(port),
           "--enable-prefix-caching", "--generation-config", "vllm"]
    if config.max_context is not None:
        cmd += ["--max-model-len", str(config.max_context)]
    if config.tensor_parallel_size is not None:
        cmd += ["--tensor-parallel-size", str(config.tensor_parallel_size)]
    return cmd


def default_port(config: OpenAISpec) -> int:
    """The port of the model's first endpoint, else vLLM's default 8000."""
    return (urlsplit(config.endpoints[0]).port or 8000) if config.endpoints else 8000


def wait_healthy(proc: subprocess.Popen[bytes], root: str, wait_s: float, log: Path) -> None:
    """Poll GET /health until 200; raise if the process exits or time runs out."""
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise LabError(f"vllm exited with code {proc.returncode} before it was healthy; "
                           f"see {log}")
        try:
            if httpx.get(root + "/health", timeout=2.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    proc.terminate()
    raise LabError(f"vllm was not healthy at {root}/health after {wait_s:g} s "
                   f"(stopped it); see {log}, or raise --wait")


def server_version(root: str) -> str | None:
    """vLLM's /version, or None when the server has none."""
    try:
        r = httpx.get(root + "/version", timeout=2.0)
        return str(r.json().get("version")) if r.status_code == 200 else None
    except (httpx.HTTPError, ValueError, AttributeError):
        return None
