"""Sim episodes per second through the real queue: Huey + consumer + ledger + lab.db.

Enqueues a sim grid of ≥ 20,000 episodes on the demo questions into a fresh lab.db
and runs a worker (Huey consumer, default 2 thread workers) until idle. Prints
episodes/s measured from worker start to idle. Target ≥ 300.

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
from jobs.worker import run_worker  # noqa: E402

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
        start = time.perf_counter()
        run_worker(settings, workers=args.workers, until_idle=True)
        seconds = time.perf_counter() - start
        stored = store.count(db, "episodes")
    assert stored == plan.episodes, (stored, plan.episodes)
    print(f"{stored} episodes in {jobs} jobs, {args.workers} {args.type} workers: "
          f"{seconds:.1f} s")
    print(f"{stored / seconds:.0f} episodes/s")


if __name__ == "__main__":
    main()
