"""The key bar at the bottom of every screen."""

from __future__ import annotations

from textual.widgets import Footer


class LabFooter(Footer):
    """Textual's Footer, without its growth over a long session.

    Footer rebuilds its keys whenever the bindings change (every screen switch), and each
    key binds to the footer's ``compact`` reactive. Textual drops a watcher of a removed
    widget only when the watched value next changes, which ``compact`` never does, so
    every switch kept ~15 dead keys alive (the soak's console grew 0.2 MB/s). After each
    rebuild this re-checks the watchers, which drops the removed keys' (public API:
    `mutate_reactive`; the live keys see their value unchanged).
    """

    async def recompose(self) -> None:
        """Rebuild the keys, then release the ones just removed."""
        await super().recompose()
        self.mutate_reactive(Footer.compact)
