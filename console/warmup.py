"""What the console does once its first screen shows its numbers, so that each other
screen's first visit is quick (target: ≤ 0.5 s on 200,000 episodes; docs/performance.md).

A first visit used to pay, on the UI thread or in its worker, for importing the
screen's module and its widgets (0.15–0.25 s each for Pre-registration, Enqueue and
Jobs), Results' analysis modules (~0.2 s), reading and applying the screen's `.tcss`
(a re-parse of the whole stylesheet and a restyle of every screen mounted so far),
and full collections of the cyclic garbage collector that scanned the ~100,000
objects start-up leaves behind (0.1–0.4 s each on a loaded 2-core machine). Warming
moves the imports to a background thread after the first frame (paused while a screen
is being shown), reads every screen's stylesheet once while only the first screen is
mounted (so `LabApp` can mark a new screen as styled and Textual skips its two
restyles of every mounted screen), and, when the console owns its process, freezes
what start-up allocated out of the collector's scans. On a 200,000-episode lab.db
(bench/console.py, load 2 on 2 cores), with Results' text drawn by `TextLines`, the
first visits went from 0.36–1.24 s to 0.16–0.61 s (medians), Results' from 1.2 s to
0.45–0.6 s. Last, the screens of `PREMOUNT` (Results) are mounted unseen: composed,
styled, laid out at the terminal's size, their footer built; they read lab.db only
when first shown (`LabScreen.premounted`), which then costs only the read and its
drawing.
"""

from __future__ import annotations

import gc
import importlib
import inspect
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from textual.app import App
from textual.screen import Screen

from console.screens import LazyScreen

WAIT_S = 1.5
"""The warm-up starts when the first screen has drawn what it read, and pauses while
another is being shown, each time for at most this long (a slow endpoint check or a
screen that keeps reading does not hold it back)."""
SETTLE_S = 0.2
"""How long the screen shown must have been settled before the warm-up imports (a
screen whose first read starts another worker is not taken for settled in between)."""


class Pacer:
    """When the warm-up may import: once the first screen is settled, and only while
    the screen shown is (the app ticks it; the warm-up thread waits on it)."""

    def __init__(self) -> None:
        self.quiet = threading.Event()
        self.switched_at = time.monotonic()
        self.settled_since: float | None = None
        self.started = False

    def switched(self) -> None:
        """(UI thread) Another screen is being shown: the warm-up waits."""
        self.switched_at = time.monotonic()
        self.settled_since = None
        self.quiet.clear()

    def tick(self, settled: bool) -> bool:
        """(UI thread) Whether the screen shown has drawn what it read (`settled`); returns
        True once, when the warm-up is to start."""
        now = time.monotonic()
        if not settled and now - self.switched_at <= WAIT_S:
            self.settled_since = None
            self.quiet.clear()
            return False
        if self.settled_since is None:
            self.settled_since = now
        if now - self.settled_since < SETTLE_S:
            return False
        self.quiet.set()
        start, self.started = not self.started, True
        return start

    def wait(self) -> None:
        """(warm-up thread) Wait until the screen shown is settled (WAIT_S at most)."""
        self.quiet.wait(WAIT_S)


PREMOUNT = ("results",)
"""Screens mounted unseen at the end of the warm-up (`LabApp._premount`): mounting,
styling and laying out Results' ~50 widgets and building its footer was 0.1–0.15 s of
the UI thread's CPU in its first visit at 200,000 episodes, the read's thread waiting
for the interpreter meanwhile. Each still reads lab.db only when first shown."""

RESULTS_IMPORTS = ("analysis.tables.compute", "analysis.tables.plots", "plotext",
                   "console.screens.results.views", "analysis.tables.trace_charts")
"""What Results' computations import in their worker, beyond the screen module: plotext
is imported by the first chart drawn (Hazard, Answering), 1.0 s of CPU at load 10."""


def results_once() -> None:
    """What Results' first computation pays once per process, beyond imports: setting
    the BLAS libraries to one thread (threadpoolctl lists every loaded library, 25–70
    ms) and the analysis code's hash that keys the results cache (every analysis module
    read and hashed, 20–40 ms); each is kept for the process."""
    from analysis.base.cache import code_hash
    from analysis.stats.blas import single_thread

    single_thread()
    code_hash()


def import_screens(factories: Iterable[LazyScreen], between: Callable[[], object]
                   ) -> tuple[list[type[Screen]], list[str]]:
    """Import each screen's module, in the order given (the digit keys'), then what
    Results' first computation imports and pays once (`results_once`). Call from a
    thread: the UI keeps running.

    Args:
        factories: the screens' factories.
        between: called before each import (the app waits there while a screen is
            being shown, so the two do not share the interpreter then).

    Returns:
        (the screen classes, one line per module that failed to import: the visit
        that needs it would fail the same way, so it is said now rather than hidden).
    """
    classes, failed = [], []
    for factory in factories:
        between()
        try:
            classes.append(factory.screen_class())
        except ImportError as exc:
            failed.append(f"console.screens.{factory.module}: {exc}")
    for name in RESULTS_IMPORTS:
        between()
        try:
            importlib.import_module(name)
        except ImportError as exc:
            failed.append(f"{name}: {exc}")
    between()
    try:
        results_once()
    except (ImportError, OSError) as exc:  # the visit that needs it says so again
        failed.append(f"results warm-up: {exc}")
    return classes, failed


def css_paths(cls: type[Screen]) -> list[Path]:
    """The `.tcss` files of a screen class, resolved as Textual resolves `CSS_PATH`."""
    entries = cls.CSS_PATH
    if entries is None:
        return []
    base = Path(inspect.getfile(cls)).parent
    return [Path(p) if Path(p).is_absolute() else (base / p).resolve()
            for p in (entries if isinstance(entries, list) else [entries])]


def preload_css(app: App[None], classes: Iterable[type[Screen]]) -> int:
    """Add the screens' stylesheets to the app's at once (on the UI thread).

    Textual reads a screen's `.tcss` when the screen is first shown, then re-parses
    the whole stylesheet and restyles every mounted node. Read here while only the
    first screen is mounted, the later first visits find their CSS already there.

    Args:
        app: the console.
        classes: screen classes.

    Returns:
        How many files were read (0: the stylesheet is unchanged).
    """
    stylesheet = app.stylesheet
    read = 0
    for cls in classes:
        for path in css_paths(cls):
            if not stylesheet.has_source(str(path), ""):
                stylesheet.read(path)
                read += 1
    if read:
        stylesheet.reparse()
        stylesheet.update(app)
    return read


YOUNG_OBJECTS = 10_000
"""Net new container objects between two collections of the youngest generation in a
process the console owns, once warm (Python's default is 700)."""


def freeze_startup_objects() -> None:
    """Move every object alive now out of the cyclic GC's scans (`gc.freeze`), and
    collect the youngest generation every `YOUNG_OBJECTS` net new objects.

    Only for a process the console owns: start-up's modules, classes and styles live
    as long as the process, and a full collection no longer re-scans them. Objects
    frozen now that become garbage later are not collected, so this runs once. A first
    visit allocates fast (Results' first table at 200,000 episodes: 6,580 rows and their
    text), and most of it lives on or is freed by reference counting: at 700, the ~70
    young collections of that visit also set off a full collection of the ~80,000
    objects the screens visited before it had left (≈ 40 ms of its CPU, in most
    visits); at 10,000, a handful of young collections and no full one
    (docs/performance.md). Cyclic garbage waits a little longer to be freed.
    """
    gc.freeze()
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(YOUNG_OBJECTS, older, oldest)
