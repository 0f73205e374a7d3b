"""`lab models` and `lab serve` against loopback servers and a stand-in vllm program."""

from __future__ import annotations

import os
import signal
import socket
import sys
from collections.abc import Sequence
from pathlib import Path

import click
import pytest
from click.testing import CliRunner, Result

from console.cli.models import models, serve
from core import store
from core.errors import ConfigError, LabError
from core.store.servers import servers
from tests.servers import AnthropicApp, LoopbackServer, OpenAIApp

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def write_config(path: Path, openai_urls: list[str], anthropic_url: str = "",
                 port: int = 8000) -> Path:
    eps = ", ".join(f'"{u}"' for u in openai_urls)
    text = f"""
[models.qwen-test]
backend = "openai"
model = "loopback-model"
endpoints = [{eps}]
max_context = 8192
tensor_parallel_size = 2

[models.claude-test]
backend = "anthropic"
model = "claude-loopback"
sampling = "default"
{f'base_url = "{anthropic_url}"' if anthropic_url else ''}
"""
    path.write_text(text)
    return path


def invoke(cmd: click.Command, args: Sequence[str], db: Path, config: Path) -> Result:
    return CliRunner().invoke(cmd, args, obj={"db": db, "config": config})


def test_models_checks_each_endpoint(tmp_path: Path, db_path: Path) -> None:
    dead = f"http://127.0.0.1:{free_port()}/v1"
    with LoopbackServer(OpenAIApp()) as srv:
        cfg = write_config(tmp_path / "lab.toml", [f"{srv.url}/v1", dead])
        result = invoke(models, [], db_path, cfg)
    assert result.exit_code == 0, result.output
    out = result.output
    assert f"{srv.url}/v1  ok; health ok" in out
    assert f"{dead}  unreachable (ConnectError)" in out
    assert "not checked (--check-api)" in out
    assert "sim-own5" in out


def test_models_check_api_uses_the_key_and_never_prints_it(tmp_path: Path, db_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    key = "sk-ant-models-check-123456789"
    monkeypatch.setenv("ANTHROPIC_API_KEY", key)
    app = AnthropicApp()
    with LoopbackServer(app) as srv:
        cfg = write_config(tmp_path / "lab.toml", ["http://127.0.0.1:9/v1"], srv.url)
        result = invoke(models, ["--check-api", "--timeout", "30"], db_path, cfg)
    assert f"{srv.url}  ok" in result.output and key not in result.output
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    result = invoke(models, ["--check-api", "--timeout", "30"], db_path, cfg)
    assert "ANTHROPIC_API_KEY is not set" in result.output


def test_serve_dry_run_prints_the_vllm_command(tmp_path: Path, db_path: Path) -> None:
    cfg = write_config(tmp_path / "lab.toml", ["http://127.0.0.1:8123/v1"])
    result = invoke(serve, ["qwen-test", "--dry-run"], db_path, cfg)
    assert result.exit_code == 0, result.output
    assert result.output.strip() == (
        "vllm serve loopback-model --host 127.0.0.1 --port 8123 --enable-prefix-caching "
        "--generation-config vllm --max-model-len 8192 --tensor-parallel-size 2")
    result = invoke(serve, ["qwen-test", "--dry-run", "--port", "9000"], db_path, cfg)
    assert "--port 9000" in result.output


def test_serve_refuses_non_vllm_models_and_missing_vllm(tmp_path: Path, db_path: Path) -> None:
    cfg = write_config(tmp_path / "lab.toml", ["http://127.0.0.1:8123/v1"])
    result = invoke(serve, ["claude-test", "--dry-run"], db_path, cfg)
    assert isinstance(result.exception, ConfigError)
    assert "backend = \"openai\" models only" in str(result.exception)
    result = invoke(serve, ["qwen-test", "--executable", "no-such-vllm-here"], db_path, cfg)
    assert isinstance(result.exception, ConfigError) and "--dry-run" in str(result.exception)


def fake_vllm(tmp_path: Path, *extra: str) -> str:
    script = tmp_path / "vllm"
    script.write_text(f"#!/bin/sh\nPYTHONPATH={ROOT} exec {sys.executable} -m "
                      f"tests.servers.fake_vllm \"$@\" {' '.join(extra)}\n")
    script.chmod(0o755)
    return str(script)


@pytest.mark.timeout(240)
def test_serve_starts_waits_for_health_and_records_the_server(tmp_path: Path, db_path: Path
                                                             ) -> None:
    port = free_port()
    cfg = write_config(tmp_path / "lab.toml", [f"http://127.0.0.1:{port}/v1"])
    result = invoke(serve, ["qwen-test", "--detach", "--wait", "120", "--executable",
                            fake_vllm(tmp_path)], db_path, cfg)
    assert result.exit_code == 0, result.output
    (row,) = servers(store.connect(db_path))
    try:
        assert row["model"] == "qwen-test" and row["served_model"] == "loopback-model"
        assert row["endpoint"] == f"http://127.0.0.1:{port}/v1"
        assert row["version"] == "0.0.0-loopback" and row["stopped_at"] is None
        assert row["flags"]["max_model_len"] == 8192 and row["flags"]["prefix_caching"]
        assert "--enable-prefix-caching" in row["command"]
        assert f"recorded as server {row['id']}" in result.output
    finally:
        os.killpg(row["pid"], signal.SIGTERM)


@pytest.mark.timeout(240)
def test_serve_in_foreground_marks_the_server_stopped(tmp_path: Path, db_path: Path) -> None:
    port = free_port()
    cfg = write_config(tmp_path / "lab.toml", [f"http://127.0.0.1:{port}/v1"])
    result = invoke(serve, ["qwen-test", "--wait", "120", "--executable",
                            fake_vllm(tmp_path, "--exit-after-version")], db_path, cfg)
    assert result.exit_code == 0, result.output
    (row,) = servers(store.connect(db_path))
    assert row["stopped_at"] is not None


@pytest.mark.timeout(120)
def test_serve_reports_a_server_that_dies(tmp_path: Path, db_path: Path) -> None:
    cfg = write_config(tmp_path / "lab.toml", [f"http://127.0.0.1:{free_port()}/v1"])
    result = invoke(serve, ["qwen-test", "--executable", "false"], db_path, cfg)
    assert isinstance(result.exception, LabError)
    assert "exited with code 1" in str(result.exception) and "serve-qwen-test" in str(
        result.exception)
    assert servers(store.connect(db_path)) == []
