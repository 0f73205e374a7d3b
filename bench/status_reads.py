"""What the console's status views read at paper scale (docs/performance.md): a grid of
198,000 episodes as `lab status` and the Jobs view read it, and the Dashboard's read of
a lab.db holding a replay's million probes.

The lab.db is a copy of any study (default: the 198,000-episode one `bench/scale.py`
builds and caches), whose stored (cell, question) pairs are enqueued as one grid of done
jobs of at most `core.store.jobs.JOB_SIZE` questions each, as `lab enqueue` sizes them
(bench/scale.py stores its episodes without jobs), and given ``--probes`` answer-now
probes (default five an episode, 990,000 at 198k; one in a hundred errored, stored over
the hour before the bench runs, as a replay of the study would leave them). Measured,
each as the median of ``--repeat`` rounds with the range:

- the Jobs view's read (`console.screens.jobs.read_jobs`, in this process, as the
  console's thread worker runs it): the grids only, and with every grid expanded to its
  jobs (as the view's filter reads it);
- the Dashboard's read (`console.screens.dashboard.read_dashboard`) with its tally kept
  between reads, as the screen keeps it (its first read, which counts every episode,
  printed apart);
- ``lab status`` in a fresh process (its imports included), beside the host's
  yardstick (`bench/scale.py`).

The console reads again no sooner than ten times its last read (`console/pacing.py`), so
a read of t seconds shows a run's progress about every 10·t seconds.

Usage: python bench/status_reads.py [--db PATH | --cache-dir DIR] [--probes N] [--repeat 5]
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


def add_probes(path: Path, per_episode: float, now: float) -> tuple[int, int]:
    """Store answer-now probes on the first episodes (at most five steps each), one in a
    hundred errored, each stored at a time of the hour before `now`.

    Returns:
        (probes, errored) added.
    """
    import random
    from datetime import UTC, datetime

    def iso_time(ts: float) -> str:  # as lab stores a time
        return datetime.fromtimestamp(ts, UTC).isoformat(timespec="microseconds")

    conn = sqlite3.connect(path)
    episodes = [e for (e,) in conn.execute("SELECT id FROM episodes ORDER BY id")]
    total = int(len(episodes) * per_episode)
    draw = random.Random(7)
    raw = '{"answer": "a stated answer", "confidence": 80}' + " " * 150
    rows = []
    for i in range(total):
        error = "model error: 503 Service Unavailable" if draw.random() < 0.01 else None
        rows.append((episodes[i // 5], 1 + i % 5, "answer_now", "sim", raw, error,
                     iso_time(now - draw.uniform(0, 3_600))))
    with conn:
        conn.executemany("INSERT INTO probes (episode_id, t, kind, model, raw, error, "
                         "created_at) VALUES (?, ?, ?, ?, ?, ?, ?)", rows)
    conn.close()
    return total, sum(r[5] is not None for r in rows)


def _span(seconds: list[float]) -> str:
    return f"{statistics.median(seconds):.2f} s ({min(seconds):.2f}–{max(seconds):.2f})"


def main() -> None:
    """Copy, enqueue, measure."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", type=Path, default=None,
                        help="a study without grids (default: bench/scale.py's 198k study)")
    parser.add_argument("--cache-dir", type=Path, default=Path.home() / ".cache" / "lab-bench")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--probes", type=float, default=5.0,
                        help="answer-now probes an episode (at most 5; 0: none)")
    args = parser.parse_args()
    from console.screens.dashboard import read_dashboard
    from console.screens.jobs import read_jobs
    from core.store.tally import QueueTally
    from core.version import project_version

    source = args.db or args.cache_dir / f"scale-{project_version()}-198k.db"
    if not source.exists():
        sys.exit(f"no lab.db at {source}: run `python bench/scale.py --build-only` or give --db")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "lab.db"
        shutil.copy(source, path)
        from core import store

        store.connect(path).conn.close()  # upgraded and rederived now, not in a read timed
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
        if args.probes > 0:
            probes, errored = add_probes(path, min(args.probes, 5.0), time.time())
            print(f"{probes:,} answer-now probes added ({errored:,} errored)", flush=True)
        tally = QueueTally()
        start = time.perf_counter()
        read_dashboard(path, 60.0, time.time(), tally)
        first = time.perf_counter() - start
        seconds = []
        for _ in range(max(1, args.repeat)):
            start = time.perf_counter()
            read_dashboard(path, 60.0, time.time(), tally)
            seconds.append(time.perf_counter() - start)
        print(f"Dashboard read, its tally kept     {_span(seconds)}; the first "
              f"{first:.2f} s", flush=True)
        status = [run_measured(_lab(path, "status"))[0] for _ in range(max(1, args.repeat))]
        print(f"lab status (a fresh process)         {_span(status)}", flush=True)


if __name__ == "__main__":
    main()
