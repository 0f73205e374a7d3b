"""A whole study without leaving the console, in tmux: from an empty lab.db, create a
question set (Sets view), pick a grid on Enqueue, write an amendment from the editor's
templates (a registered test typed into Tests, the Scope taken from the grid with
ctrl+g), freeze it, queue the governed grid, start a worker from the Dashboard (w), watch
Jobs finish it, sort and copy a Results row, write its figure (F) and the report (W),
quit. Skipped where tmux is missing.

Every wait polls the pane until its text appears (generous deadlines for a loaded
machine); the short sleeps only pace keys, and typing that can lose a key to a busy
console is checked on screen and typed again.
"""

from __future__ import annotations

import shutil
import sys
import time
from pathlib import Path

import pytest

from tests.helpers.tmux import Tmux, fill_new_set, open_sets, registry, retry
from tests.helpers.waiting import PATIENCE_S

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")

TEST = '{"id": "H1", "kind": "median_action", "condition": "none", "op": ">=", "value": 1}'

REGISTRY = registry(latency_ms=10)
"""The study only watches Jobs finish: its sim need not be slow."""


def test_a_study_from_an_empty_lab_db_in_the_console(tmp_path: Path) -> None:
    (tmp_path / "lab.toml").write_text(REGISTRY)
    lab = f"{sys.executable} -m console.cli"
    tmux = Tmux(tmp_path)
    try:
        tmux.start("console", f"{lab}; echo LAB-EXIT=$?; sleep 60", tmp_path)
        tmux.wait("lab.db does not exist; create it? [y/N]")
        tmux.keys("console", "y", "Enter")
        tmux.wait("Workers")

        # a question set, made in the Sets view (s on Enqueue)
        tmux.keys("console", "3")
        tmux.wait("lab · 3 Enqueue")

        open_sets(tmux)  # `c` works now

        fill_new_set(tmux, "pre", 4, 0)
        tmux.keys("console", "Enter")
        tmux.wait("Create dev question set pre from dataset demo?")
        tmux.keys("console", "y")
        tmux.wait("created dev set 'pre': 4 questions")
        tmux.keys("console", "Escape")
        tmux.wait("pre  4 q, demo")  # back on Enqueue, the new set picked

        # the grid: the last model (zz-slow), the first arm (none), the second regime,
        # each ticked from the top of the form (Escape) and checked on screen before the
        # next: a key typed while the screen is still settling lands elsewhere
        for tabs, move, item in ((2, ["End"], "zz-slow"), (3, ["Home"], "none"),
                                 (5, ["Home", "Down"], "persistent")):
            def tick(tabs: int = tabs, move: list[str] = move) -> None:
                tmux.keys("console", "Escape")
                time.sleep(0.5)  # an Escape followed at once by a key reads as alt+key
                for key in ["Tab"] * tabs + move + ["Space"]:
                    tmux.keys("console", key)
                    time.sleep(0.2)

            retry(tmux, tick, f"▐X▌ {item}", f"could not tick {item} on Enqueue", timeout=10)
        # the preview names the whole grid (it follows the ticks a moment later): a key
        # that ticked another box on the way fails here, with the screen
        tmux.wait(("can be queued — EXPLORATORY", "models    zz-slow\n", "arms      none\n",
                   "regimes   persistent\n", "cells     1\n"))
        tmux.keys("console", "Escape")
        time.sleep(0.5)

        # the amendment, written in the editor from its templates
        tmux.keys("console", "2")
        tmux.wait("no amendments yet")
        tmux.keys("console", "n")
        tmux.wait("Title of the new draft amendment")
        tmux.keys("console", "-l", "Slow sim under persistent failure")
        tmux.keys("console", "Enter")
        editor = tmux.wait("Editing draft A1")
        tmux.keys("console", "-l", "We predict it answers at once.")
        tmux.keys("console", "Tab")  # Body → Tests: the template, the cursor inside its []
        tmux.wait("dropped on save; every kind")
        time.sleep(0.5)  # the tab shows, then the field takes the focus
        tmux.keys("console", "-l", TEST)
        tmux.wait("✓ Tests: 1 valid")
        tmux.keys("console", "C-g")  # the Scope from the Enqueue grid
        editor = tmux.wait("✓ Tests: 1 valid · Scope: 1 model, 1")
        assert "✗" not in editor, editor
        tmux.keys("console", "C-s")
        tmux.wait("A1 saved")
        tmux.keys("console", "f")
        tmux.wait("Freeze A1 for good?")
        tmux.keys("console", "y")
        tmux.wait("A1 frozen at")

        # the governed grid, queued from Enqueue
        tmux.keys("console", "3")
        tmux.wait("lab · 3 Enqueue")
        tmux.keys("console", "Escape")
        time.sleep(0.5)

        def pick_a1() -> None:
            tmux.keys("console", "Enter")  # the amendment list (focus starts on it)
            time.sleep(0.5)
            tmux.keys("console", "Down")
            time.sleep(0.3)
            tmux.keys("console", "Enter")

        retry(tmux, pick_a1, "governed by A1", "could not pick A1 on Enqueue")
        tmux.keys("console", "C-s")
        tmux.wait("y = queue")
        tmux.keys("console", "y")
        tmux.wait("queued 1 job, 4 episodes")

        # a worker started from the console; Jobs watches it finish
        tmux.keys("console", "1")
        tmux.wait("queued, no worker: press w to start one")
        tmux.keys("console", "w")
        tmux.wait("Start local workers")
        tmux.keys("console", "C-s")
        tmux.wait("Start 1 worker process")
        tmux.keys("console", "y")
        tmux.wait("started 1 worker(s)")
        tmux.keys("console", "4")
        tmux.wait("4/4", timeout=PATIENCE_S * 2)

        # Results: sort by a column, copy a row, write the table's figure
        tmux.keys("console", "7")
        tmux.wait("zz-slow", timeout=PATIENCE_S * 2)
        tmux.keys("console", "s")
        tmux.wait("sorted by")
        tmux.keys("console", "C")
        tmux.wait("copied")
        tmux.keys("console", "F")
        tmux.wait("written in", timeout=PATIENCE_S * 2)
        assert list((tmp_path / "lab-exports").glob("figures-success-*/*.png"))

        # the report, from the Dashboard
        tmux.keys("console", "1")
        tmux.wait("lab · 1 Dashboard")
        tmux.keys("console", "W")
        tmux.wait("report-", timeout=PATIENCE_S * 2)
        assert list((tmp_path / "lab-exports").glob("report-*.html"))

        tmux.keys("console", "q")
        tmux.wait("LAB-EXIT=0")
    finally:
        tmux.close()
