"""Where lazily loaded frames come from: `FrameSource` (a lab.db file, a selection and
the state it was read in), which the frames read through and the results cache keys on.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlite_utils import Database

from core.store.selection import Fingerprint, Selection


@dataclass(frozen=True)
class FrameSource:
    """Where lazily loaded frames come from: a lab.db file, a selection and its state.

    Attributes:
        path: the lab.db file.
        selection: the filters.
        fingerprint: the state the frames describe (episodes up to its max_id).
    """

    path: str
    selection: Selection
    fingerprint: Fingerprint

    def connect(self) -> Database:
        """A new connection to the file (each lazy read opens and closes its own)."""
        from core import store

        return store.connect(self.path, read_only_fallback=True)
