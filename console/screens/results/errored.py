"""What the Results screen says of the errored episodes its numbers leave out: how many a
queued job will run again, and how many `E` on Jobs (`lab retry --errored`) would queue.

An errored episode whose (cell, question) a queued or paused job holds is run again when
a worker takes that job (a stopped worker's interrupted episodes, or what a retry
queued): asking for a retry there queues nothing. One a running job holds is being run
again. Only the rest are retried by `E`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from core.store.jobs import WAITING, held_pairs
from core.wording import plural

if TYPE_CHECKING:
    import pandas as pd
    from sqlite_utils import Database


@dataclass(frozen=True)
class ErroredLeftOut:
    """The errored episodes of a selection, by what will become of them."""

    errored: int
    """Errored episodes left out of the numbers (no complete retry)."""
    queued_again: int = 0
    """Of those, the ones a queued or paused job holds."""
    retryable: int = 0
    """Of those, the ones no queued, running or paused job holds."""

    def note(self) -> str:
        """The status line's warning ("" when nothing errored)."""
        if not self.errored:
            return ""
        parts = []
        if self.queued_again:
            parts.append(f"{self.queued_again:,} queued to run again")
        if self.retryable:
            parts.append(f"E on Jobs (4) retries {self.retryable:,}")
        running = self.errored - self.queued_again - self.retryable
        if running:
            parts.append(f"{running:,} running again")
        return f"⚠ {plural(self.errored, 'errored episode')} left out ({'; '.join(parts)})"


def errored_left_out(db: Database, errored: pd.DataFrame) -> ErroredLeftOut:
    """Count a selection's errored episodes by the jobs that hold their questions.

    Args:
        db: lab.db (read only).
        errored: the errored episodes left out (`Frames.errored_episodes`); without
            ``cell_id`` (hand-built frames) every one counts as retryable.
    """
    if not len(errored) or "cell_id" not in errored:
        return ErroredLeftOut(len(errored), retryable=len(errored))
    pairs = list(zip(errored["cell_id"].astype(int), errored["question_id"].astype(str)))
    cells = {c for c, _ in pairs}
    held = held_pairs(db, cells)
    waiting = set().union(*(held.get(s, set()) for s in WAITING))
    active = set().union(*held.values())
    return ErroredLeftOut(len(pairs), queued_again=sum(p in waiting for p in pairs),
                          retryable=sum(p not in active for p in pairs))
