"""What a stopped model call says: its place, redacted, and why it did not run on.

`core.models.retry.call_with_retries` makes the text of a call's place only when a stop
interrupts it (not for every call), so these check that the text is still there, still
redacted, for a call not started and for one cut off in flight; and that a scope's own
timeout, with no cut, stays a TimeoutError. No clock decides: the cut is made while the
call waits on an event that never comes.
"""

from __future__ import annotations

import asyncio

import httpx
import pytest

from core.errors import ModelError
from core.models.retry import CALL_STOP, CallStop, RetryPolicy, StatusFailure, call_with_retries

PLACE = "loop at http://user:hunter2-secret@127.0.0.1:9/v1?api_key=sk-abcdef123456"
SHOWN = "loop at http://127.0.0.1:9/v1?api_key=***"
POLICY = RetryPolicy(timeout_s=60.0, max_retries=2, backoff_s=0.01)


async def _never() -> None:
    await asyncio.Event().wait()


def _call(stop: CallStop, where: str | object = PLACE) -> ModelError:
    async def go() -> ModelError:
        CALL_STOP.set(stop)
        task = asyncio.ensure_future(call_with_retries(
            _never, POLICY, where, (httpx.HTTPError, StatusFailure)))  # type: ignore[arg-type]
        await asyncio.sleep(0)  # the call is in flight
        if not stop.requested:
            stop.cut()
        with pytest.raises(ModelError) as info:
            await task
        return info.value

    return asyncio.run(go())


def test_a_call_not_started_says_where_redacted() -> None:
    stop = CallStop()
    stop.request()
    err = _call(stop)
    assert err.reason == "interrupted"
    assert str(err) == f"{SHOWN}: the worker is stopping: call not started"


def test_a_call_cut_off_says_where_redacted() -> None:
    err = _call(CallStop(), lambda: PLACE)
    assert err.reason == "interrupted"
    assert str(err) == f"{SHOWN}: the worker stopped: call cut off"


def test_a_scope_that_times_out_uncut_is_a_timeout() -> None:
    async def go() -> None:
        async with CallStop().scope(PLACE, 0):
            await _never()

    with pytest.raises(TimeoutError):
        asyncio.run(go())


def test_a_timeout_raised_inside_a_cut_scope_is_the_interruption() -> None:
    async def go() -> None:
        stop = CallStop()
        stop.cut_off = True
        async with stop.scope(lambda: "here", None):
            raise TimeoutError("the body's own")

    with pytest.raises(ModelError, match="^here: the worker stopped: call cut off$"):
        asyncio.run(go())
