"""The Results screen (key 7): `screen` holds the screen, `views` what each view shows
of its table (the Δ grid, the charts' series), `selection` the `/` line and `widgets`
its two tables."""

from console.screens.results.screen import ResultsScreen

__all__ = ["ResultsScreen"]
