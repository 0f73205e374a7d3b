"""Driving the real `lab console` in a private tmux server (the two tmux tests).

Every wait polls the pane until its text appears, with a deadline generous enough for a
loaded machine (PATIENCE_S); the few short sleeps in the tests only pace keys (an Escape
followed at once by a key reads as alt+key; keys typed faster than the console reads
them can land out of order).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from tests.helpers.queue import ROOT
from tests.helpers.waiting import PATIENCE_S


def registry(latency_ms: int) -> str:
    """lab.toml with one sim whose name sorts after every built-in sim (so `End` reaches
    it in Enqueue's model list), answering after `latency_ms` per call."""
    return f"""
[models.zz-slow]
backend = "sim"
policy = "own_count"
k = 5
latency_ms = {latency_ms}
"""


class Tmux:
    """One private tmux server (its own socket) with helpers to type and read."""

    def __init__(self, tmp: Path) -> None:
        self.socket = str(tmp / "tmux.sock")
        self.env = dict(os.environ, PYTHONPATH=str(ROOT), NO_COLOR="1", TERM="xterm-256color")
        self.env.pop("LAB_DB", None)
        self.env.pop("LAB_CONFIG", None)

    def run(self, *args: str) -> str:
        out = subprocess.run(["tmux", "-S", self.socket, *args], capture_output=True,
                             text=True, env=self.env, timeout=60)
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

    def wait(self, text: str | tuple[str, ...], window: str = "console",
             timeout: float = PATIENCE_S) -> str:
        """The screen once `text` shows on it (every one of them, given several)."""
        texts = (text,) if isinstance(text, str) else text
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            screen = self.screen(window)
            if all(t in screen for t in texts):
                return screen
            time.sleep(0.1)
        raise AssertionError(f"{text!r} never appeared in {window}:\n{self.screen(window)}")

    def wait_gone(self, text: str, window: str = "console",
                  timeout: float = PATIENCE_S) -> None:
        deadline = time.monotonic() + timeout
        while text in self.screen(window):
            if time.monotonic() > deadline:
                raise AssertionError(f"{text!r} stayed in {window}:\n{self.screen(window)}")
            time.sleep(0.1)

    def close(self) -> None:
        self.run("kill-server")


def cli(tmux: Tmux, cwd: Path, *args: str) -> None:
    """`lab ARGS` in another process, on the console's lab.db."""
    subprocess.run([sys.executable, "-m", "console.cli", *args], cwd=cwd, env=tmux.env,
                   check=True, capture_output=True, timeout=PATIENCE_S * 2)


def retry(tmux: Tmux, attempt: Callable[[], object], check: str | tuple[str, ...], what: str,
          tries: int = 3, timeout: float = 20) -> str:
    """Run `attempt()` until `check` shows on the console (every one of them, given several):
    a key lost to a busy console, or one that reached the field it was leaving (a key typed
    right after Tab can land before the focus moves)."""
    for _ in range(tries):
        attempt()
        try:
            return tmux.wait(check, timeout=timeout)
        except AssertionError:
            continue
    raise AssertionError(f"{what}:\n{tmux.screen()}")


SETS_READ = "enter on a dataset: a set from it"
"""The Sets view's status line once it has read its datasets: `c` works from then on
(before, it says there is no dataset to draw from)."""


def open_sets(tmux: Tmux) -> None:
    """From Enqueue, open the Sets view (out of any field first, then s) and wait until it
    has read its datasets (`SETS_READ`), typed again if the key was lost."""

    def attempt() -> None:
        tmux.keys("console", "Escape")
        time.sleep(0.5)  # an Escape followed at once by a key reads as alt+key
        tmux.keys("console", "s")

    retry(tmux, attempt, SETS_READ, "s did not open the Sets view")


def fill_new_set(tmux: Tmux, name: str, n: int, seed: int) -> None:
    """Open the Sets view's new-set form (c) and type its name, n and seed, until all
    three show in their rows: a form left half-typed is cancelled and typed again."""

    def fill() -> None:
        if "New question set" in tmux.screen():
            tmux.keys("console", "Escape")
            tmux.wait_gone("New question set")
        tmux.keys("console", "c")
        try:
            tmux.wait("New question set", timeout=10)
        except AssertionError:
            return  # the key came too early: typed again on the next try
        for keys in (["-l", name], ["Tab"], ["Tab"], ["-l", str(n)], ["Tab"],
                     ["-l", str(seed)]):
            tmux.keys("console", *keys)
            time.sleep(0.3)

    retry(tmux, fill, (f"name     {name} ", f"n        {n} ", f"seed     {seed} "),
          "could not fill the new-set form")
