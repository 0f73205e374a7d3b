"""Messages that cross between the console's workers, app and screens."""

from __future__ import annotations

from textual.message import Message


class DbChanged(Message):
    """Another connection committed to lab.db since the last check."""
