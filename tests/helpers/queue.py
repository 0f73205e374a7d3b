"""Helpers for queue tests: a slow sim registry, enqueueing, running `lab` subprocesses."""

from __future__ import annotations

import contextlib
import io
import os
import sqlite3
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from sqlite_utils import Database

from core.store import jobs as ledger

ROOT = Path(__file__).resolve().parents[2]

SLOW_REGISTRY = """
[models.sim-slow]
backend = "sim"
policy = "own_count"
k = 5
latency_ms = {latency}

[models.sim-slow-clock]
backend = "sim"
policy = "clock"
c = 4
latency_ms = {latency}
"""


def write_registry(tmp: Path, latency: float = 5.0) -> Path:
    """A lab.toml with two slow sim models."""
    path = tmp / "lab.toml"
    path.write_text(SLOW_REGISTRY.format(latency=latency))
    return path


def lab_args(db: Path, config: Path, *args: str) -> list[str]:
    """argv for running the lab CLI in a subprocess."""
    return [sys.executable, "-m", "console.cli", "--db", str(db), "--config", str(config), *args]


def run_lab(db: Path, config: Path, *args: str, timeout: float = 120
            ) -> subprocess.CompletedProcess:
    """Run a lab command to completion."""
    return subprocess.run(lab_args(db, config, *args), capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT, env=_env())


def lab_here(db: Path, config: Path, *args: str) -> subprocess.CompletedProcess:
    """Run a lab command in this process, for set-up and control steps whose process
    boundary a test does not check (each `lab` process costs 1.5-2 s to start); the
    result reads like `run_lab`'s."""
    from console.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["--db", str(db), "--config", str(config), *args])
    return subprocess.CompletedProcess(["lab", *args], code, out.getvalue(), err.getvalue())


def start_lab(db: Path, config: Path, *args: str, log: Path) -> subprocess.Popen:
    """Start a lab command in the background (own process group), output to `log`."""
    out = open(log, "ab")
    return subprocess.Popen(lab_args(db, config, *args), stdout=out, stderr=subprocess.STDOUT,
                            cwd=ROOT, env=_env(), start_new_session=True)


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def age_queued_jobs(db: Path, seconds: float = 3600.0) -> None:
    """Make the queued jobs `seconds` older, as a worker sees them once that time passed.

    A job a stopping worker released has no message in the queue, and a worker's
    reconcile sends it one only once it is older than `jobs.reconcile.GRACE_S` (it may be
    on its way into the queue), at start or every few seconds: aged, the next worker
    takes it at once instead of after its next reconcile. The time is injected; the
    sequence is the same.
    """
    conn = sqlite3.connect(db)
    try:
        with conn:
            rows = conn.execute("SELECT id, updated_at FROM jobs WHERE state = 'queued'")
            conn.executemany("UPDATE jobs SET updated_at = ? WHERE id = ?", [
                ((datetime.fromisoformat(at) - timedelta(seconds=seconds)).isoformat(), i)
                for i, at in rows.fetchall()])
    finally:
        conn.close()


def episode_census(db: Path) -> dict:
    """Counts that crash tests assert on, read with a plain sqlite3 connection."""
    conn = sqlite3.connect(db)
    try:
        pairs = conn.execute("SELECT count(*), count(DISTINCT cell_id || '|' || question_id) "
                             "FROM episodes").fetchone()
        broken = conn.execute(
            "SELECT count(*) FROM episodes e WHERE "
            "(SELECT count(*) FROM steps s WHERE s.episode_id = e.id) = 0 OR "
            "(SELECT max(t) FROM steps s WHERE s.episode_id = e.id) != "
            "(SELECT count(*) FROM steps s WHERE s.episode_id = e.id) OR "
            "(e.answered = 1 AND e.answer_action != "
            " (SELECT max(t) FROM steps s WHERE s.episode_id = e.id))").fetchone()[0]
        states = dict(conn.execute("SELECT state, count(*) FROM jobs GROUP BY state").fetchall())
        return {"episodes": pairs[0], "distinct": pairs[1], "broken": broken, "jobs": states}
    finally:
        conn.close()


def job_row(db: Database, job_id: int) -> dict[str, Any]:
    """The jobs row of `job_id`, which the test knows is there (question_ids decoded)."""
    row = ledger.job(db, job_id)
    assert row is not None, f"no job {job_id}"
    return row
