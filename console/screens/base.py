"""What every console screen shares: the settings, refresh on change, the header/footer."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING

from sqlite_utils import Database
from textual.screen import Screen

from core import store

from console.messages import DbChanged

if TYPE_CHECKING:
    from console.app import ConsoleConfig


class LabScreen(Screen[None]):
    """A screen that reloads its data when lab.db changes.

    Subclasses implement `reload()`, which must start a thread worker
    (`@work(thread=True, exclusive=True)`) that reads through core/jobs/analysis and
    hands its result back with `call_from_thread` or a message. `reload()` runs on
    mount, on `DbChanged` while the screen is shown, and on `r`.
    """

    BINDINGS = [("r", "reload", "Reload")]

    @property
    def lab(self) -> ConsoleConfig:
        """The console's settings."""
        return self.app.config  # type: ignore[attr-defined,no-any-return]

    @contextlib.contextmanager
    def _db(self) -> Iterator[Database]:
        """lab.db on a connection of its own (for a worker thread), closed afterwards."""
        db = store.connect(self.lab.db_path)
        try:
            yield db
        finally:
            db.conn.close()

    def on_mount(self) -> None:
        """Load once when first shown."""
        self.reload()

    def on_db_changed(self, message: DbChanged) -> None:
        """Reload when another process committed to lab.db."""
        message.stop()
        self.reload()

    def action_reload(self) -> None:
        """Reload now."""
        self.reload()

    def reload(self) -> None:
        """Start loading this screen's data (override)."""
