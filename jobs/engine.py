"""One event loop per worker process running the episodes of every job it holds.

A Huey task (`run_job` in `jobs.queue`) takes a job's lease, hands the job to this
process's engine and returns as soon as all the job's questions have *started*, so
the Huey worker takes the next job while this one's stragglers finish: a worker
keeps up to the model's `concurrency` episodes in flight across jobs. A job is still
the unit of leasing and recovery: the engine heartbeats each job it holds and
settles it in the ledger (done, released, failed) when its last episode ends.

Shared by the jobs of the process: one client per model (its connections and
endpoint load counters), one semaphore of `min(model concurrency, --concurrency)`
episode slots per model (the model's concurrency unless `--concurrency` sets a lower
bound), and per non-sim model the host-wide call cap
(`jobs.slots.CallSlots`). Huey threads of a `--type thread` worker share one engine;
each child of a `--type process` worker starts its own (the engine notices the fork).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import os
import threading
from collections.abc import Callable
from pathlib import Path

from sqlite_utils import Database

from core import store
from core.models.base import ModelClient, aclose
from core.models.health import HEALTH, Change
from core.models.registry import ModelSpec, make_client
from core.store import jobs as ledger
from core.store.endpoints import record_change
from jobs.pump import unless_disk_full
from jobs.settings import WorkerSettings
from jobs.slots import CallSlots, slots_path
from jobs.tasks import PoolCache, Resources, run_job

log = logging.getLogger("lab.worker")

HANDED_OFF = "handed off"
"""What a Huey task returns once its job's questions have all started on the engine."""


class _Shared(Resources):
    """Clients, episode slots and call slots shared by the jobs of one engine."""

    def __init__(self, pools: PoolCache, db_path: Path) -> None:
        super().__init__(pools)
        self.db_path = db_path
        self.clients: dict[str, ModelClient] = {}
        self.slots: dict[str, asyncio.Semaphore] = {}
        self.gates: dict[str, CallSlots] = {}

    def client(self, model: ModelSpec) -> tuple[ModelClient, bool]:
        key = model.to_json()
        if key not in self.clients:
            self.clients[key] = make_client(model)
        return self.clients[key], True

    def episode_slots(self, model: ModelSpec, client: ModelClient,
                      settings: WorkerSettings) -> asyncio.Semaphore:
        if model.name not in self.slots:
            self.slots[model.name] = asyncio.Semaphore(
                max(1, min(client.concurrency, settings.concurrency or client.concurrency)))
        return self.slots[model.name]

    def gate(self, model: ModelSpec, client: ModelClient) -> CallSlots | None:
        if model.in_process:  # computed in this process: nothing shared to protect
            return None
        if model.name not in self.gates:
            self.gates[model.name] = CallSlots(slots_path(self.db_path, model.name),
                                               client.concurrency)
        return self.gates[model.name]

    async def close(self) -> None:
        for client in self.clients.values():
            await aclose(client)
        for gate in self.gates.values():
            gate.close()


class Engine:
    """The event loop thread of one worker process and the jobs it runs.

    Args:
        settings: the worker's settings.
        pools: foreign-page pools shared with the process's other jobs.
    """

    def __init__(self, settings: WorkerSettings, pools: PoolCache | None = None) -> None:
        self.settings = settings
        self.pools: PoolCache = {} if pools is None else pools
        self._lock = threading.Lock()
        self._pid: int | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._jobs: dict[concurrent.futures.Future[str], int] = {}
        self._res: _Shared | None = None
        self._stopped_in: int | None = None  # pid of the process that stopped this engine
        self._db: Database | None = None
        self._abandoned: set[concurrent.futures.Future[str]] = set()
        self._unlisten: Callable[[], None] | None = None
        self.watch: Callable[[], bool] | None = None
        """Whether a stop signal was delivered (`jobs.stop_signal`), asked before every
        call, retry and new episode; a forked child keeps its parent's."""

    def _start(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None or self._pid != os.getpid():  # first use, or a forked child
                self._pid = os.getpid()
                self._jobs, self._abandoned = {}, set()
                self._loop = asyncio.new_event_loop()
                self._db = store.connect(self.settings.db_path)
                self._res = _Shared(self.pools, self.settings.db_path)
                self._res.stop.watch = self.watch
                if self._unlisten is not None:  # a forked child: one listener, its own
                    self._unlisten()
                self._unlisten = HEALTH.listen(self._record_endpoint)
                if self._stopped_in == self._pid:  # a job taken just as the stop came
                    self._res.stop.request()
                self._thread = threading.Thread(target=self._loop.run_forever,
                                                name="lab-engine", daemon=True)
                self._thread.start()
            return self._loop

    def _record_endpoint(self, change: Change) -> None:
        """An endpoint went down or up (in the loop's thread): record it where `lab
        status`, the Dashboard and Jobs read it (`core.store.endpoints`)."""
        if self._db is not None and self._pid == os.getpid():
            db = self._db
            unless_disk_full(lambda: record_change(
                db, self.settings.worker_id, change.url, change.state, change.since,
                change.models, change.error))

    def submit(self, job: dict) -> str:
        """Run a job whose lease this worker holds; return once its questions have started.

        Returns:
            HANDED_OFF while the job's last episodes still run (the engine settles
            it), or what `jobs.tasks.run_job` returned when it ended first.
        """
        loop = self._start()
        admitted = threading.Event()
        res, db = self._res, self._db
        assert res is not None and db is not None

        def on_admitted() -> None:
            loop.call_soon_threadsafe(admitted.set)

        fut = asyncio.run_coroutine_threadsafe(run_job(db, job, self.settings, res, on_admitted),
                                               loop)
        with self._lock:
            self._jobs[fut] = job["id"]
        fut.add_done_callback(self._forget)
        while not admitted.wait(0.05):
            if fut.done() or res.stopping:  # stopping: the drain settles the job
                break
        return fut.result() if fut.done() else HANDED_OFF

    def _forget(self, fut: concurrent.futures.Future[str]) -> None:
        with self._lock:
            self._jobs.pop(fut, None)
        if not fut.cancelled() and fut.exception() is not None:
            log.error("job ended with %r", fut.exception())

    def running(self) -> int:
        """Jobs this engine holds now."""
        with self._lock:
            return len(self._jobs) if self._pid == os.getpid() else 0

    def stop(self) -> None:
        """Start no more episodes, model calls or retries (safe from a signal handler).

        The jobs store the episodes that end and release their lease.
        """
        # no lock: a signal handler calls this, maybe while its thread holds the lock
        self._stopped_in = os.getpid()
        res = self._res
        if res is not None:
            res.stop.request()

    def cut(self) -> None:
        """End the model calls in flight now: their episodes are stored errored (interrupted).

        Safe from a signal handler (takes no lock).
        """
        self.stop()
        loop, res, mine = self._loop, self._res, self._pid == os.getpid()
        if loop is not None and res is not None and mine:
            res.stop.request()
            loop.call_soon_threadsafe(res.stop.cut)

    def drain(self, grace: float, settle: float = 1.5) -> bool:
        """Stop, then wait until the jobs this engine holds have ended; whether they all did.

        Calls in flight get `grace` seconds to answer; then they are cut (`cut`) and
        the jobs get `settle` more seconds to store their episodes and release their
        lease. A job still running after that is released (back to queued) so that
        another worker can take it at once; its episodes in flight are lost.
        """
        self.stop()
        with self._lock:
            if self._pid != os.getpid():
                return True
            jobs = {f: j for f, j in self._jobs.items() if f not in self._abandoned}
        done, late = concurrent.futures.wait(list(jobs), timeout=grace)
        if late:
            log.warning("stopping: cutting the model calls of %d job(s) still running after "
                        "the %.1f s grace", len(late), grace)
            self.cut()
            done, late = concurrent.futures.wait(list(late), timeout=settle)
        if late:
            self._abandoned |= late
            db = store.connect(self.settings.db_path)
            try:
                for fut in late:
                    ledger.finish(db, jobs[fut], self.settings.worker_id, "queued",
                                  error="worker stopped before its episodes ended")
            finally:
                db.conn.close()
        return not late

    def close(self, timeout: float = 1.0) -> None:
        """Close clients and lock files and stop the loop thread (after `drain`).

        Episodes a drain gave up on (calls outside any `CallStop` scope, such as a
        sim's latency) are cancelled first: they drop their live rows and call slots.
        """
        with self._lock:
            loop, res, thread = self._loop, self._res, self._thread
            mine = self._pid == os.getpid()
            self._loop = None
        if self._unlisten is not None and mine:
            self._unlisten()
            self._unlisten = None
        if loop is None or not mine or thread is None:
            return
        try:
            asyncio.run_coroutine_threadsafe(_shut_down(res, timeout / 2), loop).result(timeout)
        except (TimeoutError, concurrent.futures.TimeoutError):
            log.warning("engine: closing clients timed out")
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout)
        if self._db is not None:
            self._db.conn.close()


async def _shut_down(res: _Shared | None, wait_s: float) -> None:
    """Cancel the tasks still running on this loop (for up to `wait_s`), then close clients."""
    tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
    for task in tasks:
        task.cancel()
    if tasks:
        await asyncio.wait(tasks, timeout=wait_s)
    if res is not None:
        await res.close()
