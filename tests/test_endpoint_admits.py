"""A new item enters the outage wait only while no endpoint of its model is up.

`jobs.pump.endpoint_ready` asks the client's `admits` first and starts the item at once
when an endpoint is up (the wait would return at once; entering it cost every episode a
cut-able scope and three coroutines); only a client that does not admit is waited on.
And `Failover.up` lets a call skip its own wait the same way. The outage behaviour end
to end is tests/test_endpoint_outages.py's.
"""

from __future__ import annotations

import asyncio
from typing import Any, cast

from core.models.health import Failover
from core.models.openai_compat import OpenAIClient
from core.models.registry import make_client
from core.models.retry import RetryPolicy
from jobs.pump import endpoint_ready
from tests.helpers.backends import openai_spec


class Client:
    """A client whose endpoints are up or not, counting the waits it was asked for."""

    def __init__(self, up: bool) -> None:
        self.up = up
        self.waited = 0

    def admits(self) -> bool:
        return self.up

    async def ready(self, give_up: object = None) -> None:
        self.waited += 1


def test_an_item_waits_only_when_its_client_does_not_admit() -> None:
    for up, waits in ((True, 0), (False, 1)):
        client = Client(up)
        assert asyncio.run(endpoint_ready(cast(Any, client))) is True
        assert client.waited == waits
        assert asyncio.run(endpoint_ready(cast(Any, Client(up)), lambda: True)) is False


def test_an_openai_client_admits_while_one_endpoint_is_up() -> None:
    client = cast(OpenAIClient, make_client(openai_spec("http://127.0.0.1:9",
                                                        "http://127.0.0.1:10")))
    first, second = client.breakers.values()
    policy = RetryPolicy()
    failover = Failover(client.endpoints, lambda e: client.breakers[e.url],
                        lambda: client.endpoints[0], lambda e: None, policy)
    try:
        assert client.admits() and failover.up()
        first.mark_down(policy)
        assert client.admits() and not failover.up()
        second.mark_down(policy)
        assert not client.admits()
    finally:
        first.mark_up()
        second.mark_up()
    assert client.admits() and failover.up()
