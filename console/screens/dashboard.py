"""Dashboard screen (SPEC §14). PLACEHOLDER: being built; replaced before it lands."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.widgets import Footer, Header, Static

from console.screens.base import LabScreen


class DashboardScreen(LabScreen):
    """Dashboard."""

    def compose(self) -> ComposeResult:
        """Header, body, footer."""
        yield Header()
        yield Static("Dashboard")
        yield Footer()
