"""Shared fixtures: a temporary lab.db and no user configuration leaking in."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from console.cli.environment import set_defaults

# Bytecode caches are written even where PYTHONDONTWRITEBYTECODE is set (a container's
# usual default): without them each xdist worker rewrote the asserts of every test module
# and compiled lab's modules from source again on every run (collecting the suite: 12.8 s
# of CPU per worker, 5.0 s with the caches), and each `lab` subprocess compiled what it
# imports. The caches go to the gitignored __pycache__ folders; subprocesses only read them.
sys.dont_write_bytecode = False

# The suite runs with the environment `lab` gives itself before numpy is imported
# (console/cli/environment.py: OpenBLAS on one thread, numpy without huge pages), set
# here in pytest's first process, so its xdist workers and every process a test starts
# inherit it: OpenBLAS's idle threads spun about 0.1 s of a core in each process that
# imported numpy.
set_defaults()


def pytest_sessionstart(session: pytest.Session) -> None:
    """Collect the youngest generation after 10,000 net new objects, not Python's 700,
    as a `lab worker` does (`jobs.worker.YOUNG_OBJECTS`). A test process keeps several
    hundred thousand objects alive (modules, the collected suite, module fixtures), and
    with the default each worker spent 5-21 s of the suite in the collector, most of it
    in full collections scanning them; with this, 4-9 s. Garbage in cycles waits a
    little longer to be freed; each test still ends with the collector as it began
    (`_collector_as_it_was`)."""
    import gc

    from jobs.worker import YOUNG_OBJECTS

    _, older, oldest = gc.get_threshold()
    gc.set_threshold(YOUNG_OBJECTS, older, oldest)


def pytest_configure(config: pytest.Config) -> None:
    """Two full collections, not pytest's five, for the garbage left at the session's end
    (where pytest reports a finalizer's error): the first finds the garbage, the second
    what those finalizers freed. In a worker's heap of about 700,000 objects each takes
    about 0.9 s; over the whole suite (every collection timed, four workers) the first
    found 8,000-560,000 unreachable objects and the second to fifth none in any worker,
    so the last three cost 11 s of CPU and nearly 3 s at the end of each run."""
    try:
        from _pytest.unraisableexception import gc_collect_iterations_key
    except ImportError:  # a pytest that does not collect at the session's end
        return
    config.stash[gc_collect_iterations_key] = 2


@pytest.fixture(autouse=True)
def _no_user_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Block LAB_DB / LAB_CONFIG from the environment and run in a temp dir."""
    monkeypatch.delenv("LAB_DB", raising=False)
    monkeypatch.delenv("LAB_CONFIG", raising=False)
    monkeypatch.chdir(tmp_path)


@pytest.fixture(autouse=True)
def _fresh_endpoint_health() -> Iterator[None]:
    """No endpoint stays marked down from one test to the next (ports are reused)."""
    from core.models.health import HEALTH

    HEALTH.reset()
    yield
    HEALTH.reset()


@pytest.fixture(autouse=True)
def _collector_as_it_was() -> Iterator[None]:
    """`lab worker` run in-process tunes the garbage collector (`jobs.worker.tune_collector`:
    it freezes the objects alive then): each test ends with the collector as it began,
    so no test's garbage outlives it."""
    import gc

    threshold = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*threshold)


@pytest.fixture(autouse=True)
def _notices_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every notice a console says stays readable to the test (`tests.helpers.notices`)."""
    from tests.helpers.notices import keep_notices

    keep_notices(monkeypatch)


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    """Path of a fresh lab.db in the test's temporary directory."""
    return tmp_path / "lab.db"


@pytest.fixture(scope="session")
def trajectories_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The Trajectories and Results screens' lab.db, built once per session: copy it."""
    from tests.helpers.trajectories import build_trajectories_db

    return build_trajectories_db(tmp_path_factory.mktemp("traj") / "lab.db")


@pytest.fixture(scope="session")
def cost_grid(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The cost tables' priced grid of every arm kind, built once per session: copy it
    before changing it."""
    from tests.helpers.cost_grid import build_cost_grid

    return build_cost_grid(tmp_path_factory.mktemp("cost") / "lab.db")


@pytest.fixture(scope="session")
def prereg_built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The Pre-registration screen's lab.db (a frozen A1 that ran, a draft A2), built once
    per session: copy it (`tests.helpers.console.copy_db`)."""
    from tests.helpers.console import build_prereg_lab

    return build_prereg_lab(tmp_path_factory.mktemp("prereg") / "lab.db")


@pytest.hookimpl(tryfirst=True)  # before xdist names each test's group
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tests of a module that use one of its module-scoped fixtures run on one xdist
    worker (group `module:PATH`), so the fixture is built once, not once per worker that
    takes one of its tests: a figures module drew every figure in three formats on each of
    the four workers. Tests already in a group keep it."""
    for item in items:
        if item.get_closest_marker("xdist_group") is not None:
            continue
        info = getattr(item, "_fixtureinfo", None)
        if info is None:
            continue
        if any(defs and defs[-1].scope == "module" for defs in info.name2fixturedefs.values()):
            item.add_marker(pytest.mark.xdist_group(f"module:{item.path.name}"))
