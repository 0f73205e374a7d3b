"""Replay work is queue work everywhere: `lab status`, the console's Jobs and
Dashboard reads count a replay grid's probes (stored/expected/errored, ETA), and
`lab retry --errored` queues errored probes again."""

from __future__ import annotations

import json
import re
import sqlite3
import time
from pathlib import Path

import pytest

from console.cli import main
from core import store
from core.store import monitor, progress
from jobs.control import status


def lab(capsys: pytest.CaptureFixture[str], db: Path, *args: str) -> tuple[int, str, str]:
    code = main(["--db", str(db), *args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def replayed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[Path, int, int]:
    """A finished sim run with its answer-now replay queued: (db, replay grid, probes)."""
    db = tmp_path / "lab.db"
    for args in (("init",), ("sets", "create", "d3", "--dataset", "demo", "--n", "3",
                             "--seed", "1"),
                 ("enqueue", "--models", "sim-own5", "--conditions", "none", "--regimes",
                  "persistent,clean", "--set", "d3", "--run", "pilot"),
                 ("worker", "--until-idle")):
        code, _, err = lab(capsys, db, *args)
        assert code == 0, err
    code, out, err = lab(capsys, db, "replay", "answer-now", "--run", "pilot", "--json")
    assert code == 0, err
    plan = json.loads(out)
    return db, int(plan["grid"]), int(plan["calls"])


def _error_probes(db: Path, n: int) -> None:
    """Mark n stored probes errored, as a model call failing after its retries leaves them."""
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("UPDATE probes SET error = 'http 500 after 2 retries' WHERE (episode_id, t) "
                     "IN (SELECT episode_id, t FROM probes ORDER BY episode_id, t LIMIT ?)",
                     (n,))
    conn.close()


def test_status_counts_probes_of_a_replay_grid_while_queued(replayed: tuple[Path, int, int],
                                                            capsys: pytest.CaptureFixture[str]
                                                           ) -> None:
    db, grid, calls = replayed
    conn = store.connect(db)
    by_grid = {g.grid: g for g in status(conn)}
    g = by_grid[grid]
    assert (g.unit, g.kind, g.expected, g.stored, g.errored) == ("probes", "answer_now", calls,
                                                                  0, 0)
    assert g.eta_s is None  # probes queued and none stored yet: no honest ETA, never 0 s
    assert by_grid[1].unit == "episodes" and by_grid[1].stored == by_grid[1].expected == 6
    code, out, _ = lab(capsys, db, "status")
    assert code == 0
    assert f"0/{calls} answer_now probes" in out and "ETA -" in out
    # the stored grid reads as the console's Jobs tree says it, not "ETA 0s"
    assert re.search(r"6/6 episodes, (?:[\d.]+/s, )?complete\n", out), out
    rows = progress.job_rows(conn, grid)  # the console's Jobs tree
    assert {r.unit for r in rows} == {"probes"} and sum(r.expected for r in rows) == calls
    assert sum(r.stored for r in rows) == 0
    counts = monitor.queue_counts(conn)  # the console's Dashboard
    assert (counts.probes, counts.probes_errored) == (0, 0)


def test_errored_probes_are_counted_and_retried(replayed: tuple[Path, int, int],
                                                capsys: pytest.CaptureFixture[str]) -> None:
    db, grid, calls = replayed
    assert lab(capsys, db, "worker", "--until-idle")[0] == 0
    conn = store.connect(db)
    g = next(g for g in status(conn) if g.grid == grid)
    assert (g.stored, g.errored, g.eta_s) == (calls, 0, 0.0)
    _error_probes(db, 2)
    g = next(g for g in status(conn) if g.grid == grid)
    assert (g.stored, g.errored) == (calls - 2, 2)
    assert g.retry == f"lab retry --grid {grid} --errored"
    code, out, _ = lab(capsys, db, "status")
    assert f"{calls - 2}/{calls} answer_now probes" in out and "2 errored" in out
    assert sum(r.errored for r in progress.job_rows(conn, grid)) == 2
    assert monitor.queue_counts(conn).probes_errored == 2
    code, out, err = lab(capsys, db, "retry", "--grid", str(grid), "--errored")
    assert code == 0, err
    assert "2 errored probe(s) in 1 new replay job(s)" in out
    g = next(g for g in status(conn) if g.grid == grid)
    assert g.jobs["queued"] == 1 and g.eta_s != 0.0  # the errored probes remain, queued
    # a second retry while they are queued queues nothing twice
    assert "0 errored probe(s) in 0 new replay job(s)" in lab(
        capsys, db, "retry", "--grid", str(grid), "--errored")[1]
    assert lab(capsys, db, "worker", "--until-idle")[0] == 0
    g = next(g for g in status(conn) if g.grid == grid)
    assert (g.stored, g.errored, g.retry) == (calls, 0, None)
    counts = monitor.queue_counts(conn)
    assert (counts.probes, counts.probes_errored) == (calls, 0)
    # the Dashboard's rates are the Jobs tree's (`monitor.window_rate`), read at one clock
    now = time.time()
    grids, counts = status(conn, now=now), monitor.queue_counts(conn, now=now)
    replay = next(g for g in grids if g.grid == grid)
    episodes = [g for g in grids if g.unit == "episodes"]
    assert len(episodes) == 1 and replay.rate > 0 and episodes[0].rate > 0
    assert counts.probe_rate == pytest.approx(replay.rate)
    assert counts.rate == pytest.approx(episodes[0].rate)
    n = conn.conn.execute("SELECT count(*) FROM probes").fetchone()[0]
    assert n == calls  # asked again in place: nothing stored twice
