"""`lab backup` and `lab restore`, and a corrupt lab.db told in one line.

A backup taken while a real worker stores episodes is one consistent snapshot
(integrity ok, every episode whole, its count between the live counts read before
and after it); a restore puts it back, keeps the old file beside it, and refuses a
corrupt backup or a live worker; a lab.db with damaged pages makes status, results,
export, report and tail print one line that says how to recover, and `lab restore`
recovers it.
"""

from __future__ import annotations

import os
import socket
import sqlite3
import time
from pathlib import Path

import pytest

from core.store.backup import backup
from tests.helpers.queue import episode_census, lab_here, start_lab, write_registry


def _count(db: Path) -> int:
    conn = sqlite3.connect(db)
    try:
        return int(conn.execute("SELECT count(*) FROM episodes").fetchone()[0])
    finally:
        conn.close()


def _integrity(db: Path) -> str:
    conn = sqlite3.connect(db)
    try:
        return str(conn.execute("PRAGMA integrity_check").fetchone()[0])
    finally:
        conn.close()


def _study(tmp_path: Path, latency: float = 0.0) -> tuple[Path, Path]:
    db, config = tmp_path / "lab.db", write_registry(tmp_path, latency)
    assert lab_here(db, config, "demo-set").returncode == 0
    out = lab_here(db, config, "enqueue", "--models", "sim-slow", "--conditions", "none",
                   "--regimes", "clean,persistent", "--set", "demo", "--budget", "4",
                   "--run", "r")
    assert out.returncode == 0, out.stderr
    return db, config


def _corrupt(db: Path, table: str = "episodes") -> None:
    """Overwrite the leaf pages of `table` with garbage (a damaged disk)."""
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    pages = [p for (p,) in conn.execute("SELECT pageno FROM dbstat WHERE name = ? AND "
                                        "pagetype = 'leaf'", (table,))]
    size = conn.execute("PRAGMA page_size").fetchone()[0]
    conn.close()
    assert pages
    with open(db, "r+b") as f:
        for p in pages:
            f.seek((p - 1) * size)
            f.write(b"\xde\xad\xbe\xef" * (size // 4))


@pytest.mark.timeout(240)
def test_a_backup_taken_while_a_worker_writes_is_one_consistent_snapshot(tmp_path: Path) -> None:
    db, config = _study(tmp_path, latency=20.0)
    proc = start_lab(db, config, "worker", "--until-idle", log=tmp_path / "worker.log")
    taken: list[tuple[int, Path, int, int]] = []
    try:
        while proc.poll() is None or not taken:
            before = _count(db)
            dest = tmp_path / f"backup-{len(taken)}.db"
            copied = backup(db, dest)
            taken.append((before, dest, copied.episodes, _count(db)))
    finally:
        proc.wait(120)
    assert proc.returncode == 0, (tmp_path / "worker.log").read_text()[-2000:]
    during = [t for t in taken if t[0] < t[3] or 0 < t[2] < 120]
    assert during, "no backup was taken while episodes were being stored"
    for before, dest, episodes, after in taken:
        assert before <= episodes <= after
        assert _integrity(dest) == "ok"
        census = episode_census(dest)
        assert census["episodes"] == episodes and census["broken"] == 0
        assert not Path(f"{dest}-wal").exists()  # one self-contained file


def test_backup_refuses_to_overwrite_without_force_and_restore_round_trips(tmp_path: Path) -> None:
    db, config = _study(tmp_path)
    assert lab_here(db, config, "worker", "--until-idle").returncode == 0
    dest = tmp_path / "safe.db"
    out = lab_here(db, config, "backup", str(dest))
    assert out.returncode == 0 and "120 episodes" in out.stdout, out.stderr
    again = lab_here(db, config, "backup", str(dest))
    assert again.returncode != 0 and again.stderr.count("\n") == 1 and "--force" in again.stderr
    assert lab_here(db, config, "backup", str(dest), "--force").returncode == 0

    conn = sqlite3.connect(db)
    conn.execute("DELETE FROM steps")
    conn.execute("DELETE FROM episodes WHERE id > 10")
    conn.commit()
    conn.close()
    out = lab_here(db, config, "restore", str(dest))
    assert out.returncode == 0 and "restored" in out.stdout, out.stderr
    assert _count(db) == 120 and _integrity(db) == "ok"
    kept = [p for p in tmp_path.glob("lab.db.before-restore-*") if "-wal" not in p.name
            and "-shm" not in p.name]
    assert len(kept) == 1 and _count(kept[0]) == 10
    status = lab_here(db, config, "status")
    assert status.returncode == 0 and "120/120" in status.stdout


def test_restore_refuses_a_corrupt_backup_and_a_live_worker(tmp_path: Path) -> None:
    db, config = _study(tmp_path)
    assert lab_here(db, config, "worker", "--until-idle").returncode == 0
    dest = tmp_path / "safe.db"
    backup(db, dest)
    before = db.read_bytes()

    broken = tmp_path / "broken.db"
    broken.write_bytes(dest.read_bytes())
    _corrupt(broken)
    out = lab_here(db, config, "restore", str(broken))
    assert out.returncode != 0 and out.stderr.count("\n") == 1, out.stderr
    assert "corrupt" in out.stderr and "nothing was restored" in out.stderr
    (tmp_path / "text.db").write_text("not a database")
    out = lab_here(db, config, "restore", str(tmp_path / "text.db"))
    assert out.returncode != 0 and "not a usable backup" in out.stderr
    assert db.read_bytes() == before and not list(tmp_path.glob("*before-restore*"))

    conn = sqlite3.connect(db)  # a worker of this host, alive (this process), just beat
    conn.execute("INSERT OR REPLACE INTO workers (id, started_at, heartbeat_at, state) VALUES "
                 "(?, '', ?, 'running')", (f"{socket.gethostname()}:{os.getpid()}", time.time()))
    conn.commit()
    conn.close()
    out = lab_here(db, config, "restore", str(dest))
    assert out.returncode != 0 and "is running" in out.stderr, out.stderr
    assert not list(tmp_path.glob("*before-restore*"))


def test_a_corrupt_lab_db_is_one_line_that_says_how_to_recover(tmp_path: Path) -> None:
    db, config = _study(tmp_path)
    assert lab_here(db, config, "worker", "--until-idle").returncode == 0
    dest = tmp_path / "safe.db"
    backup(db, dest)
    _corrupt(db)
    for command in (["status"], ["results", "success"], ["export", str(tmp_path / "out")],
                    ["report", str(tmp_path / "r.html")], ["tail", "1"]):
        out = lab_here(db, config, *command)
        assert out.returncode != 0, command
        assert out.stderr.count("\n") == 1 and "Traceback" not in out.stderr, out.stderr
        assert "is corrupt" in out.stderr and "lab restore" in out.stderr, out.stderr
    assert not (tmp_path / "r.html").exists()
    out = lab_here(db, config, "restore", str(dest))
    assert out.returncode == 0, out.stderr
    assert lab_here(db, config, "status").returncode == 0


def test_the_console_says_a_corrupt_lab_db_is_corrupt_and_how_to_recover(tmp_path: Path) -> None:
    from console.app import make_app

    db, config = _study(tmp_path)
    assert lab_here(db, config, "worker", "--until-idle").returncode == 0
    _corrupt(db)
    app = make_app(db)
    try:
        sqlite3.connect(db).execute("SELECT * FROM episodes").fetchall()
    except sqlite3.DatabaseError as exc:
        app._handle_exception(exc)  # what Textual does with a screen's failed read
    assert app.fatal is not None and "is corrupt" in app.fatal and "lab restore" in app.fatal
