"""Waiting for a condition without betting on the machine's speed.

A test that waits for something another thread or process does polls for it with a
deadline far above any load (60 s by default) instead of sleeping a guessed time: on
an idle machine it returns as soon as the condition holds, on a loaded one it waits.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

PATIENCE_S = 60.0
"""How long a wait may take before the test fails: far above any load."""


def wait_until(cond: Callable[[], Any], what: str, timeout: float = PATIENCE_S,
               poll_s: float = 0.02) -> Any:
    """Poll `cond` until it returns something truthy; return that.

    Raises:
        AssertionError: naming `what` when `timeout` seconds pass first.
    """
    deadline = time.monotonic() + timeout
    while not (got := cond()):
        assert time.monotonic() < deadline, f"waited {timeout:g} s for {what}"
        time.sleep(poll_s)
    return got


async def pause_until(pilot: Any, cond: Callable[[], Any], what: str,
                      timeout: float = PATIENCE_S, poll_s: float = 0.05) -> Any:
    """Like `wait_until` for a Textual Pilot: let the app run between polls."""
    deadline = time.monotonic() + timeout
    while not (got := cond()):
        assert time.monotonic() < deadline, f"waited {timeout:g} s for {what}"
        await pilot.pause(poll_s)
    return got


async def async_until(cond: Callable[[], Any], what: str, timeout: float = PATIENCE_S,
                      poll_s: float = 0.02) -> Any:
    """Like `wait_until` inside an event loop."""
    deadline = time.monotonic() + timeout
    while not (got := cond()):
        assert time.monotonic() < deadline, f"waited {timeout:g} s for {what}"
        await asyncio.sleep(poll_s)
    return got
