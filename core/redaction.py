"""Credentials never stored or printed: every form a server might echo them in is redacted.

A model backend sends credentials with its requests: an API key as a bearer token or
an `x-api-key` header, a password from an endpoint URL's `user:password@` as HTTP
Basic auth (the base64 of `user:password`), a credential query parameter. A careless
server or proxy may echo any request header, or the URL, in an error body or even a
reply; that text becomes an episode's or a trace state's error, a log line, a CSV cell,
a report paragraph, `lab try`'s output.

So every client registers what it sends (`remember`), and `redact` is the one function
that text from outside passes through where it is made into an error or stored: the
retry loop's errors (`core.models.retry`), the error columns as they are written
(`core.store`), the replies of a model that has credentials, and the log records of
lab's and the HTTP clients' loggers. For each credential it replaces, with `***`:

- the value itself and its percent-encoded, JSON- and HTML-escaped spellings;
- for `user:password`, the pair and its base64 (standard and URL-safe alphabets);
- the base64 of each of those at any offset in a longer base64 text (a header dump
  encoded whole): the run of characters that depends on the credential alone; and
  so for the `Authorization: Basic …` value encoded once more;

and strips the userinfo and credential parameters of any URL (`scrub_urls`). A
value shorter than `MIN_CHARS` is redacted only in its derived forms (replacing a
four-letter word everywhere would garble every message, and a short secret is no secret).
"""

from __future__ import annotations

import base64
import html
import json
import logging
import re
import threading
from collections.abc import Iterable
from urllib.parse import quote, quote_plus

from core.models.endpoint_url import CLIENT_LOGGERS, scrub_urls

MIN_CHARS = 6
"""Shortest credential redacted on its own (derived forms are always long enough)."""
MIN_FRAGMENT = 8
"""Shortest base64 run (at an offset inside a longer base64 text) worth redacting."""
MASK = "***"
LAB_LOGGERS = ("lab.models", "lab.worker", "lab.jobs", "lab.store", "lab.traces")
"""lab's own loggers (a filter on a logger covers only the records logged on it)."""

_lock = threading.Lock()
_forms: set[str] = set()
_seen: set[tuple[tuple[str, ...], str | None, str | None]] = set()
_pattern: re.Pattern[str] | None = None


def _spellings(value: str) -> set[str]:
    """`value` as written, percent-encoded (both hex cases), JSON- and HTML-escaped."""
    out = {value, quote(value, safe=""), quote_plus(value, safe=""), quote(value),
           json.dumps(value)[1:-1], json.dumps(value, ensure_ascii=False)[1:-1],
           html.escape(value)}
    out |= {re.sub(r"%[0-9A-F]{2}", lambda m: m.group(0).lower(), s) for s in list(out)}
    return out


def _base64_forms(raw: bytes) -> set[str]:
    """The base64 of `raw` whole, and the part of it fixed by `raw` alone at each of
    the three offsets it may start at inside a longer encoded text."""
    out = {base64.b64encode(raw).decode("ascii")}
    for k in range(3):
        enc = base64.b64encode(b"\0" * k + raw).decode("ascii")
        start = 4 if k else 0  # the first group mixes in the bytes before it
        end = 4 * ((k + len(raw)) // 3)  # a last partial group mixes in the bytes after
        if end - start >= MIN_FRAGMENT:
            out.add(enc[start:end])
    return out | {s.replace("+", "-").replace("/", "_") for s in out}


def credential_forms(secret: str | None = None, user: str | None = None,
                     password: str | None = None) -> set[str]:
    """Every string that reveals `secret`, or the Basic auth pair `user:password`.

    Args:
        secret: a key, token or password sent as it is (header, query parameter).
        user: the user of a Basic auth pair (with `password`).
        password: the password of a Basic auth pair (also redacted on its own).

    Returns:
        The forms to replace (none for an empty secret; the value itself only when
        it has `MIN_CHARS` characters or more).
    """
    forms: set[str] = set()
    for value in (secret, password):
        if value and len(value) >= MIN_CHARS:
            forms |= _spellings(value)
        if value:
            forms |= _base64_forms(value.encode())
    if password is not None or user:
        pair = f"{user or ''}:{password or ''}"
        if len(pair) >= MIN_CHARS:
            forms |= _spellings(pair)
        forms |= _base64_forms(pair.encode())
        # the header itself encoded again (a header dump sent on as base64)
        header = "Basic " + base64.b64encode(pair.encode()).decode("ascii")
        forms |= _base64_forms(header.encode()) | _base64_forms(header[6:].encode())
    return {f for f in forms if len(f) >= 4}


def remember(secrets: Iterable[str] = (), user: str | None = None,
             password: str | None = None) -> None:
    """Register credentials this process sends: `redact` hides them from now on.

    Args:
        secrets: keys, tokens, passwords and credential parameter values.
        user: a Basic auth user (with `password`).
        password: a Basic auth password.
    """
    global _pattern
    key = (tuple(secrets), user, password)
    if key in _seen:  # a client's calls register the same credentials again: cheap
        return
    new: set[str] = set()
    for s in secrets:
        new |= credential_forms(s)
    if user is not None or password is not None:
        new |= credential_forms(user=user, password=password)
    with _lock:
        _seen.add(key)
        if new <= _forms:
            return
        _forms.update(new)
        ordered = sorted(_forms, key=lambda f: (-len(f), f))  # longest first
        _pattern = re.compile("|".join(re.escape(f) for f in ordered))
    for name in (*LAB_LOGGERS, *CLIENT_LOGGERS):
        logger = logging.getLogger(name)
        if _FILTER not in logger.filters:
            logger.addFilter(_FILTER)


def redact(text: str) -> str:
    """`text` with every registered credential form replaced by *** and every URL in it
    stripped of userinfo and credential parameters."""
    pattern = _pattern
    if pattern is not None:
        text = pattern.sub(MASK, text)
    return scrub_urls(text)


def redact_optional(text: str | None) -> str | None:
    """`redact` for a nullable column (None stays None)."""
    return None if text is None else redact(text)


def any_registered() -> bool:
    """Whether this process has registered a credential (replies then need `redact`)."""
    return _pattern is not None


class RedactRecords(logging.Filter):
    """Rewrites a log record's message through `redact`; never drops a record."""

    def filter(self, record: logging.LogRecord) -> bool:
        """Redact the formatted message (and the exception text) in place."""
        message = record.getMessage()
        clean = redact(message)
        if clean != message:
            record.msg, record.args = clean, None
        if record.exc_info and record.exc_info[1] is not None:
            shown = logging.Formatter().formatException(record.exc_info)
            record.exc_text = redact(shown)
        return True


_FILTER = RedactRecords()
