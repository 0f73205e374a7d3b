"""`console.style_colors`: Textual's background pair of a widget's lines is cached by its
colours, not by the widget's style cache, so no style cache outlives its widget."""

from __future__ import annotations

import functools
import gc
import json
import subprocess
import sys
from pathlib import Path

import pytest
from textual._styles_cache import StylesCache
from textual.app import App, ComposeResult
from textual.color import Color
from textual.style import Style
from textual.widgets import DataTable, Static

from console import style_colors
from tests.helpers.queue import ROOT
from tests.helpers.waiting import PATIENCE_S


class Lines(App[None]):
    """A few widgets with their own backgrounds, each rendering lines."""

    CSS = "Static { background: $panel; } DataTable { background: $boost; }"

    def compose(self) -> ComposeResult:
        for i in range(12):
            yield Static(f"line {i}")
        table: DataTable[str] = DataTable()
        table.add_columns("a", "b")
        table.add_rows([("1", "2"), ("3", "4")])
        yield table


def _style_caches() -> int:
    gc.collect()
    return sum(1 for o in gc.get_objects() if type(o) is StylesCache)


async def _caches_after_three_apps() -> tuple[int, list[int]]:
    """Style caches alive before any app, and after each of three apps one after another
    (each app's widgets have theirs while it runs)."""
    style_colors.install()  # as every console does when it starts
    before = _style_caches()
    after = []
    for _ in range(3):
        app = Lines()
        async with app.run_test(size=(60, 20)) as pilot:
            await pilot.pause()
            assert _style_caches() > before
        del app, pilot
        after.append(_style_caches())
    return before, after


def test_no_style_cache_outlives_its_app() -> None:
    """Three apps one after another leave as many style caches as one: the last app's
    (something still refers to the app after its run), none of the first two. Counted in
    a process of its own: a scan of a test worker's whole heap takes seconds a count."""
    script = ("import asyncio\n"
              "from tests.test_console_style_colors import _caches_after_three_apps\n"
              "import json\n"
              "print(json.dumps(asyncio.run(_caches_after_three_apps())))\n")
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True,
                         text=True, timeout=PATIENCE_S)
    assert out.returncode == 0, out.stderr
    before, after = json.loads(out.stdout)
    assert after[0] == after[1] == after[2], (before, after)


def test_the_pair_is_textuals_and_installing_twice_changes_nothing() -> None:
    style_colors.install()
    installed = StylesCache.get_inner_outer
    style_colors.install()
    assert StylesCache.get_inner_outer is installed
    cache = StylesCache()
    for base, background in ((Color(10, 20, 30), Color(200, 0, 0, 0.5)),
                             (Color(0, 0, 0), Color(255, 255, 255))):
        assert cache.get_inner_outer(base, background) == (
            Style(background=base + background), Style(background=base))


def test_the_console_installs_it(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A console started in a process where nothing replaced Textual's method yet (put
    back here as an lru-cached method, as Textual defines it) replaces it."""
    from core import store
    from tests.helpers.console import console_app

    @functools.lru_cache(1024)
    def as_textual(cls: object, base_background: Color, background: Color) -> object:
        return (Style(background=base_background + background), Style(background=base_background))

    monkeypatch.setattr(StylesCache, "get_inner_outer", as_textual)
    store.connect(tmp_path / "lab.db").conn.close()
    console_app(tmp_path / "lab.db")
    assert getattr(StylesCache.get_inner_outer, "lab_by_colours", False)
