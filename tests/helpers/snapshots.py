"""The type of pytest-textual-snapshot's `snap_compare` fixture, as tests call it.

The plugin annotates the fixture as returning `Callable[[str | PurePath], bool]`, but the
function it returns also takes an App and the keyword arguments `press`, `terminal_size`
and `run_before`; tests annotate their `snap_compare` parameter with this protocol so
mypy checks those calls against the real signature.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from pathlib import PurePath
from typing import Any, Protocol

from textual.app import App
from textual.pilot import Pilot


class SnapCompare(Protocol):
    """Compare a screenshot of `app` with its stored snapshot (True when they match)."""

    def __call__(self, app: str | PurePath | App[Any], press: Iterable[str] = (),
                 terminal_size: tuple[int, int] = (80, 24),
                 run_before: Callable[[Pilot[Any]], Awaitable[None] | None] | None = None
                 ) -> bool: ...
