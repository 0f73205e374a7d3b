"""Independent pieces of one command's work side by side, one forked process per core.

`lab figures` and `lab report` draw each figure in Python (matplotlib lays out and
writes every artist, about 10 s of CPU on a 20,000-episode study) and `lab export`
writes two large CSV files while it computes the tables; the pieces are independent, so
each core takes its share. The processes are forked once the inputs are in memory, so
they read them without copying or pickling; only what a piece returns comes back.

Forking is plain: the items' numbers go into a pipe that every process reads four bytes
at a time (so a process that finishes early takes the next item), each process sends
its results back pickled through a pipe of its own and leaves with ``os._exit``; no
thread, no signal and no shared lock is involved, so a handler the parent installed for
SIGTERM (the worker's) cannot keep a child alive. A piece that fails raises in the
parent. Everything runs in this process where forking is not possible or not safe: one
core, no ``os.fork``, or other threads running (a process forked while another thread
holds a lock can hang: the console writes reports from a thread worker).
"""

from __future__ import annotations

import os
import pickle
import struct
import threading
import traceback
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")
_ITEM = struct.Struct("<i")


class PieceFailed(RuntimeError):
    """A piece failed in a forked process with an error that cannot be sent back as it
    is (its traceback in the message)."""


def cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def each(n: int, work: Callable[[int], T], processes: int | None = None) -> list[T]:
    """``[work(i) for i in range(n)]``, the items shared among forked processes.

    Args:
        n: how many items.
        work: does item i and returns something picklable.
        processes: at most this many processes (default: one per core); 1 does
            everything here.

    Returns:
        The results, in item order.

    Raises:
        Exception: what an item raised in a forked process, raised again here (the
            first one, by item order of the processes; `PieceFailed` with its traceback
            when it cannot be pickled).
    """
    count = min(processes or cores(), n)
    if count <= 1 or not hasattr(os, "fork") or threading.active_count() > 1:
        return [work(i) for i in range(n)]
    items_r, items_w = os.pipe()
    os.write(items_w, b"".join(_ITEM.pack(i) for i in range(n)))  # n · 4 bytes: never blocks
    os.close(items_w)
    children: list[tuple[int, int]] = []
    for _ in range(count):
        out_r, out_w = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: never returns
            os.close(out_r)
            _child(items_r, out_w, work)
        os.close(out_w)
        children.append((pid, out_r))
    os.close(items_r)
    results: dict[int, T] = {}
    failure: BaseException | None = None
    for pid, out_r in children:
        with os.fdopen(out_r, "rb") as fh:
            payload = fh.read()
        os.waitpid(pid, 0)
        done, error = (pickle.loads(payload) if payload
                       else ({}, PieceFailed("a forked process ended without its results")))
        results.update(done)
        failure = failure or error
    if failure is not None:
        raise failure
    return [results[i] for i in range(n)]


def _child(items: int, out: int, work: Callable[[int], object]) -> None:
    """Take items until none is left, send (results, error) back, and leave."""
    done: dict[int, object] = {}
    try:
        while len(raw := os.read(items, _ITEM.size)) == _ITEM.size:
            (i,) = _ITEM.unpack(raw)
            done[i] = work(i)
        payload = pickle.dumps((done, None), protocol=pickle.HIGHEST_PROTOCOL)
    except BaseException as exc:  # noqa: BLE001 - sent to the parent, which raises it
        try:
            payload = pickle.dumps(({}, exc), protocol=pickle.HIGHEST_PROTOCOL)
            pickle.loads(payload)  # an exception whose arguments do not rebuild it
        except Exception:  # noqa: BLE001
            payload = pickle.dumps(({}, PieceFailed(traceback.format_exc())),
                                   protocol=pickle.HIGHEST_PROTOCOL)
    try:
        with os.fdopen(out, "wb") as fh:
            fh.write(payload)
    finally:
        os._exit(0)
