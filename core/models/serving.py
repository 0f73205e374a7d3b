"""The vLLM processes `lab serve` starts: their command lines, environment, ports and health.

A model is served by vLLM's own parallelism (docs/models.md): tensor, pipeline and data
parallel within one server, a server spanning a Ray cluster (`ray_address`: vLLM's Ray
executor, the cluster found through RAY_ADDRESS), and `replicas`: several servers of
the model on one box, on consecutive ports, each given its own GPUs through
CUDA_VISIBLE_DEVICES. Whether an endpoint answers is `core.models.server_checks`
(each backend's `check_server`).
"""

from __future__ import annotations

import shlex
import socket
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from urllib.parse import urlsplit

import httpx

from core.errors import ConfigError, LabError
from core.models.endpoint_url import redact_endpoint
from core.models.registry import ModelSpec
from core.models.specs import REPLICAS_WITH_RAY, OpenAISpec, ray_address_problem

VISIBLE_DEVICES = "CUDA_VISIBLE_DEVICES"
"""The variable that gives each replica its GPUs."""
RAY_ADDRESS = "RAY_ADDRESS"
"""The variable vLLM's Ray executor reads to join an existing cluster."""


@dataclass(frozen=True)
class Parallelism:
    """How a model's vLLM servers split it: lab.toml's keys, or `lab serve`'s flags.

    Attributes:
        tensor, pipeline, data: vLLM's --tensor-, --pipeline- and --data-parallel-size
            (None: not passed, vLLM's 1).
        ray_address: the Ray cluster one server spans (None: this box only).
        replicas: servers on this box, one per port from the first.
    """

    tensor: int | None = None
    pipeline: int | None = None
    data: int | None = None
    ray_address: str | None = None
    replicas: int = 1

    @classmethod
    def of(cls, config: OpenAISpec) -> Parallelism:
        """What the model's lab.toml entry says."""
        return cls(config.tensor_parallel_size, config.pipeline_parallel_size,
                   config.data_parallel_size, config.ray_address, config.replicas)

    def overridden(self, **flags: int | str | None) -> Parallelism:
        """These settings with each flag that was given (not None) in place of its key."""
        given = {k: v for k, v in flags.items() if v is not None}
        problem = ray_address_problem("--ray-address", given.get("ray_address"))
        if problem:
            raise ConfigError(problem)
        out = replace(self, **given)  # type: ignore[arg-type]
        if out.replicas > 1 and out.ray_address is not None:
            raise ConfigError(REPLICAS_WITH_RAY)
        return out

    @property
    def gpus(self) -> int:
        """GPUs one server uses: tensor × pipeline × data parallel size."""
        return (self.tensor or 1) * (self.pipeline or 1) * (self.data or 1)

    def flags(self) -> dict[str, int | str | None]:
        """What the `servers` table records of them."""
        return {"tensor_parallel_size": self.tensor, "pipeline_parallel_size": self.pipeline,
                "data_parallel_size": self.data, "ray_address": self.ray_address,
                "replicas": self.replicas}


@dataclass(frozen=True)
class Launch:
    """One vLLM server to start.

    Attributes:
        command: its command line.
        env: variables set for it on top of lab's environment.
        port: the port it listens on.
        replica: its index among the model's replicas on this box (0 when one).
    """

    command: list[str]
    port: int
    replica: int = 0
    env: Mapping[str, str] = field(default_factory=dict)

    def shell(self) -> str:
        """The line a shell would run: the variables, then the command, quoted."""
        head = [f"{k}={shlex.quote(v)}" for k, v in sorted(self.env.items())]
        return " ".join([*head, shlex.join(self.command)])


def vllm_command(spec: ModelSpec, host: str, port: int, executable: str = "vllm",
                 parallel: Parallelism | None = None) -> list[str]:
    """The `vllm serve` command line of a registry model (one server).

    Prefix caching on, vLLM's own generation defaults (`--generation-config vllm`, so
    the model's generation_config.json cannot change sampling), the registry's
    max_context, and the parallelism (`parallel`, default the registry's): tensor,
    pipeline and data parallel sizes, and with a Ray address vLLM's Ray executor
    (`--distributed-executor-backend ray`, and `--data-parallel-backend ray` for data
    parallel ranks across the cluster). vLLM's own default temperature is 1.0, so
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
    par = parallel or Parallelism.of(config)
    cmd = [executable, "serve", config.model, "--host", host, "--port", str(port),
           "--enable-prefix-caching", "--generation-config", "vllm"]
    if config.max_context is not None:
        cmd += ["--max-model-len", str(config.max_context)]
    for flag, size in (("--tensor-parallel-size", par.tensor),
                       ("--pipeline-parallel-size", par.pipeline),
                       ("--data-parallel-size", par.data)):
        if size is not None:
            cmd += [flag, str(size)]
    if par.ray_address is not None:
        cmd += ["--distributed-executor-backend", "ray"]
        if (par.data or 1) > 1:
            cmd += ["--data-parallel-backend", "ray"]
    return cmd


def launches(spec: ModelSpec, host: str, port: int, parallel: Parallelism,
             executable: str = "vllm", visible: str | None = None) -> list[Launch]:
    """The servers `lab serve` starts for a model: one, or one per replica.

    Replica i listens on `port + i` and sees GPUs i·g … i·g + g − 1 (g = `parallel.gpus`)
    of `visible` (the CUDA_VISIBLE_DEVICES lab runs under, else 0, 1, …) through
    CUDA_VISIBLE_DEVICES. A server on a Ray cluster is given RAY_ADDRESS. A single
    server without Ray is started with lab's environment as it is.

    Raises:
        ConfigError: not a vLLM model, or `visible` lists fewer GPUs than the replicas need.
    """
    if parallel.replicas == 1:
        env = {RAY_ADDRESS: parallel.ray_address} if parallel.ray_address else {}
        return [Launch(vllm_command(spec, host, port, executable, parallel), port, 0, env)]
    g = parallel.gpus
    need = g * parallel.replicas
    devices = ([d.strip() for d in visible.split(",") if d.strip()] if visible
               else [str(i) for i in range(need)])
    if len(devices) < need:
        raise ConfigError(f"{parallel.replicas} replicas of {g} GPU(s) each need {need} GPUs; "
                          f"{VISIBLE_DEVICES} lists {len(devices)} ({visible})")
    return [Launch(vllm_command(spec, host, port + i, executable, parallel), port + i, i,
                   {VISIBLE_DEVICES: ",".join(devices[i * g:(i + 1) * g])})
            for i in range(parallel.replicas)]


def served_endpoints(config: OpenAISpec, host: str, ports: Sequence[int]) -> list[str]:
    """The endpoint URL of each port a server of this box listens on.

    The registry's spelling (`served_at`, replicas included) of that port on this host
    (`host`, or for a loopback or any-address bind a local name: 127.0.0.1, localhost,
    the host's name) or, failing that, the one registry URL with that port; else
    http://`host`:port/v1.
    """
    bind_all = host in ("0.0.0.0", "::")
    local = "127.0.0.1" if bind_all else host
    names = ({local, "127.0.0.1", "localhost", socket.gethostname(), socket.getfqdn()}
             if bind_all or local in ("127.0.0.1", "localhost") else {local})
    out = []
    for port in ports:
        same = [u for u in config.served_at() if urlsplit(u).port == port]
        here = [u for u in same if urlsplit(u).hostname in names]
        pick = here[:1] or (same if len(same) == 1 else [])
        out.append(pick[0] if pick else f"http://{local}:{port}/v1")
    return out


def with_endpoints(spec: ModelSpec, extra: Sequence[str]) -> ModelSpec:
    """`spec` also served at `extra` (the endpoints `lab serve` recorded for it).

    The registry's endpoints come first (replicas expanded) and keep their spelling,
    credentials included; a recorded URL equal to one of them once redacted is not
    added again. Endpoints are serving settings, so the spec's hash does not change.
    """
    config = spec.config
    if not isinstance(config, OpenAISpec) or not extra:
        return spec
    mine = config.served_at()
    shown = {redact_endpoint(u) for u in mine}
    new = [u for u in dict.fromkeys(extra) if u not in shown]
    if not new:
        return spec
    return ModelSpec(spec.name, spec.backend,
                     {**spec.params, "endpoints": [*mine, *new], "replicas": 1})


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
