"""Paper scale (docs/performance.md): analysis time and peak memory on 20k … 198k episodes.

Builds the study-sized lab.db once: 11 sims × 10 arms × the six mean6 regimes × 300
HotpotQA questions (198,000 episodes, about a million steps), cached under
``--cache-dir`` (default ``~/.cache/lab-bench``) by the project version, so a second
run only measures. The 20k/50k/100k subsets are copies holding the first whole
(model, arm) groups (1,800 episodes each). It is never built in CI.

For each size it prints, each in a fresh process (peak RSS is the process's
``ru_maxrss``): every ``lab results TABLE --format json`` on its own, the hazard table
with every group's sample fitted (as with real models, `_EVERY_SAMPLE`), Δ and success
with every group's contrasts and matrices resampled (as with real models,
`_EVERY_GROUP`), all tables together, a second call of the same command (served from
the results cache), ``lab export``, and the console's Results first frame (the worker
the screen runs: load_frames + compute of its first tab + rendering).

Commands run as an installed lab runs them: with Python's compiled-module cache. lab's
modules are byte-compiled first, and ``PYTHONDONTWRITEBYTECODE`` is dropped from the
commands' environment (set, as in some sandboxes, it makes every call compile lab's
modules from source again).

Each figure is measured ``--repeat`` times (default 3, all figures of a size once per
round) and printed as the median with the range: on a shared 2-core machine one cold run
of a table moves by ±0.5 s.

Usage: python bench/scale.py [--cache-dir DIR] [--hotpotqa FILE] [--sizes 20000,50000]
       [--workers 2] [--repeat 3] [--build-only]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from itertools import product
from pathlib import Path

# Run as `python bench/scale.py`, this file's folder comes first on sys.path and would
# shadow the `analysis` package; drop it.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]

MODELS = ("sim-own3", "sim-own5", "sim-own7", "sim-clock4", "sim-clock6", "sim-deadline",
          "sim-design3", "sim-design5", "sim-hazard-own", "sim-hazard-time", "sim-never")
ARMS = ("none", "permit", "budget", "stated_rule", "call_cost", "decide", "enforced_rule",
        "combo", "random_rule:rate=0.5", "lexical_rule")
N_QUESTIONS = 300
GROUP = N_QUESTIONS * 6
"""Episodes of one (model, arm) group: 300 questions × the six mean6 regimes."""
SIZES = (20_000, 50_000, 100_000, 198_000)
RUN = "scale"
DEFAULT_HOTPOTQA = Path(__file__).resolve().parents[2] / "shared" / "data" / "hotpotqa" / \
    "dev_distractor_sample.json"


def _questions(hotpotqa: Path | None) -> list:
    from core.data import load_hotpotqa
    from core.demo_data import demo_questions

    if hotpotqa and hotpotqa.exists():
        return load_hotpotqa(hotpotqa)[:N_QUESTIONS]
    print(f"note: {hotpotqa} not found; using the demo questions, repeated ids", file=sys.stderr)
    demo = demo_questions()
    return [demo[i % len(demo)] for i in range(len(demo))]


def _build_part(path: str, hotpotqa: str, part: int, parts: int) -> int:
    """Run every (model, arm) group whose index ≡ part (mod parts) into lab.db."""
    from core import store
    from core.conditions import parse_condition
    from core.models.registry import builtin_models, make_client
    from core.regimes import MEAN6, ForeignPool, parse_regime
    from core.runner import CellSpec
    from jobs.kinds.episodes import run_questions

    db = store.connect(path)
    questions = _questions(Path(hotpotqa))
    pool, specs = ForeignPool(questions), builtin_models()
    run_id = store.ensure_run(db, RUN)
    stored = 0
    for i, (model, arm) in enumerate(product(MODELS, ARMS)):
        if i % parts != part:
            continue
        for regime in MEAN6:
            cell = CellSpec(specs[model], parse_condition(arm), parse_regime(regime), None, 8, 0)
            cell_id = store.ensure_cell(db, run_id, cell.columns())
            stored += asyncio.run(run_questions(db, cell_id, cell, questions, pool,
                                                make_client(cell.model), batch=256))
    return stored


def build(path: Path, hotpotqa: Path, workers: int) -> None:
    """Build the full database at `path` (episodes written through the store)."""
    from concurrent.futures import ProcessPoolExecutor

    from core import store

    tmp = path.with_name(path.name + ".building")  # an interrupted build resumes
    db = store.connect(tmp)
    store.insert_questions(db, _questions(hotpotqa))
    store.ensure_run(db, RUN)
    db.conn.close()
    start = time.perf_counter()
    with ProcessPoolExecutor(workers) as ex:
        n = sum(ex.map(_build_part, [str(tmp)] * workers, [str(hotpotqa)] * workers,
                       range(workers), [workers] * workers))
    conn = sqlite3.connect(tmp)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    os.replace(tmp, path)
    print(f"built {n:,} episodes in {time.perf_counter() - start:.0f} s "
          f"({path.stat().st_size / 1e6:.0f} MB)", file=sys.stderr)


def subset(full: Path, path: Path, episodes: int) -> None:
    """Copy the first whole (model, arm) groups holding about `episodes` episodes."""
    from core import store

    groups = max(1, round(episodes / GROUP))
    tmp = path.with_name(path.name + ".building")
    tmp.unlink(missing_ok=True)
    store.connect(tmp).conn.close()
    conn = sqlite3.connect(tmp, isolation_level=None)
    conn.execute("ATTACH DATABASE ? AS src", (str(full),))
    keep = [m + "\x00" + a.split(":")[0] for m, a in list(product(MODELS, ARMS))[:groups]]
    conn.execute("BEGIN")
    conn.execute("CREATE TEMP TABLE keep AS SELECT id FROM src.cells WHERE model || char(0) || "
                 f"condition IN ({','.join('?' * len(keep))})", keep)
    tables = [r[0] for r in conn.execute(
        "SELECT name FROM main.sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite%' "
        "AND name NOT LIKE '\\_%' ESCAPE '\\'")]
    by_cell = {"cells": "id IN (SELECT id FROM keep)",
               "episodes": "cell_id IN (SELECT id FROM keep)",
               "jobs": "cell_id IN (SELECT id FROM keep)"}
    by_episode = "episode_id IN (SELECT e.id FROM src.episodes e WHERE e.cell_id IN " \
                 "(SELECT id FROM keep))"
    for table in tables:
        cols = [r[1] for r in conn.execute(f"PRAGMA main.table_info([{table}])")]
        where = by_cell.get(table, by_episode if "episode_id" in cols else "1")
        names = ", ".join(f"[{c}]" for c in cols)
        conn.execute(f"DELETE FROM main.[{table}]")
        conn.execute(f"INSERT INTO main.[{table}] ({names}) SELECT {names} FROM src.[{table}] "
                     f"WHERE {where}")
    conn.execute("COMMIT")
    conn.execute("DETACH DATABASE src")
    conn.close()
    os.replace(tmp, path)


def databases(cache: Path, hotpotqa: Path, workers: int, sizes: tuple[int, ...]
              ) -> dict[int, Path]:
    """The cached databases per size, built when missing."""
    from core.version import project_version

    cache.mkdir(parents=True, exist_ok=True)
    full = cache / f"scale-{project_version()}-198k.db"
    if not full.exists():
        build(full, hotpotqa, workers)
    from core import store

    store.connect(full).conn.close()  # migrations (and their backfills) run once, here
    out = {}
    for size in sizes:
        if size >= 198_000:
            out[size] = full
            continue
        path = cache / f"scale-{project_version()}-{size // 1000}k.db"
        if not path.exists():
            subset(full, path, size)
        out[size] = path
    return out


_FIRST_FRAME = """
import sys, time
t0 = time.perf_counter()
from analysis.tables.compute import compute
from analysis.measures.frames import load_frames
from analysis.tables.text import render_table
from analysis.tables.registry import views
from console.screens.results.screen import HAZARD_BOOT, N_BOOT, SEED
from console.screens.results.views import display_tables, view_tables
from core import store
from core.store.selection import Selection, check_selection
t1 = time.perf_counter()
db = store.connect(sys.argv[1])
check_selection(db, Selection())
frames = load_frames(db, Selection())
db.conn.close()
view, name = views()[0][0].id, views()[0][1].name
results = compute(frames, (name,), N_BOOT, HAZARD_BOOT, SEED)
shown = display_tables(view, view_tables(view, results.tables))
text = "\\n\\n".join(render_table(t) for t in shown)
print(f"{time.perf_counter() - t1:.3f} {t1 - t0:.3f}")
"""
"""What the Results screen's first worker does (console/screens/results/screen.py `_compute`):
open lab.db, check the selection, load the frames, compute the first tab's table and
render it. Prints its seconds (and the imports' seconds, paid once per console)."""


_EVERY_SAMPLE = """
import analysis.measures.hazard as hazard
from console.cli import main
coded = hazard.coded_samples
def every(decisions, rows, judgments):  # each group's sample unlike any other
    return [(sample, content + i.to_bytes(4, "little"))
            for i, (sample, content) in enumerate(coded(decisions, rows, judgments))]
hazard.coded_samples = every
main()
"""
"""`lab results hazard` as it runs on a study of real models, where no two groups make
the same decisions: the sims here make many groups' samples equal (27 distinct of 110
at 198k), and the table fits each distinct sample once. Marking every sample distinct
makes it fit all of them, with the same numbers."""


_EVERY_GROUP = """
import itertools
import analysis.measures.delta as delta
import analysis.measures.success as success
from console.cli import main
delta._first_equal = lambda items: list(range(len(items)))  # no two contrasts alike
distinct = itertools.count()
success._matrix_key = lambda m: (next(distinct),)  # no two question matrices alike
main()
"""
"""`lab results delta` and `success` as they run on a study of real models, where no two
groups count alike: the sims make many arms' contrasts and question matrices equal (104
distinct of Δ's 550 contrasts at 198k), and the tables resample each distinct one once.
Marking every one distinct resamples all of them, with the same numbers."""


def run_measured(args: list[str]) -> tuple[float, float, str]:
    """Run a command in a fresh process; return (seconds, its peak RSS in MB, stdout)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    start = time.perf_counter()
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    chunks = []
    stdout = proc.stdout
    assert stdout is not None
    for block in iter(lambda: stdout.read(1 << 16), b""):
        chunks.append(block)
    err = proc.stderr.read() if proc.stderr else b""
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:  # reported, and the benchmark goes on with the next figure
        last = err.decode().strip().splitlines()[-1:] or ["?"]
        print(f"FAILED: {' '.join(args[3:])}: {last[0]}", file=sys.stderr, flush=True)
        return float("nan"), usage.ru_maxrss / 1024, "nan"
    return seconds, usage.ru_maxrss / 1024, b"".join(chunks).decode()


def yardstick(rounds: int = 5) -> float:
    """Print (and return) the host's speed as a fresh process importing pandas, which
    every table's command does first: the same commands took 0.2 s of it on a quick day
    and 0.6-0.8 s on a slow one of the same 2-core machine, and the tables' times move
    with it, so a figure is read beside the yardstick measured in the same run."""
    seconds = sorted(run_measured([sys.executable, "-c", "import pandas"])[0]
                     for _ in range(rounds))
    median = statistics.median(seconds)
    print(f"yardstick: a fresh `python -c 'import pandas'` {median:.2f} s "
          f"({seconds[0]:.2f}–{seconds[-1]:.2f}, {rounds} runs)", flush=True)
    return median


def _lab(path: Path, *args: str) -> list[str]:
    return [sys.executable, "-c", "from console.cli import main; main()", "--db", str(path),
            *args]


def measure(path: Path) -> list[tuple[str, float, float]]:
    """(what, seconds, peak RSS MB) for one database."""
    from analysis.base.cache import SUFFIX
    from analysis.tables.registry import EPISODES, table_names

    cache = Path(f"{path}{SUFFIX}")

    def cold() -> None:
        shutil.rmtree(cache, ignore_errors=True)

    out = []
    for name in table_names(EPISODES):
        cold()
        seconds, rss, _ = run_measured(_lab(path, "results", name, "--format", "json"))
        out.append((name, seconds, rss))
    cold()
    seconds, rss, _ = run_measured([sys.executable, "-c", _EVERY_SAMPLE, "--db", str(path),
                                    "results", "hazard", "--format", "json"])
    out.append(("hazard, every sample fitted", seconds, rss))
    for name in ("delta", "success"):
        cold()
        seconds, rss, _ = run_measured([sys.executable, "-c", _EVERY_GROUP, "--db", str(path),
                                        "results", name, "--format", "json"])
        out.append((f"{name}, every group distinct", seconds, rss))
    cold()
    seconds, rss, _ = run_measured(_lab(path, "results", "all", "--format", "json"))
    out.append(("all tables", seconds, rss))
    seconds, rss, _ = run_measured(_lab(path, "results", "all", "--format", "json"))
    out.append(("all tables, cached", seconds, rss))
    with tempfile.TemporaryDirectory() as tmp:
        cold()
        seconds, rss, _ = run_measured(_lab(path, "export", str(Path(tmp) / "out")))
        out.append(("export (tables computed)", seconds, rss))
        seconds, rss, _ = run_measured(_lab(path, "export", str(Path(tmp) / "out2")))
        out.append(("export (tables cached)", seconds, rss))
    cold()
    seconds, rss, text = run_measured([sys.executable, "-c", _FIRST_FRAME, str(path)])
    out.append(("Results first frame", float(text.split()[0]), rss))
    cold()
    return out


def main() -> None:
    """Build (once) and measure."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache-dir", type=Path, default=Path.home() / ".cache" / "lab-bench")
    parser.add_argument("--hotpotqa", type=Path, default=DEFAULT_HOTPOTQA)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)))
    parser.add_argument("--repeat", type=int, default=3,
                        help="rounds per size; each figure is their median (and range)")
    parser.add_argument("--build-only", action="store_true")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = parser.parse_args()
    sizes = tuple(int(s) for s in args.sizes.split(","))
    paths = databases(args.cache_dir, args.hotpotqa, args.workers, sizes)
    if args.build_only:
        for size, path in paths.items():
            print(f"{size}: {path}")
        return
    root = Path(__file__).resolve().parents[1]
    compileall = [sys.executable, "-m", "compileall", "-q",
                  *(str(root / p) for p in ("analysis", "core", "console", "jobs", "prompts"))]
    subprocess.run(compileall, check=True)  # the module cache an installed lab has
    print(f"load: {os.getloadavg()[0]:.1f} {os.getloadavg()[1]:.1f} {os.getloadavg()[2]:.1f} "
          f"on {os.cpu_count()} cores", flush=True)
    yardstick()
    results: dict[int, list[tuple[str, float, float, float, float]]] = {}
    for path in paths.values():
        n = sqlite3.connect(path).execute("SELECT count(*) FROM episodes").fetchone()[0]
        rounds = [measure(path) for _ in range(max(1, args.repeat))]
        results[n] = []
        for i, (what, _, _) in enumerate(rounds[0]):
            seconds = [r[i][1] for r in rounds]
            rss = max(r[i][2] for r in rounds)
            results[n].append((what, statistics.median(seconds), rss, min(seconds),
                               max(seconds)))
            print(f"{n:>8,} episodes  {what:<28} {statistics.median(seconds):6.2f} s "
                  f"({min(seconds):.2f}–{max(seconds):.2f})  {rss:6.0f} MB", flush=True)
    yardstick()
    if args.json:
        args.json.write_text(json.dumps({str(k): v for k, v in results.items()}, indent=1))


if __name__ == "__main__":
    main()
