"""A model's `concurrency` as a cap on calls in flight from every worker on the host.

How the cap is shared: each model has a lock file beside lab.db
(`lab.locks/calls-<model>.lock`) whose first `limit` bytes are its call slots. A
call holds an exclusive POSIX record lock (`fcntl.lockf`) on one free byte for as
long as it is in flight, so the number of calls in flight to the model from all
worker processes on the host together never exceeds `limit`. The kernel drops a
process's locks when it dies, so a `kill -9` never leaks a slot.

Within a process a finished call hands its slot straight to a call of the same
process that is waiting, unless another process is waiting too: waiting processes
hold a shared lock on a marker byte far past the slots, and a process releasing a
slot asks the kernel (F_GETLK) whether anyone else holds it. Then the slot goes back
to the kernel and the waiting processes race for it by polling every `poll_s`, so
one busy process cannot starve another. Uncontended, a call costs two syscalls.

POSIX record locks belong to the process, not the thread or file descriptor: one
process must use one `CallSlots` per file (the worker's engine owns them), and
closing any other descriptor of the file would drop its locks.
"""

from __future__ import annotations

import asyncio
import collections
import fcntl
import os
import re
import struct
import sys
from pathlib import Path

WAIT_BYTE = 1 << 30
"""Offset of the marker byte that waiting processes share-lock (past any slot)."""
_FLOCK = "hhqqi4x"
"""struct flock on Linux (l_type, l_whence, l_start, l_len, l_pid), native alignment."""


def slots_path(db_path: Path, model: str) -> Path:
    """The lock file of a model's call slots beside lab.db: lab.locks/calls-<model>.lock."""
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", model)
    return db_path.with_name(db_path.stem + ".locks") / f"calls-{safe}.lock"


class CallSlots:
    """At most `limit` calls in flight to one model from all processes on the host.

    Use from one event loop: `slot = await slots.acquire()` … `slots.release(slot)`.

    Args:
        path: the model's lock file (created with its directory).
        limit: the model's concurrency.
        poll_s: how often a process that waits for a slot held elsewhere looks again.
    """

    def __init__(self, path: Path, limit: int, poll_s: float = 0.005) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.limit = limit
        self.poll_s = poll_s
        self.in_flight = 0
        self.peak = 0
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        if not 1 <= limit < WAIT_BYTE:
            raise ValueError(f"a call cap must be in [1, {WAIT_BYTE - 1}], got {limit}")
        # Slots are numbered lazily: _candidates holds the slots this process has seen
        # and does not hold, _fresh the first number never tried yet, so memory grows
        # with the calls actually in flight, never with the cap.
        self._candidates: collections.deque[int] = collections.deque()
        self._fresh = 0
        self._waiters: collections.deque[asyncio.Future[int]] = collections.deque()
        self._poller: asyncio.Task[None] | None = None
        self._announced = False

    def _lock(self, slot: int) -> bool:
        try:
            fcntl.lockf(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, slot)
        except OSError:
            return False
        return True

    def _try_lock(self) -> int | None:
        """Lock a free slot without waiting; None when all are held.

        Slots seen before are tried first, then numbers never tried, up to the cap; a
        fresh number held by another process joins the seen ones.
        """
        for _ in range(len(self._candidates)):
            slot = self._candidates.popleft()
            if self._lock(slot):
                return slot
            self._candidates.append(slot)
        while self._fresh < self.limit:
            slot = self._fresh
            self._fresh += 1
            if self._lock(slot):
                return slot
            self._candidates.append(slot)
        return None

    def _others_waiting(self) -> bool:
        """Whether another process holds the waiting marker (our own lock is ignored)."""
        if sys.platform != "linux":
            return False  # struct flock differs; slots stay correct, only less fair
        probe = struct.pack(_FLOCK, fcntl.F_WRLCK, os.SEEK_SET, WAIT_BYTE, 1, 0)
        got = fcntl.fcntl(self._fd, fcntl.F_GETLK, probe)
        return struct.unpack(_FLOCK, got)[0] != fcntl.F_UNLCK

    def _announce(self, waiting: bool) -> None:
        if waiting != self._announced:
            mode = fcntl.LOCK_SH | fcntl.LOCK_NB if waiting else fcntl.LOCK_UN
            fcntl.lockf(self._fd, mode, 1, WAIT_BYTE)
            self._announced = waiting

    def _took(self, slot: int) -> int:
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        return slot

    def try_acquire(self) -> int | None:
        """A call slot now, without waiting (None: one must be waited for with `acquire`)."""
        if not self._waiters:
            slot = self._try_lock()
            if slot is not None:
                return self._took(slot)
        return None

    async def acquire(self) -> int:
        """Wait for a call slot; returns its number (pass it to `release`)."""
        slot = self.try_acquire()
        if slot is not None:
            return slot
        fut: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self._waiters.append(fut)
        self._announce(True)
        if self._poller is None or self._poller.done():
            self._poller = asyncio.ensure_future(self._poll())
        try:
            return self._took(await fut)
        except asyncio.CancelledError:
            if fut.done() and not fut.cancelled():  # handed a slot just as it was cancelled
                self._give_back(fut.result())
            raise

    def release(self, slot: int) -> None:
        """End a call: hand its slot to a waiting call here, or back to the host."""
        self.in_flight -= 1
        while self._waiters and not self._others_waiting():
            fut = self._waiters.popleft()
            if not fut.done():
                fut.set_result(slot)
                return
        self._give_back(slot)

    def _give_back(self, slot: int) -> None:
        fcntl.lockf(self._fd, fcntl.LOCK_UN, 1, slot)
        self._candidates.appendleft(slot)

    async def _poll(self) -> None:
        """While calls here wait: take slots other processes freed, then hand them out."""
        try:
            while True:
                while self._waiters and self._waiters[0].done():
                    self._waiters.popleft()
                if not self._waiters:
                    return
                slot = self._try_lock()
                if slot is None:
                    await asyncio.sleep(self.poll_s)
                    continue
                self._waiters.popleft().set_result(slot)
        finally:
            if not self._waiters:
                self._announce(False)

    def close(self) -> None:
        """Drop every lock of this process on the file and close it."""
        if self._poller is not None:
            self._poller.cancel()
        os.close(self._fd)
