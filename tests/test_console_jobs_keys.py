"""Jobs (key 4) as a table where a tree allows it: `s` orders every opened grid's jobs by
the next field of a job row (state, share complete, errored, seed, cell, then the
ledger's job id again), `C` copies the highlighted job as a tab-separated row and `T`
the jobs shown under the highlighted run or grid, header first, in the tree's order."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from textual.app import App
from textual.widgets import Tree

from tests.helpers.console import build, console_app, freeze_times, settle
from tests.helpers.notices import said


@pytest.fixture
def lab_db(tmp_path: Path) -> Path:
    """16 queued jobs of one grid; job 16 failed and job 9 paused."""
    path = build(tmp_path / "lab.db", run=False)
    freeze_times(path)
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("UPDATE jobs SET state = 'failed', last_error = 'boom' WHERE id = 16")
        conn.execute("UPDATE jobs SET state = 'paused' WHERE id = 9")
    conn.close()
    return path


def _job_ids(app: App[None]) -> list[int]:
    grid = app.screen.query_one(Tree).root.children[0].children[0]
    ids = []
    for n in grid.children:
        assert n.data is not None  # every job's node holds its (kind, id)
        ids.append(int(n.data[1]))
    return ids


@pytest.mark.asyncio
async def test_sort_and_copy_jobs(lab_db: Path) -> None:
    app = console_app(lab_db, first_screen="jobs")
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await settle(pilot)
        await pilot.press("j", "l")  # open the grid
        await settle(pilot)
        assert _job_ids(app) == list(range(1, 17))
        await pilot.press("s")  # by state: failed, queued, paused …
        await pilot.pause()
        ids = _job_ids(app)
        assert ids[0] == 16 and ids[-1] == 9 and ids[1:-1] == [i for i in range(1, 16)
                                                               if i != 9]
        assert any("jobs sorted by state" in str(n.message) for n in said(app))
        await pilot.press("T")  # the grid's jobs, in the tree's order
        rows = [r.split("\t") for r in app.clipboard.splitlines()]
        assert rows[0][:5] == ["job", "state", "complete", "expected", "errored"]
        assert [int(r[0]) for r in rows[1:]] == ids
        assert rows[1][1] == "failed" and rows[1][-1] == "boom"
        await pilot.press("j", "C")  # the first job's row
        assert app.clipboard.split("\t")[:2] == ["16", "failed"]
        for _ in range(5):  # complete, errored, seed, cell, then the ledger's order
            await pilot.press("s")
            await pilot.pause()
        assert _job_ids(app) == list(range(1, 17))
        cursor = app.screen.query_one(Tree).cursor_node
        assert cursor is not None and cursor.data == ("job", 16)  # kept
