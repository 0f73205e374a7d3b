"""Live screen (SPEC §14). PLACEHOLDER: being built; replaced before it lands."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.widgets import Footer, Header, Static

from console.screens.base import LabScreen


class LiveScreen(LabScreen):
    """Live."""

    def compose(self) -> ComposeResult:
        """Header, body, footer."""
        yield Header()
        yield Static("Live")
        yield Footer()
