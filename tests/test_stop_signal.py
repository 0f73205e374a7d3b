"""The stop signal as `jobs.stop_signal` sees it: delivered once the kernel wrote its byte.

`delivered` is asked before every model call, retry and new episode, from the worker's
Huey threads and its event loop thread at once, so it must be cheap (no raise while
nothing came), safe from several threads, and still see a SIGTERM whose Python handler
has not run. The end-to-end promise (no call starts after the signal) is
tests/test_stop_starts_nothing.py's.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator

import pytest

from jobs.stop_signal import StopSignal


@pytest.fixture
def installed() -> Iterator[StopSignal]:
    """A StopSignal installed in this (main) thread, with handlers for TERM and USR1 that
    do nothing (so raising them here ends no process), all put back afterwards."""
    previous = {s: signal.signal(s, lambda *_: None) for s in (signal.SIGTERM, signal.SIGUSR1)}
    stop = StopSignal.install()
    assert stop is not None
    try:
        yield stop
    finally:
        stop.uninstall()
        for s, handler in previous.items():
            signal.signal(s, handler)


def test_nothing_delivered_until_a_stop_signal_then_it_stays(installed: StopSignal) -> None:
    assert not installed.delivered()
    signal.raise_signal(signal.SIGUSR1)  # a byte in the pipe, but not a stop
    assert not installed.delivered()
    assert not installed.delivered()
    signal.raise_signal(signal.SIGTERM)
    assert installed.delivered()
    assert installed.delivered()


def test_asked_from_many_threads_at_once(installed: StopSignal) -> None:
    errors: list[BaseException] = []
    seen: list[bool] = []

    def ask() -> None:
        try:
            seen.extend(installed.delivered() for _ in range(20_000))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=ask) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:1]
    assert len(seen) == 80_000 and not any(seen)
    signal.raise_signal(signal.SIGTERM)
    got: list[bool] = []
    other = threading.Thread(target=lambda: got.append(installed.delivered()))
    other.start()
    other.join()
    assert got == [True]


def test_uninstalled_is_never_delivered() -> None:
    previous = signal.signal(signal.SIGTERM, lambda *_: None)
    try:
        stop = StopSignal.install()
        assert stop is not None
        stop.uninstall()
        signal.raise_signal(signal.SIGTERM)
        assert not stop.delivered()
    finally:
        signal.signal(signal.SIGTERM, previous)
