"""Every notice the console said during a test, kept for the test to read.

Textual forgets a notice when its toast's timer fires (4-15 s of wall clock), and a test
on a loaded machine can take longer than that between the key and its assertion; a test
that read `app._notifications` then failed for the machine's speed, not the console's.
`tests/conftest.py` records each notice as it is said; `said(app)` returns them in order.
"""

from __future__ import annotations

from typing import Any

import pytest
from textual.app import App
from textual.notifications import Notification, SeverityLevel

KEPT = "_notices_said_in_this_test"
"""The app attribute that holds the notices said (set by the recording `notify`)."""


def said(app: App[Any]) -> list[Notification]:
    """The notices `app` said, oldest first, whether or not their toasts are still up."""
    return list(getattr(app, KEPT, ()))


def keep_notices(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make every app record each notice it says (what `said` reads)."""
    original = App.notify

    def notify(self: App[Any], message: str, *, title: str = "",
               severity: SeverityLevel = "information", timeout: float | None = None,
               markup: bool = True) -> None:
        seconds = self.NOTIFICATION_TIMEOUT if timeout is None else timeout
        self.__dict__.setdefault(KEPT, []).append(
            Notification(message, title, severity, seconds, markup=markup))
        original(self, message, title=title, severity=severity, timeout=timeout, markup=markup)

    monkeypatch.setattr(App, "notify", notify)
