"""What `lab status` and the Jobs view count for a grid, pair by pair.

One small grid is run through the real queue, then its pairs are put in every state a
grid's pair can be in: stored with an errored record beside it, errored and held by a
queued, a paused or a running job, errored and held by none, neither stored nor
errored, and held twice by two jobs. Each count below is the
one those pairs make by hand, so a count that pools, drops or double counts a pair
fails here (the counts are taken in SQLite, `core.store.progress`).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from sqlite_utils import Database

from console.screens.jobs import read_jobs
from core import store
from core.end_reasons import END_REFUSAL, END_TRUNCATED
from core.episode import EpisodeResult, iso_time
from core.store import jobs as ledger
from core.store import monitor, progress
from jobs.control import RATE_WINDOW_S, status
from tests.helpers.console import build_small

N = 6
"""Questions in the grid's set: two cells (clean, persistent) of N pairs each."""
NOW = 1_800_000_000.0
"""The clock the counts are read at."""


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("progress") / "lab.db"
    ids = build_small(path, N, ("clean", "persistent"), "p")
    db = store.connect(path)
    _arrange(db, ids)
    db.conn.close()
    return path


def _cells(db: Database) -> tuple[int, int]:
    clean, persistent = (c for (c,) in db.conn.execute(
        "SELECT id FROM cells ORDER BY regime"))  # "clean" < "persistent"
    return clean, persistent


def _errored(db: Database, cell: int, qid: str, reason: str = "error") -> None:
    """An errored record of the pair; its error names the question and the reason."""
    store.write_episodes(db, [(cell, EpisodeResult(
        qid, error=f"traceback …\nmodel error: {qid} {reason}", end_reason=reason,
        started_at=iso_time(NOW - 500), finished_at=iso_time(NOW - 499)), None)])


def _job(db: Database, cell: int, qids: list[str], state: str) -> int:
    (job,) = ledger.insert_jobs(db, 1, cell, qids)
    db.conn.execute("UPDATE jobs SET state = ?, heartbeat_at = ? WHERE id = ?",
                    (state, NOW, job))
    db.conn.commit()
    return job


def _arrange(db: Database, q: list[str]) -> None:
    """The pairs' states (c = the clean cell, p = the persistent one):

    - (c, q0): stored, with an errored record beside it (an earlier attempt);
    - (c, q1): errored, no job holds it: errored, and what `lab retry --errored` re-runs;
    - (c, q2): errored, a queued job holds it: to run again;
    - (c, q3): errored, a paused job holds it: to run again;
    - (p, q4): errored, a running job holds it: errored, not retryable;
    - (p, q5): no episode at all: neither stored nor errored;
    - a done job holds (p, q0) and (p, q1) a second time;
    - an errored record of a question outside the grid, in c;
    - of the 19 stored pairs, (c, q4) ended truncated and (p, q2) refused; an errored
      record that ended "refusal" counts in neither;
    - finish times: (c, q4) 10 s before NOW, (c, q5) 59.5 s, (p, q0) 60.5 s, (p, q1) 62 s;
      every other stored pair long before.
    """
    c, p = _cells(db)
    with db.conn:
        for cell, qid in ((c, q[0]), (c, q[1]), (c, q[2]), (c, q[3]), (p, q[4]), (p, q[5])):
            db.conn.execute("DELETE FROM episodes WHERE cell_id = ? AND question_id = ?",
                            (cell, qid))
        db.conn.execute("UPDATE episodes SET finished_at = ?", (iso_time(NOW - 86_400),))
        for cell, qid, ago in ((c, q[4], 10), (c, q[5], 59.5), (p, q[0], 60.5), (p, q[1], 62)):
            db.conn.execute("UPDATE episodes SET finished_at = ? WHERE cell_id = ? AND "
                            "question_id = ?", (iso_time(NOW - ago), cell, qid))
        for cell, qid, reason in ((c, q[4], END_TRUNCATED), (p, q[2], END_REFUSAL)):
            db.conn.execute("UPDATE episodes SET end_reason = ? WHERE cell_id = ? AND "
                            "question_id = ?", (reason, cell, qid))
    for cell, qid in ((c, q[0]), (c, q[1]), (c, q[2]), (c, q[3]), (p, q[4])):
        _errored(db, cell, qid)
    store.write_episodes(db, [(c, EpisodeResult(  # (c, q0) retried: complete after its error
        q[0], end_reason="finish", started_at=iso_time(NOW - 90_000),
        finished_at=iso_time(NOW - 86_400)), None)])
    _errored(db, p, q[4], reason=END_REFUSAL)  # a second errored record of (p, q4)
    _errored(db, c, "not-in-the-grid")
    _job(db, c, [q[2]], "queued")
    _job(db, c, [q[3]], "paused")
    _job(db, p, [q[4]], "running")
    _job(db, p, [q[0], q[1]], "done")


def test_a_grids_pairs_are_counted_once_each_in_their_state(lab: Path) -> None:
    db = store.connect(lab)
    (g,) = progress.grid_progress(db, now=NOW)
    assert (g["expected"], g["cells"], g["stored"]) == (2 * N, 2, 2 * N - 5)
    assert (g["errored"], g["rerun"], g["retryable"]) == (2, 2, 1)
    assert (g["truncated"], g["refused"]) == (1, 1)
    assert g["jobs"] == {"queued": 1, "running": 1, "paused": 1, "done": 3, "failed": 0,
                         "cancelled": 0}
    assert (g["unit"], g["kind"], g["stale"]) == ("episodes", None, 0)
    assert len(g["finished"]) == 2 * N - 5 and g["finished"] == sorted(g["finished"])
    recent = progress.grid_progress(db, now=NOW, since=NOW - 61)[0]["finished"]
    assert recent == [iso_time(NOW - a) for a in (60.5, 59.5, 10)]
    db.conn.close()


def test_status_counts_the_rate_window_as_times(lab: Path) -> None:
    """The window's finish times are read as text from a second before its start and
    each tested as a time: the one 62 s back is out, the one 60.5 s back too."""
    db = store.connect(lab)
    (g,) = status(db, now=NOW)
    assert RATE_WINDOW_S == 60.0
    assert sorted(g.recent) == [NOW - 59.5, NOW - 10]
    assert (g.stored, g.errored, g.rerun, g.left) == (2 * N - 5, 2, 2, 3)
    assert g.retry == "lab retry --grid 1 --errored"
    db.conn.close()


def test_each_job_counts_its_own_records(lab: Path) -> None:
    """A job counts the records of its questions (an errored attempt beside a complete
    episode too), whichever other job holds the same pair; its errors (the Jobs view's
    detail) count pairs with no complete episode and show the newest error."""
    db = store.connect(lab)
    rows = {(r.regime, r.state, r.expected): r for r in progress.job_rows(db, 1)}
    got = {k: (r.stored, r.errored, r.truncated, r.refused) for k, r in rows.items()}
    assert got == {
        # clean: 6 questions, 3 without a complete episode; errored records of q0-q3
        ("clean", "done", N): (N - 3 + 4, 4, 1, 0),
        # persistent: q4 and q5 without one; two errored records of q4, one "refusal"
        ("persistent", "done", N): (N - 2 + 2, 2, 0, 1),
        ("clean", "queued", 1): (1, 1, 0, 0),
        ("clean", "paused", 1): (1, 1, 0, 0),
        ("persistent", "running", 1): (2, 2, 0, 0),
        ("persistent", "done", 2): (2, 0, 0, 0),
    }
    q = store.question_set(db, "small")["ids"]
    errors = monitor.job_errors(db, 1)
    got_errors = {k: dataclasses.astuple(errors[r.id]) for k, r in rows.items()}
    # the Jobs view counts a job's complete questions from its rows instead: the same
    shown = read_jobs(lab, {1}, NOW).job_errors
    assert {k: dataclasses.astuple(shown[r.id]) for k, r in rows.items()} == got_errors
    assert got_errors == {  # pairs, not records; the newest error's last line
        ("clean", "done", N): (N - 3, 3, f"model error: {q[3]} error"),
        ("persistent", "done", N): (N - 2, 1, f"model error: {q[4]} {END_REFUSAL}"),
        ("clean", "queued", 1): (0, 1, f"model error: {q[2]} error"),
        ("clean", "paused", 1): (0, 1, f"model error: {q[3]} error"),
        ("persistent", "running", 1): (0, 1, f"model error: {q[4]} {END_REFUSAL}"),
        ("persistent", "done", 2): (2, 0, None),
    }
    db.conn.close()
