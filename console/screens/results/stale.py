"""What the Results screen says changed in lab.db since its numbers were computed."""

from __future__ import annotations

from core.store.selection import Fingerprint
from core.wording import plural


def stale_note(seen: Fingerprint, now: Fingerprint) -> str:
    """The change from `seen` (the state the numbers on show were computed from) to
    `now`, in words: new episodes of the selection are counted; any other change
    (stored probes, updated or deleted rows: lab.db's change counter) is named as such,
    since the numbers may move without a new episode.

    Args:
        seen: the fingerprint the numbers were computed from.
        now: the fingerprint read now (different from `seen`).

    Returns:
        e.g. "12 new episodes since computed", "lab.db changed since computed".
    """
    new = now.episodes - seen.episodes if now.max_id > seen.max_id else 0
    if new > 0 and now.changes == seen.changes:
        return f"{plural(new, 'new episode')} since computed"
    if new > 0:
        return f"{plural(new, 'new episode')} and other changes in lab.db since computed"
    return "lab.db changed since computed"
