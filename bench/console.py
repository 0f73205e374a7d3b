"""Console figures (docs/performance.md): first frame and each screen's first visit on a
200,000-episode lab.db, commit-to-screen latency on Live for a slow sim, and sim
throughput with the console open.

1. First frame and first visits: the console (headless, 80×24, its garbage collector
   frozen after the warm-up as `lab` does in a terminal) from `make_app` until the
   Dashboard shows its numbers (and from the process's start, interpreter and imports
   included); then, once the console has warmed up (`console.warmup`: the other
   screens' modules imported, their stylesheets read; how long that took after the
   first frame is printed), each other screen's digit key until that screen has read
   lab.db and shown it (its thread workers done and their results drawn; Results: its
   first table computed with the researcher's defaults, 2,000 resamples). `--eager`
   presses the digits as soon as the first frame is shown instead (a reader faster
   than the warm-up). On a lab.db of ≥ 200,000 episodes, built once (a sim grid
   through the real queue, then its cells, episodes and steps copied by SQL into new
   cells) and cached under /tmp, keyed by the project and schema versions; Results'
   tables come from the results cache beside it after the first run. Three rounds,
   each in a fresh process (nothing imported or cached in memory by an earlier one);
   best and median. Targets on an idle 2-core machine: first frame ≤ 1.0 s, each first
   visit ≤ 0.5 s.
2. Live latency: `lab worker` runs a slow sim (100 ms per call) in its own process; the
   console follows on Live while a reader thread polls the live tables every 5 ms. For
   each step: time on screen − time first seen committed. Target ≤ 0.5 s.
3. Throughput: a sim grid through the real queue (one `lab worker`-equivalent consumer in
   this process) with and without a console process open on the same lab.db (headless,
   Dashboard, 1 s refresh), three alternating pairs; median ratio of episodes/s, and the
   share of a core the console took during each run. Target ≥ 0.9. On an empty lab.db
   by default; `--throughput-db PATH` runs them on copies of PATH (what the screen
   counts: every episode for the Dashboard, every grid's pairs for Jobs), and
   `--throughput-screen NAME` shows another screen than the Dashboard.

Usage: python bench/console.py [--episodes 200000] [--db LAB_DB] [--skip first,live,throughput]
[--eager] [--throughput-db LAB_DB] [--throughput-screen jobs]
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.metadata
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from textual.pilot import Pilot

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.concurrency import _process_cpu  # noqa: E402
from console.app import ConsoleConfig, make_app  # noqa: E402
from core import store  # noqa: E402
from core.demo_set import ensure_demo_set  # noqa: E402
from core.models.registry import load_registry  # noqa: E402
from core.regimes import MEAN6  # noqa: E402
from core.schema import SCHEMA_VERSION  # noqa: E402
from jobs.control import enqueue_grid  # noqa: E402
from jobs.grid import GridRequest  # noqa: E402
from jobs.settings import WorkerSettings, queue_path  # noqa: E402
from jobs.worker import run_worker  # noqa: E402

SEED_GRID = GridRequest(models=("sim-own5", "sim-never", "sim-clock6", "sim-deadline"),
                        conditions=("none", "enforced_rule", "lexical_rule"), regimes=MEAN6,
                        question_set="demo", run="bench")
SLOW = '[models.sim-slow]\nbackend = "sim"\npolicy = "never"\nlatency_ms = 100\n'


def _columns(conn: sqlite3.Connection, table: str) -> list[str]:
    return [r[1] for r in conn.execute(f"PRAGMA table_info({table})")]


def build_big(path: Path, episodes: int) -> None:
    """A sim grid through the real queue, then copies of its cells by SQL to ≥ `episodes`."""
    db = store.connect(path)
    ensure_demo_set(db)
    settings = WorkerSettings(db_path=path)
    enqueue_grid(db, settings, SEED_GRID, load_registry(None))
    run_worker(settings, workers=2, until_idle=True)
    db.conn.close()
    conn = sqlite3.connect(path)
    cells, eps, steps = (_columns(conn, t) for t in ("cells", "episodes", "steps"))
    base_cells, base_eps = conn.execute("SELECT max(id) FROM cells").fetchone()[0], \
        conn.execute("SELECT max(id) FROM episodes").fetchone()[0]
    n, copy = conn.execute("SELECT count(*) FROM episodes").fetchone()[0], 0
    while n < episodes:
        copy += 1
        co, eo = base_cells * copy, base_eps * copy
        swap = {"id": f"id + {co}", "seed": f"seed + {1000 * copy}",
                "spec_hash": f"spec_hash || '-copy{copy}'"}
        with conn:
            conn.execute(f"INSERT INTO cells ({', '.join(cells)}) SELECT "
                         + ", ".join(swap.get(c, c) for c in cells)
                         + f" FROM cells WHERE id <= {base_cells}")
            swap = {"id": f"id + {eo}", "cell_id": f"cell_id + {co}"}
            conn.execute(f"INSERT INTO episodes ({', '.join(eps)}) SELECT "
                         + ", ".join(swap.get(c, c) for c in eps)
                         + f" FROM episodes WHERE id <= {base_eps}")
            swap = {"episode_id": f"episode_id + {eo}"}
            conn.execute(f"INSERT INTO steps ({', '.join(steps)}) SELECT "
                         + ", ".join(swap.get(c, c) for c in steps)
                         + f" FROM steps WHERE episode_id <= {base_eps}")
        n = conn.execute("SELECT count(*) FROM episodes").fetchone()[0]
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()


def big_db(episodes: int) -> Path:
    """The cached ≥ `episodes` lab.db for this project and schema version."""
    version = importlib.metadata.version("lab")
    path = Path(tempfile.gettempdir()) / f"lab-bench-console-{version}-s{SCHEMA_VERSION}-" \
                                          f"{episodes}.db"
    if not path.exists():
        tmp = path.with_suffix(".building")
        for p in tmp.parent.glob(tmp.name + "*"):
            p.unlink()
        print(f"building {path} (once) …", flush=True)
        build_big(tmp, episodes)
        queue_path(tmp).unlink(missing_ok=True)
        tmp.rename(path)
    return path


async def _shown(pilot: Pilot[Any], mode: str) -> None:
    """Wait until the screen of `mode` is shown, has read lab.db, its thread workers are
    done and what they posted is drawn."""
    from textual.worker import WorkerState

    from console.screens import screen_mode
    from console.screens.base import LabScreen

    app = pilot.app
    busy = (WorkerState.PENDING, WorkerState.RUNNING)
    while True:
        screen = app.screen
        # a screen in a package (results/, prereg/) has its mode in the package's name
        if (screen_mode(type(screen)) == mode and screen.is_mounted
                and (not isinstance(screen, LabScreen) or screen.read_at is not None)
                and not any(w.node is screen and w.state in busy for w in app.workers)):
            break
        await pilot.pause(0.005)
    await pilot.pause()  # handle the results the workers posted


@dataclass(frozen=True)
class Round:
    """One round of first visits, in seconds.

    Attributes:
        first: from make_app to the Dashboard showing lab.db's numbers.
        first_at: the wall-clock time (time.time()) of that first frame.
        warm: from the first frame to the end of the warm-up (None: not waited for).
        visits: each other screen's first visit, by title.
        cpu: the console process's CPU time (every thread) in each of those visits: the
            figure that compares two versions on a loaded machine, where the wall time
            mostly measures the wait for a core.
    """

    first: float
    first_at: float
    warm: float | None
    visits: dict[str, float]
    cpu: dict[str, float]


async def first_visits(db_path: Path, eager: bool = False) -> Round:
    """The first frame, the warm-up (unless `eager`) and each other screen's first visit:
    from its digit key until it shows what it read."""
    from console.screens import SCREENS

    start = time.perf_counter()
    app = make_app(db_path, ConsoleConfig(db_path=db_path, check_endpoints=False,
                                          freeze_gc=True))
    visits: dict[str, float] = {}
    cpu: dict[str, float] = {}
    async with app.run_test(size=(80, 24)) as pilot:
        while "stored" not in str(app.screen.query_one("#queue-text").render()):
            await pilot.pause(0.005)
        first, first_at = time.perf_counter() - start, time.time()
        warm = None
        if not eager:
            while not app.warm:
                await pilot.pause(0.005)
            warm = time.perf_counter() - start - first
        for key, info in enumerate(SCREENS, start=1):
            if key == 1 or key > 9:
                continue
            begin, begin_cpu = time.perf_counter(), time.process_time()
            await pilot.press(str(key))
            await _shown(pilot, info.mode)
            visits[info.title] = time.perf_counter() - begin
            cpu[info.title] = time.process_time() - begin_cpu
    return Round(first, first_at, warm, visits, cpu)


def first_visits_round(db_path: Path, eager: bool) -> tuple[Round, float]:
    """One round of `first_visits` in a fresh process, and the seconds from launching that
    process to its first frame (interpreter start and the bench's imports included: an
    upper bound on `lab`'s)."""
    launched = time.time()
    out = subprocess.run([sys.executable, __file__, "--one-round", str(db_path)]
                         + (["--eager"] if eager else []),
                         env=dict(os.environ, PYTHONPATH=str(ROOT)), check=True,
                         capture_output=True, text=True).stdout
    result = Round(**json.loads(out.strip().splitlines()[-1]))
    return result, result.first_at - launched


async def first_frame(db_path: Path) -> float:
    """Seconds from make_app until the Dashboard shows lab.db's numbers."""
    start = time.perf_counter()
    app = make_app(db_path, ConsoleConfig(db_path=db_path, check_endpoints=False))
    async with app.run_test(size=(80, 24)) as pilot:
        while "stored" not in str(app.screen.query_one("#queue-text").render()):
            await pilot.pause(0.005)
        return time.perf_counter() - start


async def live_latency(tmp: Path, seconds: float = 12.0) -> list[float]:
    """Commit-to-screen latencies (s) of the steps of a slow sim followed on Live."""
    from console.screens.live import LiveScreen  # here: the first visits time its import

    db_path = tmp / "live.db"
    db = store.connect(db_path)
    ensure_demo_set(db)
    db.conn.close()
    (tmp / "lab.toml").write_text(SLOW)
    lab = [sys.executable, "-m", "console.cli", "--db", str(db_path),
           "--config", str(tmp / "lab.toml")]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    subprocess.run(lab + ["enqueue", "--models", "sim-slow", "--conditions", "none",
                          "--regimes", "persistent", "--set", "demo"], check=True, env=env,
                   capture_output=True)
    seen: dict[tuple[int | None, str, int], float] = {}
    stop = threading.Event()

    def watch() -> None:
        reader = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
        while not stop.is_set():
            now = time.monotonic()
            for cell, qid, t in reader.execute(
                    "SELECT l.cell_id, l.question_id, s.t FROM live_steps s JOIN live_episodes l "
                    "ON l.id = s.live_id"):
                seen.setdefault((cell, qid, t), now)
            time.sleep(0.005)

    watcher = threading.Thread(target=watch, daemon=True)
    worker = subprocess.Popen(lab + ["worker", "--concurrency", "4"], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    app = make_app(db_path, ConsoleConfig(db_path=db_path, config_path=tmp / "lab.toml",
                                          first_screen="live", check_endpoints=False))
    try:
        watcher.start()
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause(seconds)
            screen = app.screen
            assert isinstance(screen, LiveScreen)
            shown = dict(screen.shown_at)
    finally:
        stop.set()
        worker.terminate()
        worker.wait(timeout=60)
    return [shown[k] - seen[k] for k in shown if k in seen]


def throughput(tmp: Path, name: str, console: bool, base: Path | None = None,
               screen: str = "dashboard") -> tuple[float, float | None]:
    """Episodes/s of a sim grid through the queue, with or without a console process open
    on `screen`, and the share of a core that console took meanwhile (None without one).
    `base`: a copy of this lab.db receives the grid (its episodes and grids are what the
    screen counts), else an empty one."""
    db_path = tmp / f"{name}.db"
    if base is not None:
        shutil.copy(base, db_path)
    db = store.connect(db_path)
    ensure_demo_set(db)
    settings = WorkerSettings(db_path=db_path)
    grid = GridRequest(models=("sim-own5", "sim-clock6"), conditions=("none", "enforced_rule",
                                                                      "lexical_rule"),
                       regimes=MEAN6, question_set="demo", seeds=(0, 1), run="tp")
    plan, _, _ = enqueue_grid(db, settings, grid, load_registry(None))
    proc = None
    if console:
        proc = subprocess.Popen([sys.executable, __file__, "--serve-console", str(db_path),
                                 "--throughput-screen", screen],
                                env=dict(os.environ, PYTHONPATH=str(ROOT)),
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(6.0)  # let it start, draw and read lab.db once
    console_cpu = None
    try:
        before = _process_cpu([proc.pid]) if proc is not None else None
        start = time.perf_counter()
        run_worker(settings, workers=2, until_idle=True)
        seconds = time.perf_counter() - start
        after = _process_cpu([proc.pid]) if proc is not None else None
        if before is not None and after is not None:
            console_cpu = (after - before) / seconds
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(timeout=30)
    stored = db.conn.execute("SELECT count(*) FROM episodes e JOIN cells c ON c.id = e.cell_id "
                             "JOIN runs r ON r.id = c.run_id WHERE r.name = 'tp'").fetchone()[0]
    assert stored == plan.episodes
    db.conn.close()
    db_path.unlink()
    return plan.episodes / seconds, console_cpu


def serve_console(db_path: str, screen: str) -> None:
    """Run the console headless on `screen` until terminated (the throughput run)."""
    make_app(db_path, ConsoleConfig(db_path=Path(db_path), check_endpoints=False,
                                    first_screen=screen)).run(headless=True, size=(80, 24))


def main() -> None:
    """Print the three figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=200_000)
    parser.add_argument("--db", type=Path, default=None,
                        help="time the first frame and visits on this lab.db (its results "
                             "cache beside it is read and written) instead of the one built "
                             "and cached under /tmp")
    parser.add_argument("--skip", default="", help="comma-separated: first, live, throughput")
    parser.add_argument("--eager", action="store_true",
                        help="press the digits as soon as the first frame is shown, without "
                             "waiting for the warm-up")
    parser.add_argument("--throughput-db", type=Path, default=None,
                        help="run the throughput pairs on copies of this lab.db (e.g. the "
                             "198,000-episode study) instead of empty ones")
    parser.add_argument("--throughput-screen", default="dashboard",
                        help="the screen the console shows during the throughput runs "
                             "(dashboard, jobs, live, trajectories, …)")
    parser.add_argument("--serve-console", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--one-round", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_console:
        serve_console(args.serve_console, args.throughput_screen)
        return
    if args.one_round:
        print(json.dumps(asdict(asyncio.run(first_visits(Path(args.one_round), args.eager)))))
        return
    skip = set(args.skip.split(","))
    if "first" not in skip:
        path = args.db if args.db is not None else big_db(args.episodes)
        conn = sqlite3.connect(path)
        n = conn.execute("SELECT count(*) FROM episodes").fetchone()[0]
        conn.close()
        load = os.getloadavg()[0]
        runs = [first_visits_round(path, args.eager) for _ in range(3)]
        rounds = [r for r, _ in runs]
        times = [r.first for r in rounds]
        from_start = [s for _, s in runs]
        with tempfile.TemporaryDirectory() as tmp:
            empty = Path(tmp) / "empty.db"
            store.connect(empty).conn.close()
            base = [asyncio.run(first_frame(empty)) for _ in range(3)]
        print(f"first frame (Dashboard with its numbers) on {n:,} episodes: "
              f"{min(times):.2f} s best, {statistics.median(times):.2f} s median of 3 "
              f"(target ≤ 1.0 s); from the process's start {statistics.median(from_start):.2f}"
              f" s median; on an empty lab.db {min(base):.2f} s best")
        if not args.eager:
            warm = [r.warm or 0.0 for r in rounds]
            print(f"  warm-up done {statistics.median(warm):.2f} s after the first frame "
                  f"(median; the visits below start then; --eager: at once)")
        for title in rounds[0].visits:
            seconds = [r.visits[title] for r in rounds]
            print(f"  first visit of {title}: {min(seconds):.2f} s best, "
                  f"{statistics.median(seconds):.2f} s median of 3 (target ≤ 0.5 s); CPU "
                  f"{statistics.median(r.cpu[title] for r in rounds):.2f} s median")
        print(f"  (load average {load:.1f} before, {os.getloadavg()[0]:.1f} after; "
              f"{os.cpu_count()} CPUs)")
    with tempfile.TemporaryDirectory() as tmp:
        if "live" not in skip:
            lat = sorted(asyncio.run(live_latency(Path(tmp))))
            print(f"Live commit-to-screen: {len(lat)} steps, median {statistics.median(lat):.3f}"
                  f" s, p95 {lat[int(0.95 * (len(lat) - 1))]:.3f} s, max {lat[-1]:.3f} s "
                  f"(target ≤ 0.5 s)")
        if "throughput" not in skip:
            # alternate the two so that a busy moment of the machine hits both alike
            base = args.throughput_db
            screen = args.throughput_screen
            measured = [(throughput(Path(tmp), f"plain{i}", False, base),
                         throughput(Path(tmp), f"console{i}", True, base, screen))
                        for i in range(3)]
            pairs = [(a, c) for (a, _), (c, _) in measured]
            shares = [share or 0.0 for _, (_, share) in measured]
            ratios = [c / a for a, c in pairs]
            where = "empty lab.db" if base is None else f"copies of {base.name}"
            print(f"sim throughput on {where}, alone vs with the console open on "
                  f"{screen}: " + ", ".join(f"{a:.0f} vs {c:.0f}" for a, c in pairs)
                  + f" episodes/s; ratio median {statistics.median(ratios):.2f} "
                  f"(per pair {', '.join(f'{r:.2f}' for r in ratios)}; target ≥ 0.9); the "
                  f"console took {', '.join(f'{x:.2f}' for x in shares)} of a core")


if __name__ == "__main__":
    main()
