"""`lab serve` over vLLM's parallelism, against a stand-in `vllm` first on PATH.

The stand-in records the arguments and the GPU, Ray and numpy variables it was started with,
then serves /health, /v1/models and chat completions (tests.servers.fake_vllm), so the
replicas a `lab serve --replicas 2` starts can serve one model's grid together: each
must see calls (counted on the servers' side).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sys
from pathlib import Path
from typing import cast

import httpx
import pytest
from click.testing import CliRunner, Result

from console.cli.environment import set_defaults
from console.cli.models import serve
from core import store
from core.errors import ConfigError
from core.models.openai_compat import OpenAIClient
from core.models.registry import load_registry
from core.models.serving import served_endpoints, with_endpoints
from core.models.specs import OpenAISpec
from core.store.servers import running_endpoints, servers
from tests.helpers.queue import lab_here

ROOT = Path(__file__).resolve().parents[1]

STAND_IN = """#!{python}
import json, os, sys
args = sys.argv[1:]
port = args[args.index("--port") + 1]
record = {{"argv": args, **{{name: os.environ.get(name) for name in (
    "CUDA_VISIBLE_DEVICES", "RAY_ADDRESS", "NUMPY_MADVISE_HUGEPAGE", "OPENBLAS_NUM_THREADS")}}}}
with open(os.path.join({records!r}, port + ".json"), "w") as f:
    json.dump(record, f)
sys.path.insert(0, {root!r})
from tests.servers.fake_vllm import main
main(args)
"""


def free_ports(n: int) -> int:
    """The first of `n` consecutive free ports."""
    for _ in range(200):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            first = int(s.getsockname()[1])
        if first + n > 65535:
            continue
        try:
            socks = []
            for p in range(first, first + n):
                s = socket.socket()
                socks.append(s)
                s.bind(("127.0.0.1", p))
            return first
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    raise RuntimeError("no consecutive free ports")


@pytest.fixture
def stand_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A `vllm` program first on PATH; returns the folder its records go to."""
    records, bin_dir = tmp_path / "records", tmp_path / "bin"
    records.mkdir()
    bin_dir.mkdir()
    script = bin_dir / "vllm"
    script.write_text(STAND_IN.format(python=sys.executable, records=str(records),
                                      root=str(ROOT)))
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    return records


def registry(path: Path, port: int, extra: str = "") -> Path:
    path.write_text(f'[models.qwen-par]\nbackend = "openai"\nmodel = "loopback-model"\n'
                    f'endpoints = ["http://127.0.0.1:{port}/v1"]\nconcurrency = 8\n'
                    f'timeout_s = 60\nmax_retries = 1\nbackoff_s = 0.01\n{extra}')
    return path


def invoke(args: list[str], db: Path, config: Path) -> Result:
    return CliRunner().invoke(serve, args, obj={"db": db, "config": config})


def recorded(records: Path, port: int) -> dict:
    return json.loads((records / f"{port}.json").read_text())


def flag(argv: list[str], name: str) -> str | None:
    return argv[argv.index(name) + 1] if name in argv else None


def test_dry_run_prints_tp_pp_dp_and_ray_as_vllm_takes_them(tmp_path: Path, db_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    cfg = registry(tmp_path / "lab.toml", 8000)
    out = invoke(["qwen-par", "--dry-run", "--tensor-parallel-size", "8",
                  "--pipeline-parallel-size", "4", "--ray-address", "10.0.0.1:6379"],
                 db_path, cfg)
    assert out.exit_code == 0, out.output
    assert out.output.strip() == (
        "RAY_ADDRESS=10.0.0.1:6379 vllm serve loopback-model --host 127.0.0.1 --port 8000 "
        "--enable-prefix-caching --generation-config vllm --tensor-parallel-size 8 "
        "--pipeline-parallel-size 4 --distributed-executor-backend ray")
    out = invoke(["qwen-par", "--dry-run", "--data-parallel-size", "4", "--ray-address", "auto"],
                 db_path, cfg)
    assert "--data-parallel-size 4 --distributed-executor-backend ray --data-parallel-backend ray" \
        in out.output
    out = invoke(["qwen-par", "--dry-run", "--tensor-parallel-size", "2", "--replicas", "4"],
                 db_path, cfg)
    lines = out.output.strip().splitlines()
    assert [line.split(" vllm ")[0] for line in lines] == [
        "CUDA_VISIBLE_DEVICES=0,1", "CUDA_VISIBLE_DEVICES=2,3", "CUDA_VISIBLE_DEVICES=4,5",
        "CUDA_VISIBLE_DEVICES=6,7"]
    assert [flag(line.split(), "--port") for line in lines] == ["8000", "8001", "8002", "8003"]
    assert all("--tensor-parallel-size 2" in line for line in lines)


def test_the_same_keys_in_lab_toml_and_flags_override_them(tmp_path: Path, db_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4,5,6,7")  # replicas share what lab may use
    cfg = registry(tmp_path / "lab.toml", 9000, "tensor_parallel_size = 2\n"
                   "pipeline_parallel_size = 1\nreplicas = 2\n")
    lines = invoke(["qwen-par", "--dry-run"], db_path, cfg).output.strip().splitlines()
    assert [line.split(" vllm ")[0] for line in lines] == [
        "CUDA_VISIBLE_DEVICES=4,5", "CUDA_VISIBLE_DEVICES=6,7"]
    assert "--pipeline-parallel-size 1" in lines[0] and "--port 9001" in lines[1]
    lines = invoke(["qwen-par", "--dry-run", "--replicas", "4", "--tensor-parallel-size", "1"],
                   db_path, cfg).output.strip().splitlines()
    assert [line.split(" vllm ")[0] for line in lines] == [
        f"CUDA_VISIBLE_DEVICES={d}" for d in (4, 5, 6, 7)]
    # the registry's replicas are the model's endpoints: a worker's client uses all of them
    spec = load_registry(cfg)["qwen-par"]
    config = cast(OpenAISpec, spec.config)
    assert [e.url for e in OpenAIClient("qwen-par", config).endpoints] == [
        "http://127.0.0.1:9000/v1", "http://127.0.0.1:9001/v1"]


def test_refusals_are_one_line(tmp_path: Path, db_path: Path, monkeypatch: pytest.MonkeyPatch
                              ) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    cfg = registry(tmp_path / "lab.toml", 8000)
    out = invoke(["qwen-par", "--dry-run", "--replicas", "2", "--tensor-parallel-size", "2"],
                 db_path, cfg)
    assert isinstance(out.exception, ConfigError)
    assert "2 replicas of 2 GPU(s) each need 4 GPUs; CUDA_VISIBLE_DEVICES lists 2" in str(
        out.exception)
    out = invoke(["qwen-par", "--dry-run", "--replicas", "2", "--ray-address", "auto"],
                 db_path, cfg)
    assert isinstance(out.exception, ConfigError) and "data_parallel_size" in str(out.exception)
    out = invoke(["qwen-par", "--dry-run", "--ray-address", " "], db_path, cfg)
    assert isinstance(out.exception, ConfigError) and "Ray cluster's address" in str(
        out.exception)
    bad = registry(tmp_path / "bad.toml", 8000, "replicas = 0\n")
    with pytest.raises(ConfigError, match="replicas"):
        load_registry(bad)


@pytest.mark.timeout(300)
def test_ray_address_reaches_the_stand_in_as_vllm_reads_it(tmp_path: Path, db_path: Path,
                                                           stand_in: Path,
                                                           monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    """Also: the server gets the environment as the user gave it, not the numpy and BLAS
    settings `lab` puts into its own (a value the user set passes)."""
    monkeypatch.delenv("NUMPY_MADVISE_HUGEPAGE", raising=False)
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "4")
    set_defaults()
    assert os.environ["NUMPY_MADVISE_HUGEPAGE"] == "0"
    port = free_ports(1)
    cfg = registry(tmp_path / "lab.toml", port, 'ray_address = "10.0.0.1:6379"\n')
    out = invoke(["qwen-par", "--detach", "--wait", "120", "--tensor-parallel-size", "8",
                  "--pipeline-parallel-size", "2"], db_path, cfg)
    assert out.exit_code == 0, out.output
    (row,) = servers(store.connect(db_path))
    try:
        rec = recorded(stand_in, port)
        argv = rec["argv"]
        assert rec["RAY_ADDRESS"] == "10.0.0.1:6379" and rec["CUDA_VISIBLE_DEVICES"] is None
        assert rec["NUMPY_MADVISE_HUGEPAGE"] is None and rec["OPENBLAS_NUM_THREADS"] == "4"
        assert flag(argv, "--tensor-parallel-size") == "8"
        assert flag(argv, "--pipeline-parallel-size") == "2"
        assert flag(argv, "--distributed-executor-backend") == "ray"
        assert "--data-parallel-size" not in argv
        assert row["flags"]["ray_address"] == "10.0.0.1:6379"
        assert row["flags"]["pipeline_parallel_size"] == 2
    finally:
        os.killpg(row["pid"], signal.SIGTERM)


@pytest.mark.timeout(400)
def test_replicas_are_registered_and_serve_one_models_grid_together(tmp_path: Path, db_path: Path,
                                                                    stand_in: Path) -> None:
    port = free_ports(2)
    cfg = registry(tmp_path / "lab.toml", port)  # lists only the first replica's endpoint
    out = invoke(["qwen-par", "--detach", "--wait", "120", "--replicas", "2",
                  "--tensor-parallel-size", "2", "--data-parallel-size", "1"], db_path, cfg)
    assert out.exit_code == 0, out.output
    rows = servers(store.connect(db_path))
    try:
        assert sorted(r["endpoint"] for r in rows) == [
            f"http://127.0.0.1:{port}/v1", f"http://127.0.0.1:{port + 1}/v1"]
        for i in range(2):
            rec = recorded(stand_in, port + i)
            assert rec["CUDA_VISIBLE_DEVICES"] == ("0,1", "2,3")[i]
            assert flag(rec["argv"], "--tensor-parallel-size") == "2"
            assert flag(rec["argv"], "--data-parallel-size") == "1"
            assert rec["RAY_ADDRESS"] is None
        db = store.connect(db_path)
        assert running_endpoints(db, "qwen-par") == [
            f"http://127.0.0.1:{port}/v1", f"http://127.0.0.1:{port + 1}/v1"]
        for args in (("demo-set",),
                     ("enqueue", "--models", "qwen-par", "--conditions", "none",
                      "--regimes", "clean", "--set", "demo", "--run", "replicas")):
            done = lab_here(db_path, cfg, *args)
            assert done.returncode == 0, done.stderr
        done = lab_here(db_path, cfg, "worker", "--until-idle")
        assert done.returncode == 0, done.stderr
        calls = [httpx.get(f"http://127.0.0.1:{port + i}/stats", timeout=10).json()["calls"]
                 for i in range(2)]
        served = {r["server"]: r["n"] for r in db.query(
            "SELECT server, count(*) AS n FROM episodes WHERE error IS NULL GROUP BY server")}
    finally:
        for r in rows:
            os.killpg(r["pid"], signal.SIGTERM)
    assert all(c > 0 for c in calls), calls  # both replicas saw calls
    assert sum(served.values()) == 60 and len(served) == 2, served


def test_recorded_endpoints_join_the_registrys_once() -> None:
    from core.models.registry import ModelSpec
    spec = ModelSpec("m", "openai", {"model": "m", "replicas": 2, "endpoints": [
        "http://u:secret@h:8000/v1"]})
    merged = with_endpoints(spec, ["http://h:8001/v1", "http://h:8005/v1", "http://h:8005/v1"])
    config = merged.config
    assert isinstance(config, OpenAISpec)
    assert config.served_at() == ("http://u:secret@h:8000/v1", "http://u:secret@h:8001/v1",
                                  "http://h:8005/v1")
    assert merged.spec_hash() == spec.spec_hash()  # where a model is served is not hashed
    assert with_endpoints(spec, ["http://h:8000/v1"]) is spec


def test_a_server_is_recorded_under_its_own_boxs_registry_url() -> None:
    config = OpenAISpec(model="m", replicas=2, endpoints=(
        "http://box1:8000/v1", "http://box2:8000/v1", "http://127.0.0.1:9000/v1"))
    assert served_endpoints(config, "box2", [8000, 8001]) == [
        "http://box2:8000/v1", "http://box2:8001/v1"]
    assert served_endpoints(config, "0.0.0.0", [9001, 8000]) == [
        "http://127.0.0.1:9001/v1", "http://127.0.0.1:8000/v1"]  # 8000: not this box's
