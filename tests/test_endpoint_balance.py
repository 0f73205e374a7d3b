"""A model's episodes spread over its endpoints by least outstanding calls, not in turn.

An endpoint that slows down keeps its calls in flight, so new episodes go to the
others: here one server holds every call it gets until all the other episodes are
done, and must end up with only the episodes it took before it was seen to be slow
(round robin would give it half). An endpoint that goes down is skipped without
errors: tests/test_endpoint_outages.py. Counts come from the servers' side.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.backends import openai_spec
from tests.helpers.waiting import wait_until
from tests.servers import LoopbackServer, OpenAIApp
from tests.servers.drive import drive

EPISODES = 20
CALLS = 2
"""Calls per episode: the loopback responder searches once, then finishes."""


class HoldApp(OpenAIApp):
    """Holds every chat call until `release` (a server that has become very slow)."""

    def __init__(self) -> None:
        super().__init__(record=False)
        self.held = 0
        self._gate: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    async def _answer(self, body: dict[str, Any], fault: Any) -> Any:
        if self._gate is None:
            self._gate, self._loop = asyncio.Event(), asyncio.get_running_loop()
        self.held += 1
        try:
            await self._gate.wait()
        finally:
            self.held -= 1
        return await super()._answer(body, fault)

    def release(self) -> None:
        if self._loop is not None and self._gate is not None:
            self._loop.call_soon_threadsafe(self._gate.set)


@pytest.mark.timeout(180)
def test_a_slow_endpoint_gets_only_the_episodes_it_took_before_it_was_slow(db_path: Path) -> None:
    slow, fast = HoldApp(), OpenAIApp(record=False)
    with LoopbackServer(slow) as a, LoopbackServer(fast) as b:

        def release_when_the_rest_are_done() -> None:
            # every episode not held at the slow server has made both its calls elsewhere
            wait_until(lambda: slow.held and fast.calls == CALLS * (EPISODES - slow.held),
                       "the fast endpoint to serve every other episode", timeout=120)
            slow.release()

        releaser = threading.Thread(target=release_when_the_rest_are_done, daemon=True)
        releaser.start()
        try:
            stored, rows = drive(openai_spec(a.url, b.url, concurrency=4), db_path,
                                 n=EPISODES, condition="none", regime="clean")
        finally:
            slow.release()
        releaser.join(10)
    assert stored == EPISODES and all(r["error"] is None for r in rows)
    on_slow = sum(r["server"] == f"{a.url}/v1" for r in rows)
    # concurrency 4: the slow server took at most the 2 of the first 4 episodes that
    # started before any call was in flight; in turn it would have had 10
    assert 1 <= on_slow <= 2, on_slow
    assert slow.calls == CALLS * on_slow and fast.calls == CALLS * (EPISODES - on_slow)
