"""The hazard table's LPM fits when no two groups share a sample, as with real models.

`analysis.measures.hazard.hazard_table` fits each distinct group sample once. In the
paper-scale study of `bench/scale.py` the simulated agents make many groups'
decisions identical, so few samples are fitted; with real models every group's sample
differs. This script reads that study's decision table (cached by `bench/scale.py`)
and times `analysis.stats.lpm_batch.fit_samples` on the distinct samples (what the table
does here) and on every group's sample (what it would do with real models), one BLAS
thread as `lab results` uses, and prints both with the samples' counts.

Usage: python bench/hazard_fits.py [--db PATH] [--repeat 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]

DEFAULT_DB = Path.home() / ".cache" / "lab-bench" / "scale-0.1.0-198k.db"


def main() -> None:
    """Time the fits of the distinct samples and of all samples."""
    from analysis.base.arms import Grouping
    from analysis.measures.failure_rows import coded_samples, failure_rows
    from analysis.measures.frames import load_frames
    from analysis.stats.blas import single_thread
    from analysis.stats.lpm import HAZARD_BOOT
    from analysis.stats.lpm_batch import fit_samples
    from core import store

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", type=Path, default=DEFAULT_DB)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    if not args.db.exists():
        sys.exit(f"error: {args.db}: no such file (build it with `python bench/scale.py "
                 f"--build-only`)")
    single_thread()
    db = store.connect(args.db, create=False)
    frames = load_frames(db)
    db.conn.close()
    decisions = frames.decisions
    rows = failure_rows(decisions, Grouping((), frames.errored_episodes))
    samples = coded_samples(decisions, rows, "side_channel")
    every = [sample for sample, _ in samples]
    distinct = list({content: sample for sample, content in samples}.values())
    print(f"{frames.n_episodes:,} episodes, {len(decisions):,} decision points, "
          f"{len(every)} group samples, {len(distinct)} distinct", flush=True)
    for what, chosen in (("distinct samples (as here)", distinct),
                         ("every sample (real models)", every)):
        times = []
        for _ in range(max(1, args.repeat)):
            start = time.perf_counter()
            fit_samples(chosen, "side_channel", HAZARD_BOOT, 0)
            times.append(time.perf_counter() - start)
        print(f"{what:<28} {len(chosen):>4} samples, {2 * len(chosen):>4} fits: "
              f"{statistics.median(times):.2f} s ({min(times):.2f}–{max(times):.2f})",
              flush=True)


if __name__ == "__main__":
    main()
