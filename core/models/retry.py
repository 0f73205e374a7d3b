"""Timeouts, retries and error classification shared by the HTTP backends (docs/queue.md).

Both SDKs (openai, anthropic) are built the same way and raise the same shapes of
exception: a timeout, a connection error, or a status error carrying the HTTP
response. `classify` turns any of them into a `ModelError` with a short reason;
`call_with_retries` retries the retryable ones with exponential backoff and jitter,
waits at least what a 429/529 `retry-after` header asks, bounds every attempt by a
hard timeout, and logs each retry. Secrets are scrubbed from every message.

A worker that stops (SIGTERM/SIGINT) stops its calls through a `CallStop`, so that its
stop ends in bounded time (`jobs.worker`): once requested no call or retry starts, and
once cut every attempt (or call-slot wait) still in flight ends at once; either way the call
raises ModelError with reason "interrupted", which the episode records as its error
(retried like any other).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import email.utils
import json
import logging
import random
import re
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Protocol, TypeVar

import httpx

from core.errors import ModelError
from core.redaction import redact as redact_text
from core.redaction import remember

T = TypeVar("T")
LOG = logging.getLogger("lab.models")

CONTEXT_RE = re.compile(
    r"maximum context length|context length|context window|prompt is too long|"
    r"too many tokens|exceeds? (?:the )?(?:model'?s? )?(?:max(?:imum)? )?(?:context|input)",
    re.IGNORECASE)
"""Messages of a too-long prompt: vLLM ("This model's maximum context length is …"),
llama.cpp ("… exceed context window …") and Anthropic ("prompt is too long")."""

RETRY_AFTER_CAP_S = 120.0
"""Longest wait a retry-after header may impose before one retry."""

INTERRUPTED = "interrupted"
"""The reason of a call that a stopping worker did not start, or cut off."""


class CallStop:
    """The stop of a worker's model calls: requested, then cut (see the module docstring).

    `request` (from any thread) lets no call or retry start: the next one raises
    ModelError(reason "interrupted"). `cut` (in the event loop's thread, after the
    grace period) ends every attempt or slot wait in flight inside a `scope` the
    same way. Calls find the stop of the job they serve through `CALL_STOP`.
    """

    def __init__(self, watch: Callable[[], bool] | None = None) -> None:
        self._requested = False
        self.watch = watch
        """Asked while not requested: True once a stop signal was delivered, whether or
        not the worker's Python handler has run yet (`jobs.stop_signal`)."""
        self.cut_off = False
        self._scopes: set[asyncio.Timeout] = set()

    @property
    def requested(self) -> bool:
        """Whether the stop was requested, or its signal delivered (`watch`)."""
        if not self._requested and self.watch is not None and self.watch():
            self._requested = True
        return self._requested

    def request(self) -> None:
        """No call or retry starts from now on (safe from a signal handler or thread)."""
        self._requested = True

    def check(self, where: Where) -> None:
        """Raise the interruption if the stop was requested (before a call or a retry).

        Args:
            where: the call's place in the message (or a function making it, called
                only when the stop was requested).

        Raises:
            ModelError: reason "interrupted", when the stop was requested.
        """
        if self.requested:
            raise interrupted(_said(where), "the worker is stopping: call not started")

    def cut(self) -> None:
        """End every scope in flight now (call in the event loop's thread)."""
        self._requested = self.cut_off = True
        now = asyncio.get_running_loop().time()
        for scope in list(self._scopes):
            scope.reschedule(now)

    def scope(self, where: Where, timeout_s: float | None) -> StopScope:
        """Bound a call (or a wait) by `timeout_s` and by the cut: `async with
        stop.scope(where, timeout_s): ...` (`StopScope`).

        Raises:
            TimeoutError: `timeout_s` passed (no cut).
            ModelError: reason "interrupted", when the cut ended it.
        """
        return StopScope(self, where, timeout_s)


Where = str | Callable[[], str]
"""A call's place in an interruption's message, or a function making it (the redacted
text is then made only when a call is interrupted, not for every call)."""


def _said(where: Where) -> str:
    return where if isinstance(where, str) else where()


class StopScope:
    """A call (or a wait) bounded by a timeout and by its `CallStop`'s cut.

    An async context manager written as a class: a model call enters two or three
    scopes, and a generator-based one cost about twice as much CPU each.

    Raises (on exit):
        TimeoutError: the timeout passed (no cut).
        ModelError: reason "interrupted", when the cut ended it.
    """

    __slots__ = ("_stop", "_timeout", "_timeout_s", "_where")

    def __init__(self, stop: CallStop, where: Where, timeout_s: float | None) -> None:
        self._stop = stop
        self._where = where
        self._timeout_s = timeout_s
        self._timeout: asyncio.Timeout | None = None

    async def __aenter__(self) -> None:
        timeout = self._timeout = asyncio.timeout(self._timeout_s)
        await timeout.__aenter__()
        if self._stop.cut_off:
            timeout.reschedule(asyncio.get_running_loop().time())
        self._stop._scopes.add(timeout)

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        timeout = self._timeout
        assert timeout is not None
        self._stop._scopes.discard(timeout)
        try:
            await timeout.__aexit__(exc_type, exc, tb)
        except TimeoutError:
            if self._stop.cut_off:
                raise interrupted(_said(self._where), "the worker stopped: call cut off"
                                  ) from None
            raise
        if isinstance(exc, TimeoutError) and self._stop.cut_off:
            raise interrupted(_said(self._where), "the worker stopped: call cut off") from None


CALL_STOP: contextvars.ContextVar[CallStop | None] = contextvars.ContextVar(
    "lab_call_stop", default=None)
"""The CallStop of the job whose calls run in this context (set by the worker's job;
tasks inherit it). None: calls are never stopped (lab try, tests)."""


def call_stop() -> CallStop:
    """The CallStop of this context (a fresh one, never requested, when none is set)."""
    return CALL_STOP.get() or CallStop()


def interrupted(where: str, why: str) -> ModelError:
    """The ModelError of a call a stopping worker did not start or cut off."""
    return ModelError(f"{where}: {why}", INTERRUPTED, retryable=True)


@dataclass(frozen=True)
class RetryPolicy:
    """How one backend times out and retries its calls.

    Attributes:
        timeout_s: hard limit on one attempt (connect to last byte).
        max_retries: retries after the first attempt (0 = try once).
        backoff_s: first backoff delay; doubles per retry.
        backoff_max_s: cap on one backoff delay (before jitter).
        down_after: consecutive refused/dropped connections or 5xx replies that mark an
            endpoint down (`core.models.health`): its calls then wait instead of retrying.
        outage_wait_s: how long a call or a new episode waits for a down endpoint before
            it ends with reason "endpoint_down" (retryable).
        probe_s: how often a down endpoint is asked whether it answers again.
    """

    timeout_s: float = 60.0
    max_retries: int = 4
    backoff_s: float = 1.0
    backoff_max_s: float = 30.0
    down_after: int = 3
    outage_wait_s: float = 900.0
    probe_s: float = 2.0

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> RetryPolicy:
        """The policy of a registry entry (timeout_s, max_retries, backoff_s, backoff_max_s,
        down_after, outage_wait_s, probe_s)."""
        return cls(timeout_s=float(params.get("timeout_s", cls.timeout_s)),
                   max_retries=int(params.get("max_retries", cls.max_retries)),
                   backoff_s=float(params.get("backoff_s", cls.backoff_s)),
                   backoff_max_s=float(params.get("backoff_max_s", cls.backoff_max_s)),
                   down_after=int(params.get("down_after", cls.down_after)),
                   outage_wait_s=float(params.get("outage_wait_s", cls.outage_wait_s)),
                   probe_s=float(params.get("probe_s", cls.probe_s)))

    def delay(self, retry: int, rng: random.Random) -> float:
        """Backoff before retry number `retry` (0-based): exponential, jittered in [½, 1]."""
        base = min(self.backoff_max_s, self.backoff_s * (2 ** retry))
        return base * (0.5 + 0.5 * rng.random())


class RetryableFailure(ModelError):
    """A retryable ModelError that may carry the server's retry-after wait."""

    def __init__(self, message: str, reason: str, retry_after_s: float | None = None) -> None:
        super().__init__(message, reason, retryable=True)
        self.retry_after_s = retry_after_s


class StatusFailure(Exception):
    """An HTTP error status from a server spoken to without an SDK.

    Attributes:
        status_code: the HTTP status.
        headers: the response headers (retry-after is read from them).
        body: the response text.
    """

    def __init__(self, status_code: int, headers: Mapping[str, str], body: str) -> None:
        super().__init__(f"HTTP {status_code}")
        self.status_code = status_code
        self.headers = headers
        self.body = body


class MalformedResponse(ValueError):
    """A server's reply that is not what its API promises: a model fault (bad_response).

    Only code that reads a reply raises it (through `reading_reply`); a TypeError,
    KeyError or AttributeError anywhere else is a bug in lab, never retried as a
    model fault.
    """


@contextlib.contextmanager
def reading_reply() -> Iterator[None]:
    """Turn what decoding and reading a server's reply raises into MalformedResponse.

    Wrap exactly the code that parses a reply body (json.loads and the walk over
    its fields), so that a malformed reply is told apart from a bug in lab.
    """
    try:
        yield
    except (ValueError, KeyError, TypeError, AttributeError, IndexError) as exc:
        if isinstance(exc, MalformedResponse):
            raise
        raise MalformedResponse(f"{type(exc).__name__}: {' '.join(str(exc).split())[:200]}"
                                ) from exc


def redact(text: str, secrets: Sequence[str] = ()) -> str:
    """`text` without any credential this process sends (`core.redaction.redact`), after
    registering `secrets` (API keys) with the ones redacted."""
    remember(secrets)
    return redact_text(text)


def retry_after_seconds(headers: Mapping[str, str] | None) -> float | None:
    """Seconds asked by `retry-after-ms` or `retry-after` (seconds or an HTTP date)."""
    if not headers:
        return None
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return max(0.0, float(ms) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        return max(0.0, email.utils.parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError):
        return None


def _body_message(body: object, fallback: str) -> str:
    """The human part of an error body: error.message, message, or the text itself."""
    if isinstance(body, (bytes, str)):
        text = body if isinstance(body, str) else body.decode("utf-8", "replace")
        try:
            body = json.loads(text)
        except ValueError:
            return " ".join(text.split())[:200] or fallback
    if isinstance(body, Mapping):
        err = body.get("error", body)
        if isinstance(err, Mapping) and isinstance(err.get("message"), str):
            return " ".join(err["message"].split())[:300]
        if isinstance(body.get("message"), str):
            return " ".join(body["message"].split())[:300]
    return fallback


def classify(exc: BaseException, where: str) -> ModelError:
    """The ModelError for an exception raised by an openai/anthropic SDK call.

    Args:
        exc: what the call raised.
        where: endpoint or model, named in the message.

    Returns:
        A RetryableFailure (timeout, connection, rate_limited, overloaded, server_error,
        bad_response: a MalformedResponse or an SDK's response-validation error) or a
        final ModelError (context_overflow, auth, bad_request).
    """
    if isinstance(exc, ModelError):
        return exc
    if isinstance(exc, (asyncio.TimeoutError, TimeoutError)):
        return RetryableFailure(f"{where}: no answer within the timeout", "timeout")
    name = type(exc).__name__
    status = getattr(exc, "status_code", None)
    if isinstance(status, int):
        headers = getattr(exc, "headers", None) or getattr(getattr(exc, "response", None),
                                                           "headers", None)
        text = _body_message(getattr(exc, "body", None), str(exc))
        msg = f"{where}: HTTP {status}: {text}"
        if status == 429:
            return RetryableFailure(msg, "rate_limited", retry_after_seconds(headers))
        if status == 529:
            return RetryableFailure(msg, "overloaded", retry_after_seconds(headers))
        if status == 408 or status >= 500:
            return RetryableFailure(msg, "server_error", retry_after_seconds(headers))
        if status in (400, 413, 422) and CONTEXT_RE.search(text):
            return ModelError(msg, "context_overflow", retryable=False)
        if status in (401, 403):
            return ModelError(f"{msg} (check the API key in the environment)", "auth")
        return ModelError(msg, "bad_request", retryable=False)
    if "Timeout" in name:
        return RetryableFailure(f"{where}: no answer within the timeout", "timeout")
    if "Connection" in name or isinstance(exc, httpx.TransportError):
        cause = exc.__cause__ or exc.__context__
        detail = type(cause).__name__ if cause is not None else " ".join(str(exc).split())[:100]
        return RetryableFailure(f"{where}: connection failed ({detail or name})", "connection")
    if isinstance(exc, MalformedResponse) or "ResponseValidation" in name:
        return RetryableFailure(f"{where}: malformed response ({name})", "bad_response")
    return RetryableFailure(f"{where}: {name}: {' '.join(str(exc).split())[:200]}", "connection")


class Outage(Protocol):
    """Where a call's endpoint stands (`core.models.health.Failover`): calls to a down
    endpoint wait for it instead of spending their retries."""

    def up(self) -> bool:
        """Whether the call's endpoint is up now (then `ready` would neither wait nor move
        it): a call checks this first and enters the cut-able wait only when it is not."""
        ...

    async def ready(self) -> bool:
        """Wait until the call may be sent (moving it to a live endpoint if it can);
        returns whether it waited. Raises ModelError ("endpoint_down") past the bound."""
        ...

    def answered(self) -> None:
        """The server answered the attempt (a reply, or an error that is no outage's)."""
        ...

    async def failed(self, err: ModelError) -> bool:
        """Count a failed attempt; returns whether its endpoint is down now."""
        ...


_ANSWERED = frozenset({"rate_limited", "overloaded", "context_overflow", "auth", "bad_request"})
"""Failure reasons that prove the server is there (it answered, with an error)."""


_HANDLED: tuple[type[BaseException], ...] = (
    asyncio.TimeoutError, TimeoutError, MalformedResponse, ModelError)
"""Besides the backend's own error types: what a failed attempt raises. Anything else
(a TypeError in lab's code, say) propagates as the bug it is."""


async def call_with_retries(call: Callable[[], Awaitable[T]], policy: RetryPolicy,
                            where: str | Callable[[], str],
                            errors: tuple[type[BaseException], ...], secrets: Sequence[str] = (),
                            rng: random.Random | None = None,
                            on_failure: Callable[[ModelError], None] | None = None,
                            outage: Outage | None = None) -> T:
    """Run `call` under the policy: hard timeout per attempt, retry what is retryable.

    Args:
        call: makes one attempt (a fresh coroutine per call).
        policy: timeout, retries and backoff.
        where: endpoint or model, for messages and the retry log (or a function
            returning it, when the caller may move to another endpoint).
        errors: the exceptions a failed call raises besides the built-in ones
            (anthropic.AnthropicError; httpx.HTTPError and StatusFailure).
        secrets: strings scrubbed from every message (API keys).
        rng: jitter source (a fresh unseeded one by default).
        on_failure: called with each retryable failure before its backoff.
        outage: the health of the call's endpoints. Before each attempt the call waits
            while they are all down (`Outage.ready`); a failure that finds (or leaves)
            its endpoint down is not counted against `max_retries`, and after such a
            wait the retries start afresh: an outage waits, it does not use up the call.

    Raises:
        ModelError: a final error, or the last retryable one once retries are spent;
            the message says how many attempts were made. Reason "interrupted" when
            the context's `CallStop` was requested before an attempt or a retry, or
            cut the attempt off. Reason "endpoint_down" when `outage` waited
            `outage_wait_s` for a down endpoint.
    """
    handled = (*errors, *_HANDLED)
    stop = call_stop()
    remember(secrets)  # every message below is redacted of them

    def shown() -> str:  # the place as an interruption says it (made only then)
        return redact_text(place)

    attempt = 0
    while True:
        place = where if isinstance(where, str) else where()
        stop.check(shown)  # a stopping worker starts no call and no retry
        if outage is not None and not outage.up():
            async with stop.scope(shown, None):  # the cut ends the wait
                if await outage.ready():
                    attempt = 0  # sent again after an outage: fresh retries
            place = where if isinstance(where, str) else where()  # it may have moved
        try:
            async with stop.scope(shown, policy.timeout_s):
                result = await call()
        except handled as exc:
            if isinstance(exc, ModelError) and exc.reason == INTERRUPTED:
                raise
            err = classify(exc, place)
        else:
            if outage is not None:
                outage.answered()
            return result
        err.args = (redact(str(err), secrets),)
        down = False
        if outage is not None:
            if err.reason in _ANSWERED:
                outage.answered()
            else:
                async with stop.scope(shown, None):  # its probe, cut-able
                    down = await outage.failed(err)
        if stop.requested:  # failed after the stop: no retry
            raise interrupted(str(err), f"not retried ({err.reason}): the worker is stopping")
        if not err.retryable:
            raise ModelError(str(err), err.reason, retryable=False) from None
        if down:  # the endpoint is down: wait for it (next `ready`), not counted as a retry
            continue
        if attempt >= policy.max_retries:
            tries = attempt + 1
            raise ModelError(f"{err} (gave up after {tries} attempt{'s' * (tries > 1)})",
                             err.reason, retryable=True) from None
        if on_failure is not None:
            on_failure(err)
        rng = rng or random.Random()
        wait = policy.delay(attempt, rng)
        asked = getattr(err, "retry_after_s", None)
        if asked is not None:
            wait = max(wait, min(asked, RETRY_AFTER_CAP_S) * (1 + 0.1 * rng.random()))
        LOG.warning("retry %d/%d in %.2fs: %s: %s", attempt + 1, policy.max_retries, wait,
                    err.reason, err)
        attempt += 1
        async with stop.scope(shown, None):  # the cut ends the backoff too
            await asyncio.sleep(wait)

