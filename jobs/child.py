"""A `--type process` worker child: die with the consumer, stop cleanly on SIGTERM.

Huey forks its worker processes from the consumer. Left alone, a child whose
consumer was killed with `kill -9` lives on, holding lab.db and the queue file, and
ignores SIGTERM while idle (Huey only interrupts a child that runs a task). So each
child, as it starts:

- asks the kernel to send it SIGTERM when the consumer dies
  (`prctl(PR_SET_PDEATHSIG)` on Linux, through ctypes), and also watches its parent
  pid from a thread (other systems, and a parent that died before the prctl);
- handles SIGTERM itself (the consumer forwards its SIGTERM or SIGINT): its engine
  starts no more episodes, model calls or retries, its loop ends, calls in flight get
  the grace to answer and are then cut (their episodes stored errored,
  "interrupted"), its jobs are released and the process exits; a hard exit follows
  `grace_s + STOP_MARGIN_S` after the signal whatever happens. A second SIGTERM cuts
  the calls at once.
"""

from __future__ import annotations

import ctypes
import logging
import os
import signal
import sys
import threading
import time
from typing import Any

from jobs.engine import Engine
from jobs.settings import STOP_MARGIN_S

log = logging.getLogger("lab.worker")

PR_SET_PDEATHSIG = 1


def set_parent_death_signal(signum: int = signal.SIGTERM) -> bool:
    """Have the kernel send `signum` to this process when its parent dies (Linux only).

    Returns:
        Whether the request was made (False off Linux or without libc).
    """
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(PR_SET_PDEATHSIG, int(signum), 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def start_child(parent: int, engine: Engine | None, grace_s: float = 5.0) -> threading.Event:
    """Set up a freshly forked child of the consumer (call from its main thread).

    Args:
        parent: pid of the consumer that forked it.
        engine: a worker child's engine (stopped on SIGTERM; None for Huey's scheduler).
        grace_s: after SIGTERM, calls in flight may answer for this long; the child
            exits `grace_s + STOP_MARGIN_S` after it no matter what.

    Returns:
        Set once SIGTERM arrived: the child's loop must end (Huey swallows a
        KeyboardInterrupt raised while a task runs, so the caller checks this
        between iterations of its loop instead).
    """
    stopping = threading.Event()

    def on_term(signum: int, frame: Any) -> None:
        if stopping.is_set():  # a second SIGTERM: cut the calls in flight now
            if engine is not None:
                engine.cut()
            return
        stopping.set()
        if engine is not None:
            engine.stop()
        threading.Thread(target=_hard_exit, args=(grace_s + STOP_MARGIN_S,), daemon=True,
                         name="lab-hard-exit").start()

    signal.signal(signal.SIGTERM, on_term)
    set_parent_death_signal(signal.SIGTERM)
    threading.Thread(target=_watch_parent, args=(parent,), daemon=True,
                     name="lab-parent-watch").start()
    return stopping


def stop_child(engine: Engine, grace_s: float = 5.0) -> None:
    """Huey's shutdown hook in a child: drain the engine (calls get the grace), release, close."""
    engine.drain(grace_s)
    engine.close()


def _watch_parent(parent: int) -> None:
    """Fallback to the death signal: poll the parent pid, SIGTERM ourselves when it changes."""
    while os.getppid() == parent:
        time.sleep(0.5)
    log.warning("worker child %s: consumer %s is gone, stopping", os.getpid(), parent)
    os.kill(os.getpid(), signal.SIGTERM)


def _hard_exit(after: float) -> None:
    time.sleep(after)
    os._exit(1)
