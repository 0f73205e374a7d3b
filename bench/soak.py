"""Soak: two workers, status/results readers and the console on one lab.db, with kill -9s.

For `--seconds` (default 600) on a fresh lab.db of slow sims (every model call
sleeps `--latency-ms`): a `--type thread` and a `--type process` worker (two Huey
workers each) run a grid that is topped up whenever the queue runs low; `lab status`
and `lab results` run in a loop; the console runs headless (`make_app(...).run_test()`
switching screens every second). Every `--kill-every` seconds one worker, in turn,
is killed with SIGKILL (the consumer only: its children must follow on their own) and
started again. At the end the workers are stopped, one last `lab worker --until-idle`
finishes what is queued, and the bench prints:

- episodes/s while the soak ran;
- lock errors ("database is locked" in any output; target 0) and failed commands;
- peak RSS per process kind in each quarter of the run (target: flat);
- leaked processes (any process still naming this lab.db; target 0);
- lost or duplicated episodes (every queued pair stored exactly once, none broken).

Usage: python bench/soak.py [--seconds S] [--kill-every S] [--latency-ms MS]
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.helpers.queue import episode_census  # noqa: E402

REGISTRY = """
[models.soak-own]
backend = "sim"
policy = "own_count"
k = 5
latency_ms = {latency}

[models.soak-clock]
backend = "sim"
policy = "clock"
c = 4
latency_ms = {latency}
"""

CONSOLE = """
import asyncio, sys, time
from console.app import make_app

async def main(db, seconds):
    app = make_app(db)
    async with app.run_test(size=(120, 40)) as pilot:
        end, i = time.monotonic() + seconds, 0
        while time.monotonic() < end:
            await pilot.press(str(1 + i % 5))
            await pilot.pause(1.0)
            i += 1

asyncio.run(main(sys.argv[1], float(sys.argv[2])))
"""


class Lab:
    """Runs `lab` commands on one lab.db and keeps their output in one log."""

    def __init__(self, tmp: Path, latency: float) -> None:
        self.db = tmp / "lab.db"
        self.config = tmp / "lab.toml"
        self.config.write_text(REGISTRY.format(latency=latency))
        self.log = tmp / "soak.log"
        self.env = {**os.environ, "PYTHONPATH": str(ROOT)}
        self.failed = 0
        self.grids = 0

    def args(self, *a: str) -> list[str]:
        return [sys.executable, "-m", "console.cli", "--db", str(self.db), "--config",
                str(self.config), *a]

    def run(self, *a: str, timeout: float = 120) -> None:
        out = subprocess.run(self.args(*a), capture_output=True, text=True, cwd=ROOT,
                             env=self.env, timeout=timeout)
        with self.log.open("a") as f:
            f.write(out.stdout[-2000:] + out.stderr[-2000:])
        self.failed += out.returncode != 0

    def start(self, *a: str, script: str | None = None) -> subprocess.Popen:
        cmd = [sys.executable, "-c", script, str(self.db), *a] if script else self.args(*a)
        return subprocess.Popen(cmd, cwd=ROOT, env=self.env, stdout=self.log.open("ab"),
                                stderr=subprocess.STDOUT, start_new_session=True)

    def top_up(self) -> None:
        """Queue another grid (720 episodes) when few jobs are left."""
        import sqlite3

        conn = sqlite3.connect(self.db, timeout=60)
        try:
            left = conn.execute("SELECT count(*) FROM jobs WHERE state IN ('queued', 'running')"
                                ).fetchone()[0]
        finally:
            conn.close()
        if left < 8:
            self.grids += 1
            self.run("enqueue", "--models", "soak-own,soak-clock", "--conditions",
                     "none,enforced_rule", "--regimes", "clean,persistent,recover_after_2",
                     "--set", "demo", "--seeds", str(self.grids), "--run", f"soak{self.grids}")


def _tree(pid: int) -> list[int]:
    kids: dict[int, list[int]] = defaultdict(list)
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_bytes().rpartition(b")")[2].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            kids[ppid].append(int(entry.name))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo += kids.get(p, [])
    return out


def _rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _naming(db: Path) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                if str(db).encode() in (entry / "cmdline").read_bytes():
                    out.append(int(entry.name))
            except OSError:
                continue
    return out


def main() -> None:
    """Run the soak and print its figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=600)
    parser.add_argument("--kill-every", type=float, default=20)
    parser.add_argument("--latency-ms", type=float, default=20)
    args = parser.parse_args()
    load = os.getloadavg()
    print(f"soak {args.seconds:.0f} s, kill -9 every {args.kill_every:.0f} s; load average "
          f"{load[0]:.2f} on {os.cpu_count()} CPUs")
    with tempfile.TemporaryDirectory() as tmp:
        lab = Lab(Path(tmp), args.latency_ms)
        lab.run("demo-set")
        lab.top_up()
        kinds = ("thread", "process")
        workers = {k: lab.start("worker", "--type", k, "--workers", "2", "--lease", "10")
                   for k in kinds}
        console = lab.start(str(args.seconds), script=CONSOLE)
        rss: dict[tuple[str, int], float] = defaultdict(float)
        kills = 0
        start = time.monotonic()
        next_kill = start + args.kill_every
        stored0 = episode_census(lab.db)["episodes"]
        done = threading.Event()

        def sample() -> None:  # every 0.5 s, whatever the command loop is doing
            while not done.wait(0.5):
                quarter = min(3, int(4 * (time.monotonic() - start) / args.seconds))
                for kind, proc in list(workers.items()):
                    for i, pid in enumerate(_tree(proc.pid)):
                        key = (f"{kind} worker" if i == 0 else f"{kind} child", quarter)
                        rss[key] = max(rss[key], _rss_mb(pid))
                rss[("console", quarter)] = max(rss[("console", quarter)],
                                                _rss_mb(console.pid))

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        while (now := time.monotonic()) < start + args.seconds:
            lab.run("status")
            lab.run("results")
            lab.top_up()
            if now >= next_kill:
                kind = kinds[kills % 2]
                os.kill(workers[kind].pid, signal.SIGKILL)
                workers[kind].wait()
                workers[kind] = lab.start("worker", "--type", kind, "--workers", "2",
                                          "--lease", "10")
                kills += 1
                next_kill = now + args.kill_every
        seconds = time.monotonic() - start
        done.set()
        sampler.join()
        stored = episode_census(lab.db)["episodes"] - stored0
        for proc in workers.values():
            proc.send_signal(signal.SIGTERM)
        for proc in workers.values():
            proc.wait(120)
        console.wait(60)
        lab.run("worker", "--until-idle", "--workers", "2", timeout=600)
        time.sleep(3)  # children of killed consumers have had their time to go
        leaked = _naming(lab.db)
        census = episode_census(lab.db)
        import sqlite3

        conn = sqlite3.connect(lab.db)
        expected = conn.execute("SELECT count(DISTINCT cell_id || '|' || value) FROM jobs, "
                                "json_each(jobs.question_ids)").fetchone()[0]
        conn.close()
        text = lab.log.read_text(errors="replace")
        print(f"episodes/s: {stored / seconds:.1f} ({stored} in {seconds:.0f} s, {kills} kill -9s, "
              f"{lab.grids} grids)")
        print(f"lock errors: {text.count('database is locked')}; failed commands: {lab.failed}")
        print("peak RSS (MB) per quarter of the run:")
        for name in sorted({k for k, _ in rss}):
            print(f"  {name:<16}" + "".join(f"{rss.get((name, q), 0):8.0f}" for q in range(4)))
        print(f"leaked processes: {len(leaked)}")
        lost = expected - census["distinct"]
        dup = census["episodes"] - census["distinct"]
        print(f"lost episodes: {lost}; duplicated: {dup}; broken: {census['broken']} "
              f"(expected {expected}, stored {census['episodes']})")
        for pid in leaked:
            os.kill(pid, signal.SIGKILL)


if __name__ == "__main__":
    main()
