"""Errors where the researcher looks: errored counts and the newest error
line per job and grid on Jobs, errored-by-reason and spend reads, a paused grid's ETA."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from textual.app import App
from textual.widgets import Tree

from core import store
from core.store import monitor
from tests.helpers.console import build, console_app, copy_db, freeze_times, settle

ERR = "connection: local at http://127.0.0.1:9/v1: connection failed (ConnectionRefusedError)"


@pytest.fixture(scope="session")
def errored_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The console fixture run, then job 1's 30 episodes turned into refused connections
    (no tokens: no call answered)."""
    path = build(tmp_path_factory.mktemp("errors") / "lab.db")
    freeze_times(path)
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("UPDATE episodes SET error = ?, input_tokens = 0, output_tokens = 0, "
                     "cache_read_tokens = 0, cache_write_tokens = 0, cost_usd = 0 WHERE "
                     "cell_id = (SELECT cell_id FROM jobs WHERE id = 1) AND question_id IN "
                     "(SELECT q.value FROM jobs j, json_each(j.question_ids) q "
                     "WHERE j.id = 1)", (ERR,))
    conn.close()
    return path


@pytest.fixture
def lab_db(errored_db: Path, tmp_path: Path) -> Path:
    copy_db(errored_db, tmp_path / "lab.db")
    return tmp_path / "lab.db"


def _labels(app: App[None]) -> list[str]:
    tree = app.screen.query_one(Tree)
    out, stack = [], list(reversed(tree.root.children))
    while stack:
        node = stack.pop()
        out.append(str(node.label))
        if node.is_expanded:
            stack.extend(reversed(node.children))
    return out


def test_monitor_error_reads(lab_db: Path) -> None:
    db = store.connect(lab_db)
    errs = monitor.job_errors(db, 1)
    n = errs[1].errored
    assert n > 0 and errs[1].complete == 0 and errs[1].last_error == ERR
    assert errs[2].errored == 0 and errs[2].last_error is None
    assert monitor.grid_last_errors(db) == {1: ERR}
    [reason] = monitor.errored_by_reason(db)
    assert (reason.unit, reason.reason, reason.count) == ("episodes", "connection", n)
    spent = monitor.spend_counted(db)
    assert (spent.errored_with_calls, spent.errored_without_calls) == (0, n)
    assert sum(s.episodes for s in spent.rows) == 480 - n  # refused ones are not spend
    assert sum(s.episodes for s in monitor.spend(db)) == 480  # the old read is unchanged


@pytest.mark.asyncio
async def test_jobs_show_errored_counts_and_last_error(lab_db: Path) -> None:
    app = console_app(lab_db, first_screen="jobs")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("j", "l")
        await settle(pilot)
        labels = _labels(app)
        assert "errored" in labels[1] and f"last error: {ERR}" in labels[1]
        job1 = next(lb for lb in labels if lb.startswith("job 1 "))
        assert " 0/" in job1 and "errored" in job1 and f"last error: {ERR}" in job1
        job2 = next(lb for lb in labels if lb.startswith("job 2 "))
        assert "errored" not in job2 and "last error" not in job2


def test_paused_and_probe_grid_labels() -> None:
    from console.screens.jobs import grid_label
    from jobs.control import GridStatus

    jobs = dict.fromkeys(("queued", "running", "done", "failed", "cancelled"), 0)
    paused = GridStatus(1, "r", 1, 10, 4, 0, 0, {**jobs, "paused": 2}, 1.0, 6.0)
    label = grid_label(paused).plain
    assert "paused, no ETA" in label and "ETA 6s" not in label
    probes = GridStatus(2, "r", 1, 9, 5, 1, 0, {**jobs, "queued": 1, "paused": 0}, 0.5, 8.0,
                        unit="probes", kind="judgment")
    text = grid_label(probes, "timeout: x").plain
    assert "5/9 judgment probes" in text and "running" not in text.split("]")[0]
    assert "last error: timeout: x" in text


@pytest.mark.asyncio
async def test_dashboard_errored_by_reason(lab_db: Path) -> None:
    from textual.widgets import Static

    app = console_app(lab_db)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        text = str(app.screen.query_one("#queue-text", Static).render())
        assert "episodes connection: " in text and "errored" in text
