"""`lab models` (the registry with a live check of each endpoint) and `lab serve MODEL`
(start vLLM with the registry's settings and parallelism, wait for /health, record it in
lab.db)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import click

from console.cli.environment import as_given
from console.cli.options import number, open_db
from console.cli.output import echo
from core.bounds import MAX_TIMEOUT_S, Bounds
from core.errors import ConfigError
from core.models.endpoint_url import redact_endpoint
from core.models.registry import load_registry, resolve_model
from core.models.serving import (
    VISIBLE_DEVICES,
    Launch,
    Parallelism,
    default_port,
    launches,
    served_endpoints,
    server_version,
    vllm_command,
    wait_healthy,
)
from core.models.specs import MAX_GPUS, PORT_BOUNDS, OpenAISpec
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


GPUS = Bounds(ge=1, le=MAX_GPUS, integer=True)
"""A parallel size or a number of replicas."""


@click.command("serve")
@click.argument("model")
@click.option("--dry-run", is_flag=True,
              help="Print the vllm command of each server (with its environment) and exit.")
@click.option("--port", type=number(PORT_BOUNDS), default=None,
              help="Port of the first server; replica i listens on PORT + i (default: the "
                   "port of the model's first endpoint, else 8000).")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind.")
@click.option("--tensor-parallel-size", "tensor", type=number(GPUS), default=None,
              help="GPUs one server splits each layer over (default: lab.toml's "
                   "tensor_parallel_size).")
@click.option("--pipeline-parallel-size", "pipeline", type=number(GPUS), default=None,
              help="Pipeline stages of one server, e.g. one per box with --ray-address "
                   "(default: lab.toml's pipeline_parallel_size).")
@click.option("--data-parallel-size", "data", type=number(GPUS), default=None,
              help="Data-parallel ranks of one server, behind its one endpoint (default: "
                   "lab.toml's data_parallel_size).")
@click.option("--ray-address", default=None, metavar="ADDR",
              help="Span a Ray cluster already started at ADDR (vLLM's Ray executor; "
                   "default: lab.toml's ray_address).")
@click.option("--replicas", type=number(GPUS), default=None,
              help="Servers of the model on this box, one endpoint each on consecutive "
                   "ports, each on its own GPUs (CUDA_VISIBLE_DEVICES; default: lab.toml's "
                   "replicas, else 1).")
@click.option("--wait", "wait_s", type=number(Bounds(ge=1, le=MAX_TIMEOUT_S, unit="seconds")),
              default=900, show_default=True,
              help="Seconds to wait for /health.")
@click.option("--detach", is_flag=True, help="Leave vllm running and return once healthy.")
@click.option("--executable", default="vllm", show_default=True, help="The vllm program.")
@click.pass_context
def serve(ctx: click.Context, model: str, dry_run: bool, port: int | None, host: str,
          tensor: int | None, pipeline: int | None, data: int | None, ray_address: str | None,
          replicas: int | None, wait_s: float, detach: bool, executable: str) -> None:
    """Start vLLM for MODEL with the registry's settings and record it in lab.db.

    Each server gets the model's parallelism (lab.toml's keys, or these flags); with
    --replicas N, N servers on consecutive ports, each on its own GPUs. Waits for
    /health, stores each server's version and flags (the `servers` table), where the
    workers find the model's endpoints, then stays in the foreground until
    interrupted (or returns with --detach).

    \b
    Example:
      lab --config lab.toml serve qwen3-8b --dry-run
      lab --config lab.toml serve qwen3-8b --replicas 8 --dry-run
      lab --config lab.toml serve qwen3-8b --port 8000 --detach
    """
    spec = resolve_model(load_registry(ctx.obj["config"]), model)
    config = spec.config
    if not isinstance(config, OpenAISpec):
        vllm_command(spec, host, 8000, executable)  # raises: vLLM serves openai models only
        return
    parallel = Parallelism.of(config).overridden(
        tensor=tensor, pipeline=pipeline, data=data, ray_address=ray_address, replicas=replicas)
    port = port or default_port(config)
    if port + parallel.replicas - 1 > 65535:
        raise ConfigError(f"{parallel.replicas} replicas from port {port} run past 65535; "
                          f"use a lower --port")
    plan = launches(spec, host, port, parallel, executable, os.environ.get(VISIBLE_DEVICES))
    if dry_run:
        for launch in plan:
            echo(launch.shell())
        return
    if shutil.which(executable) is None:
        raise ConfigError(f"'{executable}' is not installed here (pip install 'lab[gpu]' on a "
                          f"GPU machine); use --dry-run to print the command")
    db = open_db(ctx)
    local = "127.0.0.1" if host in ("0.0.0.0", "::") else host
    started = _start(plan, Path(ctx.obj["db"]).resolve().parent, spec.name, detach)
    try:
        for launch, proc, log in started:
            wait_healthy(proc, f"http://{local}:{launch.port}", wait_s, log)
    except BaseException:
        _stop([proc for _, proc, _ in started])
        raise
    endpoints = served_endpoints(config, host, [launch.port for launch in plan])
    ids = []
    for (launch, proc, log), url in zip(started, endpoints, strict=True):
        version = server_version(f"http://{local}:{launch.port}")
        flags = {"host": host, "port": launch.port, "prefix_caching": True,
                 "generation_config": "vllm", "max_model_len": config.max_context,
                 **parallel.flags(), "replica": launch.replica, **dict(launch.env)}
        # the registry's spelling of this endpoint, redacted as episodes' `server` values
        # are, so they join
        endpoint = redact_endpoint(url)
        ids.append(record_server(db, model=spec.name, served_model=config.model,
                                 endpoint=endpoint, version=version, command=launch.command,
                                 flags=flags, pid=proc.pid))
        echo(f"serving {spec.name} at {endpoint} (vLLM {version or 'unknown version'}, "
             f"pid {proc.pid}); recorded as server {ids[-1]}; log {log}")
    if detach:
        return
    open_ids = list(ids)
    try:
        for (_, proc, _), sid in zip(started, ids, strict=True):
            proc.wait()
            mark_stopped(db, sid)
            open_ids.remove(sid)
    except KeyboardInterrupt:
        _stop([proc for _, proc, _ in started])
    finally:
        for sid in open_ids:
            mark_stopped(db, sid)


def _start(plan: list[Launch], folder: Path, model: str, detach: bool
           ) -> list[tuple[Launch, subprocess.Popen[bytes], Path]]:
    """Start each server, its output to serve-MODEL-PORT.log beside lab.db."""
    started = []
    for launch in plan:
        log = folder / f"serve-{model}-{launch.port}.log"
        with log.open("ab") as out:
            proc = subprocess.Popen(launch.command, stdout=out, stderr=subprocess.STDOUT,
                                    env={**as_given(), **launch.env}, start_new_session=detach)
        started.append((launch, proc, log))
    return started


def _stop(procs: list[subprocess.Popen[bytes]]) -> None:
    """Terminate the servers still running and wait for them."""
    for proc in procs:
        if proc.poll() is None:
            proc.terminate()
    for proc in procs:
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()


COMMANDS = (models, serve)
"""The commands to register on the `lab` group."""
