"""Loopback apps that hold calls on a condition instead of a guessed delay."""

from __future__ import annotations

import asyncio
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
