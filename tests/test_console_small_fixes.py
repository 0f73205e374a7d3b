"""Small things a researcher at 80 columns tripped over: the header's read stamp is never
cut by a long lab.db path, and counts agree with their nouns (`1 amendment`)."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from textual.widgets import Static
from textual.widgets._header import HeaderTitle

from core import prereg, store
from tests.helpers.console import build, console_app, settle
from tests.helpers.waiting import pause_until


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A lab.db with a run sim grid and one draft amendment."""
    path = build(tmp_path_factory.mktemp("small") / "lab.db", run=True)
    db = store.connect(path)
    prereg.create(db, "A draft")
    db.conn.close()
    return path


def copy_to(built: Path, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for suffix in ("", "-wal", "-shm"):
        if Path(str(built) + suffix).exists():
            shutil.copy(str(built) + suffix, str(folder / "lab.db") + suffix)
    return folder / "lab.db"


@pytest.mark.asyncio
@pytest.mark.parametrize("width", [80, 60])
async def test_a_long_db_path_gives_way_to_the_read_stamp(built: Path, tmp_path: Path,
                                                          width: int) -> None:
    db = copy_to(built, tmp_path / ("runs-of-the-pilot-study-" * 3) / "second-attempt")
    app = console_app(db)
    async with app.run_test(size=(width, 24)) as pilot:
        await settle(pilot)
        line = str(app.screen.query_one(HeaderTitle).render())
        assert "— …" in line and line.endswith("/lab.db · read 03:04:05 UTC"), line
        assert len(line) <= width - 8  # the header's icon takes 8 columns
        await pilot.resize_terminal(120, 24)
        await settle(pilot)
        wider = str(app.screen.query_one(HeaderTitle).render())
        assert len(wider) > len(line) and wider.endswith("lab.db · read 03:04:05 UTC")


@pytest.mark.asyncio
async def test_one_amendment_is_singular(built: Path, tmp_path: Path) -> None:
    app = console_app(copy_to(built, tmp_path), first_screen="prereg")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        count = str(app.screen.query_one("#prereg-count", Static).render())
        assert count == "1 amendment, 0 frozen"


@pytest.mark.asyncio
async def test_hints_name_the_consoles_keys_not_cli_options(built: Path, tmp_path: Path) -> None:
    """Where the console has a key for it, a hint names the key: errored episodes are
    retried with E on Jobs (on the Dashboard and under Results' tables), a worker starts
    with w (not `lab retry --errored`, `lab status`, `lab worker`)."""
    db = copy_to(built, tmp_path)
    conn = store.connect(db)
    with conn.conn:
        conn.conn.execute("UPDATE episodes SET error = 'boom' WHERE id = 1")
    conn.conn.close()
    app = console_app(db)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        queue = str(app.screen.query_one("#queue-text", Static).render())
        assert "1 errored (excluded from analysis; E on Jobs (4) retries 1)" in queue
        await pilot.press("5")
        await settle(pilot)
        live = str(app.screen.query_one("#live-head", Static).render())
        assert "w on the Dashboard starts one" in live and "lab worker" not in live
        await pilot.press("7")
        await pause_until(pilot, lambda: "errored" in str(
            app.screen.query_one("#results-status", Static).render()), "the Results status")
        status = str(app.screen.query_one("#results-status", Static).render())
        assert "⚠ 1 errored episode left out (E on Jobs (4) retries 1)" in status


@pytest.mark.asyncio
async def test_results_says_which_errored_episodes_a_job_will_run_again(built: Path,
                                                                      tmp_path: Path) -> None:
    """Under Results' tables, an errored episode a queued job holds is "queued to run
    again", not offered to `E` (which would queue nothing); the line follows the job as
    another process queues, starts and cancels it, with no key pressed."""
    from core.store import jobs as ledger

    db_path = copy_to(built, tmp_path)
    db = store.connect(db_path)
    cell_id, question = db.conn.execute(
        "SELECT cell_id, question_id FROM episodes WHERE id = 1").fetchone()
    with db.conn:
        db.conn.execute("UPDATE episodes SET error = 'interrupted' WHERE id = 1")
    (job,) = ledger.insert_jobs(db, 1, cell_id, [question])
    app = console_app(db_path, first_screen="results")

    def status() -> str:
        return str(app.screen.query_one("#results-status", Static).render())

    def says(text: str) -> Callable[[], bool]:
        return lambda: text in status()

    async with app.run_test(size=(120, 24)) as pilot:
        await pause_until(pilot, lambda: "errored" in status(), "the Results status")
        assert "⚠ 1 errored episode left out (1 queued to run again)" in status()
        for state, said in (("running", "(1 running again)"),
                            ("cancelled", "(E on Jobs (4) retries 1)")):
            with db.conn:  # another process moves the job on
                db.conn.execute("UPDATE jobs SET state = ? WHERE id = ?", (state, job))
            await pause_until(pilot, says(said), f"the job {state}")
        assert "⚠ 1 errored episode left out" in status()
    db.conn.close()


def test_the_dashboard_offers_a_retry_only_for_what_a_retry_would_queue(built: Path,
                                                                        tmp_path: Path) -> None:
    """An errored record stays in lab.db after its question is queued again or answered;
    the Dashboard's retry hint counts only the errored pairs `E` on Jobs would queue."""
    from console.screens.dashboard import read_dashboard
    from core.store import jobs as ledger

    db_path = copy_to(built, tmp_path)
    db = store.connect(db_path)
    cell_id, question = db.conn.execute(
        "SELECT cell_id, question_id FROM episodes WHERE id = 1").fetchone()
    with db.conn:  # the pair's episode errored, then its errored record stays beside a new one
        db.conn.execute("UPDATE episodes SET error = 'boom' WHERE id = 1")

    def hint() -> tuple[int, int]:
        data = read_dashboard(db_path, 60.0, 0.0)
        return data.queue.errored, data.retryable

    assert hint() == (1, 1)
    (job,) = ledger.insert_jobs(db, 1, cell_id, [question])
    assert hint() == (1, 0)  # a queued job runs it again
    ledger.transition(db, [job], ("queued",), "cancelled")
    assert hint() == (1, 1)
    cols = ", ".join(r[1] for r in db.conn.execute("PRAGMA table_info(episodes)") if r[1] != "id")
    with db.conn:  # answered since: the errored record kept, id 1 the complete episode
        db.conn.execute(f"INSERT INTO episodes ({cols}) SELECT {cols} FROM episodes WHERE id = 1")
        db.conn.execute("UPDATE episodes SET error = NULL WHERE id = 1")
    assert hint() == (1, 0)
    db.conn.close()
