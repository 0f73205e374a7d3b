"""`lab backup` and `lab restore`: the recovery path for a corrupt or lost lab.db.

A backup is SQLite's online backup (`sqlite3.Connection.backup`) of lab.db into a new
file: it reads one consistent snapshot, however many workers write meanwhile (lab.db
is in WAL mode, so readers and writers do not block each other), and the copy is a
plain single-file database. It is written to a temporary file beside the target and
renamed into place once its integrity check passes, so a failed backup (full disk,
killed) leaves nothing that looks like one.

A restore first checks the backup (`PRAGMA integrity_check`, and that it is a lab
database this lab can open), refuses while a worker of this host is alive, copies it
beside lab.db the same way, then moves the old lab.db (and its `-wal`/`-shm` files,
which belong to it alone) aside as `lab.db.before-restore-<time>` and renames the copy
into place. The queue file (`lab.queue.db`) is not part of a backup: it only carries
"run job N" messages, and the next worker re-enqueues every queued job that has none.
"""

from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path

from core.atomic_write import atomic_path, move_aside
from core.errors import ConfigError, StoreError
from core.schema import SCHEMA_VERSION

SIDE_FILES = ("-wal", "-shm")
"""The files SQLite keeps beside lab.db in WAL mode (they belong to that file only)."""


@dataclass(frozen=True)
class Copied:
    """What a backup or restore copied.

    Attributes:
        path: the file written (the backup, or the restored lab.db).
        episodes: episodes in it.
        size: its size in bytes.
        moved_aside: the old lab.db's new name (restore; None when there was none).
    """

    path: Path
    episodes: int
    size: int
    moved_aside: Path | None = None

    def line(self, verb: str) -> str:
        """One line saying what was done."""
        aside = (f"; the previous lab.db is kept as {self.moved_aside}"
                 if self.moved_aside is not None else "")
        return (f"{verb} {self.path} ({self.episodes:,} episodes, "
                f"{self.size / 1e6:.1f} MB){aside}")


def _copy(src: Path, dst: Path) -> int:
    """Copy the database `src` into the new file `dst` with the online backup API and
    check the copy; returns its episode count.

    Raises:
        StoreError: the copy fails its integrity check.
        sqlite3.Error: reading or writing failed (the caller names the file).
    """
    source = sqlite3.connect(f"file:{src}?mode=ro", uri=True, timeout=60)
    try:
        target = sqlite3.connect(dst)
        try:
            source.backup(target)  # one step: one consistent snapshot of src
            # a single self-contained file (the source's WAL mode would give it -wal/-shm
            # files whenever it is opened); lab.db goes back to WAL when lab opens it
            target.execute("PRAGMA journal_mode = DELETE")
            check = target.execute("PRAGMA integrity_check").fetchall()
            if check != [("ok",)]:
                raise StoreError(f"{dst}: the copy fails its integrity check "
                                 f"({'; '.join(str(r[0]) for r in check[:3])})")
            has = target.execute("SELECT 1 FROM sqlite_master WHERE name = 'episodes'"
                                 ).fetchone()
            n = target.execute("SELECT count(*) FROM episodes").fetchone()[0] if has else 0
            target.commit()
        finally:
            target.close()
    finally:
        source.close()
    return int(n)


def _failed(path: Path, exc: BaseException) -> StoreError:
    """One line for a copy that could not be read or written."""
    text = " ".join(str(exc).split())
    if isinstance(exc, sqlite3.OperationalError) and "full" in text:
        return StoreError(f"{path}: the disk is full ({text}); free space and run it again "
                          f"(nothing was written)")
    return StoreError(f"{path}: {text} (nothing was written)")


def backup(db_path: Path, dest: Path, force: bool = False) -> Copied:
    """Copy lab.db to `dest` while workers may be writing it.

    Args:
        db_path: lab.db.
        dest: the backup file to write.
        force: replace `dest` when it exists.

    Raises:
        StoreError: no lab.db, or the copy could not be made (nothing is left at `dest`).
        ConfigError: `dest` exists (without `force`), is lab.db itself or a folder.
    """
    if not db_path.exists():
        raise StoreError(f"no lab database at {db_path}: nothing to back up")
    if dest.is_dir():
        raise ConfigError(f"{dest} is a folder: name the backup file, e.g. {dest / 'lab.db.bak'}")
    if dest.exists() and dest.resolve() == db_path.resolve():
        raise ConfigError(f"{dest} is lab.db itself: name another file")
    if dest.exists() and not force:
        raise ConfigError(f"{dest} exists: name a new file, or add --force to replace it")
    if not dest.parent.is_dir():
        raise ConfigError(f"{dest}: folder {dest.parent} does not exist")
    try:
        with atomic_path(dest, ("-journal", *SIDE_FILES)) as tmp:
            episodes = _copy(db_path, tmp)
    except (sqlite3.Error, OSError) as exc:
        raise _failed(dest, exc) from None
    return Copied(dest, episodes, dest.stat().st_size)


def check_backup(path: Path) -> None:
    """Refuse a file that is not a whole lab database this lab can open.

    Raises:
        ConfigError: missing, not SQLite, failing `PRAGMA integrity_check`, not a lab
            database, or written by a newer lab.
    """
    if not path.is_file():
        raise ConfigError(f"{path}: no such backup file")
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            check = conn.execute("PRAGMA integrity_check").fetchall()
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            has = conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'episodes'").fetchone()
        finally:
            conn.close()
    except sqlite3.DatabaseError as exc:
        raise ConfigError(f"{path}: not a usable backup ({exc}); nothing was restored"
                          ) from None
    if check != [("ok",)]:
        found = "; ".join(str(r[0]) for r in check[:3])
        raise ConfigError(f"{path}: the backup is corrupt ({found}); nothing was restored: "
                          f"use an older backup")
    if not has or version < 1:
        raise ConfigError(f"{path}: not a lab database (no episodes table); nothing was restored")
    if version > SCHEMA_VERSION:
        raise ConfigError(f"{path} has schema version {version}, newer than this lab knows "
                          f"({SCHEMA_VERSION}): upgrade lab to restore it")


def restore(backup_file: Path, db_path: Path, live_workers: list[str]) -> Copied:
    """Put `backup_file` in place of lab.db, keeping the old lab.db beside it.

    Args:
        backup_file: a file `backup` wrote (or any whole lab database).
        db_path: lab.db (it may be missing, or corrupt).
        live_workers: workers of this host still running on lab.db (the caller reads
            them while it can): any refuses the restore.

    Raises:
        ConfigError: a worker is live, or the backup is not usable (`check_backup`).
        StoreError: the copy could not be written (lab.db is left as it was).
    """
    if live_workers:
        raise ConfigError(f"worker {live_workers[0]} is running on {db_path}: stop every "
                          f"worker (Ctrl-C or SIGTERM) before restoring")
    if backup_file.resolve() == db_path.resolve():
        raise ConfigError(f"{backup_file} is lab.db itself: name the backup file")
    check_backup(backup_file)
    aside: Path | None = None
    with atomic_path(db_path, ("-journal", *SIDE_FILES)) as tmp:
        try:
            episodes = _copy(backup_file, tmp)
        except (sqlite3.Error, OSError) as exc:
            raise _failed(db_path, exc) from None
        if db_path.exists():
            aside = db_path.with_name(
                f"{db_path.name}.before-restore-{time.strftime('%Y%m%dT%H%M%S')}")
            move_aside(db_path, aside)
        for suffix in SIDE_FILES:  # they belong to the old file: never pair them with the new
            side = Path(f"{db_path}{suffix}")
            if side.exists():
                move_aside(side, Path(f"{aside}{suffix}") if aside else side.with_suffix(
                    side.suffix + ".orphan"))
    return Copied(db_path, episodes, db_path.stat().st_size, aside)
