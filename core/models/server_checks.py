"""Whether a model's server answers: one line each, for `lab models` and the Dashboard.

Each backend's configuration names its check (`check_server`); nothing here knows a
backend. Credentials in a URL go with the requests; the lines never repeat the URL.
"""

from __future__ import annotations

import os

import httpx

from core.models.endpoint_url import parse_endpoint
from core.models.tls import tls_context

ANTHROPIC_KEY_ENV = "ANTHROPIC_API_KEY"
"""The environment variable holding the Anthropic API key (never read from lab.toml)."""
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
        with httpx.Client(timeout=timeout_s, headers=auth, params=address.query,
                          verify=tls_context()) as http:
            r = http.get(address.base.rstrip("/") + "/models")
            if r.status_code != 200:
                return f"unreachable (GET /models: HTTP {r.status_code})"
            served = [m.get("id") for m in r.json().get("data", []) if isinstance(m, dict)]
            health = http.get(server_root(address.base) + "/health").status_code
    except (httpx.HTTPError, ValueError, AttributeError) as exc:
        return f"unreachable ({type(exc).__name__})"
    state = "ok" if model in served else f"ok, but serves {', '.join(map(str, served)) or '-'}"
    return f"{state}; health {'ok' if health == 200 else f'n/a (HTTP {health})'}"


def check_anthropic(base_url: str, timeout_s: float) -> str:
    """One line on the Anthropic API: is the key set and accepted (GET /v1/models)."""
    key = os.environ.get(ANTHROPIC_KEY_ENV)
    if not key:
        return f"{ANTHROPIC_KEY_ENV} is not set"
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
