"""`lab worker`: a Huey consumer that runs jobs, reconciles the ledger and stops cleanly.

Huey's workers take jobs and hand them to the process's episode engine
(`jobs.engine`), which keeps up to the model's concurrency episodes in flight across
jobs. SIGINT and SIGTERM both stop gracefully: the worker marks itself "stopping",
its running jobs stop starting episodes, store the ones in flight and release their
lease (back to queued), the consumer joins its workers and the worker's live rows
that are left (episodes cut off by the drain timeout) are removed. `--type process`
children die with the consumer (`jobs.child`).
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from collections.abc import Callable
from typing import Any

from huey.consumer import Consumer, ConsumerStopped

from core import store
from core.store import jobs as ledger
from core.store.episodes import remove_live
from jobs.child import start_child, stop_child
from jobs.engine import Engine
from jobs.queue import make_huey
from jobs.reconcile import reconcile
from jobs.settings import WorkerSettings

log = logging.getLogger("lab.worker")


class LabConsumer(Consumer):
    """Huey's consumer with lab's signal handling: both signals request a graceful stop.

    With `--type process`, every child it forks (the workers and Huey's scheduler)
    dies with it and stops on SIGTERM (`jobs.child`); a worker child drains its
    engine on the way out.

    Args:
        huey: the Huey instance.
        engine: the engine whose copy each forked worker child runs.
        **kw: Huey's Consumer options.
    """

    stop_signal: int | None = None

    def __init__(self, huey: Any, engine: Engine | None = None, **kw: Any) -> None:
        self.lab_engine = engine
        self.lab_parent = os.getpid()
        super().__init__(huey, **kw)

    def _create_process(self, process: Any, name: str) -> Any:
        if self.worker_type == "process":
            engine = self.lab_engine if name.startswith("Worker") else None
            initialize, shutdown, loop = process.initialize, process.shutdown, process.loop
            stopping: list[threading.Event] = []

            def child_initialize() -> None:
                stopping.append(start_child(self.lab_parent, engine))
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
                        stop_child(engine)

            process.initialize, process.shutdown = child_initialize, child_shutdown
            process.loop = child_loop
        return super()._create_process(process, name)

    def _set_signal_handlers(self) -> None:
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, self._lab_signal)

    def _lab_signal(self, signum: int, frame: Any) -> None:
        if self.stop_signal is not None:  # a second signal: stop now
            raise KeyboardInterrupt
        self.stop_signal = signum


def is_idle(db: Any, huey: Any) -> bool:
    """No queued or running job in the ledger and no message in the queue."""
    states = ledger.job_states(db)
    return not states.get("queued") and not states.get("running") and huey.pending_count() == 0


def run_worker(settings: WorkerSettings, workers: int = 1, until_idle: bool = False,
               on_tick: Callable[[], None] | None = None, shutdown_timeout: float = 120.0) -> None:
    """Run a consumer until a signal (or, with until_idle, until no work is left).

    Args:
        settings: lab.db, registry, concurrency, lease and worker identity.
        workers: Huey worker threads or processes.
        until_idle: stop once the ledger has no queued or running job.
        on_tick: called about every 0.1 s from the main thread (progress bars).
        shutdown_timeout: how long a graceful stop waits for running jobs.
    """
    db = store.connect(settings.db_path)
    engine = Engine(settings)
    huey, task = make_huey(settings, engine)
    ledger.register_worker(db, settings.worker_id)
    reconcile(db, huey, task)
    consumer = LabConsumer(huey, engine, workers=workers, worker_type=settings.worker_type,
                           initial_delay=0.05, backoff=1.15, max_delay=0.5, periodic=False,
                           check_worker_health=True, health_check_interval=1.0,
                           shutdown_timeout=shutdown_timeout)
    consumer.start()
    last = tick = time.monotonic()
    try:
        while consumer.stop_signal is None:
            tick = consumer.loop(tick)
            now = time.monotonic()
            if now - last >= settings.reconcile_s:
                revived = reconcile(db, huey, task)
                if revived:
                    log.info("re-enqueued jobs %s", revived)
                ledger.worker_heartbeat(db, settings.worker_id)
                last = now
            if on_tick is not None:
                on_tick()
            if until_idle and is_idle(db, huey):
                break
    except ConsumerStopped:
        pass
    finally:
        ledger.worker_heartbeat(db, settings.worker_id, "stopping")
        engine.stop()  # thread workers: this process's jobs start no more episodes
        try:
            consumer.stop(graceful=True)
            engine.drain(shutdown_timeout)
            engine.close()
        finally:
            # episodes still in flight after the drain (hung calls) run no more: their
            # live rows must not say "running" (issue 25)
            remove_live(db, settings.worker_id)
            ledger.worker_heartbeat(db, settings.worker_id, "stopped")
            db.conn.close()
