"""Messages that cross between the console's workers, app and screens.

A thread worker never touches a widget or an attribute of its screen: it hands what
it read back as a message (`post_message` is the one thread-safe way in), and the
handler, on the app's thread, shows it. The few kinds every screen posts live here;
a screen's own results are small messages nested on the screen.
"""

from __future__ import annotations

from dataclasses import dataclass

from textual.message import Message
from textual.notifications import SeverityLevel


class DbChanged(Message):
    """Another connection committed to lab.db since the last check.

    Attributes:
        shown_again: the change is news to a screen shown again (it read before the
            change, then another screen was shown): it reads at once, paced or not.
    """

    def __init__(self, shown_again: bool = False) -> None:
        super().__init__()
        self.shown_again = shown_again


@dataclass
class Notice(Message, bubble=False):
    """A toast a worker asks for (a library error, what a write did); shown by the
    screen or app it is posted to, with `notify`'s arguments."""

    text: str
    severity: SeverityLevel = "information"
    timeout: float | None = None


@dataclass
class ReadOnly(Message, bubble=False):
    """A write found lab.db read-only: the console turns read-only (`LabApp.set_read_only`)."""

    reason: str


@dataclass
class Wrote(Message, bubble=False):
    """The console committed to lab.db (`LabScreen._write_db`): counted, and the screen
    that wrote counts as read now."""
