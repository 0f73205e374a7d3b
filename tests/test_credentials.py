"""Credentials in an endpoint URL: `user:password@` and `?api_key=` reach
the server with every request, and never lab.db, an export, a log line or the CLI's
output. The loopback servers record what each request carried; afterwards the lab.db
files, the export folder and everything logged or printed are searched byte by byte."""

from __future__ import annotations

import base64
import logging
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from analysis.tables.export import export
from console.cli.models import models
from core import store
from core.errors import ConfigError
from core.models.endpoint_url import parse_endpoint, redact_endpoint, scrub_urls
from core.models.registry import ModelSpec, make_client
from tests.servers import AnthropicApp, Fault, LoopbackServer, OpenAIApp, Reply, Request
from tests.servers.drive import drive

USER, PASSWORD, SECRET = "labuser", "hunter2-PASSWORD", "SECRET-0123456789"
SECRETS = (PASSWORD, SECRET)
BASIC = "Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
# far above any load: no attempt here may time out (retries come only from faults)
SLOW_OK = {"timeout_s": 30.0, "max_retries": 1, "backoff_s": 0.01, "backoff_max_s": 0.02}


class Recording:
    """Wraps a loopback app and keeps the authorization header and query of each call."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.seen: list[tuple[str, str, str]] = []  # (path, authorization, query)

    async def __call__(self, req: Request) -> Reply:
        self.seen.append((req.path, req.headers.get("authorization", ""), req.query))
        return await self.app(req)


def with_credentials(url: str, path: str = "/v1") -> str:
    """`url` (http://127.0.0.1:PORT) with userinfo, `path` and an api_key query."""
    with_user = url.replace("http://", f"http://{USER}:{PASSWORD}@")
    return f"{with_user}{path}?api_key={SECRET}&tenant=a"


def assert_nowhere(*texts: bytes | str, files: tuple[Path, ...] = ()) -> None:
    blobs = [t.encode() if isinstance(t, str) else t for t in texts]
    blobs += [f.read_bytes() for f in files]
    assert files or texts
    for secret in SECRETS:
        for i, blob in enumerate(blobs):
            where = files[i - len(texts)] if i >= len(texts) else f"text {i}"
            assert secret.encode() not in blob, f"{secret!r} found in {where}"


@pytest.mark.parametrize("url, public", [
    ("http://u:p@h:8000/v1", "http://h:8000/v1"),
    ("https://u@h/v1?api_key=k&x=1", "https://h/v1?x=1"),
    ("http://h/v1?Token=t&access_token=a&key=k&model=m", "http://h/v1?model=m"),
    ("http://h:8000/v1", "http://h:8000/v1"),
    ("https://api.anthropic.com", "https://api.anthropic.com"),
])
def test_redact_endpoint_drops_userinfo_and_credential_params(url: str, public: str) -> None:
    assert redact_endpoint(url) == public


def test_parse_endpoint_keeps_credentials_for_the_request_only() -> None:
    e = parse_endpoint("http://us%40r:p%2Fss@h:8000/v1?api_key=S%2B1&x=1")
    assert (e.username, e.password) == ("us@r", "p/ss")
    assert e.request_url("models") == "http://h:8000/v1/models?api_key=S%2B1&x=1"
    assert e.target("chat/completions") == "/v1/chat/completions?api_key=S%2B1&x=1"
    assert {"p/ss", "S%2B1", "S+1"} <= set(e.secrets)
    assert "p/ss" not in repr(e) and "S%2B1" not in repr(e)  # safe in a log line
    assert scrub_urls("GET http://u:pw@h/v1?x=1&api_key=K failed") == (
        "GET http://h/v1?x=1&api_key=*** failed")


def test_spec_hash_ignores_endpoints_so_rotating_a_credential_keeps_pins() -> None:
    a = ModelSpec("m", "openai", {"model": "x", "endpoints": ["http://u:one@h/v1?api_key=1"]})
    b = ModelSpec("m", "openai", {"model": "x", "endpoints": ["http://u:two@h/v1?api_key=2"]})
    assert a.spec_hash() == b.spec_hash() and "api_key" not in a.to_json()


@pytest.mark.timeout(60)
@pytest.mark.parametrize("transport", ["stream", "httpx", "sdk"])
def test_openai_credentials_reach_the_server_but_not_db_exports_or_logs(
        transport: str, db_path: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture,
        capsys: pytest.CaptureFixture[str]) -> None:
    app = OpenAIApp()
    # the first call fails (a logged retry); later, every call of one run fails with a
    # body that echoes the URL as a careless proxy would (an error stored in lab.db)
    app.script.push(Fault("status", status=503), 1)
    rec = Recording(app)
    with LoopbackServer(rec) as srv, caplog.at_level(logging.DEBUG):
        url = with_credentials(srv.url)
        spec = ModelSpec("vllm-cred", "openai", {"model": "loopback-model", "endpoints": [url],
                                                 "transport": transport, **SLOW_OK})
        stored, rows = drive(spec, db_path, n=2)
        app.script.always = Fault("status", status=500, message=f"upstream {url} refused")
        _, rows = drive(spec, db_path, n=3)  # the third question (two are done)
    assert stored == 2
    chats = [s for s in rec.seen if s[0] == "/v1/chat/completions"]
    assert len(chats) == app.calls >= 2 + 2 + 1
    assert all(auth == BASIC and f"api_key={SECRET}" in query for _, auth, query in chats)
    assert {r["server"] for r in rows} == {f"{srv.url}/v1?tenant=a"}
    errored = [r for r in rows if r["error"]]
    assert errored and "upstream http://127.0.0.1" in errored[0]["error"]
    assert any("retry 1/1" in r.getMessage() for r in caplog.records)

    db = store.connect(db_path)
    out = tmp_path / "export"
    export(db, out, n_boot=5, hazard_boot=5)
    db.conn.close()
    captured = capsys.readouterr()
    files = tuple(f for f in tmp_path.rglob("*") if f.is_file())  # lab.db*, caches, export
    assert db_path in files and (out / "episodes.csv") in files
    assert_nowhere(caplog.text, captured.out, captured.err, files=files)


@pytest.mark.timeout(60)
def test_anthropic_base_url_credentials_reach_the_server_but_not_db(db_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch,
                                                                    caplog: pytest.LogCaptureFixture
                                                                   ) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-cred-0123456789abcdef")
    app = AnthropicApp()
    app.script.push(Fault("status", status=500, message="echo http://x:hunter2-PASSWORD@y"), 1)
    rec = Recording(app)
    with LoopbackServer(rec) as srv, caplog.at_level(logging.DEBUG):
        spec = ModelSpec("claude-cred", "anthropic", {
            "model": "claude-loopback", "base_url": with_credentials(srv.url, ""),
            "sampling": "default", **SLOW_OK})
        stored, rows = drive(spec, db_path, n=1)
    assert stored == 1 and rows[0]["end_reason"] == "finish", rows[0]["error"]
    calls = [s for s in rec.seen if s[0] == "/v1/messages"]
    assert len(calls) == app.calls >= 2
    assert all(auth == BASIC and f"api_key={SECRET}" in query for _, auth, query in calls)
    assert app.headers[0]["x-api-key"] == "sk-ant-cred-0123456789abcdef"
    assert rows[0]["server"] == f"{srv.url}?tenant=a"
    assert_nowhere(caplog.text, files=tuple(f for f in db_path.parent.rglob("*") if f.is_file()))


def test_userinfo_and_a_vllm_key_together_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VLLM_API_KEY", "vllm-key-0123456789")
    spec = ModelSpec("v", "openai", {"model": "m", "endpoints": ["http://u:p@h:8000/v1"]})
    with pytest.raises(ConfigError, match=r"endpoint http://h:8000/v1: has user:password@"):
        make_client(spec)


def test_lab_models_checks_with_credentials_and_prints_none(tmp_path: Path, db_path: Path) -> None:
    rec = Recording(OpenAIApp())
    with LoopbackServer(rec) as srv:
        cfg = tmp_path / "lab.toml"
        cfg.write_text(f'[models.q]\nbackend = "openai"\nmodel = "loopback-model"\n'
                       f'endpoints = ["{with_credentials(srv.url)}"]\n')
        result = CliRunner().invoke(models, [], obj={"db": db_path, "config": cfg})
    assert result.exit_code == 0, result.output
    assert f"{srv.url}/v1?tenant=a  ok; health ok" in result.output
    assert [(p, a) for p, a, _ in rec.seen] == [("/v1/models", BASIC), ("/health", BASIC)]
    assert all(f"api_key={SECRET}" in q for _, _, q in rec.seen)
    assert_nowhere(result.output)
