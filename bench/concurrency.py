"""Model calls/s through real episodes against loopback OpenAI-compatible servers.

Each server answers every call after a fixed 100 ms (a stand-in for vLLM, run in its
own process so it is not the bottleneck). Episodes run through core.runner into a
fresh lab.db with the openai backend: search ×3 then finish, 4 calls per episode.

1. One endpoint, concurrency 1, 8, 32, 128: calls/s as a ratio to the ideal
   (concurrency ÷ 0.1 s). Target ≥ 0.9 up to 128.
2. Endpoints serving at most 32 calls at once each (like a GPU batch), 128 concurrent
   episodes: 4 endpoints against 1. Target ≥ 3.5×.

Usage: python bench/concurrency.py [--waves N] [--delay S] [--live]
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the loopback servers live in tests/servers

from core import store
from core.conditions import parse_condition
from core.data import Question
from core.demo_data import demo_questions
from core.models.registry import ModelSpec, make_client
from core.regimes import ForeignPool, parse_regime
from core.runner import CellSpec, run_questions

SEARCHES = 3
CALLS_PER_EPISODE = SEARCHES + 1


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def loopback_server(delay: float, max_concurrent: int | None) -> Iterator[str]:
    """A fake-vLLM subprocess on a free port; yields its /v1 endpoint."""
    port = _free_port()
    cmd = [sys.executable, "-m", "tests.servers.fake_vllm", "serve", "bench-model",
           "--port", str(port), "--delay", str(delay), "--searches", str(SEARCHES)]
    if max_concurrent:
        cmd += ["--max-concurrent", str(max_concurrent)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env)
    try:
        for _ in range(100):
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        proc.terminate()
        proc.wait(10)


def questions_for(n: int) -> list[Question]:
    """n questions: the demo questions cloned under new ids."""
    demo = demo_questions()
    return [dataclasses.replace(demo[i % len(demo)], id=f"bench-{i}") for i in range(n)]


async def measure(db_path: Path, endpoints: Sequence[str], concurrency: int,
                  episodes: int, label: str, live: bool = False) -> tuple[float, int]:
    """Run `episodes` episodes at `concurrency` as run `label`; return (calls/s, calls).

    A first wave (one episode per slot, not timed) warms imports and connections.
    """
    db = store.connect(db_path)
    qs = questions_for(episodes + concurrency)
    spec = ModelSpec("bench", "openai", {
        "model": "bench-model", "endpoints": list(endpoints), "sampling": {"temperature": 0.0},
        "concurrency": concurrency, "timeout_s": 30.0, "max_retries": 0})
    cell = CellSpec(spec, parse_condition("none"), parse_regime("clean"), None, 8, 0)
    pool = ForeignPool(qs[:60])
    client = make_client(spec)
    warm_id = store.ensure_cell(db, store.ensure_run(db, f"{label}-warm"), cell.columns())
    await run_questions(db, warm_id, cell, qs[episodes:], pool, client, live=live,
                        batch=1 if live else 64)
    cell_id = store.ensure_cell(db, store.ensure_run(db, label), cell.columns())
    start = time.perf_counter()
    stored = await run_questions(db, cell_id, cell, qs[:episodes], pool, client, live=live,
                                 batch=1 if live else 64)
    seconds = time.perf_counter() - start
    calls, errors = db.conn.execute(
        "SELECT sum(tool_calls + 1 + extra_calls), sum(error IS NOT NULL) FROM episodes "
        "WHERE cell_id = ?", (cell_id,)).fetchone()
    if stored != episodes or errors:
        raise SystemExit(f"bench: {stored}/{episodes} stored, {errors} errored")
    return calls / seconds, int(calls)


def main() -> None:
    """Run both parts and print one line per measurement."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--waves", type=int, default=20,
                        help="episodes per concurrent slot (more = closer to steady state)")
    parser.add_argument("--delay", type=float, default=0.1, help="server answer time (s)")
    parser.add_argument("--live", action="store_true",
                        help="store as the worker does for real models: every step committed "
                             "to the live tables, one episode per transaction")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        db = Path(tmp) / "lab.db"
        url = stack.enter_context(loopback_server(args.delay, None))
        print(f"one endpoint answering after {args.delay * 1000:.0f} ms, "
              f"{CALLS_PER_EPISODE} calls per episode")
        for c in (1, 8, 32, 128):
            rate, calls = asyncio.run(measure(db, [url], c, c * args.waves, f"c{c}", args.live))
            ideal = c / args.delay
            print(f"  concurrency {c:>3}: {rate:7.1f} calls/s  ideal {ideal:6.0f}  "
                  f"ratio {rate / ideal:.2f}  ({calls} calls)")
        capped = [stack.enter_context(loopback_server(args.delay, 32)) for _ in range(4)]
        one, _ = asyncio.run(measure(db, capped[:1], 128, 128 * max(1, args.waves // 4), "one",
                                     args.live))
        four, _ = asyncio.run(measure(db, capped, 128, 128 * args.waves, "four", args.live))
        print(f"endpoints serving ≤ 32 calls at once, 128 concurrent episodes: "
              f"1 → {one:.1f} calls/s, 4 → {four:.1f} calls/s, ratio {four / one:.2f}")


if __name__ == "__main__":
    main()
