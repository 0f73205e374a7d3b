"""Connection, migrations and the write transaction of lab.db."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import quote

from sqlite_utils import Database

from core.errors import StoreError
from core.schema import MIGRATIONS, SCHEMA_VERSION
from core.store.disk import DISK, is_disk_full
from core.store.scripts import LabDatabase

BUSY_TIMEOUT_MS = 60_000
Rederive = Callable[[Database, Path, bool], None]
"""Rebuilds an open lab.db's stale derived tables (all of them after an upgrade)."""


def open_migrated(path: Path | str, create: bool, rederive: Rederive,
                  read_only_fallback: bool = False) -> Database:
    """Open lab.db, creating and migrating it as needed, and let `rederive` rebuild its
    derived tables; what `core.store.connect` does (see there).

    `rederive` runs inside the upgrade's write transaction after a schema upgrade, and
    before foreign keys are switched on (a rebuild must not cascade); its
    `sqlite3.OperationalError` is reported as `access_error`'s one line. It is passed in,
    not imported, because the rebuild imports the writers and every writer imports this
    module (for `write`).

    Args:
        path: the database file.
        create: create the file when it does not exist.
        rederive: called with the open lab.db, its path and whether the schema was
            just upgraded (every derived table is then rebuilt).
        read_only_fallback: when an existing lab.db cannot be opened for writing (a
            read-only file, folder or mount), open it read-only instead
            (`open_read_only`) rather than fail.

    Raises:
        StoreError: as `core.store.connect`.
    """
    path = Path(path)
    if path.parent and not path.parent.exists():
        raise StoreError(f"{path}: directory {path.parent} does not exist")
    if not create and not path.exists():
        raise StoreError(f"no lab database at {path} (create one with `lab init`)")
    conn = sqlite3.connect(str(path), isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000,
                           check_same_thread=False)
    db = LabDatabase(conn)
    try:
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            conn.close()
            raise StoreError(
                f"{path} has schema version {version}, newer than this lab knows "
                f"({SCHEMA_VERSION}): upgrade lab before using this file")
        if conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
            conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        if version < SCHEMA_VERSION:  # before foreign keys go on: a rebuild must not cascade
            with write(db):
                # read again under the lock: another process may have just upgraded it
                upgrade = conn.execute("PRAGMA user_version").fetchone()[0] < SCHEMA_VERSION
                MIGRATIONS.apply(db)
                conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
                rederive(db, path, upgrade)  # migrations never derive (they are frozen)
        else:
            rederive(db, path, False)
        conn.execute("PRAGMA foreign_keys = ON")
    except sqlite3.OperationalError as exc:
        conn.close()
        if read_only_fallback and path.exists() and is_access_error(exc):
            return open_read_only(path)
        raise access_error(path, exc) from None
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise StoreError(f"{path}: not a usable lab database ({exc})") from None
    return db


def is_access_error(exc: BaseException) -> bool:
    """Whether an SQLite error says the file cannot be written or opened for writing."""
    text = str(exc)
    return "readonly" in text or "read-only" in text or "unable to open" in text


def open_read_only(path: Path) -> Database:
    """lab.db opened read-only, for a file that cannot be opened for writing.

    `mode=ro` first: it still sees other processes' commits. A WAL database needs its
    `-shm` file for that, which a read-only folder without one cannot give; then
    `immutable=1`, which reads the file as it is and never looks for `-wal`/`-shm`
    (nothing can write to that folder anyway). Every write on the connection fails with
    SQLite's "attempt to write a readonly database".

    Raises:
        StoreError: the file cannot be read either, is not a lab database, or has an
            older schema (upgrading it would need a write).
    """
    uri = f"file:{quote(str(path.resolve()))}"
    errors = []
    for query in ("?mode=ro", "?mode=ro&immutable=1"):
        conn = sqlite3.connect(uri + query, uri=True, isolation_level=None,
                               timeout=BUSY_TIMEOUT_MS / 1000, check_same_thread=False)
        try:
            version = int(conn.execute("PRAGMA user_version").fetchone()[0])
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        except sqlite3.OperationalError as exc:
            conn.close()
            errors.append(str(exc))
            continue
        except sqlite3.DatabaseError as exc:
            conn.close()
            raise StoreError(f"{path}: not a usable lab database ({exc})") from None
        if version != SCHEMA_VERSION:
            conn.close()
            raise StoreError(f"{path}: read-only, and of schema version {version} where this "
                             f"lab needs {SCHEMA_VERSION}: copy it somewhere writable to "
                             f"{'upgrade' if version < SCHEMA_VERSION else 'use'} it")
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA foreign_keys = ON")
        return LabDatabase(conn)
    raise StoreError(f"{path}: cannot open the database, even read-only ({errors[-1]})")


def access_error(path: Path | str, exc: sqlite3.OperationalError) -> StoreError:
    """A one-line StoreError for an SQLite file that cannot be opened or written.

    A read-only lab.db, a read-only directory (lab.db in WAL mode needs its
    `-wal`/`-shm` files next to it) or a missing mount all surface as
    `sqlite3.OperationalError`; this names the file and what to do.
    """
    text = str(exc)
    if "readonly" in text or "read-only" in text:
        return StoreError(f"{path}: the database is read-only ({text}); make the file and its "
                          f"directory writable, or copy it somewhere writable")
    if "unable to open" in text:
        return StoreError(f"{path}: cannot open the database ({text}); check that the file "
                          f"and its directory exist and are readable and writable by you "
                          f"(lab.db keeps -wal/-shm files beside it)")
    return StoreError(f"{path}: {text}")


@contextlib.contextmanager
def write(db: Database) -> Iterator[Database]:
    """A write transaction (BEGIN IMMEDIATE): all or nothing.

    Nested use joins the outer transaction, so a caller can make several store
    calls atomic by wrapping them in one `write`.
    """
    conn = db.conn
    if conn.in_transaction:
        yield db
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield db
        if conn.in_transaction:  # the body may end it itself (check_writable rolls back)
            conn.execute("COMMIT")
    except BaseException as exc:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        if is_disk_full(exc):  # rolled back whole; a worker pauses (core.store.disk)
            DISK.failed(exc)
        raise
    DISK.written()


def check_writable(db: Database, path: Path | str) -> None:
    """Fail now, in one line, if lab.db cannot be written (a read-only file or mount).

    Rewrites the schema version inside a transaction that is rolled back, so nothing
    changes; SQLite refuses the write at once on a read-only database, where a plain
    `BEGIN IMMEDIATE` would not.

    Raises:
        StoreError: the database is read-only or cannot be opened for writing.
    """
    try:
        with write(db):
            db.conn.execute(f"PRAGMA user_version = {schema_version(db)}")
            db.conn.execute("ROLLBACK")
    except sqlite3.OperationalError as exc:
        raise access_error(path, exc) from None


def schema_version(db: Database) -> int:
    """`PRAGMA user_version` of an open lab.db."""
    return int(db.conn.execute("PRAGMA user_version").fetchone()[0])


CORRUPT_MARKS = ("malformed", "corrupt", "not a database")
"""What SQLite says when a file's pages are damaged (SQLITE_CORRUPT, SQLITE_NOTADB)."""
RECOVERY = ("restore it from your last backup with `lab restore BACKUP` (the damaged file "
            "is kept beside it; docs/queue.md#backups-and-recovery)")
"""How to recover a corrupt lab.db, said by every message about one."""


def quick_check(path: Path | str) -> str:
    """`PRAGMA quick_check` of the SQLite file at `path`: "ok" or its first complaint."""
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
        try:
            rows = conn.execute("PRAGMA quick_check").fetchmany(3)
        finally:
            conn.close()
    except sqlite3.DatabaseError as exc:
        return " ".join(str(exc).split())
    return "; ".join(str(r[0]) for r in rows) or "ok"


def corruption_error(path: Path | str, exc: BaseException) -> StoreError | None:
    """A one-line StoreError when `exc` comes from a corrupt lab.db (or its queue file),
    confirmed by `quick_check`; None when it does not (the error is something else).

    Args:
        path: lab.db.
        exc: what a read or write raised (sqlite3's, or pandas' wrapping of it).
    """
    text = " ".join(str(exc).split()).lower()
    cause = exc.__cause__ or exc.__context__
    if cause is not None:
        text += " " + str(cause).lower()
    if not any(mark in text for mark in CORRUPT_MARKS):
        return None
    check = quick_check(path)
    if check != "ok":
        return StoreError(f"{path} is corrupt (quick_check: {check[:200]}); {RECOVERY}")
    queue = Path(path).with_name(Path(path).stem + ".queue" + (Path(path).suffix or ".db"))
    if queue.exists() and quick_check(queue) != "ok":
        return StoreError(f"{queue} (the queue file) is corrupt; remove it: the next "
                          f"`lab worker` re-enqueues every queued job")
    return None
