"""Jobs (key 4): runs → grids → jobs on a real ledger; pause, resume, cancel and retry
on the selected node, each only after `y` (and nothing on `n`) on a dialog that names
the action, the target and how many jobs and episodes it moves; snapshots."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import cast

import pytest
from textual.app import App
from textual.pilot import Pilot
from textual.widgets import Tree

from console.widgets.confirm import Confirm
from core import store
from core.store import jobs as ledger
from tests.helpers.console import build, console_app, copy_db, freeze_times, settle
from tests.helpers.notices import said
from tests.helpers.snapshots import SnapCompare
from tests.helpers.waiting import pause_until

RUN_DIALOGS = {
    "P": "Pause run fixture (1 grid)?\n"
         "Jobs paused: 16 (16 queued, 0 running; running ones stop at their next heartbeat)\n"
         "Episodes: 480 of 480 not stored yet; they wait until u resumes them\n"
         "y = pause 16 jobs    n / escape = no, do nothing",
    "u": "Resume run fixture (1 grid)?\n"
         "Jobs queued again: 16 (paused)\n"
         "Episodes: 480 of 480 not stored yet\n"
         "y = resume 16 jobs    n / escape = no, do nothing",
    "x": "Cancel run fixture (1 grid)?\n"
         "Jobs cancelled: 16 (16 queued, 0 running, 0 paused; running ones stop at their next "
         "heartbeat, stored episodes stay)\n"
         "Episodes: 480 of 480 not stored yet; they will not run (t retries them later)\n"
         "y = cancel 16 jobs    n / escape = no, do nothing",
    "t": "Retry run fixture (1 grid)?\n"
         "Jobs queued again: 16 (0 failed, 16 cancelled)\n"
         "Errored episodes re-run as new jobs: 0\n"
         "Episodes: 480 of 480 not stored yet\n"
         "y = retry 16 jobs + 0 errored episodes    n / escape = no, do nothing",
}
"""What each confirmation on the run says: the action, the run, jobs and episodes moved."""


@pytest.fixture(scope="session")
def queued(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A lab.db whose grid is enqueued but not run (16 queued jobs), times frozen."""
    path = build(tmp_path_factory.mktemp("jobs") / "lab.db", run=False)
    freeze_times(path)
    return path


@pytest.fixture
def lab_db(queued: Path, tmp_path: Path) -> Path:
    """A private copy in the test's directory (the Huey queue file is made on demand)."""
    copy_db(queued, tmp_path / "lab.db")
    return tmp_path / "lab.db"


def _labels(app: App[None]) -> list[str]:
    tree = app.screen.query_one(Tree)
    out = []
    stack = list(reversed(tree.root.children))
    while stack:
        node = stack.pop()
        out.append(str(node.label))
        if node.is_expanded:
            stack.extend(reversed(node.children))
    return out


def _states(db_path: Path) -> dict[str, int]:
    db = store.connect(db_path)
    try:
        return ledger.job_states(db)
    finally:
        db.conn.close()


async def _open(pilot: Pilot[None]) -> None:
    await pilot.press("4")
    await settle(pilot)


@pytest.mark.asyncio
async def test_tree_runs_grids_jobs(lab_db: Path) -> None:
    app = console_app(lab_db)
    async with app.run_test(size=(80, 24)) as pilot:
        await _open(pilot)
        labels = _labels(app)
        assert labels[0].startswith("run fixture") and "0/480" in labels[0]
        assert labels[1].startswith("grid 1") and "[queued 16]" in labels[1]
        assert len(labels) == 2  # jobs are read only once their grid opens
        await pilot.press("j", "l")  # vi keys: down to the grid, open it
        await settle(pilot)
        labels = _labels(app)
        assert len(labels) == 18
        assert "job 1" in labels[2] and "queued" in labels[2] and "sim-never · none · clean" \
            in labels[2] and "0/50" in labels[2]


@pytest.mark.asyncio
async def test_filter_keeps_matching_jobs(lab_db: Path) -> None:
    app = console_app(lab_db)
    async with app.run_test(size=(80, 24)) as pilot:
        await _open(pilot)
        await pilot.press("j", "l")
        await settle(pilot)
        await pilot.press("slash", *"own5", "enter")
        await settle(pilot)
        jobs = [label for label in _labels(app) if label.startswith("job")]
        assert len(jobs) == 8 and all("sim-own5" in j for j in jobs)
        await pilot.press("escape")
        await settle(pilot)
        assert len(_labels(app)) == 18  # cleared: every job again, the grid still open


@pytest.mark.asyncio
async def test_filter_searches_grids_not_opened_and_says_when_nothing_matches(
        lab_db: Path) -> None:
    """With the grid closed (its jobs never read), `/` still finds its jobs and opens the
    grid on them; a filter nothing matches says so under the tree."""
    app = console_app(lab_db)
    async with app.run_test(size=(80, 24)) as pilot:
        await _open(pilot)
        assert not any(label.startswith("job") for label in _labels(app))  # grid closed
        await pilot.press("slash", *"own5", "enter")
        await settle(pilot)
        jobs = [label for label in _labels(app) if label.startswith("job")]
        assert len(jobs) == 8 and all("sim-own5" in j for j in jobs)
        await pilot.press("slash", *"gpt-9", "enter")
        await settle(pilot)
        assert _labels(app) == []
        hint = str(app.screen.query_one("#jobs-hint").render())
        assert "no job matches 'gpt-9'" in hint
        await pilot.press("escape")
        await settle(pilot)
        assert [label for label in _labels(app) if label.startswith("run")]
        assert "no job matches" not in str(app.screen.query_one("#jobs-hint").render())


@pytest.mark.asyncio
async def test_pause_resume_cancel_retry_behind_confirmation(lab_db: Path) -> None:
    app = console_app(lab_db)
    async with app.run_test(size=(80, 24)) as pilot:
        await _open(pilot)
        # cursor on the run node: every action applies to the whole run
        await pilot.press("P")
        await pilot.pause()
        assert isinstance(app.screen, Confirm)
        await pilot.press("n")  # declined: nothing changes
        await settle(pilot)
        assert _states(lab_db) == {"queued": 16}
        for key, expected in (("P", {"paused": 16}), ("u", {"queued": 16}),
                              ("x", {"cancelled": 16}), ("t", {"queued": 16})):
            await pilot.press(key)
            await pilot.pause()
            assert isinstance(app.screen, Confirm), key
            assert app.screen.text == RUN_DIALOGS[key]
            await pilot.press("y")
            await settle(pilot)
            assert _states(lab_db) == expected, key
            # the next key acts on what the tree shows: wait until it shows the new states
            # (on a loaded machine the re-read can land after the workers settle)
            (state, n), = expected.items()
            shown = f"[{state} {n}]"

            def tree_shows(shown: str = shown) -> bool:
                return shown in _labels(app)[1]

            await pause_until(pilot, tree_shows, f"the tree to show {shown} after {key}")


@pytest.mark.asyncio
async def test_action_on_one_job_and_error_line(lab_db: Path) -> None:
    app = console_app(lab_db)
    async with app.run_test(size=(80, 24)) as pilot:
        await _open(pilot)
        await pilot.press("j", "l")
        await settle(pilot)
        await pilot.press("j")  # job 1
        await pilot.press("x")
        await pilot.pause()
        assert cast(Confirm, app.screen).text == (
            "Cancel job 1 of grid 1 (sim-never · none · clean · seed 0)?\n"
            "Jobs cancelled: 1 (1 queued, 0 running, 0 paused; running ones stop at their "
            "next heartbeat, stored episodes stay)\n"
            "Episodes: 50 of 50 not stored yet; they will not run (t retries them later)\n"
            "y = cancel 1 job    n / escape = no, do nothing")
        await pilot.press("y")
        await settle(pilot)
        assert _states(lab_db) == {"cancelled": 1, "queued": 15}
        assert "cancelled" in _labels(app)[2]
        await pilot.press("u")  # resume: job 1 is cancelled, not paused → nothing to ask
        await settle(pilot)
        assert not isinstance(app.screen, Confirm)
        assert any("Resume job 1 of grid 1 (sim-never · none · clean · seed 0): no job to "
                   "resume" in str(n.message) for n in said(app))
        assert _states(lab_db) == {"cancelled": 1, "queued": 15}
        # the grid vanishing under the console: the library's one-line error is shown
        conn = store.connect(lab_db).conn
        conn.execute("DELETE FROM jobs WHERE id = 1")
        await pilot.press("t", "y")
        await settle(pilot)
        assert any("no jobs for job 1" in str(n.message) for n in said(app))


ERROR = ("connection: local at http://127.0.0.1:9/v1: connection failed "
         "(ConnectionRefusedError) after 3 retries over 12 s")


@pytest.fixture(scope="session")
def errored(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fixture grid run, then job 1's episodes turned into refused connections."""
    path = build(tmp_path_factory.mktemp("jobs-errored") / "lab.db")
    freeze_times(path)
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("UPDATE episodes SET error = ?, input_tokens = 0, output_tokens = 0 "
                     "WHERE cell_id = (SELECT cell_id FROM jobs WHERE id = 1) AND question_id "
                     "IN (SELECT q.value FROM jobs j, json_each(j.question_ids) q "
                     "WHERE j.id = 1)", (ERROR,))
    conn.close()
    return path


def test_job_rows_show_the_seed_before_the_cell() -> None:
    """At 80 columns the tree cuts a job's row (after 8 columns of guides): what tells two
    jobs apart (id, state, progress, seed) comes first; the cell's regime is short."""
    from console.screens.jobs import job_label
    from core.store.progress import JobRow

    spec = '{"name": "random_rule", "k": 3, "rate": 0.5}'
    row = JobRow(12, "running", "sim-hazard-own-with-a-long-name", spec, "late_onset_from_3",
                 7, 8, 50, 44, 6, 2, None)
    label = job_label(row).plain
    assert label.index("seed 7") + len("seed 7") <= 80 - 8 - 2
    assert "✗6 errored" in label and "late3" in label and "attempt 2" in label


@pytest.mark.asyncio
async def test_detail_line_and_a_requeued_job(errored: Path, tmp_path: Path) -> None:
    """The highlighted job in full under the tree (its cell, progress and last error,
    wrapped at 80 columns); errored questions queued again show 0/n until they run."""
    from core.store.monitor import job_errors
    from jobs.retry import retry
    from jobs.settings import WorkerSettings

    copy_db(errored, tmp_path / "lab.db")
    lab_db = tmp_path / "lab.db"
    app = console_app(lab_db)
    async with app.run_test(size=(80, 24)) as pilot:
        await _open(pilot)
        await pilot.press("j", "l")
        await settle(pilot)
        hint = app.screen.query_one("#jobs-hint")
        assert "grid 1 of run fixture" in str(hint.render())
        await pilot.press("j")  # job 1
        await settle(pilot)
        lines = [line.text.rstrip() for line in hint.render_lines(hint.region.reset_offset)]
        text = " ".join(" ".join(lines).split())
        n = job_errors(store.connect(lab_db), 1)[1].errored
        assert f"job 1 · done · sim-never · none · clean · seed 0 · budget 8 · 0/{n}" in text
        assert f"✗ {n} errored" in text and f"last error: {ERROR}" in text
        assert max(len(line) for line in lines) <= 80
        db = store.connect(lab_db)
        new = retry(db, WorkerSettings(db_path=lab_db), "grid", 1, errored_only=True).created
        db.conn.close()
        await pilot.press("r")
        await settle(pilot)
        (label,) = [lb for lb in _labels(app) if lb.startswith(f"job {new[0]} ")]
        assert "queued" in label and f" 0/{n}" in label


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
def test_snapshot(snap_compare: SnapCompare, lab_db: Path, size: tuple[int, int]) -> None:
    async def opened(pilot: Pilot[None]) -> None:
        await _open(pilot)
        await pilot.press("j", "l")
        await settle(pilot)

    assert snap_compare(console_app(lab_db), terminal_size=size, run_before=opened)


def test_snapshot_worked_80x24(snap_compare: SnapCompare, errored: Path, tmp_path: Path) -> None:
    """After a worker ran the grid: progress, job 1's errored questions, its detail line."""
    copy_db(errored, tmp_path / "lab.db")

    async def opened(pilot: Pilot[None]) -> None:
        await _open(pilot)
        await pilot.press("j", "l")
        await settle(pilot)
        await pilot.press("j")
        await settle(pilot)

    assert snap_compare(console_app(tmp_path / "lab.db"), terminal_size=(80, 24),
                        run_before=opened)


def test_a_trace_job_reads_as_trace_collection() -> None:
    """A trace job's cell stores a placeholder condition ("none"): the row, the detail
    line and the confirmation say what it collects instead."""
    from console.screens.jobs import job_detail, job_label
    from console.widgets.jobs_confirm import act_prompt
    from core.conditions import Condition
    from core.store.progress import JobRow

    job = JobRow(7, "queued", "sim-trace", Condition(name="none").to_json(), "clean", 0, 3,
                 40, 0, 0, 0, None, "states", "trace")
    for text in (job_label(job).plain, job_detail(job).plain,
                 act_prompt("pause", "job", 7, [], job).question):
        assert "sim-trace · traces · depths 0–3 · " in text and "· none ·" not in text, text
    episodes = JobRow(8, "queued", "sim-own5", Condition(name="none").to_json(),
                      "recover_after_2", 0, 8, 30, 0, 0, 0, None)
    assert "sim-own5 · none · rec2" in job_label(episodes).plain


@pytest.mark.asyncio
async def test_a_read_overtaken_by_a_newer_one_is_not_shown(
        lab_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A read that a newer one replaced (an exclusive worker cancelled: its thread still
    ends) must not show its older states over the newer read's."""
    import threading

    from console.screens import jobs as jobs_screen

    real = jobs_screen.read_jobs
    entered, release = threading.Event(), threading.Event()
    hold = {"armed": False}

    def read_jobs(*args: object, **kwargs: object) -> object:
        data = real(*args, **kwargs)  # type: ignore[arg-type]
        if hold["armed"]:
            hold["armed"] = False
            entered.set()
            release.wait(60)  # the older read ends only after the newer one is shown
        return data

    monkeypatch.setattr(jobs_screen, "read_jobs", read_jobs)
    app = console_app(lab_db)
    async with app.run_test(size=(80, 24)) as pilot:
        await _open(pilot)
        assert "[queued 16]" in _labels(app)[1]
        hold["armed"] = True
        await pilot.press("r")  # the older read: 16 queued, held
        await pause_until(pilot, entered.is_set, "the older read")
        conn = sqlite3.connect(lab_db)
        conn.execute("UPDATE jobs SET state = 'paused'")
        conn.commit()
        conn.close()
        await pilot.press("r")  # the newer read: 16 paused
        await pause_until(pilot, lambda: "[paused 16]" in _labels(app)[1], "the newer read")
        release.set()
        await settle(pilot)
        await pilot.pause(0.2)
        await settle(pilot)
        assert "[paused 16]" in _labels(app)[1], _labels(app)[1]
