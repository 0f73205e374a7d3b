"""Endpoint URLs without their credentials (no secrets in lab.db, logs or errors).

A registry endpoint may carry credentials: `http://user:pass@host/v1` (a reverse proxy
with basic auth) or `https://host/v1?api_key=…` (a gateway that reads a query
parameter). They go into the request only. What is stored (an episode's `server`, a
`lab serve` record), printed or logged is `redact_endpoint(url)`: the URL without its
userinfo and without credential-like query parameters (`CREDENTIAL_PARAMS`); other
query parameters stay, so two endpoints that differ in them stay apart.

The model spec hash never sees an endpoint at all (`endpoints` and `base_url` are
serving fields, left out of the hashed spec), so rotating a credential changes no pin.
"""

from __future__ import annotations

import base64
import logging
import re
from dataclasses import dataclass, field
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit, urlunsplit

CREDENTIAL_PARAMS = frozenset({
    "api_key", "api-key", "apikey", "key", "token", "access_token", "auth", "auth_token",
    "password", "secret", "client_secret", "sig", "signature"})
"""Query parameters whose value is a credential (compared case-insensitively)."""

_URL_USERINFO = re.compile(r"(?i)\b(https?://)[^/\s@?#]*@")
_QUERY_CREDENTIAL = re.compile(
    r"(?i)([?&](?:" + "|".join(re.escape(p) for p in sorted(CREDENTIAL_PARAMS)) + r")=)[^&\s#'\"]*")


@dataclass(frozen=True)
class EndpointURL:
    """One endpoint split into what may be shown and what only the request carries.

    Attributes:
        public: the URL to store, print and log (no userinfo, no credential parameters).
        base: scheme, host, port and path, without userinfo or query (requests are
            made under it).
        query: the whole query string, credentials included, sent with every request
            ("" when none).
        username: the userinfo's user (percent-decoded), or None.
        password: the userinfo's password (percent-decoded), or None.
        secret_params: the values of credential query parameters.
    """

    public: str
    base: str
    # kept out of repr: an EndpointURL in a log line or traceback shows no secret
    query: str = field(default="", repr=False)
    username: str | None = field(default=None, repr=False)
    password: str | None = field(default=None, repr=False)
    secret_params: tuple[str, ...] = field(default=(), repr=False)

    @property
    def basic_auth(self) -> str | None:
        """The `Authorization` header value for the userinfo, or None without one."""
        if self.username is None and self.password is None:
            return None
        pair = f"{self.username or ''}:{self.password or ''}".encode()
        return "Basic " + base64.b64encode(pair).decode("ascii")

    @property
    def secrets(self) -> tuple[str, ...]:
        """Strings to scrub from any text: the password and credential parameter values,
        as written and percent-decoded."""
        raw = (self.password, *self.secret_params)
        return tuple(dict.fromkeys(s for v in raw if v for s in (v, unquote(v)) if s))

    @property
    def query_params(self) -> list[tuple[str, str]]:
        """The query as (name, value) pairs, for clients that take them apart."""
        return parse_qsl(self.query, keep_blank_values=True)

    def request_url(self, path: str) -> str:
        """The full URL of `path` under this endpoint, query (credentials) included."""
        url = f"{self.base.rstrip('/')}/{path.lstrip('/')}" if path else self.base
        return f"{url}?{self.query}" if self.query else url

    def target(self, path: str) -> str:
        """The request target (path and query) of `path`, for a raw HTTP/1.1 request line."""
        target = f"{urlsplit(self.base).path.rstrip('/')}/{path.lstrip('/')}"
        return f"{target}?{self.query}" if self.query else target


def parse_endpoint(url: str) -> EndpointURL:
    """Split `url` into its public form and the credentials only a request may carry.

    Args:
        url: an endpoint as written in lab.toml, e.g. "http://u:p@host:8000/v1?api_key=k".

    Returns:
        The EndpointURL; `public` is `redact_endpoint(url)`.
    """
    parts = urlsplit(url)
    host = parts.netloc.rpartition("@")[2]
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    kept = [(k, v) for k, v in pairs if k.lower() not in CREDENTIAL_PARAMS]
    # each credential value as written (percent-encoded) and decoded: either may be echoed
    raw = [item.partition("=") for item in parts.query.split("&")]
    hidden = tuple(v for k, _, v in raw if unquote(k).lower() in CREDENTIAL_PARAMS)
    hidden += tuple(v for k, v in pairs if k.lower() in CREDENTIAL_PARAMS)
    # a URL with nothing to strip keeps its spelling (episodes' `server` values join on it)
    public = url if host == parts.netloc and len(kept) == len(pairs) else urlunsplit(
        (parts.scheme, host, parts.path, urlencode(kept), parts.fragment))
    base = urlunsplit((parts.scheme, host, parts.path, "", ""))
    user = unquote(parts.username) if parts.username is not None else None
    password = unquote(parts.password) if parts.password is not None else None
    return EndpointURL(public, base, parts.query, user, password,
                       tuple(dict.fromkeys(s for s in hidden if s)))


def redact_endpoint(url: str) -> str:
    """`url` without userinfo and credential-like query parameters (api_key, token, …).

    Example: "http://u:p@h:8000/v1?api_key=k&x=1" -> "http://h:8000/v1?x=1".
    """
    return parse_endpoint(url).public


def scrub_urls(text: str) -> str:
    """`text` with the userinfo and credential parameters of any URL in it removed
    (error text from an HTTP client may echo the URL it was given)."""
    return _QUERY_CREDENTIAL.sub(r"\1***", _URL_USERINFO.sub(r"\1", text))


class ScrubURLs(logging.Filter):
    """Rewrites a log record's message through `scrub_urls` (httpx logs every request's
    full URL at INFO, and the SDKs log request options at DEBUG)."""

    def filter(self, record: logging.LogRecord) -> bool:
        """Scrub the message in place; never drops a record."""
        message = record.getMessage()
        clean = scrub_urls(message)
        if clean != message:
            record.msg, record.args = clean, None
        return True


_SCRUB = ScrubURLs()
CLIENT_LOGGERS = ("httpx", "httpx2", "openai._base_client", "anthropic._base_client")
"""The HTTP clients' loggers that may write a request URL (a filter on a logger covers
only records logged on it, so each is named)."""


def scrub_client_logs() -> None:
    """Put the `ScrubURLs` filter on the HTTP clients' loggers (idempotent)."""
    for name in CLIENT_LOGGERS:
        logging.getLogger(name).addFilter(_SCRUB)
