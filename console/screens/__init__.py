"""The console's screens, in digit-key order (docs/console.md).

Each screen lives in its own module, or its own package with the widgets only it uses,
with a `.tcss` beside it; this registry is the one list the app, its key bindings, the
help screen and the command palette read.
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


@dataclass(frozen=True)
class LazyScreen:
    """Builds a screen, importing its module only then (the console starts faster).

    Attributes:
        module: the module under `console.screens` that holds the screen.
        name: the screen's class.
    """

    module: str
    name: str

    def screen_class(self) -> type[Screen]:
        """The screen's class (its module imported)."""
        import importlib

        cls: type[Screen] = getattr(importlib.import_module(f"console.screens.{self.module}"),
                                    self.name)
        return cls

    def __call__(self) -> Screen:
        return self.screen_class()()


def screen_mode(cls: type[object]) -> str:
    """A screen class's mode: its module under `console.screens`, or its package there
    (`console.screens.results.screen` → "results")."""
    return cls.__module__.removeprefix("console.screens.").split(".")[0]


SCREENS: tuple[ScreenInfo, ...] = (
    ScreenInfo("dashboard", "Dashboard", "Queue, workers, throughput, endpoints, spend, events",
               LazyScreen("dashboard", "DashboardScreen")),
    ScreenInfo("prereg", "Pre-registration", "Amendments, freeze, deviations, outcomes, verify",
               LazyScreen("prereg", "PreregScreen")),
    ScreenInfo("enqueue", "Enqueue", "Pick a grid, preview its cost and refusals, queue it",
               LazyScreen("enqueue", "EnqueueScreen")),
    ScreenInfo("jobs", "Jobs", "Runs → grids → jobs: pause, resume, cancel, retry",
               LazyScreen("jobs", "JobsScreen")),
    ScreenInfo("live", "Live", "Steps of a running episode as they are committed",
               LazyScreen("live", "LiveScreen")),
    ScreenInfo("trajectories", "Trajectories", "Step through episodes; matched arms",
               LazyScreen("trajectories", "TrajectoriesScreen")),
    ScreenInfo("results", "Results", "Success, Δ, I, hazard, answering, cost; export",
               LazyScreen("results", "ResultsScreen")),
)
"""Read-only: the screens in key order (1 … 7)."""
