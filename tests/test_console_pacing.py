"""A screen whose reads grow with lab.db re-reads after a change no sooner than its last
read took divided by the share of a core it may take (`console.pacing`); `r` reads at
once. The read's cost is simulated on an injected clock, never measured as time."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import cast

import pytest
from sqlite_utils import Database
from textual.pilot import Pilot

from console.app import LabApp
from console.pacing import Pacer
from console.screens import base
from console.screens import jobs as jobs_screen
from console.screens.base import read_stamp
from console.screens.jobs import JobsScreen
from core import store
from core.store import jobs as ledger
from tests.helpers.console import FIXED_TS, build, console_app, settle
from tests.helpers.waiting import pause_until


class Clock:
    """Monotonic time plus what the simulated reads added."""

    def __init__(self) -> None:
        self.added = 0.0

    def __call__(self) -> float:
        return time.monotonic() + self.added


def test_a_pacer_waits_the_last_read_over_its_share() -> None:
    now = [100.0]
    pacer = Pacer(clock=lambda: now[0], share=0.1)
    assert pacer.wait_s() == 0  # nothing read yet

    def read() -> str:
        assert pacer.wait_s() == 0  # under way for no time yet
        now[0] += 1.0
        assert pacer.wait_s() == pytest.approx(9.0)  # still reading: 1 s so far
        now[0] += 1.0
        return "rows"

    assert pacer.timed(read) == "rows"
    assert pacer.began == 100.0 and pacer.took == pytest.approx(2.0) and pacer.running == {}
    assert pacer.wait_s() == pytest.approx(18.0)  # 2 s of reading: the next 20 s after
    now[0] = 119.5
    assert pacer.wait_s() == pytest.approx(0.5)
    now[0] = 120.0
    assert pacer.wait_s() == 0

    def tick(seconds: float) -> None:
        now[0] += seconds

    def first() -> None:  # two pieces in turn beside a long one: one read of all three
        pacer.timed(lambda: tick(0.5))
        pacer.timed(lambda: tick(0.25))
        tick(1.0)

    pacer.timed(first)
    assert pacer.began == 120.0 and pacer.running == {}
    assert pacer.took == pytest.approx(0.5 + 0.25 + 1.75)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build(tmp_path_factory.mktemp("pacing") / "lab.db")


@pytest.fixture
def slow_jobs(monkeypatch: pytest.MonkeyPatch) -> tuple[Clock, list[float]]:
    """Every read of the Jobs view takes 2 s on the clock its pacer reads."""
    clock, reads = Clock(), []
    read_jobs = jobs_screen.read_jobs

    def slow(*args: object) -> object:
        reads.append(clock())
        clock.added += 2.0
        return read_jobs(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(jobs_screen, "read_jobs", slow)
    monkeypatch.setattr(base, "Pacer", lambda: Pacer(clock=clock))
    return clock, reads


async def _quiet(pilot: Pilot[None], reads: list[float]) -> int:
    """Wait until the console's first poll was answered and no read runs; the reads so
    far."""
    app, screen = cast(LabApp, pilot.app), cast(JobsScreen, pilot.app.screen)
    await pause_until(pilot, lambda: app._version._last is not None and reads,
                      "the first poll and read")
    await settle(pilot)
    await pause_until(pilot, lambda: cast(Pacer, screen.pacer).running == {}, "no read running")
    return len(reads)


async def _change(pilot: Pilot[None], db: Database) -> None:
    """Commit to lab.db from elsewhere and wait until the console has seen it."""
    app = cast(LabApp, pilot.app)
    seen = app.changes
    ledger.register_worker(db, f"ghost:{seen}")
    await pause_until(pilot, lambda: app.changes > seen, "the change seen")
    await settle(pilot)


@pytest.mark.asyncio
async def test_the_jobs_view_reads_again_when_its_pacer_allows(
        built: Path, slow_jobs: tuple[Clock, list[float]]) -> None:
    """A change just after a 2 s read waits (put off, not dropped); `r` reads at once;
    a change once the 20 s have passed reads at once."""
    clock, reads = slow_jobs
    app = console_app(built, first_screen="jobs", poll_s=0.05)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = cast(JobsScreen, app.screen)
        n = await _quiet(pilot, reads)
        db = store.connect(built)
        await _change(pilot, db)
        assert len(reads) == n and screen._paced is not None
        await pilot.press("r")
        await pause_until(pilot, lambda: len(reads) == n + 1, "the read `r` asks for")
        assert screen._paced is None
        await pause_until(pilot, lambda: cast(Pacer, screen.pacer).running == {}, "the read's end")
        clock.added += 25.0  # the 20 s a 2 s read waits have passed
        await _change(pilot, db)
        await pause_until(pilot, lambda: len(reads) == n + 2, "the read after the wait")


@pytest.mark.asyncio
async def test_a_read_put_off_happens_once_the_pacer_allows(
        built: Path, slow_jobs: tuple[Clock, list[float]],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A change during the wait sets one timer for the rest of the wait (a second change
    adds none); when it fires after the wait, the view reads."""
    clock, reads = slow_jobs
    app = console_app(built, first_screen="jobs", poll_s=0.05)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = cast(JobsScreen, app.screen)
        n = await _quiet(pilot, reads)
        if screen._paced is not None:  # the first poll's change, put off: read it now
            screen.refresh_data()
            await pause_until(pilot, lambda: len(reads) == n + 1
                              and cast(Pacer, screen.pacer).running == {}, "the read")
            n += 1
        timers: list[tuple[float, Callable[[], None]]] = []

        class Pending:
            def stop(self) -> None:
                timers.clear()

        def set_timer(delay: float, callback: Callable[[], None]) -> Pending:
            timers.append((delay, callback))
            return Pending()

        monkeypatch.setattr(screen, "set_timer", set_timer)
        db = store.connect(built)
        await _change(pilot, db)
        await _change(pilot, db)
        assert len(reads) == n and len(timers) == 1
        delay, fire = timers[0]
        assert 15.0 < delay <= 20.0  # 2 s read, a tenth of a core: 20 s from its start
        fire()  # early (a busy loop may fire late, never early; the view checks again)
        assert len(reads) == n and screen._paced is not None and len(timers) == 2
        clock.added += delay
        timers[-1][1]()
        await pause_until(pilot, lambda: len(reads) == n + 1, "the read put off")


@pytest.mark.asyncio
async def test_a_paced_screen_shown_again_after_a_change_reads_at_once(
        built: Path, slow_jobs: tuple[Clock, list[float]]) -> None:
    """Shown again after another process wrote, the Jobs view reads at once, however
    recent its last 2 s read: being shown again is the researcher's own act, as a key."""
    clock, reads = slow_jobs
    app = console_app(built, first_screen="jobs", poll_s=0.05)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = cast(JobsScreen, app.screen)
        n = await _quiet(pilot, reads)
        screen.pacer = Pacer(clock=clock, began=clock(), took=100.0)  # next in 1,000 s
        await pilot.press("1")
        await pause_until(pilot, lambda: app.screen is not screen, "the Dashboard")
        await _change(pilot, store.connect(built))
        assert len(reads) == n and screen.pacer.wait_s() > 0
        await pilot.press("4")
        await pause_until(pilot, lambda: len(reads) == n + 1, "the read on showing again")


@pytest.mark.asyncio
async def test_a_key_that_reads_moves_the_headers_time_and_takes_the_put_off_read(
        built: Path, slow_jobs: tuple[Clock, list[float]]) -> None:
    """Opening a grid reads every grid again: the header's `read` time moves to it, and
    the read a change had put off is done by it (not read again later)."""
    _, reads = slow_jobs
    now = [FIXED_TS]  # the console's clock, which stamps each read
    app = console_app(built, first_screen="jobs", poll_s=0.05, clock=lambda: now[0])
    async with app.run_test(size=(100, 30)) as pilot:
        screen = cast(JobsScreen, app.screen)
        n = await _quiet(pilot, reads)
        await _change(pilot, store.connect(built))
        assert len(reads) == n and screen._paced is not None
        assert screen.read_at == FIXED_TS
        now[0] = FIXED_TS + 3_723.0  # 1 h 2 min 3 s later
        node = next(nd for key, nd in screen._tree_keys.items() if key[0] == "grid")
        node.expand()
        await pause_until(pilot, lambda: len(reads) == n + 1, "the read opening the grid asks")
        assert screen._paced is None and screen._read_changes == app.changes
        assert screen.read_at == now[0]
        shown = str(screen.sub_title)
        assert read_stamp(now[0]) in shown and read_stamp(FIXED_TS) not in shown
