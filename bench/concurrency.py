"""Model calls/s through a real `lab worker` against loopback OpenAI-compatible servers.

Each server answers every call after a fixed 100 ms (a stand-in for vLLM, in its own
process). A grid of `none`/`clean` episodes on the demo questions (search ×3 then
finish: 4 calls per episode) is queued into a fresh lab.db and a `lab worker
--until-idle` subprocess runs it as users run it: Huey, the ledger, live tables on.
While it runs, the bench samples each server's call counter and in-flight calls and
lab.db's running episodes; calls/s is measured over the middle 80 % of the calls.

1. One endpoint, model concurrency 1, 8, 32, 128 with `--workers 1`, and 32, 128 with
   `--workers 2`: calls/s as a ratio to the ideal (concurrency ÷ 0.1 s; target ≥ 0.9),
   the server's peak calls in flight (never above the concurrency), episodes in
   flight (mean / peak) and the worker's CPU per call.
   With `--endpoints N` every case runs against N servers at once, each serving at
   most concurrency ÷ N calls at a time (like a GPU batch): one queue spreading a
   model's episodes over N endpoints (e.g. `--endpoints 4 --cases 512x2`: 4 × 128).
   Each line also gives the CPU-allowed ideal: the calls/s the CPU this run could
   have had (the worker's and servers' own plus what stayed idle, from /proc/stat)
   pays for at the measured CPU per call (worker and servers), so on a machine
   shared with other jobs the ratio says whether lab or the CPUs were the limit;
   and the calls/s one core drives (1 s ÷ the worker's CPU per call).
2. Endpoints serving at most 32 calls at once each (like a GPU batch), concurrency
   128: 4 endpoints against 1 (target ≥ 3.5×).
3. With --in-process: the same calls through core.runner alone in this process (no
   queue; live tables as the worker writes them), a second, lighter figure.

--transport picks how the worker sends calls: "stream" (lab's keep-alive pool, the
default), "httpx" (httpx.AsyncClient) or "sdk" (the openai SDK's AsyncOpenAI).

Usage: python bench/concurrency.py [--waves N] [--delay S] [--transport T]
       [--only 1|2] [--cases 32x1,128x2] [--endpoints N] [--in-process]
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import math
import os
import resource
import socket
import sqlite3
import statistics
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

from core import store  # noqa: E402
from core.conditions import parse_condition  # noqa: E402
from core.data import Question  # noqa: E402
from core.demo_data import demo_questions  # noqa: E402
from core.demo_set import ensure_demo_set  # noqa: E402
from core.models.registry import ModelSpec, load_registry, make_client  # noqa: E402
from core.regimes import ForeignPool, parse_regime  # noqa: E402
from core.runner import CellSpec  # noqa: E402
from jobs.control import enqueue_grid  # noqa: E402
from jobs.grid import GridRequest  # noqa: E402
from jobs.kinds.episodes import run_questions  # noqa: E402
from jobs.settings import WorkerSettings  # noqa: E402

SEARCHES = 3
CALLS_PER_EPISODE = SEARCHES + 1
DEMO_QUESTIONS = 60


SERVER_PIDS: dict[str, int] = {}
"""Each running loopback server's process id by its base URL (its CPU is read from /proc)."""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def loopback_server(delay: float, max_concurrent: int | None) -> Iterator[str]:
    """A fake-vLLM subprocess on a free port; yields its base URL (no /v1)."""
    port = _free_port()
    cmd = [sys.executable, "-m", "tests.servers.fake_vllm", "serve", "bench-model",
           "--port", str(port), "--delay", str(delay), "--searches", str(SEARCHES)]
    if max_concurrent:
        cmd += ["--max-concurrent", str(max_concurrent)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env)
    SERVER_PIDS[f"http://127.0.0.1:{port}"] = proc.pid
    try:
        for _ in range(100):
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}"
    finally:
        SERVER_PIDS.pop(f"http://127.0.0.1:{port}", None)
        proc.terminate()
        proc.wait(10)


def _machine_idle() -> float | None:
    """Idle CPU-seconds of the whole machine so far (/proc/stat); None elsewhere."""
    try:
        fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    except (OSError, ValueError):
        return None
    return (fields[3] + (fields[4] if len(fields) > 4 else 0)) / os.sysconf("SC_CLK_TCK")


def _process_cpu(pids: Sequence[int]) -> float | None:
    """CPU-seconds the processes `pids` used so far (/proc); None elsewhere or once gone."""
    total = 0.0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            return None
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def _tree_cpu(pid: int) -> float | None:
    """CPU-seconds process `pid` and its live descendants used so far (a `--type process`
    worker's Huey processes are its children); None elsewhere or once `pid` is gone."""
    total = _process_cpu([pid])
    if total is None:
        return None
    todo = [pid]
    while todo:
        parent = todo.pop()
        for task in Path(f"/proc/{parent}/task").glob("*/children"):
            try:
                children = [int(c) for c in task.read_text().split()]
            except OSError:
                continue
            todo += children
            total += sum(_process_cpu([c]) or 0.0 for c in children)
    return total


@dataclasses.dataclass(frozen=True)
class Sample:
    """What the bench reads every 0.2 s while the worker runs."""

    t: float
    calls: int
    running: int
    active: int
    worker_cpu: float | None
    server_cpu: float | None
    idle: float | None

    def cpu(self) -> tuple[float, float, float] | None:
        """(worker, servers, machine idle) CPU-seconds so far; None off Linux."""
        if self.worker_cpu is None or self.server_cpu is None or self.idle is None:
            return None
        return self.worker_cpu, self.server_cpu, self.idle


@dataclasses.dataclass(frozen=True)
class Figure:
    """One measurement.

    Attributes:
        peaks: each endpoint's peak calls in flight.
        cpu_ms_per_call: the worker's CPU per call (in the measured window on Linux,
            else over the whole run).
        server_ms_per_call: the loopback servers' CPU per call (None off Linux).
        cpu_allowed: the calls/s the CPU this run could have had pays for (None off
            Linux): (the worker's and servers' CPU-seconds + the machine's idle ones)
            per second ÷ their CPU per call, over the measured window.
        at_servers: calls the servers were answering (their /stats "active", from a
            request's arrival at the app to its reply), mean over the measured window:
            ÷ calls/s it is how long each call stayed at a server (the delay and the
            server's own lag); the rest of the concurrency ÷ calls/s is a call's time
            in lab (and in the kernel between them); sampled every 0.2 s, so good to
            a few ms.
    """

    rate: float
    calls: int
    peak_calls: int
    episodes_mean: float
    episodes_peak: int
    cpu_ms_per_call: float
    peaks: tuple[int, ...] = ()
    server_ms_per_call: float | None = None
    cpu_allowed: float | None = None
    at_servers: float = 0.0


def _registry(path: Path, urls: Sequence[str], concurrency: int, transport: str) -> None:
    endpoints = ", ".join(f'"{u}/v1"' for u in urls)
    path.write_text(f'[models.bench]\nbackend = "openai"\nmodel = "bench-model"\n'
                    f'endpoints = [{endpoints}]\nconcurrency = {concurrency}\n'
                    f'transport = "{transport}"\ntimeout_s = 30\nmax_retries = 0\n'
                    f'sampling = {{ temperature = 0.0 }}\n')


def _stats(client: httpx.Client, urls: Sequence[str], reset: bool = False
           ) -> tuple[int, int, int]:
    calls = active = peak = 0
    for u in urls:
        s = client.get(f"{u}/stats/reset" if reset else f"{u}/stats").json()
        calls, active, peak = calls + s["calls"], active + s["active"], max(peak, s["peak"])
    return calls, active, peak


def through_worker(tmp: Path, urls: Sequence[str], concurrency: int, workers: int,
                   episodes: int, transport: str, worker_type: str = "thread") -> Figure:
    """Queue `episodes` episodes and run them with a `lab worker` subprocess."""
    db_path, config = tmp / "lab.db", tmp / "lab.toml"
    for f in tmp.glob("lab*"):
        f.unlink() if f.is_file() else None
    _registry(config, urls, concurrency, transport)
    db = store.connect(db_path)
    ensure_demo_set(db)
    seeds = tuple(range(math.ceil(episodes / DEMO_QUESTIONS)))
    settings = WorkerSettings(db_path=db_path, config_path=config)
    enqueue_grid(db, settings, GridRequest(models=("bench",), conditions=("none",),
                                           regimes=("clean",), question_set="demo",
                                           seeds=seeds, run="bench"), load_registry(config))
    expected = len(seeds) * DEMO_QUESTIONS
    client = httpx.Client(timeout=5)
    calls0 = _stats(client, urls, reset=True)[0]
    reader = sqlite3.connect(db_path, timeout=60)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    server_pids = [SERVER_PIDS[u] for u in urls]
    proc = subprocess.Popen([sys.executable, "-m", "console.cli", "--db", str(db_path),
                             "--config", str(config), "worker", "--workers", str(workers),
                             "--type", worker_type, "--until-idle"], cwd=ROOT,
                            env={**os.environ, "PYTHONPATH": str(ROOT)},
                            stderr=subprocess.DEVNULL)
    samples: list[Sample] = []
    while proc.poll() is None:
        calls, active, _ = _stats(client, urls)
        running = reader.execute("SELECT count(*) FROM live_episodes").fetchone()[0]
        samples.append(Sample(time.perf_counter(), calls - calls0, running, active,
                              _tree_cpu(proc.pid), _process_cpu(server_pids),
                              _machine_idle()))
        time.sleep(0.2)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    peaks = tuple(client.get(f"{u}/stats").json()["peak"] for u in urls)
    total, _, peak = _stats(client, urls)
    total -= calls0
    stored, errors = reader.execute("SELECT count(*), sum(error IS NOT NULL) FROM episodes"
                                    ).fetchone()
    if proc.returncode != 0 or stored != expected or errors:
        raise SystemExit(f"bench: worker exit {proc.returncode}, {stored}/{expected} stored, "
                         f"{errors} errored")
    window = [s for s in samples if 0.1 * total <= s.calls <= 0.9 * total]
    if len(window) < 3:
        raise SystemExit("bench: too short to measure; raise --waves")
    first, last = window[0], window[-1]
    calls, seconds = last.calls - first.calls, last.t - first.t
    rate = calls / seconds
    worker_ms = 1000 * ((after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
                        ) / max(total, 1)
    server_ms = allowed = None
    a, b = first.cpu(), last.cpu()
    if a is not None and b is not None:
        worker, servers, idle = (y - x for x, y in zip(a, b, strict=True))
        worker_ms, server_ms = 1000 * worker / calls, 1000 * servers / calls
        allowed = (worker + servers + idle) / seconds / ((worker + servers) / calls)
    return Figure(rate, total, peak, statistics.mean(s.running for s in window),
                  max(s.running for s in samples), worker_ms, peaks, server_ms, allowed,
                  statistics.mean(s.active for s in window))


def questions_for(n: int) -> list[Question]:
    """n questions: the demo questions cloned under new ids."""
    demo = demo_questions()
    return [dataclasses.replace(demo[i % len(demo)], id=f"bench-{i}") for i in range(n)]


async def in_process(db_path: Path, urls: Sequence[str], concurrency: int, episodes: int,
                     label: str, transport: str) -> float:
    """calls/s of `episodes` episodes through core.runner in this process (live tables on)."""
    db = store.connect(db_path)
    qs = questions_for(episodes + concurrency)
    spec = ModelSpec("bench", "openai", {
        "model": "bench-model", "endpoints": [f"{u}/v1" for u in urls], "transport": transport,
        "sampling": {"temperature": 0.0}, "concurrency": concurrency, "timeout_s": 30.0,
        "max_retries": 0})
    cell = CellSpec(spec, parse_condition("none"), parse_regime("clean"), None, 8, 0)
    pool = ForeignPool(qs[:60])
    client = make_client(spec)
    warm = store.ensure_cell(db, store.ensure_run(db, f"{label}-warm"), cell.columns())
    await run_questions(db, warm, cell, qs[episodes:], pool, client, live=True, batch=1,
                        close_client=False)
    cell_id = store.ensure_cell(db, store.ensure_run(db, label), cell.columns())
    start = time.perf_counter()
    await run_questions(db, cell_id, cell, qs[:episodes], pool, client, live=True, batch=1)
    seconds = time.perf_counter() - start
    calls = db.conn.execute("SELECT sum(tool_calls + 1 + extra_calls) FROM episodes "
                            "WHERE cell_id = ?", (cell_id,)).fetchone()[0]
    return calls / seconds


def _line(head: str, f: Figure, ideal: float, concurrency: int) -> str:
    per_endpoint = (f" (per endpoint {'/'.join(map(str, f.peaks))} of "
                    f"{math.ceil(concurrency / len(f.peaks))})" if len(f.peaks) > 1 else "")
    line = (f"  {head}: {f.rate:7.1f} calls/s  ideal {ideal:6.0f}  ratio {f.rate / ideal:.2f}  "
            f"peak in flight {f.peak_calls if len(f.peaks) < 2 else sum(f.peaks)}/{concurrency}"
            f"{per_endpoint}  episodes in flight {f.episodes_mean:.0f} / {f.episodes_peak}  "
            f"CPU {f.cpu_ms_per_call:.2f} ms/call (one core drives "
            f"{1000 / max(f.cpu_ms_per_call, 1e-9):,.0f} calls/s)")
    if f.rate > 0:  # Little's law: calls at a server ÷ calls/s = how long a call is there
        line += (f"  a call's round: {1000 * f.at_servers / f.rate:.1f} ms at the servers, "
                 f"{1000 * (concurrency - f.at_servers) / f.rate:.1f} ms in lab")
    if f.cpu_allowed is not None and f.server_ms_per_call is not None:
        allowed = min(ideal, f.cpu_allowed)
        line += (f"  servers {f.server_ms_per_call:.2f} ms/call  CPU-allowed ideal "
                 f"{allowed:6.0f}  ratio {f.rate / allowed:.2f}")
    return line + f"  ({f.calls} calls)"


def main() -> None:
    """Run the parts asked for and print one line per measurement."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--waves", type=int, default=15,
                        help="episodes per concurrent slot (more = closer to steady state)")
    parser.add_argument("--delay", type=float, default=0.1, help="server answer time (s)")
    parser.add_argument("--transport", choices=["stream", "httpx", "sdk"], default="stream")
    parser.add_argument("--only", choices=["1", "2"], default=None, help="run one part")
    parser.add_argument("--cases", default="1x1,8x1,32x1,128x1,32x2,128x2",
                        help="part 1: CONCURRENCYxWORKERS, comma-separated")
    parser.add_argument("--type", choices=["thread", "process"], default="thread",
                        help="part 1: the worker's --type (process: one engine per Huey "
                             "worker, each its own event loop and core)")
    parser.add_argument("--endpoints", type=int, default=1,
                        help="part 1: N servers at once, each serving ≤ concurrency ÷ N calls")
    parser.add_argument("--in-process", action="store_true",
                        help="also the lighter figure: core.runner alone, no queue")
    args = parser.parse_args()
    load = os.getloadavg()
    print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} CPUs; "
          f"transport {args.transport}; {CALLS_PER_EPISODE} calls per episode")
    with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        work = Path(tmp)
        if args.only in (None, "1"):
            cases = [tuple(int(x) for x in case.split("x")) for case in args.cases.split(",")]
            n = max(1, args.endpoints)
            print(f"1. through `lab worker`, {n} endpoint(s) answering after "
                  f"{args.delay * 1000:.0f} ms" + (", each serving ≤ concurrency ÷ "
                                                   f"{n} calls at once" if n > 1 else ""))
            for c, w in cases:
                with ExitStack() as servers:
                    urls = [servers.enter_context(loopback_server(
                        args.delay, math.ceil(c / n) if n > 1 else None)) for _ in range(n)]
                    f = through_worker(work, urls, c, w, c * args.waves, args.transport,
                                       args.type)
                print(_line(f"concurrency {c:>3}, --workers {w}"
                            + (" --type process" if args.type == "process" else ""),
                            f, c / args.delay, c),
                      flush=True)
            if args.in_process:
                url = stack.enter_context(loopback_server(args.delay, None))
                print("3. in-process runner, no queue (live tables on): a lighter path")
                for c in (32, 128):
                    rate = asyncio.run(in_process(work / "inproc.db", [url], c,
                                                  c * args.waves, f"c{c}", args.transport))
                    print(f"  concurrency {c:>3}: {rate:7.1f} calls/s  ratio "
                          f"{rate * args.delay / c:.2f}", flush=True)
        if args.only in (None, "2"):
            capped = [stack.enter_context(loopback_server(args.delay, 32)) for _ in range(4)]
            one = through_worker(work, capped[:1], 128, 1, 128 * max(2, args.waves // 4),
                                 args.transport)
            four = through_worker(work, capped, 128, 1, 128 * args.waves, args.transport)
            print(f"2. through `lab worker`, endpoints serving ≤ 32 calls at once, concurrency "
                  f"128: 1 → {one.rate:.1f} calls/s, 4 → {four.rate:.1f} calls/s, ratio "
                  f"{four.rate / one.rate:.2f} (CPU {four.cpu_ms_per_call:.2f} ms/call)")


if __name__ == "__main__":
    main()
