"""Loopback apps that hold calls on a condition instead of a guessed delay."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

from tests.servers import OpenAIApp


class FillGate(OpenAIApp):
    """An OpenAIApp that holds its first calls until `cap` of them wait at once (or
    60 s pass), then lets them in together: a concurrency cap is reached however slowly
    a loaded machine sends the calls, and `peak` still shows any call past it. Later
    calls pass at once."""

    def __init__(self, cap: int, **kw: Any) -> None:
        super().__init__(**kw)
        self.cap, self.waiting = cap, 0
        self.full: asyncio.Event | None = None  # made on the server's loop

    async def _answer(self, body: dict[str, Any], fault: Any) -> Any:
        if self.full is None:
            self.full = asyncio.Event()
        self.waiting += 1
        if self.waiting >= self.cap:
            self.full.set()
        try:
            await asyncio.wait_for(self.full.wait(), 60)
        except TimeoutError:
            pass  # the cap was never reached: `peak` tells the test
        return await super()._answer(body, fault)


def held_until(go: threading.Event, real: Callable[..., Any], what: str
               ) -> Callable[..., Any]:
    """`real`, made to wait for `go` first: a function that starts work on threads and
    returns (`start_fits`, `start_frame_counts`) is shown to return before that work runs
    when the test sets `go` only after the call has returned. Unset after 60 s (only a
    starter that waited for its work leaves it so), it fails saying `what` waited."""
    def held(*args: Any) -> Any:
        if not go.wait(60):
            raise AssertionError(f"{what} waited for its work before returning")
        return real(*args)

    return held
