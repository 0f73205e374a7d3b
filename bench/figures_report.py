"""`lab figures` and `lab report` on a 20,000-episode study (target: each ≤ 15 s).

Builds, once under ``--cache-dir`` (default ``~/.cache/lab-bench``, keyed by the project
version), a study shaped like a paper's: a confirmatory run of four sims × five arms ×
seven regimes (the six mean6 ones and ``plausible``) × budgets 8 and 16 on a 60-question
demo set (16,800 episodes), and an exploratory pilot of two sims × five arms × the six
mean6 regimes at budget 8 (3,600 episodes) with answer-now branches at t = 1, 2, 3, so
the policies and controllers tables and their figures have rows too. Everything runs
through the real queue (`lab enqueue`, `lab worker --until-idle`, `lab replay
answer-now`).

Then, each in a fresh process as an installed lab runs (modules byte-compiled, the
results cache removed before each cold run), it times ``lab figures DIR`` and ``lab
report FILE.html`` with their default resamples (2,000), ``--repeat`` times each, and
prints the median with the range, and one more run of each with the results cache warm.

Usage: python bench/figures_report.py [--cache-dir DIR] [--repeat 3] [--format png]
       [--build-only]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
ROOT = _HERE.parent
TARGET_S = 15.0
CONFIRM = ("sim-own5", "sim-clock6", "sim-hazard-own", "sim-design3")
PILOT = ("sim-own3", "sim-never")
ARMS = "none,budget,stated_rule,enforced_rule:k=3,decide"
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def _lab(db: Path, *args: str) -> str:
    """`lab --db DB ARGS…` in a fresh process; its stdout (raises on a failure)."""
    done = subprocess.run([sys.executable, "-m", "console.cli", "--db", str(db), *args],
                          cwd=ROOT, env=ENV, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"lab {' '.join(args)}: exit {done.returncode}\n{done.stderr}")
    return done.stdout


def build(path: Path) -> None:
    """The study's lab.db at `path` (built next to it, then renamed)."""
    tmp = path.with_name("building-" + path.name)  # an interrupted build starts again
    queue = tmp.with_suffix(".queue.db")  # the queue file lab keeps beside a lab.db
    for p in (tmp, queue):
        p.unlink(missing_ok=True)
    start = time.perf_counter()
    _lab(tmp, "init")
    _lab(tmp, "sets", "create", "d60", "--dataset", "demo", "--n", "60", "--seed", "1")
    _lab(tmp, "enqueue", "--models", ",".join(CONFIRM), "--conditions", ARMS, "--regimes",
         "mean6,plausible", "--budgets", "8,16", "--set", "d60", "--run", "confirm")
    _lab(tmp, "enqueue", "--models", ",".join(PILOT), "--conditions", ARMS, "--regimes",
         "mean6", "--set", "d60", "--run", "pilot")
    _lab(tmp, "worker", "--until-idle")
    _lab(tmp, "replay", "answer-now", "--run", "pilot", "--at", "t=1,2,3")
    _lab(tmp, "worker", "--until-idle")
    conn = sqlite3.connect(tmp)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    os.replace(tmp, path)
    queue.unlink(missing_ok=True)
    print(f"built {path} in {time.perf_counter() - start:.0f} s", file=sys.stderr)


def study(cache: Path) -> Path:
    """The cached study's path (built when missing)."""
    from core.version import project_version

    cache.mkdir(parents=True, exist_ok=True)
    path = cache / f"figures-report-{project_version()}-20k.db"
    if not path.exists():
        build(path)
    return path


def timed(args: list[str]) -> float:
    """Seconds one fresh `lab` process takes."""
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "console.cli", *args], cwd=ROOT, env=ENV,
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"lab {' '.join(args)}: exit {done.returncode}\n{done.stderr}")
    return time.perf_counter() - start


def main() -> None:
    """Build the study once, then time `lab figures` and `lab report` on it."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache-dir", type=Path, default=Path.home() / ".cache" / "lab-bench")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--format", default="png", help="lab figures --format")
    parser.add_argument("--build-only", action="store_true")
    args = parser.parse_args()
    db = study(args.cache_dir)
    if args.build_only:
        return
    subprocess.run([sys.executable, "-m", "compileall", "-q",
                    *(str(ROOT / d) for d in ("analysis", "console", "core", "jobs"))],
                   check=True)  # the module cache an installed lab has
    conn = sqlite3.connect(db)
    n = conn.execute("SELECT count(*) FROM episodes").fetchone()[0]
    conn.close()
    out = Path(tempfile.mkdtemp(prefix="lab-figures-report-"))
    cache = db.with_name(db.name + ".results")
    commands = {
        "lab figures": ["--db", str(db), "figures", str(out / "figs"), "--format",
                        args.format],
        "lab report": ["--db", str(db), "report", str(out / "study.html")],
    }
    try:
        cold: dict[str, list[float]] = {k: [] for k in commands}
        for _ in range(args.repeat):
            for name, cmd in commands.items():
                shutil.rmtree(cache, ignore_errors=True)
                shutil.rmtree(out / "figs", ignore_errors=True)
                cold[name].append(timed(cmd))
        print(f"{n:,} episodes, load average {os.getloadavg()[0]:.1f} on "
              f"{os.cpu_count()} cores")
        for name, cmd in commands.items():
            s = cold[name]
            warm = timed(cmd)
            verdict = "within" if statistics.median(s) <= TARGET_S else "OVER"
            print(f"  {name:<12} cold {statistics.median(s):5.1f} s "
                  f"({min(s):.1f}–{max(s):.1f}, {len(s)} runs)  results cache warm "
                  f"{warm:5.1f} s  {verdict} the {TARGET_S:g} s target", flush=True)
    finally:
        shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    main()
