"""`lab worker`: a Huey consumer that runs jobs, reconciles the ledger and stops in bounded time.

Huey's workers take jobs and hand them to the process's episode engine
(`jobs.engine`), which keeps up to the model's concurrency episodes in flight across
jobs. SIGINT and SIGTERM both stop the worker, parent and children alike, within
`grace_s + STOP_MARGIN_S` seconds whatever the model does:

- at once no episode, model call or retry starts (`core.models.retry.CallStop`): the
  signal's delivery is enough, before this handler runs, in this process and in every
  `--type process` child (`jobs.stop_signal`); the consumer also forwards SIGTERM to
  its children (`jobs.child`), which stop the same way;
- calls in flight get `grace_s` to answer; then they are cut, and their episodes are
  stored errored with reason "interrupted" (re-run like any errored episode);
- the jobs release their lease (back to queued: the next worker re-runs their
  unfinished and interrupted questions), the worker's live rows that are left are
  removed, and the process exits;
- should any of that hang, the worker exits anyway `grace_s + STOP_MARGIN_S` after the
  signal (`os._exit`), SIGKILLing children that are still alive.

A second signal cuts the calls in flight at once instead of after the grace.
"""

from __future__ import annotations

import gc
import logging
import os
import signal
import sqlite3
import threading
import time
from collections.abc import Callable
from typing import Any

from huey.consumer import Consumer, ConsumerStopped

from core import store
from core.store import jobs as ledger
from core.store.disk import is_disk_full
from core.store.endpoints import forget_worker
from core.store.episodes import remove_live
from jobs.child import start_child, stop_child
from jobs.engine import Engine
from jobs.queue import make_huey
from jobs.reconcile import reconcile, send_missing
from jobs.settings import STOP_MARGIN_S, WorkerSettings
from jobs.stop_signal import StopSignal

log = logging.getLogger("lab.worker")

JOIN_MARGIN_S = 2.5
"""After the grace, how long the consumer waits for its workers before it SIGKILLs
process children (they exit on their own `STOP_MARGIN_S` after the grace)."""


class LabConsumer(Consumer):
    """Huey's consumer with lab's signal handling: both signals stop it in bounded time.

    With `--type process`, every child it forks (the workers and Huey's scheduler)
    dies with it and stops on SIGTERM (`jobs.child`); a worker child drains its
    engine on the way out.

    Args:
        huey: the Huey instance.
        engine: the engine of this process (thread workers) and whose copy each
            forked worker child runs.
        grace_s: how long calls in flight may still answer after a stop.
        **kw: Huey's Consumer options.
    """

    stop_signal: int | None = None

    def __init__(self, huey: Any, engine: Engine | None = None, grace_s: float = 5.0,
                 **kw: Any) -> None:
        self.lab_engine = engine
        self.lab_grace = grace_s
        self.lab_parent = os.getpid()
        self.stopped_at: float | None = None
        self.exited = threading.Event()  # set once run_worker is done: no hard exit
        self._told_children = False
        super().__init__(huey, **kw)

    def _create_process(self, process: Any, name: str) -> Any:
        if self.worker_type == "process":
            engine = self.lab_engine if name.startswith("Worker") else None
            initialize, shutdown, loop = process.initialize, process.shutdown, process.loop
            stopping: list[threading.Event] = []
            grace = self.lab_grace

            def child_initialize() -> None:
                stopping.append(start_child(self.lab_parent, engine, grace))
                initialize()

            def child_loop(now: Any = None) -> None:
                loop(now)
                if stopping and stopping[0].is_set():
                    raise KeyboardInterrupt  # SIGTERM: end the loop; shutdown drains

            def child_shutdown() -> None:
                try:
                    shutdown()
                finally:
                    if engine is not None:
                        stop_child(engine, grace)

            process.initialize, process.shutdown = child_initialize, child_shutdown
            process.loop = child_loop
        return super()._create_process(process, name)

    def _set_signal_handlers(self) -> None:
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, self._lab_signal)

    def _lab_signal(self, signum: int, frame: Any) -> None:
        if self.stop_signal is not None:  # a second signal: cut the calls in flight now
            if self.lab_engine is not None:
                self.lab_engine.cut()
            self._signal_children(signal.SIGTERM)  # a child's second SIGTERM cuts too
            return
        self.stop_signal = signum
        self.begin_stop()
        threading.Thread(target=self._hard_exit, daemon=True, name="lab-hard-exit",
                         args=(self.lab_grace + STOP_MARGIN_S,)).start()

    def begin_stop(self) -> None:
        """Start no new job, episode, call or retry; tell process children to stop (once)."""
        if self.stopped_at is None:
            self.stopped_at = time.monotonic()
        if self.lab_engine is not None:
            self.lab_engine.stop()
        self.stop_flag.set()
        if not self._told_children:
            self._told_children = True
            self._signal_children(signal.SIGTERM)

    def _procs(self) -> list[Any]:
        return [p for _, p in self.worker_threads] + [self.scheduler]

    def _signal_children(self, signum: int) -> None:
        if self.worker_type != "process":
            return
        for proc in self._procs():
            if proc.pid is not None:
                try:
                    os.kill(proc.pid, signum)
                except ProcessLookupError:
                    pass

    def join_within(self, seconds: float) -> bool:
        """Join Huey's workers and scheduler for up to `seconds`; SIGKILL process children left.

        Returns:
            Whether they all ended on their own.
        """
        deadline = time.monotonic() + seconds
        procs = self._procs()
        for proc in procs:
            proc.join(max(0.0, deadline - time.monotonic()))
        late = [p for p in procs if p.is_alive()]
        if late and self.worker_type == "process":
            log.warning("stopping: killing %d worker child(ren) still running", len(late))
            self._signal_children(signal.SIGKILL)
            for proc in late:
                proc.join(1.0)
        return not late

    def _hard_exit(self, after: float) -> None:
        if self.exited.wait(after):
            return
        log.error("worker: still stopping %.1f s after the signal: exiting now", after)
        self._signal_children(signal.SIGKILL)
        os._exit(1)


HUEY_LOGGERS = ("huey", "huey.consumer", "huey.consumer.Worker", "huey.consumer.Scheduler")
"""Huey's loggers (a filter on a logger covers only the records logged on it)."""


class DiskFullOneLine(logging.Filter):
    """Huey logs a failed queue read or task with its traceback; on a full disk (the
    queue file cannot be written either) that is one line, not a traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        """Drop the traceback of a full disk's error and say what it is; keep the record."""
        exc = record.exc_info[1] if record.exc_info else None
        if exc is not None and is_disk_full(exc):
            record.msg, record.args = (f"{record.getMessage()}: the disk is full "
                                       f"({' '.join(str(exc).split())}); waiting for space"), None
            record.exc_info, record.exc_text = None, None
        return True


def quiet_huey_disk_full() -> None:
    """Put `DiskFullOneLine` on Huey's loggers (idempotent)."""
    for name in HUEY_LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(f, DiskFullOneLine) for f in logger.filters):
            logger.addFilter(DiskFullOneLine())


YOUNG_OBJECTS = 10_000
"""Net new container objects between two collections of the youngest generation, in a
`lab worker` process (Python's default is 700)."""


def tune_collector() -> None:
    """Set the cyclic garbage collector for a process that is a `lab worker`.

    Every pause of the collector delays each reply that arrives meanwhile. Two
    changes, before the worker starts (its `--type process` children inherit them):

    - start-up's objects (modules, classes, registry, queue) live as long as the
      worker: `gc.freeze` leaves them out of every scan, where a full collection
      re-scanned them all (30-100 ms at concurrency 128). An object frozen now that
      later ends in a reference cycle is never collected, so this runs once;
    - the youngest generation is collected after `YOUNG_OBJECTS` net new objects,
      not 700: the episodes in flight allocate fast, and most of what they make is
      freed by reference counting before a scan finds it; at 128x2 the collector's
      time fell from 375 to 34 ms per 7,680 calls, with no pause over 9 ms
      (docs/performance.md). Cyclic garbage waits a little longer to be freed.
    """
    gc.freeze()
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(YOUNG_OBJECTS, older, oldest)


def is_idle(db: Any, huey: Any) -> bool:
    """No queued or running job in the ledger and no message in the queue."""
    states = ledger.job_states(db)
    return not states.get("queued") and not states.get("running") and huey.pending_count() == 0


def run_worker(settings: WorkerSettings, workers: int = 1, until_idle: bool = False,
               on_tick: Callable[[], None] | None = None,
               shutdown_timeout: float | None = None) -> None:
    """Run a consumer until a signal (or, with until_idle, until no work is left).

    Args:
        settings: lab.db, registry, concurrency, lease, grace and worker identity.
        workers: Huey worker threads or processes.
        until_idle: stop once the ledger has no queued or running job.
        on_tick: called about every 0.1 s from the main thread (progress bars).
        shutdown_timeout: the grace of a stop (None: `settings.grace_s`).
    """
    grace = settings.grace_s if shutdown_timeout is None else shutdown_timeout
    db = store.connect(settings.db_path)
    quiet_huey_disk_full()
    engine = Engine(settings)
    # the signal's delivery stops new calls at once, in this process and every child
    delivered = StopSignal.install()
    if delivered is not None:
        engine.watch = delivered.delivered
    huey, task = make_huey(settings, engine)
    ledger.register_worker(db, settings.worker_id)
    reconcile(db, huey, task)
    consumer = LabConsumer(huey, engine, grace_s=grace, workers=workers,
                           worker_type=settings.worker_type, initial_delay=0.05, backoff=1.15,
                           max_delay=0.5, periodic=False, check_worker_health=True,
                           health_check_interval=1.0,
                           # only Huey's own stop reads it; lab stops through _stop
                           shutdown_timeout=grace + JOIN_MARGIN_S)
    consumer.start()
    last = tick = time.monotonic()
    try:
        while consumer.stop_signal is None:
            tick = consumer.loop(tick)
            now = time.monotonic()
            if now - last >= settings.reconcile_s:
                last = now
                try:
                    revived = reconcile(db, huey, task)
                    ledger.worker_heartbeat(db, settings.worker_id)
                except sqlite3.OperationalError as exc:
                    if not is_disk_full(exc):
                        raise
                    continue  # a full disk: the jobs wait (jobs.pump), the loop goes on
                if revived:
                    log.info("re-enqueued jobs %s", revived)
            if on_tick is not None:
                on_tick()
            if until_idle and is_idle(db, huey):
                break
    except ConsumerStopped:
        pass
    finally:
        try:
            _stop(db, consumer, engine, settings, grace)
        finally:
            consumer.exited.set()
            if delivered is not None:
                delivered.uninstall()


def _stop(db: Any, consumer: LabConsumer, engine: Engine, settings: WorkerSettings,
          grace: float) -> None:
    """Stop within the grace (and margin): drain, join, release what is left, clean up."""
    consumer.begin_stop()
    _unless_disk_full(lambda: ledger.worker_heartbeat(db, settings.worker_id, "stopping"))
    started = consumer.stopped_at if consumer.stopped_at is not None else time.monotonic()
    try:
        engine.drain(grace)  # thread workers: calls in flight get the grace, then are cut
        consumer.join_within(max(0.0, started + grace + JOIN_MARGIN_S - time.monotonic()))
        engine.drain(0.5, settle=0.5)  # a job a Huey thread took as the stop came
        engine.close()
    finally:
        # jobs of children killed at the deadline, and episodes still in flight after
        # the drain (hung calls), run no more: queue the jobs again, and their live rows
        # must not say "running" (the console would show ghost episodes)
        def settle() -> None:
            released = ledger.release_worker_jobs(db, settings.worker_id,
                                                  "worker stopped before its episodes ended")
            if released:
                log.warning("stopping: re-queued jobs %s", released)
            send_missing(db, *make_huey(settings), grace_s=0.0)  # put back: on the queue
            remove_live(db, settings.worker_id)
            forget_worker(db, settings.worker_id)  # the endpoints it saw down: not shown
            ledger.worker_heartbeat(db, settings.worker_id, "stopped")

        # on a full disk this is left to the next worker (leases run out, live rows of a
        # dead worker are removed when it reconciles)
        _unless_disk_full(settle)
        db.conn.close()


def _unless_disk_full(write: Callable[[], None]) -> None:
    """Run a write of the stop; on a full disk say so and go on (the stop must end)."""
    try:
        write()
    except sqlite3.OperationalError as exc:
        if not is_disk_full(exc):
            raise
        log.warning("stopping: lab.db's disk is full; the next worker re-queues this "
                    "worker's jobs")
