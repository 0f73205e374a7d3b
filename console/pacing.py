"""How soon a screen whose reads grow with lab.db may read again after a change.

While workers store episodes, lab.db changes every second and a shown screen re-reads
on each change. Most reads cost milliseconds whatever lab.db holds; the Jobs view's do
not: its grids' progress counts every pair of every grid, 1.2–1.4 s a read for a grid of
43,200 episodes on two loaded cores, so a console left on it took 0.64 of a core from
the workers (docs/performance.md). A paced screen measures each read and, after a
change, starts the next one no sooner than the last took divided by `SHARE` after the
last began: its reads then take at most that share of a core, however large its grids
grow, and its numbers are as fresh as that allows (the header says when they were
read; `r` reads at once, and so does any key that asks for other rows).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

T = TypeVar("T")

SHARE = 0.1
"""The share of a core a paced screen's re-reads may take (a read of 20 ms: every
second, as unpaced; a read of 1.3 s: every 13 s)."""


@dataclass
class Pacer:
    """The last read of a paced screen (whatever started it: a change, `r`, a key): when
    it began, how long its finished pieces took and since when its unfinished ones run.

    Attributes:
        clock: monotonic seconds (tests inject one).
        share: `SHARE`.
    """

    clock: Callable[[], float] = time.monotonic
    share: float = SHARE
    began: float | None = None
    took: float = 0.0
    running: dict[int, float] = field(default_factory=dict)
    """Pieces still reading (a key of each), and when each began."""
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)
    _pieces: int = 0

    def timed(self, read: Callable[[], T]) -> T:
        """Run one piece of a read (in its worker thread) and count how long it took. A
        piece that starts while none runs begins a new read; one that starts beside
        another (the Dashboard's two) belongs to the same read."""
        with self._lock:
            self._pieces += 1
            key, start = self._pieces, self.clock()
            if not self.running:
                self.began, self.took = start, 0.0
            self.running[key] = start
        try:
            return read()
        finally:
            with self._lock:
                self.took += self.clock() - self.running.pop(key)

    def wait_s(self) -> float:
        """Seconds until the next read after a change may begin (0: now). A piece still
        reading counts for as long as it has run so far, so a read slower than the
        changes is not started again beside itself."""
        with self._lock:
            if self.began is None:
                return 0.0
            now = self.clock()
            cost = self.took + sum(now - start for start in self.running.values())
            return max(0.0, self.began + cost / self.share - now)
