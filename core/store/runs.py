"""Runs and cells."""

from __future__ import annotations

from typing import Any

from sqlite_utils import Database

from core.canonical import canonical_hash
from core.episode import utc_now
from core.errors import StoreError
from core.store.base import write


def ensure_run(db: Database, name: str, amendment_id: str | None = None) -> int:
    """Id of the run called `name`, created if new.

    Raises:
        StoreError: the run exists under another amendment (or none): a run's
            provenance never changes.
    """
    with write(db):
        row = db.conn.execute("SELECT id, amendment_id FROM runs WHERE name = ?",
                              (name,)).fetchone()
        if row:
            if row[1] != amendment_id:
                owner = f"amendment {row[1]}" if row[1] else "no amendment (exploratory)"
                raise StoreError(f"run '{name}' was started under {owner}; use another --run "
                                 f"name for this enqueue")
            return int(row[0])
        cur = db.conn.execute(
            "INSERT INTO runs (name, amendment_id, exploratory, created_at) VALUES (?, ?, ?, ?)",
            (name, amendment_id, int(amendment_id is None), utc_now()))
        return int(cur.lastrowid or 0)


def cell_hash(spec: dict[str, Any]) -> str:
    """sha256 of a cell's canonical JSON."""
    return canonical_hash(spec)


def ensure_cell(db: Database, run_id: int, cell: dict[str, Any]) -> int:
    """Id of the cell (created if new). `cell` holds the columns of `cells` but id."""
    with write(db):
        row = db.conn.execute("SELECT id FROM cells WHERE run_id = ? AND spec_hash = ?",
                              (run_id, cell["spec_hash"])).fetchone()
        if row:
            return int(row[0])
        cols = ["run_id", *cell.keys(), "created_at"]
        cur = db.conn.execute(
            f"INSERT INTO cells ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
            (run_id, *cell.values(), utc_now()))
        return int(cur.lastrowid or 0)


def cell_ids_by_hash(db: Database, run: str) -> dict[str, int]:
    """The cells of the run called `run`, by spec hash.

    Args:
        db: an open lab.db.
        run: the run's name.

    Returns:
        {spec_hash: cell id}; empty when no run has that name.
    """
    return {str(h): int(i) for h, i in db.conn.execute(
        "SELECT c.spec_hash, c.id FROM cells c JOIN runs r ON r.id = c.run_id WHERE r.name = ?",
        (run,))}


def run_id(db: Database, name: str) -> int | None:
    """Id of the run called `name`, or None when there is none."""
    row = db.conn.execute("SELECT id FROM runs WHERE name = ?", (name,)).fetchone()
    return None if row is None else int(row[0])


def next_replicate(db: Database, run_id: int) -> int:
    """One more than the highest replicate number used in a run."""
    row = db.conn.execute("SELECT max(replicate) FROM cells WHERE run_id = ?", (run_id,)).fetchone()
    return 0 if row[0] is None else int(row[0]) + 1


def run_names(db: Database) -> list[str]:
    """Every run's name, in order of creation."""
    return [str(r[0]) for r in db.conn.execute("SELECT name FROM runs ORDER BY id")]


def run_contents(db: Database) -> list[dict[str, Any]]:
    """What each run in lab.db holds, for a report's header: its governing amendment,
    finished episodes, probes by kind and trace states, in order of creation (runs that
    hold only trace states, which have no row in `runs`, last).

    Args:
        db: an open lab.db.

    Returns:
        One dict per run: name, amendment (None: exploratory), episodes, probes
        ({kind: count}), states (trace states stored without an error).
    """
    out: dict[str, dict[str, Any]] = {}
    for name, amendment, episodes in db.conn.execute(
            "SELECT r.name, r.amendment_id, count(e.id) FROM runs r "
            "LEFT JOIN cells c ON c.run_id = r.id "
            "LEFT JOIN episodes e ON e.cell_id = c.id AND e.error IS NULL "
            "GROUP BY r.id ORDER BY r.id"):
        out[str(name)] = {"name": str(name), "amendment": amendment, "episodes": int(episodes),
                          "probes": {}, "states": 0}
    for name, kind, n in db.conn.execute(
            "SELECT r.name, p.kind, count(*) FROM probes p JOIN episodes e ON e.id = "
            "p.episode_id JOIN cells c ON c.id = e.cell_id JOIN runs r ON r.id = c.run_id "
            "WHERE p.error IS NULL GROUP BY r.name, p.kind ORDER BY r.name, p.kind"):
        out[str(name)]["probes"][str(kind)] = int(n)
    if db["traces"].exists():
        for name, n in db.conn.execute("SELECT run, count(*) FROM traces WHERE error IS NULL "
                                       "GROUP BY run ORDER BY run"):
            run = out.setdefault(str(name), {"name": str(name), "amendment": None,
                                             "episodes": 0, "probes": {}, "states": 0})
            run["states"] = int(n)
    return list(out.values())
