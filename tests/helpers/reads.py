"""Small reads of a lab.db that only tests ask for (the library reads these through
its own queries)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlite_utils import Database


def newest_live(db: Database) -> int | None:
    """Id of the most recently started running episode."""
    row = db.conn.execute("SELECT max(id) FROM live_episodes").fetchone()
    return None if row[0] is None else int(row[0])


def plan_counts(db: Database) -> dict[tuple[str, str], int]:
    """Stored plans per (dataset, similarity)."""
    return {(d, s): n for d, s, n in db.conn.execute(
        "SELECT dataset, similarity, count(*) FROM evidence_plans GROUP BY dataset, similarity")}


def episode_probes(db: Database, episode_id: int) -> list[dict[str, Any]]:
    """Every probe of one episode (the Trajectories screen shows them at their step)."""
    cur = db.conn.execute(
        "SELECT t, kind, judgment, answer, correct, confidence, p_continue, p_answer_now, "
        "prefer, parse_ok, error FROM probes WHERE episode_id = ? ORDER BY t, kind",
        (episode_id,))
    cols = [d[0] for d in cur.description]
    return [dict(zip(cols, r)) for r in cur.fetchall()]


def vm_steps(db: Database, read: Callable[[], object]) -> int:
    """SQLite virtual-machine steps (in hundreds) that `read()` made on `db`: what a read
    costs, counted by SQLite rather than timed."""
    steps = [0]

    def count() -> int:
        steps[0] += 1
        return 0

    db.conn.set_progress_handler(count, 100)
    try:
        read()
    finally:
        db.conn.set_progress_handler(None, 100)
    return steps[0]
