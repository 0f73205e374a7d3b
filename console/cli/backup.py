"""`lab backup FILE` and `lab restore FILE`: copy lab.db while workers run, and put a
copy back (`core.store.backup`; docs/queue.md#backups-and-recovery)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import click

from console.cli.output import echo
from core.store.backup import backup, restore

WORKER_LEASE_S = 60.0
"""A worker silent this long holds nothing (the default lease of `lab worker`)."""


def _live_workers(db_path: Path) -> list[str]:
    """Workers still running on lab.db: their process lives (this host) or their heartbeat
    is fresh. A lab.db that cannot be read (corrupt, missing) has none to report."""
    if not db_path.exists():
        return []
    from core.store.monitor import workers

    try:
        conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, timeout=5)
        try:
            from core.store.scripts import LabDatabase

            rows = workers(LabDatabase(conn), WORKER_LEASE_S)
        finally:
            conn.close()
    except sqlite3.Error:
        return []
    return [w.id for w in rows if w.state in ("running", "stopping")]


@click.command("backup")
@click.argument("file", type=click.Path(path_type=Path))
@click.option("--force", is_flag=True, help="Replace FILE if it exists.")
@click.pass_context
def backup_cmd(ctx: click.Context, file: Path, force: bool) -> None:
    """Copy lab.db to FILE, consistent even while workers write it.

    Uses SQLite's online backup: FILE is one snapshot of lab.db, checked with
    `PRAGMA integrity_check` before it is renamed into place. The queue file is not
    copied (the next worker re-enqueues what it needs).

    \b
    Example:
      lab backup lab-backup.db
      lab backup lab-backup.db --force
    """
    copied = backup(Path(ctx.obj["db"]), file, force=force)
    echo(copied.line("backed up to"))


@click.command("restore")
@click.argument("file", type=click.Path(path_type=Path))
@click.pass_context
def restore_cmd(ctx: click.Context, file: Path) -> None:
    """Put the backup FILE in place of lab.db (a corrupt or lost lab.db's recovery).

    FILE is checked first (integrity, a lab database this lab can open); no worker
    may be running. The old lab.db, if any, is kept beside it as
    lab.db.before-restore-<time>.

    \b
    Example:
      lab restore lab-backup.db
    """
    db_path = Path(ctx.obj["db"])
    copied = restore(file, db_path, _live_workers(db_path))
    echo(copied.line("restored"))


COMMANDS = (backup_cmd, restore_cmd)
