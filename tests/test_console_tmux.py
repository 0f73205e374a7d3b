"""End to end in tmux: the real `lab` process on a fresh lab.db (answer the confirmation),
a sim grid queued from the Enqueue screen (3) with keys only, a worker started in another
tmux window, steps arriving on Live (5), Jobs (4), the Dashboard (1) shown again with the
worker's episodes and no `r`, Results (7), export (e); then writes from other processes
(`lab enqueue`, `lab sets create`) that Jobs, the Dashboard and the Sets view show when
switched to, without `r`; a question set made in the Sets view (`s` on Enqueue) and picked
on Enqueue; quit (q). Skipped where tmux is missing.

Every wait polls the pane until its text appears (tests/helpers/tmux.py says how).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers.tmux import Tmux, cli, fill_new_set, open_sets, registry

REGISTRY = registry(latency_ms=150)
"""A slow sim: Live shows its steps arriving while the worker runs."""

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


def test_console_end_to_end_in_tmux(tmp_path: Path) -> None:
    (tmp_path / "lab.toml").write_text(REGISTRY)
    lab = f"{sys.executable} -m console.cli"
    tmux = Tmux(tmp_path)
    try:
        tmux.start("console", f"{lab}; echo LAB-EXIT=$?; sleep 60", tmp_path)
        tmux.wait("lab.db does not exist; create it? [y/N]")
        tmux.keys("console", "y", "Enter")
        tmux.wait("Workers")  # the dashboard
        tmux.wait("0 stored")
        assert (tmp_path / "lab.db").exists()
        # a 2-question dev set, named to come first in the Enqueue screen's set list
        subprocess.run([sys.executable, "-m", "console.cli", "sets", "create", "a-tiny",
                        "--dataset", "demo", "--n", "2", "--seed", "0"], cwd=tmp_path,
                       env=tmux.env, check=True, capture_output=True, timeout=60)
        tmux.keys("console", "3")
        tmux.wait("a-tiny")
        # amendment → set → models: the last model (zz-slow); conditions: the first (none);
        # knobs → regimes: the second (persistent); budget, seeds → run name "e2e"
        tmux.keys("console", "Tab", "Tab", "End", "Space", "Tab", "Space", "Tab", "Tab",
                  "Down", "Space")
        tmux.wait("can be queued")
        tmux.keys("console", "Tab", "Tab", "Tab")
        time.sleep(0.5)
        for _ in range(3):  # the preview re-plans on every key; type again if one was lost
            tmux.keys("console", "End", *["BSpace"] * 10)
            time.sleep(0.3)
            tmux.keys("console", "-l", "e2e")
            try:
                screen = tmux.wait("run       e2e\n", timeout=20)
                break
            except AssertionError:
                continue
        else:
            raise AssertionError("could not type the run name:\n" + tmux.screen())
        assert "zz-slow" in screen and "persistent" in screen and "2 new" in screen
        tmux.keys("console", "C-s")
        if "y = queue" in tmux.wait("2 episodes"):  # the confirmation names what is queued
            tmux.keys("console", "y")
        tmux.wait("queued 1 job, 2 episodes")
        tmux.start("shell", f"{lab} worker --concurrency 1 --until-idle; sleep 60", tmp_path)
        tmux.keys("console", "Escape")  # leave the run-name input: digits switch screens again
        time.sleep(0.5)  # an Escape followed at once by a key reads as alt+key
        tmux.keys("console", "5")
        first = tmux.wait("step 1 ")
        assert "zz-slow / none / persistent" in first
        later = tmux.wait("step 3 ")  # steps keep arriving while the worker runs
        assert "FAILED" in later and "useless streak" in later
        tmux.keys("console", "4")
        tmux.wait("run e2e")
        tmux.wait("2/2")  # the worker stored both episodes
        # the Dashboard read lab.db before anything was queued; shown again, it re-reads
        tmux.keys("console", "1")
        dash = tmux.wait("2 stored")
        assert "no worker has run yet" not in dash
        tmux.keys("console", "7")
        tmux.wait("zz-slow  none")  # the Success table (1 lists zz-slow too)
        tmux.keys("console", "e")
        tmux.wait("written in")  # the export toast: the file, then its folder
        assert list((tmp_path / "lab-exports").glob("*.csv"))

        # Another process queues a grid while Results is shown: Jobs and the Dashboard,
        # switched to, show it at once (no `r`).
        cli(tmux, tmp_path, "enqueue", "--models", "sim-never", "--conditions", "none",
            "--regimes", "clean", "--set", "a-tiny", "--run", "cli")
        tmux.keys("console", "4")
        tmux.wait("run cli")
        tmux.keys("console", "1")
        tmux.wait("queued 1 ")

        # The Sets view (s on Enqueue): a set made by another process shows when the view
        # is switched back to; one made here is picked on Enqueue.
        tmux.keys("console", "3")
        tmux.wait("lab · 3 Enqueue")
        open_sets(tmux)
        tmux.keys("console", "1")
        tmux.wait("lab · 1 Dashboard")
        cli(tmux, tmp_path, "sets", "create", "b-cli", "--dataset", "demo", "--n", "2",
            "--seed", "1", "--exclude", "a-tiny")
        tmux.keys("console", "3")
        tmux.wait("b-cli ")  # the Sets view re-read when shown again
        fill_new_set(tmux, "c-con", 3, 4)
        tmux.keys("console", "Enter")
        tmux.wait("Create dev question set c-con from dataset demo?")
        tmux.keys("console", "y")
        tmux.wait("created dev set 'c-con': 3 questions")
        tmux.keys("console", "Escape")
        enqueue = tmux.wait("c-con  3 q, demo")  # back on Enqueue, the new set is picked
        assert "lab · 3 Enqueue" in enqueue
        tmux.keys("console", "q")
        tmux.wait("LAB-EXIT=0")
    finally:
        tmux.close()
