"""The stop signal as the kernel delivers it, seen by every engine of a worker at once.

A worker's SIGTERM/SIGINT handler is Python code, and Python runs signal handlers only
in the main thread, between its bytecodes: while that thread is busy in SQLite (a
reconcile waiting on a lock, a job's lease) the handler waits, and the engine's event
loop thread, and each `--type process` child until the parent forwards the signal, goes
on starting episodes and model calls. So the stop promise (no new episode, call or
retry after the signal) cannot rest on the handler alone.

What is immediate is the C-level part of Python's handler, which runs when the kernel
delivers the signal: it writes the signal's number to the wakeup file descriptor
(`signal.set_wakeup_fd`). `StopSignal.install` points that at one end of a socket pair
in the worker's main process, and `delivered` peeks at the other end without reading it
(`MSG_PEEK`), so every reader sees the byte: the main process's engine and each forked
child, which inherit both ends. Each `CallStop` asks `delivered` before every call,
retry and new episode (`core.models.retry.CallStop.watch`): one `poll` with no wait
while nothing came (a `recv` that finds nothing raises, which costs several times as
much, and this is asked a few times per model call), nothing once it did.
"""

from __future__ import annotations

import contextlib
import select
import signal
import socket
import threading

STOP_SIGNALS = frozenset({signal.SIGINT, signal.SIGTERM})
"""The signals that stop a worker (others the process may handle are ignored here)."""


class StopSignal:
    """Whether a stop signal has reached this worker (or the worker that forked it).

    Use `install` in the main thread of the worker's main process; forked children
    inherit it as it is (they must not install their own: the parent's delivery is
    what they watch).
    """

    def __init__(self, reader: socket.socket, writer: socket.socket, previous: int) -> None:
        self._reader = reader
        self._writer = writer
        self._previous = previous
        self._seen = False
        self._polls = threading.local()  # a poll object serves one thread at a time

    @classmethod
    def install(cls) -> StopSignal | None:
        """Make the wakeup fd this process's socket pair; None outside the main thread
        (Python allows the wakeup fd there only), where signals reach no handler anyway."""
        if threading.current_thread() is not threading.main_thread():
            return None
        reader, writer = socket.socketpair()
        reader.setblocking(False)
        writer.setblocking(False)
        try:
            previous = signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)
        except ValueError:
            reader.close()
            writer.close()
            return None
        return cls(reader, writer, previous)

    def delivered(self) -> bool:
        """Whether SIGINT or SIGTERM has been delivered since `install` (it stays so)."""
        if self._seen:
            return True
        if not self._readable():  # nothing came: the common case, without a raise
            return False
        try:
            got = self._reader.recv(4096, socket.MSG_PEEK | socket.MSG_DONTWAIT)
        except (BlockingIOError, InterruptedError):
            return False
        except OSError:  # closed (uninstalled): nothing more to watch
            return False
        self._seen = any(b in STOP_SIGNALS for b in got)
        return self._seen

    def _readable(self) -> bool:
        """Whether the reader has something to read (or is closed); True where `poll`
        is missing (Windows), leaving the answer to `recv`."""
        poll = getattr(self._polls, "poll", None)
        if poll is None:
            if not hasattr(select, "poll"):
                return True
            fd = self._reader.fileno()
            if fd < 0:  # closed (uninstalled)
                return True
            poll = self._polls.poll = select.poll()
            poll.register(fd, select.POLLIN)
        return bool(poll.poll(0))

    def uninstall(self) -> None:
        """Give the wakeup fd back to what it was and close the pair (main thread)."""
        with contextlib.suppress(ValueError):
            signal.set_wakeup_fd(self._previous)
        self._reader.close()
        self._writer.close()
