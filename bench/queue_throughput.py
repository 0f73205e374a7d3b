"""Sim episodes per second through the real queue: Huey + consumer + ledger + lab.db.

Enqueues a sim grid of ≥ 20,000 episodes on the demo questions into a fresh lab.db
and runs a worker (Huey consumer, default 2 thread workers) until idle, set up as
`lab worker` sets itself up (its garbage collector tuned). Prints
episodes/s measured from worker start to idle, and the worker's CPU (user + sys) per
episode over the same span. Target ≥ 1,000 episodes/s on a quiet machine.

Usage: python bench/queue_throughput.py [--workers N] [--type thread|process]
       [--concurrency C]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # before bench/ (bench/console.py)

from core import store  # noqa: E402
from core.demo_set import ensure_demo_set  # noqa: E402
from core.models.registry import load_registry  # noqa: E402
from core.regimes import MEAN6  # noqa: E402
from jobs.control import enqueue_grid  # noqa: E402
from jobs.grid import GridRequest  # noqa: E402
from jobs.settings import WorkerSettings  # noqa: E402
from jobs.worker import run_worker, tune_collector  # noqa: E402

MODELS = ("sim-own5", "sim-clock6", "sim-deadline", "sim-hazard-own")
CONDITIONS = ("none", "permit", "budget", "stated_rule", "enforced_rule", "lexical_rule", "decide")


def main() -> None:
    """Enqueue, run until idle, print the throughput."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--type", default="thread", choices=["thread", "process"])
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=None,
                        help="lab worker --concurrency (default: each model's own)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db_path = Path(tmp) / "lab.db"
        db = store.connect(db_path)
        ensure_demo_set(db)
        settings = WorkerSettings(db_path=db_path, worker_type=args.type,
                                  concurrency=args.concurrency)
        request = GridRequest(models=MODELS, conditions=CONDITIONS, regimes=MEAN6,
                              question_set="demo", seeds=tuple(range(args.seeds)), run="bench")
        plan, _, jobs = enqueue_grid(db, settings, request, load_registry(None))
        tune_collector()  # as `lab worker` does before it runs the worker (its collector)
        start, cpu_start = time.perf_counter(), time.process_time()
        run_worker(settings, workers=args.workers, until_idle=True)
        seconds = time.perf_counter() - start
        cpu = time.process_time() - cpu_start
        stored = store.count(db, "episodes")
    assert stored == plan.episodes, (stored, plan.episodes)
    print(f"{stored} episodes in {jobs} jobs, {args.workers} {args.type} workers: "
          f"{seconds:.1f} s")
    print(f"{stored / seconds:.0f} episodes/s")
    # CPU (user + sys, every thread) from worker start to idle: the figure a loaded
    # machine disturbs least; on a quiet one the episodes/s above follows it
    print(f"{1000 * cpu / stored:.3f} ms of CPU per episode ({cpu:.1f} s)")


if __name__ == "__main__":
    main()
