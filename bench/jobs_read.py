"""A paper-scale grid's progress (docs/performance.md): what `lab status` and the
console's Jobs view read, on a grid of 198,000 episodes.

The lab.db is a copy of any study (default: the 198,000-episode one `bench/scale.py`
builds and caches), whose stored (cell, question) pairs are enqueued as one grid of done
jobs of at most `core.store.jobs.JOB_SIZE` questions each, as `lab enqueue` sizes them
(bench/scale.py stores its episodes without jobs). Measured, each as the median of
``--repeat`` rounds with the range:

- the Jobs view's read (`console.screens.jobs.read_jobs`, in this process, as the
  console's thread worker runs it): the grids only, and with every grid expanded to its
  jobs (as the view's filter reads it);
- ``lab status`` in a fresh process (its imports included), beside the host's
  yardstick (`bench/scale.py`).

The console reads again no sooner than ten times its last read (`console/pacing.py`), so
a read of t seconds shows a run's progress about every 10·t seconds.

Usage: python bench/jobs_read.py [--db PATH | --cache-dir DIR] [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

_HERE = Path(__file__).resolve().parent
ROOT = _HERE.parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
sys.path.insert(0, str(ROOT))

from bench.scale import _lab, run_measured, yardstick  # noqa: E402


def enqueue_stored(path: Path) -> tuple[int, int]:
    """Give a lab.db without grids one grid of done jobs over every stored pair (run 1).

    Returns:
        (jobs, pairs) added.
    """
    from core.episode import utc_now
    from core.store.jobs import JOB_SIZE

    conn = sqlite3.connect(path)
    if conn.execute("SELECT count(*) FROM grids").fetchone()[0]:
        sys.exit(f"{path} already has grids: give a study stored without jobs")
    now = utc_now()
    by_cell: dict[int, list[str]] = {}
    for cell, qid in conn.execute("SELECT cell_id, question_id FROM episodes WHERE error IS "
                                  "NULL ORDER BY cell_id, id"):
        by_cell.setdefault(cell, []).append(qid)
    with conn:
        (run,) = conn.execute("SELECT min(id) FROM runs").fetchone()
        grid = conn.execute("INSERT INTO grids (run_id, spec, created_at) VALUES (?, '{}', ?)",
                            (run, now)).lastrowid
        jobs = [(grid, cell, json.dumps(qids[i:i + JOB_SIZE]), now, now)
                for cell, qids in by_cell.items() for i in range(0, len(qids), JOB_SIZE)]
        conn.executemany("INSERT INTO jobs (grid_id, cell_id, question_ids, state, attempts, "
                         "created_at, updated_at) VALUES (?, ?, ?, 'done', 1, ?, ?)", jobs)
    conn.close()
    return len(jobs), sum(len(q) for q in by_cell.values())


def _span(seconds: list[float]) -> str:
    return f"{statistics.median(seconds):.2f} s ({min(seconds):.2f}–{max(seconds):.2f})"


def main() -> None:
    """Copy, enqueue, measure."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", type=Path, default=None,
                        help="a study without grids (default: bench/scale.py's 198k study)")
    parser.add_argument("--cache-dir", type=Path, default=Path.home() / ".cache" / "lab-bench")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    from console.screens.jobs import read_jobs
    from core.version import project_version

    source = args.db or args.cache_dir / f"scale-{project_version()}-198k.db"
    if not source.exists():
        sys.exit(f"no lab.db at {source}: run `python bench/scale.py --build-only` or give --db")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "lab.db"
        shutil.copy(source, path)
        jobs, pairs = enqueue_stored(path)
        print(f"one grid of {pairs:,} pairs in {jobs:,} done jobs (a copy of {source})")
        yardstick()
        for label, expanded in (("grids only", set()), ("every grid expanded", None)):
            seconds = []
            for _ in range(max(1, args.repeat)):
                start = time.perf_counter()
                read_jobs(path, expanded, time.time())
                seconds.append(time.perf_counter() - start)
            print(f"Jobs view read, {label:<20} {_span(seconds)}", flush=True)
        status = [run_measured(_lab(path, "status"))[0] for _ in range(max(1, args.repeat))]
        print(f"lab status (a fresh process)         {_span(status)}", flush=True)


if __name__ == "__main__":
    main()
