"""`lab models` (the registry with a live check of each endpoint) and `lab serve MODEL`
(start vLLM with the registry's settings, wait for /health, record it in lab.db)."""

from __future__ import annotations

import shlex
import shutil
import subprocess
from pathlib import Path
from urllib.parse import urlsplit

import click

from console.cli.options import number, open_db
from console.cli.output import echo
from core.bounds import MAX_TIMEOUT_S, Bounds
from core.errors import ConfigError
from core.models.endpoint_url import redact_endpoint
from core.models.registry import load_registry, resolve_model
from core.models.serving import (
    default_port,
    server_version,
    vllm_command,
    wait_healthy,
)
from core.models.specs import PORT_BOUNDS, OpenAISpec
from core.store.servers import mark_stopped, record_server


@click.command("models")


@click.option("--check-api", is_flag=True, help="Also check the Anthropic API (uses the key).")


@click.option("--timeout", "timeout_s",
              type=number(Bounds(ge=0.1, le=MAX_TIMEOUT_S, unit="seconds")), default=2.0,
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
        config = spec.config
        echo(f"{name:<22} {spec.backend:<10} {config.detail}")
        for url in config.served_at():
            state = (config.check_server(url, timeout_s) if check_api or not config.check_needs_key
                     else "not checked (--check-api)")
            echo(f"  {redact_endpoint(url)}  {state}")


@click.command("serve")


@click.argument("model")


@click.option("--dry-run", is_flag=True, help="Print the vllm command and exit.")


@click.option("--port", type=number(PORT_BOUNDS), default=None,
              help="Port (default: the port of the model's first endpoint, else 8000).")


@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind.")


@click.option("--wait", "wait_s", type=number(Bounds(ge=1, le=MAX_TIMEOUT_S, unit="seconds")),
              default=900, show_default=True,
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
    config = spec.config
    if not isinstance(config, OpenAISpec):
        vllm_command(spec, host, 8000, executable)  # raises: vLLM serves openai models only
        return
    port = port or default_port(config)
    cmd = vllm_command(spec, host, port, executable)
    if dry_run:
        echo(shlex.join(cmd))
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
             "max_model_len": config.max_context,
             "tensor_parallel_size": config.tensor_parallel_size}
    # The registry's spelling of this endpoint, redacted as episodes' `server` values
    # are, so they join.
    endpoint = redact_endpoint(next((e for e in config.endpoints if urlsplit(e).port == port),
                                    f"{root}/v1"))
    sid = record_server(db, model=spec.name, served_model=config.model,
                        endpoint=endpoint, version=version, command=cmd, flags=flags,
                        pid=proc.pid)
    echo(f"serving {spec.name} at {endpoint} (vLLM {version or 'unknown version'}, "
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
