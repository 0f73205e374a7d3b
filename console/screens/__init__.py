"""The console's screens, in digit-key order (SPEC §14).

Each screen lives in its own module with a `.tcss` beside it; this registry is the
one list the app, its key bindings, the help screen and the command palette read.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from textual.screen import Screen


@dataclass(frozen=True)
class ScreenInfo:
    """One screen of the console: its mode name, title, palette help and factory."""

    mode: str
    title: str
    help: str
    factory: Callable[[], Screen]


def _lazy(module: str, name: str) -> Callable[[], Screen]:
    def build() -> Screen:
        import importlib

        return getattr(importlib.import_module(f"console.screens.{module}"), name)()
    return build


SCREENS: tuple[ScreenInfo, ...] = (
    ScreenInfo("dashboard", "Dashboard", "Queue, workers, throughput, endpoints, spend, events",
               _lazy("dashboard", "DashboardScreen")),
    ScreenInfo("prereg", "Pre-registration", "Amendments, freeze, deviations, outcomes, verify",
               _lazy("prereg", "PreregScreen")),
    ScreenInfo("enqueue", "Enqueue", "Pick a grid, preview its cost and refusals, queue it",
               _lazy("enqueue", "EnqueueScreen")),
    ScreenInfo("jobs", "Jobs", "Runs → grids → jobs: pause, resume, cancel, retry",
               _lazy("jobs", "JobsScreen")),
    ScreenInfo("live", "Live", "Steps of a running episode as they are committed",
               _lazy("live", "LiveScreen")),
    ScreenInfo("trajectories", "Trajectories", "Step through episodes; matched arms",
               _lazy("trajectories", "TrajectoriesScreen")),
    ScreenInfo("results", "Results", "Success, Δ, I, hazard, answering, cost; export",
               _lazy("results", "ResultsScreen")),
)
"""Read-only: the screens in key order (1 … 7)."""
