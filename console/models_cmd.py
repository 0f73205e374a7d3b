"""`lab models` (the registry with a live check of each endpoint) and `lab serve MODEL`
(start vLLM with the registry's settings, wait for /health, record it in lab.db)."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import click
import httpx

from console.options import open_db
from core.errors import ConfigError, LabError
from core.models.anthropic import API_KEY_ENV, DEFAULT_BASE_URL
from core.models.endpoint_url import parse_endpoint, redact_endpoint
from core.models.registry import ModelSpec, load_registry, resolve_model
from core.store.servers import mark_stopped, record_server

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
    address = parse_endpoint(str(spec.params.get("base_url") or DEFAULT_BASE_URL))
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


@click.command("models")
@click.option("--check-api", is_flag=True, help="Also check the Anthropic API (uses the key).")
@click.option("--timeout", "timeout_s", type=click.FloatRange(min=0.1), default=2.0,
              show_default=True, help="Seconds per check.")
@click.pass_context
def models(ctx: click.Context, check_api: bool, timeout_s: float) -> None:
    """List the registry (built-in sims and lab.toml) and check each endpoint.

    OpenAI-compatible endpoints are checked with GET /v1/models and vLLM's /health;
    the Anthropic API only with --check-api.

    \b
    Example:
      lab --config lab.toml models --check-api
    """
    for name, spec in sorted(load_registry(ctx.obj["config"]).items()):
        detail = spec.params.get("model") or spec.params.get("policy")
        click.echo(f"{name:<22} {spec.backend:<10} {detail}")
        if spec.backend == "openai":
            for endpoint in spec.params.get("endpoints", []):
                click.echo(f"  {redact_endpoint(endpoint)}  "
                           f"{check_endpoint(endpoint, str(detail), timeout_s)}")
        elif spec.backend == "anthropic":
            state = check_anthropic(spec, timeout_s) if check_api else "not checked (--check-api)"
            click.echo(f"  {redact_endpoint(spec.params.get('base_url') or DEFAULT_BASE_URL)}  "
                       f"{state}")


def vllm_command(spec: ModelSpec, host: str, port: int, executable: str = "vllm") -> list[str]:
    """The `vllm serve` command line of a registry model.

    Prefix caching on, vLLM's own generation defaults (`--generation-config vllm`, so
    the model's generation_config.json cannot change sampling), and the registry's
    max_context and tensor_parallel_size.

    Raises:
        ConfigError: the model is not served by vLLM (backend other than openai).
    """
    if spec.backend != "openai":
        raise ConfigError(f"model '{spec.name}' has backend '{spec.backend}'; lab serve starts "
                          f"vLLM for backend = \"openai\" models only")
    p = spec.params
    cmd = [executable, "serve", str(p["model"]), "--host", host, "--port", str(port),
           "--enable-prefix-caching", "--generation-config", "vllm"]
    if "max_context" in p:
        cmd += ["--max-model-len", str(p["max_context"])]
    if "tensor_parallel_size" in p:
        cmd += ["--tensor-parallel-size", str(p["tensor_parallel_size"])]
    return cmd


def default_port(spec: Mapping[str, Any]) -> int:
    """The port of the model's first endpoint, else vLLM's default 8000."""
    endpoints = spec.get("endpoints") or []
    return (urlsplit(endpoints[0]).port or 8000) if endpoints else 8000


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


@click.command("serve")
@click.argument("model")
@click.option("--dry-run", is_flag=True, help="Print the vllm command and exit.")
@click.option("--port", type=click.IntRange(1, 65535), default=None,
              help="Port (default: the port of the model's first endpoint, else 8000).")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind.")
@click.option("--wait", "wait_s", type=click.FloatRange(min=1), default=900, show_default=True,
              help="Seconds to wait for /health.")
@click.option("--detach", is_flag=True, help="Leave vllm running and return once healthy.")
@click.option("--executable", default="vllm", show_default=True, help="The vllm program.")
@click.pass_context
def serve(ctx: click.Context, model: str, dry_run: bool, port: int | None, host: str,
          wait_s: float, detach: bool, executable: str) -> None:
    """Start vLLM for MODEL with the registry's settings and record it in lab.db.

    Waits for /health, stores the server's version and flags (the `servers` table),
    then stays in the foreground until interrupted (or returns with --detach).

    \b
    Example:
      lab --config lab.toml serve qwen3-8b --dry-run
      lab --config lab.toml serve qwen3-8b --port 8000 --detach
    """
    spec = resolve_model(load_registry(ctx.obj["config"]), model)
    port = port or default_port(spec.params)
    cmd = vllm_command(spec, host, port, executable)
    if dry_run:
        click.echo(shlex.join(cmd))
        return
    if shutil.which(executable) is None:
        raise ConfigError(f"'{executable}' is not installed here (pip install 'lab[gpu]' on a "
                          f"GPU machine); use --dry-run to print the command")
    db = open_db(ctx)
    log = Path(ctx.obj["db"]).resolve().parent / f"serve-{spec.name}-{port}.log"
    with log.open("ab") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=detach)
    root = f"http://{'127.0.0.1' if host in ('0.0.0.0', '::') else host}:{port}"
    wait_healthy(proc, root, wait_s, log)
    version = server_version(root)
    flags = {"host": host, "port": port, "prefix_caching": True, "generation_config": "vllm",
             "max_model_len": spec.params.get("max_context"),
             "tensor_parallel_size": spec.params.get("tensor_parallel_size")}
    # The registry's spelling of this endpoint, redacted as episodes' `server` values
    # are, so they join.
    endpoint = redact_endpoint(next((e for e in spec.params.get("endpoints", [])
                                     if urlsplit(e).port == port), f"{root}/v1"))
    sid = record_server(db, model=spec.name, served_model=str(spec.params["model"]),
                        endpoint=endpoint, version=version, command=cmd, flags=flags,
                        pid=proc.pid)
    click.echo(f"serving {spec.name} at {endpoint} (vLLM {version or 'unknown version'}, "
               f"pid {proc.pid}); recorded as server {sid}; log {log}")
    if detach:
        return
    try:
        proc.wait()
    except KeyboardInterrupt:
        proc.terminate()
        proc.wait(30)
    finally:
        mark_stopped(db, sid)


COMMANDS = (models, serve)
"""The commands to register on the `lab` group."""
