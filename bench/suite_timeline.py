"""Where the test suite's wall time goes at its start and end (docs/performance.md, "The
suite's start and end"): the whole suite run as README runs it, with this module loaded
as a pytest plugin in the controller and each xdist worker.

It prints, in seconds from the start: when each worker began its first test and ended its
last, each of the full collections pytest runs at a worker's session end (how long, how
many unreachable objects it found, the heap's size), when each worker reached its exit
handlers, and when pytest returned, then pytest's own last line.

Usage: python bench/suite_timeline.py [--collections N] [PYTEST ARGS…]
  --collections N: run N collections at each session end, whatever pytest asks for
  (tests/conftest.py asks for two; pytest's own default is five)
"""

from __future__ import annotations

import atexit
import gc
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

_DIR = "SUITE_TIMELINE_DIR"
_FORCED = "SUITE_TIMELINE_COLLECTIONS"
_MARKS: dict[str, Any] = {"tests": [], "collections": []}


def _worker() -> str:
    return os.environ.get("PYTEST_XDIST_WORKER", "controller")


def _save() -> None:
    _MARKS["exit"] = time.time()
    folder = os.environ.get(_DIR)
    if folder:
        Path(folder, f"{_worker()}.json").write_text(json.dumps(_MARKS), encoding="utf-8")


def pytest_runtest_logstart(nodeid: str) -> None:
    _MARKS["tests"].append([nodeid, time.time(), None])


def pytest_runtest_logfinish(nodeid: str) -> None:
    if _MARKS["tests"] and _MARKS["tests"][-1][0] == nodeid:
        _MARKS["tests"][-1][2] = time.time()


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    """Time each of the collections pytest asks for at the session's end, and mark the
    moment the process reaches its exit handlers (this one registered first, so run
    last)."""
    import _pytest.unraisableexception as unraisable

    forced = int(os.environ.get(_FORCED, "0"))

    def timed(iterations: int) -> None:
        for _ in range(forced or iterations):
            start, objects = time.time(), len(gc.get_objects())
            found = gc.collect()
            _MARKS["collections"].append([start, time.time(), found, objects])

    unraisable.gc_collect_harder = timed
    atexit.register(_save)


def _report(folder: Path, start: float, end: float) -> None:
    for path in sorted(folder.glob("*.json")):  # one file per process
        marks = json.loads(path.read_text(encoding="utf-8"))
        tests = [t for t in marks["tests"] if t[2] is not None]
        line = f"{path.stem:10s}"
        if tests and path.stem != "controller":  # it hears of the workers' tests too
            line += (f" first test {tests[0][1] - start:6.1f}  last test ends "
                     f"{max(t[2] for t in tests) - start:6.1f}  ({len(tests)} tests)")
        print(line)
        for begun, ended, found, objects in marks["collections"]:
            print(f"{'':10s} collection at {begun - start:6.1f}: {ended - begun:5.2f} s, "
                  f"{found:,} unreachable of {objects:,} objects")
        print(f"{'':10s} exit handlers at {marks['exit'] - start:6.1f}")
    print(f"pytest returned at {end - start:.1f} s")


def main() -> None:
    root = Path(__file__).resolve().parents[1]
    args = sys.argv[1:]
    forced = "0"
    if args[:1] == ["--collections"]:
        forced, args = args[1], args[2:]
    with tempfile.TemporaryDirectory(prefix="suite-timeline-") as folder:
        # a copy of this module alone on the path: bench/ itself holds modules named like
        # lab's packages (console.py, analysis.py), which the tests' subprocesses would import
        shutil.copy(__file__, Path(folder, "suite_timeline.py"))
        env = {**os.environ, _DIR: folder, _FORCED: forced,
               "PYTHONPATH": os.pathsep.join(filter(None, [folder,
                                                           os.environ.get("PYTHONPATH")]))}
        start = time.time()
        command = [sys.executable, "-m", "pytest", "-p", "suite_timeline", "-q", *args]
        done = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True)
        end = time.time()
        _report(Path(folder), start, end)
    print(done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr)
    sys.exit(done.returncode)


if __name__ == "__main__":
    main()
