"""`lab worker --type process`: children die with the consumer and stop on SIGTERM.

Real subprocesses: the consumer is killed with SIGKILL, which it cannot handle, so
only the children's own set-up (PR_SET_PDEATHSIG, the parent watch) can end them.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.helpers.queue import episode_census, lab_here, start_lab, write_registry

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")


def _children(pid: int) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_bytes()
            except OSError:
                continue
            if int(stat.rpartition(b")")[2].split()[1]) == pid:
                out.append(int(entry.name))
    return out


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return False
    return stat.rpartition(b")")[2].split()[0] != b"Z"


def _holds(pid: int, path: Path) -> bool:
    try:
        return any(os.readlink(fd) == str(path) for fd in Path(f"/proc/{pid}/fd").iterdir())
    except OSError:
        return False


def _wait(cond: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.05)
    return cond()


@pytest.fixture
def busy_worker(tmp_path: Path
                ) -> Iterator[tuple[Path, Path, subprocess.Popen[bytes], list[int]]]:
    """A process-type worker with two children mid-grid (slow sims)."""
    db = tmp_path / "lab.db"
    config = write_registry(tmp_path, latency=20)
    assert lab_here(db, config, "demo-set").returncode == 0
    out = lab_here(db, config, "enqueue", "--models", "sim-slow", "--conditions", "none",
                  "--regimes", "clean,persistent", "--set", "demo", "--seeds", "0,1,2")
    assert out.returncode == 0, out.stderr
    # an hour's lease: a later worker that waited for it instead of seeing the holder dead
    # would time out, so no test needs to time how fast the jobs are retaken
    proc = start_lab(db, config, "worker", "--type", "process", "--workers", "2",
                     "--lease", "3600", log=tmp_path / "worker.log")
    try:
        assert _wait(lambda: episode_census(db)["episodes"] > 0, 60), "the worker stored nothing"
        kids = _children(proc.pid)
        assert len(kids) >= 3  # two workers and Huey's scheduler
        assert any(_holds(k, db) for k in kids)
        yield db, config, proc, kids
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)


def test_kill_9_of_the_consumer_ends_its_children(
        busy_worker: tuple[Path, Path, subprocess.Popen[bytes], list[int]]) -> None:
    db, config, proc, kids = busy_worker
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(10)
    assert _wait(lambda: not any(_alive(k) for k in kids), 60), \
        [k for k in kids if _alive(k)]
    assert not any(_holds(k, db) for k in kids)
    # the jobs of the dead worker are retaken at once, not after the hour's lease
    out = lab_here(db, config, "worker", "--until-idle", "--workers", "2")  # a thread worker
    assert out.returncode == 0, out.stderr[-2000:]
    census = episode_census(db)
    assert census["episodes"] == census["distinct"] == 2 * 3 * 60 and census["broken"] == 0


def test_sigterm_to_a_child_ends_it(
        busy_worker: tuple[Path, Path, subprocess.Popen[bytes], list[int]]) -> None:
    _, _, proc, kids = busy_worker
    for kid in kids:
        os.kill(kid, signal.SIGTERM)
    assert _wait(lambda: not any(_alive(k) for k in kids), 60), \
        [k for k in kids if _alive(k)]
    assert proc.poll() is None  # the consumer lives on (and replaces its workers)
