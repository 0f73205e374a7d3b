"""`lab worker` tunes the cyclic garbage collector before it runs.

Each pause of the collector delays every reply that arrives meanwhile: a full collection
of the worker's heap (modules, registry, queue) took 30-100 ms at concurrency 128, and
the youngest generation was scanned every 700 new objects. `tune_collector` freezes
start-up's objects out of the scans and collects the youngest generation every
`YOUNG_OBJECTS`.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path

import pytest

from console.cli import main
from core import store
from jobs.settings import WorkerSettings
from jobs.worker import YOUNG_OBJECTS


@pytest.fixture
def untuned() -> Iterator[None]:
    threshold = gc.get_threshold()
    gc.unfreeze()  # another test's freeze must not answer for this one
    gc.set_threshold(700, *threshold[1:])
    yield
    gc.unfreeze()
    gc.set_threshold(*threshold)


def test_lab_worker_tunes_the_collector_before_it_runs(db_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch,
                                                       untuned: None) -> None:
    store.connect(db_path).conn.close()
    seen: list[tuple[int, tuple[int, ...]]] = []

    def run_worker(settings: WorkerSettings, workers: int = 1, until_idle: bool = False
                   ) -> None:  # what the worker would find
        seen.append((gc.get_freeze_count(), gc.get_threshold()))

    monkeypatch.setattr("console.cli.queue.run_worker", run_worker)
    assert gc.get_freeze_count() == 0
    before = gc.get_threshold()
    assert main(["--db", str(db_path), "worker", "--until-idle"]) == 0
    (frozen, threshold), = seen
    assert frozen > 1000  # the modules and classes at least
    assert threshold == (YOUNG_OBJECTS, *before[1:])  # the older generations as they were
