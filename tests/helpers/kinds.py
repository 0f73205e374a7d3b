"""One queued job of each kind on a fresh lab.db, and how to count what it stored.

The crash, stop and lease tests run against every kind with these: a kind's units
are episodes, replay probes (answer-now branches of recorded episodes) or trace
states (question × depth).
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from tests.helpers.queue import SLOW_REGISTRY, lab_here

KINDS = ("episodes", "replay", "traces")

KIND_REGISTRY = SLOW_REGISTRY + """
[models.sim-trace-slow]
backend = "sim"
policy = "trace"
latency_ms = {latency}
"""

UNITS = {
    "episodes": "SELECT count(*), count(DISTINCT cell_id || '|' || question_id) FROM episodes "
                "WHERE error IS NULL",
    "replay": "SELECT count(*), count(DISTINCT episode_id || '|' || t || '|' || kind) "
              "FROM probes WHERE error IS NULL",
    "traces": "SELECT count(*), count(DISTINCT question_id || '|' || depth) FROM traces "
              "WHERE error IS NULL",
}
"""Per kind: (units stored, distinct units stored)."""


def kind_registry(tmp: Path, latency: float) -> Path:
    """A lab.toml with the slow sims and a slow trace sim."""
    path = tmp / "lab.toml"
    path.write_text(KIND_REGISTRY.format(latency=latency))
    return path


def units(db: Path, kind: str) -> tuple[int, int]:
    """(units of `kind` stored complete, distinct ones)."""
    conn = sqlite3.connect(db)
    try:
        row = conn.execute(UNITS[kind]).fetchone()
        return int(row[0]), int(row[1])
    finally:
        conn.close()


def queue_kind(db: Path, config: Path, kind: str, questions: int = 8) -> int:
    """Queue the jobs of one kind on a fresh lab.db; returns the units they will store.

    A replay job needs recorded episodes: they are run first, in this process.
    """
    for args in (("init",), ("sets", "create", "d", "--dataset", "demo", "--n",
                             str(questions), "--seed", "2")):
        assert lab_here(db, config, *args).returncode == 0
    if kind == "traces":
        out = lab_here(db, config, "traces", "collect", "--set", "d", "--models",
                       "sim-trace-slow", "--run", "k", "--json")
        assert out.returncode == 0, out.stderr
        return int(json.loads(out.stdout)["states"])
    out = lab_here(db, config, "enqueue", "--models", "sim-slow", "--conditions", "none",
                   "--regimes", "persistent", "--set", "d", "--run", "k")
    assert out.returncode == 0, out.stderr
    if kind == "episodes":
        return questions
    ran = lab_here(db, config, "worker", "--until-idle", "--concurrency", "64")
    assert ran.returncode == 0, ran.stderr
    out = lab_here(db, config, "replay", "answer-now", "--run", "k", "--json")
    assert out.returncode == 0, out.stderr
    return int(json.loads(out.stdout)["calls"])
