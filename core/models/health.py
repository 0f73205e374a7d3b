"""Endpoint health: an endpoint that stops answering pauses its model instead of burning episodes.

Without this, a dead endpoint turned every call into an errored episode after its
retries (about 10–15 s each) while the worker kept starting new episodes, so a
server restart in the middle of a grid errored everything in flight.

Each endpoint URL has one `Breaker` per process (`HEALTH`, shared by every client
and job of a worker). `down_after` consecutive failed attempts that say the server
is gone (a refused or dropped connection, an HTTP 5xx) mark it DOWN. Then:

- (N consecutive failures first trigger one probe: only when it gets no answer is the
  endpoint down, so a healthy server that fails some requests with 5xx is no outage;)
- calls to it wait instead of retrying (`Failover.ready`): a call whose model has
  another endpoint up moves there; when every endpoint of the model is down the call
  waits for the first one to come back and is then sent again, with fresh retries;
- new episodes of the model are not started (`wait_admission`, called by the runner);
- one probe per endpoint asks the server every `probe_s` seconds (`http_alive`: any
  answer below 500 to a cheap GET such as `/v1/models`) and marks it up when it answers;
- a call or an episode waits at most `outage_wait_s` (from when the outage began, or
  from when the call first had to wait if that is earlier): past that it ends with
  reason `endpoint_down` (retryable, so `lab retry --errored` runs it again), and so
  does every new episode of the model until an endpoint answers again.

Every change of state is told to the listeners (`Health.listen`); a worker records it
in lab.db (`core.store.endpoints`), where `lab status`, the Dashboard and Jobs read
"endpoint down since HH:MM". Time comes from an injectable `Clock`.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

import httpx

from core.errors import ModelError
from core.models.retry import RetryPolicy
from core.models.tls import tls_context

LOG = logging.getLogger("lab.models")

ENDPOINT_DOWN = "endpoint_down"
"""The reason of a call or episode that waited `outage_wait_s` for a down endpoint."""
OUTAGE_REASONS = frozenset({"connection", "server_error"})
"""Failure reasons (`core.models.retry.classify`) that count toward marking an endpoint
down: the server is unreachable or failing, not slow (timeout) nor busy (429/529)."""
PROBE_TIMEOUT_S = 5.0
"""How long one health probe may take."""

Prober = Callable[[], Awaitable[bool]]
"""Asks an endpoint once whether it answers (True: up)."""


class Clock:
    """The time breakers and waits read: monotonic for durations, wall for display.

    Tests pass their own (a subclass whose methods return what the test sets).
    """

    def monotonic(self) -> float:
        """Seconds on a clock that never goes back."""
        return time.monotonic()

    def wall(self) -> float:
        """Seconds since the epoch (what "down since" shows)."""
        return time.time()

    async def sleep(self, seconds: float) -> None:
        """Wait `seconds` (the probe's interval)."""
        await asyncio.sleep(seconds)


@dataclass(frozen=True)
class Change:
    """An endpoint went down or came back up.

    Attributes:
        url: the endpoint (redacted form, as stored and printed).
        state: "down" or "up".
        since: wall time of the change (seconds since the epoch).
        models: registry names of the models served there (as far as this process knows).
        error: the last failure's message when it went down ("" when up).
    """

    url: str
    state: str
    since: float
    models: tuple[str, ...] = ()
    error: str = ""


class Breaker:
    """The health of one endpoint: consecutive failures, and since when it is down.

    Thresholds come from each caller's `RetryPolicy` (two models on one server may ask
    for different ones); the breaker holds only the state.

    Args:
        url: the endpoint (redacted form).
        health: the registry that owns it (told of every change).
    """

    def __init__(self, url: str, health: Health) -> None:
        self.url = url
        self.health = health
        self.models: set[str] = set()
        self.failures = 0
        self.down_at: float | None = None
        """Monotonic time the current outage began (None: up)."""
        self.down_since: float | None = None
        """Wall time the current outage began (None: up)."""
        self.last_error = ""
        self.prober: Prober | None = None
        self.probe_s = 2.0
        self._waiters: list[asyncio.Future[None]] = []
        self._probes: dict[asyncio.AbstractEventLoop, asyncio.Task[None]] = {}
        self._confirming: dict[asyncio.AbstractEventLoop, asyncio.Task[None]] = {}
        self._rechecks: dict[asyncio.AbstractEventLoop, asyncio.Task[None]] = {}
        self._lock = threading.Lock()

    @property
    def down(self) -> bool:
        """Whether the endpoint is marked down."""
        return self.down_at is not None

    def answered(self) -> None:
        """The server answered (a reply, or an error that is not an outage's): up again."""
        self.failures = 0
        if self.down:
            self.mark_up()

    async def failed(self, err: ModelError, policy: RetryPolicy) -> bool:
        """Count a failed attempt; returns whether the endpoint is down now.

        Only OUTAGE_REASONS count; any other failure (a timeout, a bad reply) neither
        counts nor resets the run of failures. At `down_after` in a row the endpoint is
        probed once (calls failing meanwhile await the same probe): it is marked down
        unless the probe answers. A server whose health answers while some requests
        fail with 5xx is not in an outage: those calls retry and error as before.
        """
        if err.reason not in OUTAGE_REASONS:
            return self.down
        self.failures += 1
        self.last_error = str(err)
        if self.down or self.failures < max(1, policy.down_after):
            return self.down
        loop = asyncio.get_running_loop()
        task = self._confirming.get(loop)
        if task is None or task.done():
            task = self._confirming[loop] = loop.create_task(self._confirm(policy))
        await asyncio.shield(task)
        return self.down

    async def _confirm(self, policy: RetryPolicy) -> None:
        """Probe once after `down_after` failures: down unless it answers."""
        alive = await self._ask(self.prober) if self.prober is not None else False
        if self.down:
            return
        if alive:
            LOG.info("endpoint %s: %d failures in a row but its health answers: not an "
                     "outage", self.url, self.failures)
            self.failures = 0
        else:
            self.mark_down(policy)

    async def recheck(self) -> bool:
        """Probe now (calls asking at once share one probe); mark up if it answers.
        Returns whether the endpoint is up."""
        if not self.down:
            return True
        if self.prober is None:
            return False
        loop = asyncio.get_running_loop()
        task = self._rechecks.get(loop)
        if task is None or task.done():
            task = self._rechecks[loop] = loop.create_task(self._recheck(self.prober))
        await asyncio.shield(task)
        return not self.down

    async def _recheck(self, prober: Prober) -> None:
        if await self._ask(prober):
            self.mark_up()

    async def _ask(self, prober: Prober) -> bool:
        try:
            return await prober()
        except Exception as exc:  # noqa: BLE001 - a probe that fails says "still down"
            LOG.debug("probe of %s failed: %r", self.url, exc)
            return False

    def mark_down(self, policy: RetryPolicy) -> None:
        """Mark the endpoint down now and start probing it (on the running loop, if any)."""
        clock = self.health.clock
        self.down_at, self.down_since = clock.monotonic(), clock.wall()
        self.probe_s = policy.probe_s
        LOG.warning("endpoint %s is down after %d failed attempts (%s): its calls wait up to "
                    "%.0f s, probing every %.1f s", self.url, self.failures, self.last_error,
                    policy.outage_wait_s, policy.probe_s)
        self.health.tell(Change(self.url, "down", self.down_since, tuple(sorted(self.models)),
                                self.last_error))
        self.ensure_probe()

    def mark_up(self) -> None:
        """Mark the endpoint up and wake every call waiting for it."""
        if not self.down:
            return
        clock = self.health.clock
        LOG.warning("endpoint %s answers again after %.1f s: resuming", self.url,
                    clock.monotonic() - (self.down_at or 0.0))
        self.down_at = self.down_since = None
        self.failures = 0
        with self._lock:
            waiters, self._waiters = self._waiters, []
        for fut in waiters:
            if not fut.done() and not fut.get_loop().is_closed():
                fut.get_loop().call_soon_threadsafe(_settle, fut)
        self.health.tell(Change(self.url, "up", clock.wall(), tuple(sorted(self.models))))

    def expired(self, policy: RetryPolicy, since: float | None = None) -> bool:
        """Whether the outage has lasted `outage_wait_s` (counted from its start, or from
        `since` when that is earlier)."""
        start = self._start(since)
        return start is not None and self.health.clock.monotonic() >= start + policy.outage_wait_s

    def remaining(self, policy: RetryPolicy, since: float | None = None) -> float:
        """Seconds left before `expired` (0 when up or past it)."""
        start = self._start(since)
        if start is None:
            return 0.0
        return max(0.0, start + policy.outage_wait_s - self.health.clock.monotonic())

    def _start(self, since: float | None) -> float | None:
        if self.down_at is None:
            return None
        return self.down_at if since is None else min(self.down_at, since)

    def waiter(self) -> asyncio.Future[None]:
        """A future of the running loop, set when the endpoint is up (at once if it is)."""
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        with self._lock:
            if self.down:
                self._waiters.append(fut)
                return fut
        fut.set_result(None)
        return fut

    def forget(self, fut: asyncio.Future[None]) -> None:
        """Stop tracking a waiter (its wait ended)."""
        with self._lock:
            if fut in self._waiters:
                self._waiters.remove(fut)

    def ensure_probe(self) -> None:
        """Probe the endpoint from the running event loop until it is up (one probe per loop)."""
        if self.prober is None or not self.down:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        task = self._probes.get(loop)
        if task is None or task.done():
            self._probes = {lp: t for lp, t in self._probes.items() if not t.done()}
            self._probes[loop] = loop.create_task(self._probe(self.prober),
                                                  name=f"lab-probe {self.url}")

    async def _probe(self, prober: Prober) -> None:
        while self.down:
            await self.health.clock.sleep(self.probe_s)
            if not self.down:
                return
            if await self._ask(prober):
                self.mark_up()


def _settle(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)


class Health:
    """The breakers of one process, keyed by endpoint URL, and who is told of changes.

    Args:
        clock: the time source (tests inject one).
    """

    def __init__(self, clock: Clock | None = None) -> None:
        self.clock = clock or Clock()
        self._breakers: dict[str, Breaker] = {}
        self._listeners: list[Callable[[Change], None]] = []
        self._lock = threading.Lock()

    def breaker(self, url: str, model: str = "", prober: Prober | None = None) -> Breaker:
        """The breaker of `url` (made on first use); `model` is noted as served there and
        `prober` becomes its probe when it has none."""
        with self._lock:
            b = self._breakers.get(url)
            if b is None:
                b = self._breakers[url] = Breaker(url, self)
        if model:
            b.models.add(model)
        if b.prober is None and prober is not None:
            b.prober = prober
        return b

    def down(self) -> list[Breaker]:
        """The breakers marked down now."""
        with self._lock:
            return [b for b in self._breakers.values() if b.down]

    def listen(self, listener: Callable[[Change], None]) -> Callable[[], None]:
        """Call `listener` on every change (in the thread that made it); returns the
        function that stops it."""
        with self._lock:
            self._listeners.append(listener)

        def stop() -> None:
            with self._lock:
                if listener in self._listeners:
                    self._listeners.remove(listener)
        return stop

    def tell(self, change: Change) -> None:
        """Pass a change to every listener (a listener that raises is logged, not fatal)."""
        with self._lock:
            listeners = list(self._listeners)
        for listener in listeners:
            try:
                listener(change)
            except Exception:  # noqa: BLE001 - recording a change must not fail a call
                LOG.exception("recording the state of endpoint %s failed", change.url)

    def reset(self) -> None:
        """Forget every breaker and listener (tests; a fresh process starts empty)."""
        with self._lock:
            self._breakers.clear()
            self._listeners.clear()


HEALTH = Health()
"""The process's breakers: every client of a worker process shares them."""


def endpoint_down_error(url: str, policy: RetryPolicy, why: str = "") -> ModelError:
    """The error of a call or episode that waited `outage_wait_s` for `url`."""
    tail = f" (last failure: {why})" if why else ""
    return ModelError(f"{url}: endpoint down for over {policy.outage_wait_s:g} s "
                      f"(outage_wait_s){tail}", ENDPOINT_DOWN, retryable=True)


T = TypeVar("T")


@dataclass
class Failover(Generic[T]):
    """The endpoints one episode may use, seen through their breakers.

    Implements `core.models.retry.Outage`: before every attempt `ready` moves the
    episode off a down endpoint when another is up, or waits for one to come back.

    Attributes:
        targets: the model's endpoints (any objects; `breaker_of` maps each to its breaker).
        breaker_of: the breaker of a target.
        current: the target the episode uses now.
        move: switch the episode to another target.
        policy: the model's thresholds and bounds.
    """

    targets: Sequence[T]
    breaker_of: Callable[[T], Breaker]
    current: Callable[[], T]
    move: Callable[[T], None]
    policy: RetryPolicy
    waiting_since: float | None = field(default=None)
    """Monotonic time this call first waited for an outage (None: it has not, or it
    got an answer since)."""

    def _breaker(self) -> Breaker:
        return self.breaker_of(self.current())

    def up(self) -> bool:
        """Whether the episode's endpoint is up now (`ready` would return at once)."""
        return not self._breaker().down

    async def ready(self) -> bool:
        """Wait until the episode's endpoint (or another of the model's) is up.

        Returns:
            Whether it waited (the caller then starts its retries afresh).

        Raises:
            ModelError: reason `endpoint_down`, once every endpoint of the model has
                been down for `outage_wait_s`.
        """
        waited = False
        while True:
            b = self._breaker()
            if not b.down:
                return waited
            up = [t for t in self.targets if not self.breaker_of(t).down]
            if up:
                self.move(up[0])
                return waited
            clock = b.health.clock
            if self.waiting_since is None:
                self.waiting_since = clock.monotonic()
            await wait_any([self.breaker_of(t) for t in self.targets], self.policy,
                           self.waiting_since)
            waited = True

    def answered(self) -> None:
        """The server answered this call."""
        self.waiting_since = None
        self._breaker().answered()

    async def failed(self, err: ModelError) -> bool:
        """Count a failure; returns whether the episode's endpoint is down now."""
        return await self._breaker().failed(err, self.policy)


async def wait_any(breakers: Sequence[Breaker], policy: RetryPolicy,
                   since: float | None = None, poll_s: float | None = None) -> bool:
    """Wait until one of `breakers` is up.

    The wait is bounded by `outage_wait_s` counted from the latest outage's start
    (or `since`, when earlier): the model was paused when its last endpoint went down.

    Args:
        poll_s: return False after this many seconds while all are still down
            (None: wait up to the bound).

    Returns:
        True when one is up; False when `poll_s` passed.

    Raises:
        ModelError: reason `endpoint_down`, past the bound.
    """
    if not breakers or any(not b.down for b in breakers):
        return True
    latest = max(breakers, key=lambda b: b.down_at or 0.0)
    for b in breakers:
        b.ensure_probe()
    if latest.expired(policy, since):  # ask once more before giving up (the poll may be
        for b in breakers:             # on an event loop that has ended)
            if await b.recheck():
                return True
        raise endpoint_down_error(latest.url, policy, latest.last_error)
    left = latest.remaining(policy, since)
    timeout = left if poll_s is None else min(left, poll_s)
    futs = [(b, b.waiter()) for b in breakers]
    try:
        done, _ = await asyncio.wait([f for _, f in futs], timeout=timeout,
                                     return_when=asyncio.FIRST_COMPLETED)
    finally:
        for b, f in futs:
            f.cancel()
            b.forget(f)
    if done or any(not b.down for b in breakers):
        return True
    if poll_s is not None and left > poll_s:
        return False
    raise endpoint_down_error(latest.url, policy, latest.last_error)


async def wait_admission(breakers: Sequence[Breaker], policy: RetryPolicy,
                         give_up: Callable[[], bool] | None = None, poll_s: float = 0.5) -> None:
    """Hold a new episode while every endpoint of its model is down.

    Returns once one is up, once `give_up` says so (the job stops), or once the
    outage has lasted `outage_wait_s`: the episode then starts and its first call ends
    it with reason `endpoint_down` (so a long outage errors the model's episodes,
    retryable, rather than holding the queue forever).
    """
    while True:
        try:
            if await wait_any(breakers, policy, poll_s=poll_s):
                return
        except ModelError:
            return
        if give_up is not None and give_up():
            return


async def http_alive(url: str, headers: Mapping[str, str] | None = None,
                     timeout_s: float = PROBE_TIMEOUT_S) -> bool:
    """Whether a GET of `url` gets any answer below 500 (the server is there and serving)."""
    try:
        async with httpx.AsyncClient(timeout=timeout_s, verify=tls_context()) as client:
            resp = await client.get(url, headers=dict(headers or {}))
    except httpx.HTTPError:
        return False
    return resp.status_code < 500
