"""End to end in tmux: the real `lab` process on a fresh lab.db (answer the confirmation),
a sim grid queued and a worker started in another tmux window, steps arriving on Live,
Results (7), export (e), quit (q). Skipped where tmux is missing.

The grid is queued with `lab enqueue` in the second window; the Enqueue screen (3) has
its own Pilot tests.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.queue_helpers import ROOT, SLOW_REGISTRY

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


class Tmux:
    """One private tmux server (its own socket) with helpers to type and read."""

    def __init__(self, tmp: Path) -> None:
        self.socket = str(tmp / "tmux.sock")
        self.env = dict(os.environ, PYTHONPATH=str(ROOT), NO_COLOR="1", TERM="xterm-256color")
        self.env.pop("LAB_DB", None)
        self.env.pop("LAB_CONFIG", None)

    def run(self, *args: str) -> str:
        out = subprocess.run(["tmux", "-S", self.socket, *args], capture_output=True,
                             text=True, env=self.env, timeout=10)
        return out.stdout

    def start(self, window: str, command: str, cwd: Path) -> None:
        if window == "console":
            self.run("new-session", "-d", "-s", "e2e", "-n", window, "-x", "80", "-y", "24",
                     "-c", str(cwd), command)
        else:
            self.run("new-window", "-d", "-t", "e2e", "-n", window, "-c", str(cwd), command)

    def keys(self, window: str, *keys: str) -> None:
        self.run("send-keys", "-t", f"e2e:{window}", *keys)

    def screen(self, window: str = "console") -> str:
        return self.run("capture-pane", "-p", "-t", f"e2e:{window}")

    def wait(self, text: str, window: str = "console", timeout: float = 20.0) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            screen = self.screen(window)
            if text in screen:
                return screen
            time.sleep(0.1)
        raise AssertionError(f"{text!r} never appeared in {window}:\n{self.screen(window)}")

    def close(self) -> None:
        self.run("kill-server")


def test_console_end_to_end_in_tmux(tmp_path: Path) -> None:
    (tmp_path / "lab.toml").write_text(SLOW_REGISTRY.format(latency=150))
    lab = f"{sys.executable} -m console.cli"
    tmux = Tmux(tmp_path)
    try:
        tmux.start("console", f"{lab}; echo LAB-EXIT=$?; sleep 60", tmp_path)
        tmux.wait("lab.db does not exist; create it? [y/N]")
        tmux.keys("console", "y", "Enter")
        tmux.wait("Workers")  # the dashboard
        assert (tmp_path / "lab.db").exists()
        tmux.start("shell", f"{lab} sets create tiny --dataset demo --n 2 --seed 0 && "
                            f"{lab} enqueue --models sim-slow --conditions none "
                            f"--regimes persistent --set tiny --run e2e && "
                            f"{lab} worker --concurrency 1 --until-idle; sleep 60", tmp_path)
        tmux.wait("queued 1 cell,", window="shell")
        tmux.keys("console", "5")
        first = tmux.wait("step 1 ")
        assert "sim-slow / none / persistent" in first
        later = tmux.wait("step 3 ")  # steps keep arriving while the worker runs
        assert "FAILED" in later and "useless streak" in later
        tmux.keys("console", "4")
        tmux.wait("run e2e")
        tmux.wait("2/2", timeout=30)  # the worker stored both episodes
        tmux.keys("console", "7")
        tmux.wait("sim-slow", timeout=30)
        tmux.keys("console", "e")
        tmux.wait("wrote", timeout=30)
        assert list((tmp_path / "lab-exports").glob("*.csv"))
        tmux.keys("console", "q")
        tmux.wait("LAB-EXIT=0")
    finally:
        tmux.close()
