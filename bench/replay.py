"""Replay throughput through a real `lab worker`, and the policy/controller tables at scale.

1. Throughput: episodes of a loopback OpenAI-compatible model (fake vLLM in its own
   process, every call answered after 100 ms) are stored in a fresh lab.db; then
   `lab replay judgments --run bench` queues a judgment probe at every decision point
   and a `lab worker --until-idle` subprocess runs them as users run it (Huey, the
   ledger, leases). Probes/s is measured over the middle 80 % of the probes and given
   as a ratio to the ideal (concurrency ÷ 0.1 s; target ≥ 0.9).
2. Tables: sim episodes with answer-now branches at t = 1…5 are stored and replayed
   in a temporary lab.db, then tiled (new episode and question ids) to 20,000 episodes
   with 5 branches each; `lab results policies` and `controllers` are timed on them
   (`analysis.replay.policies.policy_table`, `analysis.replay.controllers.controller_table`, the
   CLI's 2,000 resamples; target ≤ 10 s each).

Usage: python bench/replay.py [--concurrency 128] [--episodes 1920] [--delay 0.1]
       [--table-episodes 20000] [--only 1|2]
"""

from __future__ import annotations

import argparse
import math
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.concurrency import DEMO_QUESTIONS, _registry, _stats, loopback_server  # noqa: E402
from core import store  # noqa: E402
from core.demo_set import ensure_demo_set  # noqa: E402
from core.models.registry import load_registry  # noqa: E402
from jobs.control import enqueue_grid  # noqa: E402
from jobs.grid import GridRequest  # noqa: E402
from jobs.settings import WorkerSettings  # noqa: E402

ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def _lab(db: Path, config: Path, *args: str) -> str:
    out = subprocess.run([sys.executable, "-m", "console.cli", "--db", str(db), "--config",
                          str(config), *args], cwd=ROOT, env=ENV, capture_output=True,
                         text=True, timeout=1800)
    if out.returncode != 0:
        raise SystemExit(f"bench: lab {' '.join(args)} failed: {out.stderr.strip()[-400:]}")
    return out.stdout


def throughput(tmp: Path, url: str, concurrency: int, episodes: int, delay: float
               ) -> tuple[float, int, int]:
    """(probes/s over the middle 80 %, probes, server's peak calls in flight)."""
    db_path, config = tmp / "lab.db", tmp / "lab.toml"
    _registry(config, [url], concurrency, "stream")
    db = store.connect(db_path)
    ensure_demo_set(db)
    seeds = tuple(range(math.ceil(episodes / DEMO_QUESTIONS)))
    settings = WorkerSettings(db_path=db_path, config_path=config)
    enqueue_grid(db, settings, GridRequest(models=("bench",), conditions=("none",),
                                           regimes=("clean",), question_set="demo",
                                           seeds=seeds, run="bench"), load_registry(config))
    _lab(db_path, config, "worker", "--until-idle", "--concurrency", str(concurrency))
    _lab(db_path, config, "replay", "judgments", "--run", "bench")
    reader = sqlite3.connect(db_path, timeout=60)
    planned = reader.execute("SELECT count(*) FROM decisions").fetchone()[0]
    client = httpx.Client(timeout=5)
    calls0 = _stats(client, [url], reset=True)[0]
    proc = subprocess.Popen([sys.executable, "-m", "console.cli", "--db", str(db_path),
                             "--config", str(config), "worker", "--until-idle",
                             "--concurrency", str(concurrency)], cwd=ROOT, env=ENV,
                            stderr=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    samples: list[tuple[float, int]] = []
    while proc.poll() is None:
        samples.append((time.perf_counter(), _stats(client, [url])[0] - calls0))
        time.sleep(0.1)
    total, _, peak = _stats(client, [url])
    total -= calls0
    stored = reader.execute("SELECT count(*) FROM probes WHERE error IS NULL").fetchone()[0]
    if proc.returncode != 0 or stored != planned:
        raise SystemExit(f"bench: worker exit {proc.returncode}, {stored}/{planned} probes")
    window = [s for s in samples if 0.1 * total <= s[1] <= 0.9 * total]
    if len(window) < 3:
        raise SystemExit("bench: too short to measure; raise --episodes")
    rate = (window[-1][1] - window[0][1]) / (window[-1][0] - window[0][0])
    return rate, total, peak


def _sim_frames(tmp: Path) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Episodes, steps and answer-now probes (t = 1…5) of a small sim grid."""
    from analysis.measures.frames import load_frames
    from core.store.probes import probes_frame

    db_path, config = tmp / "sims.db", tmp / "sims.toml"
    config.write_text("")
    _lab(db_path, config, "init")
    _lab(db_path, config, "sets", "create", "d", "--dataset", "demo", "--n", "60", "--seed", "1")
    _lab(db_path, config, "enqueue", "--models", "sim-own5,sim-clock6", "--conditions",
         "none:judge=true", "--regimes", "persistent,clean,recover_after_3", "--set", "d",
         "--run", "p")
    _lab(db_path, config, "worker", "--until-idle")
    _lab(db_path, config, "replay", "answer-now", "--run", "p", "--at", "t=1,2,3,4,5")
    _lab(db_path, config, "worker", "--until-idle")
    db = store.connect(db_path)
    frames = load_frames(db)
    return frames.episodes, frames.steps, probes_frame(db, kinds=("answer_now",))


def _tile(frame: pd.DataFrame, copy: int, stride: int, questions: bool) -> pd.DataFrame:
    out = frame.copy()
    out["episode_id"] = out["episode_id"] + copy * stride
    if questions:
        out["question_id"] = out["question_id"].astype(str) + f"~{copy}"
    return out


def tables(tmp: Path, n_episodes: int, n_boot: int) -> dict[str, float]:
    """Seconds each table takes on `n_episodes` tiled episodes with 5 branches each."""
    from analysis.replay.controllers import controller_table
    from analysis.replay.policies import policy_table

    eps, steps, probes = _sim_frames(tmp)
    probes = probes.loc[probes["episode_id"].isin(eps["episode_id"])]
    copies = math.ceil(n_episodes / len(eps))
    stride = int(eps["episode_id"].max()) + 1
    eps = pd.concat([_tile(eps, c, stride, True) for c in range(copies)]).head(n_episodes)
    steps = pd.concat([_tile(steps, c, stride, False) for c in range(copies)])
    probes = pd.concat([_tile(probes, c, stride, False) for c in range(copies)])
    steps = steps.loc[steps["episode_id"].isin(eps["episode_id"])]
    probes = probes.loc[probes["episode_id"].isin(eps["episode_id"])]
    per = probes.groupby("episode_id").size()
    print(f"tables: {len(eps):,} episodes, {len(probes):,} answer-now branches "
          f"(median {int(np.median(per))} per episode), {n_boot} resamples")
    out = {}
    for name, build in (("policies", policy_table), ("controllers", controller_table)):
        start = time.perf_counter()
        table = build(eps, steps, probes, n_boot, 0)
        out[name] = time.perf_counter() - start
        print(f"  {name}: {out[name]:.2f} s ({len(table.rows)} rows; target ≤ 10 s)")
    return out


def main() -> None:
    """Run the replay benchmarks and print their figures."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--concurrency", type=int, default=128)
    ap.add_argument("--episodes", type=int, default=1920)
    ap.add_argument("--delay", type=float, default=0.1)
    ap.add_argument("--table-episodes", type=int, default=20000)
    ap.add_argument("--resamples", type=int, default=2000)
    ap.add_argument("--only", choices=("1", "2"))
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        if args.only != "2":
            with loopback_server(args.delay, None) as url:
                rate, total, peak = throughput(tmp, url, args.concurrency, args.episodes,
                                               args.delay)
            ideal = args.concurrency / args.delay
            print(f"replay throughput: {total:,} judgment probes at concurrency "
                  f"{args.concurrency}, {args.delay * 1000:.0f} ms per call: {rate:,.0f} "
                  f"probes/s = {rate / ideal:.2f} of ideal {ideal:,.0f}/s (target ≥ 0.9); "
                  f"server peak in flight {peak}")
        if args.only != "1":
            tables(tmp, args.table_episodes, args.resamples)


if __name__ == "__main__":
    main()
