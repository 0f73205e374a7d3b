"""Textual's background pair of a widget's lines, cached by the colours alone.

Textual's `StylesCache.get_inner_outer` is an instance method under `functools.lru_cache`
(1024 entries), so the cache's key holds the `StylesCache` it was called on: up to 1,024
removed widgets' style caches, each with the lines it last rendered, stay alive (footer
keys rebuilt, dialogs closed; in a console test worker, which starts hundreds of
consoles, 175,000-215,000 objects, about half of its heap, and every full collection of
the garbage collector about twice as slow). The pair depends only on the two colours, so
the same function is cached on them here: the same values, and no widget kept.

It replaces a method of a private Textual module: textual is pinned to a minor release
for this (tests/test_dependencies.py), and tests/test_console_style_colors.py fails if a
release changes the method.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from textual._styles_cache import StylesCache
from textual.color import Color


def install() -> None:
    """Replace `StylesCache.get_inner_outer` once per process (idempotent)."""
    current: Any = StylesCache.get_inner_outer
    if getattr(current, "lab_by_colours", False):
        return
    textual_pair = current.__wrapped__  # Textual's own body, uncached; it reads no instance

    @lru_cache(1024)
    def by_colours(base_background: Color, background: Color) -> Any:
        return textual_pair(None, base_background, background)

    def get_inner_outer(self: StylesCache, base_background: Color, background: Color) -> Any:
        return by_colours(base_background, background)

    get_inner_outer.lab_by_colours = True  # type: ignore[attr-defined]
    StylesCache.get_inner_outer = get_inner_outer  # type: ignore[method-assign,assignment]
