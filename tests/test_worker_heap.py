"""`lab worker` moves its start-up objects out of the cyclic GC's scans before it runs.

A full collection of the worker's heap (modules, registry, queue) took 30-100 ms at
concurrency 128 while no reply was read; `freeze_startup_objects` (gc.freeze) leaves
only what the jobs create to scan.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from console.cli import main
from core import store


@pytest.fixture
def unfrozen() -> Iterator[None]:
    gc.unfreeze()  # another test's freeze must not answer for this one
    yield
    gc.unfreeze()


def test_lab_worker_freezes_its_startup_objects_before_it_runs(db_path, monkeypatch, unfrozen):
    store.connect(db_path).conn.close()
    seen: list[int] = []

    def run_worker(settings, workers=1, until_idle=False):  # what the worker would find
        seen.append(gc.get_freeze_count())

    monkeypatch.setattr("console.cli.queue.run_worker", run_worker)
    assert gc.get_freeze_count() == 0
    assert main(["--db", str(db_path), "worker", "--until-idle"]) == 0
    assert len(seen) == 1 and seen[0] > 1000  # the modules and classes at least
