"""The vLLM process `lab serve` starts: its command line, port and health.

Whether an endpoint answers is `core.models.server_checks` (each backend's
`check_server`).
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path
from urllib.parse import urlsplit

import httpx

from core.errors import ConfigError, LabError
from core.models.registry import ModelSpec
from core.models.specs import OpenAISpec


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
