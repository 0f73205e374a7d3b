"""The one concurrent loop every job kind runs its work through.

A job is a list of items (an episode's question, a probe's decision point, a trace
state); each item takes one episode slot while it runs. The pump owns what every
kind needs and used to write for itself:

- **slots**: the worker's slots for the model, shared with its other jobs, or a
  semaphore of `min(model concurrency, concurrency)` for a job run by itself;
- **admission**: `on_admitted` is called once every item has taken a slot or been
  passed over, so the worker may queue its next job while this one's stragglers
  finish; a stopping job waits for no slot, and a new item waits while every
  endpoint of its model is down (`endpoint_ready`) instead of burning its calls;
- **flushing and batching**: finished results gather in a `Pending` and are
  committed together every `flush_s`, or once `batch` have gathered (a kill -9
  loses at most the last `flush_s` and the calls in flight, which a resumed job
  asks again);
- **cancel-on-error**: an item that raises cancels the others; what finished is
  still stored;
- **bounded stop**: `should_stop` is read before each item; the worker's `CallStop`
  cuts the calls in flight;
- **a full disk**: while lab.db's disk is full (`core.store.disk`) no item starts;
  finished results stay in memory and the flush is tried again every `PROBE_S` until
  it commits, then the job resumes (a stop during the wait leaves them unstored: the
  released job runs them again);
- **client closing**: the work's clients are closed at the end unless the worker
  shares them.

A kind describes its items with a `Work` (`jobs/kinds/`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Sequence
from typing import Any, Generic, TypeVar

from core.errors import ModelError
from core.models.base import ModelClient, aclose
from core.models.retry import call_stop
from core.store.disk import DISK, PROBE_S, is_disk_full

T = TypeVar("T")
R = TypeVar("R")

FLUSH_S = 0.1
"""How often finished results are committed by default."""


def unless_disk_full(write: Callable[[], Any]) -> bool:
    """Run a write; False when the disk under lab.db is full (it was rolled back and what
    it would have stored is kept for the next try; `core.store.disk` says so once)."""
    try:
        write()
    except Exception as exc:
        if not is_disk_full(exc):
            raise
        return False
    return True


class Pending(Generic[R]):
    """Finished results waiting for one write transaction.

    Args:
        write: stores a list of results in one transaction; returns how many it stored.
        batch: flush once this many have gathered.
    """

    def __init__(self, write: Callable[[list[R]], int], batch: int) -> None:
        self.write = write
        self.batch = batch
        self.items: list[R] = []
        self.stored = 0

    def keep(self, result: R) -> None:
        """A finished result: stored at the next flush (at once when the batch is full)."""
        self.items.append(result)
        if len(self.items) >= self.batch:
            unless_disk_full(self.flush)

    def flush(self) -> None:
        """Write what gathered since the last flush (kept for the next one if it fails)."""
        if self.items:
            items, self.items = self.items, []
            try:
                self.stored += self.write(items)
            except BaseException:
                self.items = items + self.items
                raise


class Work(Generic[T]):
    """What one job hands the pump: its items, how to run one, and where results go.

    Subclasses set `items` and `pending` (or override `flush` and `stored`) and
    implement `run`; the other methods have do-nothing defaults.
    """

    items: Sequence[T] = ()
    pending: Pending[Any]

    async def run(self, item: T) -> None:
        """Run one item holding a slot, keeping its result for the next flush."""
        raise NotImplementedError

    def ended(self, item: T) -> None:
        """Called once per item after it ran, was passed over (stop, outage) or cancelled."""

    def extra(self) -> list[Coroutine[Any, Any, None]]:
        """Further tasks that hold no slot (e.g. results copied from another item's)."""
        return []

    def flush(self) -> None:
        """Commit the results gathered since the last flush, in one transaction."""
        self.pending.flush()

    @property
    def stored(self) -> int:
        """Results stored so far."""
        return self.pending.stored

    def finish(self) -> None:
        """After every item ended without an error and the last flush (default: nothing)."""

    def clients(self) -> list[ModelClient]:
        """The clients closed at the end when they are not shared (default: none)."""
        return []


async def endpoint_ready(client: ModelClient,
                         should_stop: Callable[[], bool] | None = None) -> bool:
    """Hold a new item while every endpoint of its model is down (`core.models.health`).

    A client without endpoints (sims) never waits; one whose `admits` says an endpoint
    is up starts the item without entering the wait. Returns False when the job or the
    worker stopped during the wait: the item is then not started.
    """
    ready = getattr(client, "ready", None)
    if ready is None:
        return True
    stop = call_stop()

    def give_up() -> bool:
        return stop.requested or (should_stop is not None and should_stop())

    admits = getattr(client, "admits", None)
    if admits is not None and admits():  # the wait would return at once
        return not give_up()
    try:
        async with stop.scope("endpoint down", None):  # a stopping worker's cut ends it
            await ready(give_up)
    except ModelError:
        return False
    return not give_up()


class _Admission:
    """Calls `on_admitted` once, when `n` items have been admitted (or at `all`)."""

    def __init__(self, n: int, on_admitted: Callable[[], None] | None) -> None:
        self.left = n
        self.on_admitted = on_admitted
        self.called = False

    def one(self) -> None:
        self.left -= 1
        if self.left <= 0:
            self.all()

    def all(self) -> None:
        if not self.called:
            self.called = True
            if self.on_admitted is not None:
                self.on_admitted()


async def pump(work: Work[T], client: ModelClient, *, concurrency: int | None = None,
               slots: asyncio.Semaphore | None = None,
               should_stop: Callable[[], bool] | None = None,
               on_admitted: Callable[[], None] | None = None,
               flush_s: float | None = FLUSH_S, close_client: bool = True) -> int:
    """Run a job's items concurrently and store their results; returns the results stored.

    Args:
        work: the job's items and how to run and store them.
        client: the model's client (its concurrency, its endpoints' health).
        concurrency: a further bound on items in flight (besides the model's), used
            when `slots` is not given.
        slots: the worker's slots for the model, shared with its other jobs.
        should_stop: read before each item; True: start no more (the ones running
            finish and are stored).
        on_admitted: called once every item has taken a slot or been passed over.
        flush_s: how often finished results are committed (None: only when a batch
            fills and at the end).
        close_client: close `work.clients()` at the end (False: the worker shares them).
    """
    items = list(work.items)
    limit = slots or asyncio.Semaphore(
        max(1, min(client.concurrency, concurrency or client.concurrency)))
    admission = _Admission(len(items), on_admitted)
    probing = asyncio.Lock()

    def stopping() -> bool:
        return should_stop is not None and should_stop()

    async def disk_ready() -> bool:
        """Wait while lab.db's disk is full, trying the flush again; False: stopped."""
        while DISK.full:
            if stopping() or call_stop().requested:
                return False
            await asyncio.sleep(PROBE_S)
            if not probing.locked():
                async with probing:
                    unless_disk_full(work.flush)
        return True

    async def one(item: T) -> None:
        try:
            if stopping():  # stopping: wait for no slot either
                admission.one()
                return
            async with limit:
                admission.one()
                if stopping() or not await endpoint_ready(client, should_stop):
                    return  # an outage: wait, not burn
                if not await disk_ready():
                    return  # stopped while the disk was full
                await work.run(item)
        finally:
            work.ended(item)

    async def flusher(every: float) -> None:
        while True:
            await asyncio.sleep(every)
            unless_disk_full(work.flush)

    if not items:
        admission.all()
    tasks = [asyncio.ensure_future(one(item)) for item in items]
    tasks += [asyncio.ensure_future(extra) for extra in work.extra()]
    flushing = (asyncio.ensure_future(flusher(flush_s))
                if flush_s is not None and tasks else None)
    try:
        await asyncio.gather(*tasks)
        if flushing is not None:
            flushing.cancel()
        while not unless_disk_full(work.flush):  # the last results: wait for space
            if stopping() or call_stop().requested:
                return work.stored
            await asyncio.sleep(PROBE_S)
        work.finish()
    except BaseException:  # one item raised: stop the others (their items stay missing)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise
    finally:
        admission.all()  # stopped by an error: never leave the worker waiting
        if flushing is not None:
            flushing.cancel()
        try:  # store what finished even when another item raised (a bug in lab)
            unless_disk_full(work.flush)
        finally:
            if close_client:  # release connections before the event loop ends
                await close_all(work.clients())
    return work.stored


async def close_all(clients: Sequence[ModelClient | None]) -> None:
    """Close each client that has connections to close (the `aclose` capability)."""
    for c in clients:
        await aclose(c)
