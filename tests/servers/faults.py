"""Scriptable faults for the loopback model servers.

A Script hands out one Fault per model call: queued faults first, in order ("fail the
first 2 calls with 503, then answer"), then `always` (None = answer normally).
Thread-safe: tests push from their thread, the server pops from its own.
"""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass

KINDS = ("status", "hang", "reset", "malformed", "slow", "context", "answer")


@dataclass(frozen=True)
class Fault:
    """One way to (mis)handle a call.

    Attributes:
        kind: "status" (an HTTP error), "hang" (no reply), "reset" (RST), "malformed"
            (truncated JSON with status 200), "slow" (answer after `delay_s`),
            "context" (the server's context-length 400), "answer" (answer normally).
        status: HTTP status for "status".
        retry_after: seconds for a retry-after header ("status" only).
        delay_s: extra delay for "slow".
        message: error message for "status"; "{api_key}" is replaced by the key the
            request carried (to check that clients never repeat it).
    """

    kind: str
    status: int = 500
    retry_after: float | None = None
    delay_s: float = 0.0
    message: str = "injected fault"

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown fault kind {self.kind!r}; one of {KINDS}")


class Script:
    """The faults of the next calls."""

    def __init__(self, always: Fault | None = None) -> None:
        self.always = always
        self._queue: deque[Fault] = deque()
        self._lock = threading.Lock()

    def push(self, fault: Fault, times: int = 1) -> Script:
        """Queue `fault` for the next `times` calls (after what is queued already)."""
        with self._lock:
            self._queue.extend([fault] * times)
        return self

    def next(self) -> Fault | None:
        """The fault of this call (None = answer)."""
        with self._lock:
            if self._queue:
                return self._queue.popleft()
        return self.always
