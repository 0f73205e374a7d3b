"""Size of `lab report` on the paper-scale study (target: ≤ 5 MB at 200,000 episodes).

Reuses `bench/scale.py`'s databases (11 sims × 10 arms × the six mean6 regimes × 300
HotpotQA questions = 198,000 episodes, and its 20k/50k/100k subsets), built once under
``--cache-dir`` (default ``~/.cache/lab-bench``, as scale.py); building the full one takes
about 6 minutes on two cores. For each size it runs ``lab --db DB report FILE.html
--resamples N`` in a fresh process and prints the file's size, its size per episode and
per (model, arm) group, and the command's time. Tables aggregate (one row per group and
measure), so the size follows the number of groups, not of episodes: the subsets are
smaller only because they hold fewer groups (11 at 20k, 110 at 198k).

Measured (2 cores, loaded): 0.38 MB at 19,800 episodes (11 groups), 3.30 MB at 198,000
(110 groups, 30 KB a group): within the 5 MB target.

Usage: python bench/report_size.py [--cache-dir DIR] [--sizes 20000,198000]
       [--resamples 200] [--keep DIR]
"""

from __future__ import annotations

import argparse
import importlib.util
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType

_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
TARGET_MB = 5.0


def _scale_module() -> ModuleType:
    """bench/scale.py as a module (it is a script, not a package member)."""
    spec = importlib.util.spec_from_file_location("bench_scale", _HERE / "scale.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> None:
    """Build (once, via scale.py) and measure the report's size per size."""
    scale = _scale_module()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache-dir", type=Path, default=Path.home() / ".cache" / "lab-bench")
    parser.add_argument("--hotpotqa", type=Path, default=scale.DEFAULT_HOTPOTQA)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--sizes", default="20000,198000")
    parser.add_argument("--resamples", type=int, default=200,
                        help="bootstrap resamples (the size does not depend on them)")
    parser.add_argument("--keep", type=Path, default=None,
                        help="keep the reports in this folder")
    args = parser.parse_args()
    sizes = tuple(int(s) for s in args.sizes.split(","))
    paths = scale.databases(args.cache_dir, args.hotpotqa, args.workers, sizes)
    out_dir = Path(tempfile.mkdtemp(prefix="lab-report-size-"))
    try:
        for size, db in paths.items():
            conn = sqlite3.connect(db)
            n = conn.execute("SELECT count(*) FROM episodes").fetchone()[0]
            groups = conn.execute("SELECT count(*) FROM (SELECT DISTINCT model, condition "
                                  "FROM cells)").fetchone()[0]
            conn.close()
            report = out_dir / f"report-{size // 1000}k.html"
            start = time.perf_counter()
            subprocess.run([sys.executable, "-m", "console.cli", "--db", str(db), "report",
                            str(report), "--resamples", str(args.resamples)], check=True,
                           cwd=_HERE.parent, stdout=subprocess.DEVNULL)
            seconds = time.perf_counter() - start
            mb = report.stat().st_size / 1e6
            verdict = "within" if mb <= TARGET_MB else "OVER"
            size = report.stat().st_size
            print(f"{n:>8,} episodes, {groups:>3} groups  report {mb:5.2f} MB  "
                  f"({size / n:5.1f} bytes/episode, {size / groups / 1e3:5.1f} KB/group)  "
                  f"{seconds:6.1f} s  {verdict} the {TARGET_MB:g} MB target", flush=True)
            if args.keep:
                args.keep.mkdir(parents=True, exist_ok=True)
                shutil.copy(report, args.keep / report.name)
    finally:
        shutil.rmtree(out_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
