"""Every httpx client lab opens shares one TLS context per process (`core.models.tls`),
which trusts what httpx would trust for verify=True; the Anthropic SDK keeps its own."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Iterator
from pathlib import Path

import certifi
import pytest

from core.models import tls
from core.models.health import http_alive
from core.models.registry import ModelSpec
from core.models.server_checks import check_endpoint
from tests.helpers.backends import ANTHROPIC_KEY, FAST, anthropic_spec
from tests.servers import AnthropicApp, LoopbackServer, tool_responder
from tests.servers.drive import drive
from tests.servers.openai_server import OpenAIApp


@pytest.fixture
def contexts_made(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Each `ssl.create_default_context` call from here on (httpx builds a client's
    context with it), with no context kept from an earlier test."""
    made: list[str] = []
    real = ssl.create_default_context

    def counted(*args: object, **kwargs: object) -> ssl.SSLContext:
        made.append(str(kwargs.get("cafile") or kwargs.get("capath")))
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(ssl, "create_default_context", counted)
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    tls._context.cache_clear()
    yield made
    tls._context.cache_clear()


@pytest.mark.timeout(120)
def test_every_httpx_client_lab_opens_shares_one_context(contexts_made: list[str],
                                                         tmp_path: Path) -> None:
    """Episodes through httpx and through the OpenAI SDK (given lab's httpx client), an
    endpoint check and a health probe: one context built, for certifi's bundle (each
    client built its own before)."""
    with LoopbackServer(OpenAIApp()) as server:
        for transport in ("httpx", "sdk"):
            spec = ModelSpec("vllm-tls", "openai", {"model": "loopback-model",
                                                    "endpoints": [f"{server.url}/v1"],
                                                    "transport": transport, **FAST})
            stored, _ = drive(spec, tmp_path / f"{transport}.db", n=2)
            assert stored == 2
        assert check_endpoint(f"{server.url}/v1", "loopback-model", 10.0).startswith("ok")
        assert asyncio.run(http_alive(f"{server.url}/v1/models"))
    assert contexts_made == [certifi.where()]


def test_the_anthropic_client_trusts_the_system_store_as_its_sdk_does(
        contexts_made: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The Anthropic SDK's httpx fork trusts the system's certificate store (not
    certifi's): lab leaves its client's context to the SDK, so none of lab's is used."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
    with LoopbackServer(AnthropicApp(responder=tool_responder(searches=1))) as server:
        stored, _ = drive(anthropic_spec(server.url), tmp_path / "claude.db", n=2)
    assert stored == 2
    assert contexts_made == [] and tls._context.cache_info().currsize == 0


def test_the_context_trusts_ssl_cert_file_then_ssl_cert_dir_then_certifi(
        contexts_made: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """As httpx does for verify=True: SSL_CERT_FILE, else SSL_CERT_DIR, else certifi's
    bundle, read at each call; one context per setting."""
    bundle = Path(certifi.where()).read_text(encoding="ascii")
    end = "-----END CERTIFICATE-----"
    one = tmp_path / "one.pem"
    one.write_text(bundle[bundle.index("-----BEGIN"):bundle.index(end) + len(end)] + "\n",
                   encoding="ascii")

    default = tls.tls_context()
    assert len(default.get_ca_certs()) > 50 and tls.tls_context() is default
    monkeypatch.setenv("SSL_CERT_FILE", str(one))
    own = tls.tls_context()
    assert own is not default and len(own.get_ca_certs()) == 1
    assert tls.tls_context() is own
    monkeypatch.setenv("SSL_CERT_DIR", str(tmp_path))
    assert tls.tls_context() is own  # the file comes first
    monkeypatch.delenv("SSL_CERT_FILE")
    assert tls.tls_context() not in (own, default)
    monkeypatch.delenv("SSL_CERT_DIR")
    assert tls.tls_context() is default
    assert contexts_made == [certifi.where(), str(one), str(tmp_path)]
