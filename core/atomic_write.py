"""Writing a file whole or not at all: under a temporary name beside it, then a rename.

A reader (or a crash) never sees half a file: the old file stays until the new one is
complete, and a failed write leaves no temporary file behind. The temporary name is
hidden (`.NAME.<unique>.tmp`) and unique per write, so two processes writing the same
file never share one.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def atomic_path(path: Path, side_suffixes: tuple[str, ...] = ()) -> Iterator[Path]:
    """A temporary path beside `path` to write; renamed onto `path` when the block ends.

    Args:
        path: the file to (re)place.
        side_suffixes: files the writer may leave beside the temporary one (SQLite's
            "-journal", "-wal", "-shm"): removed whatever happens.

    Yields:
        The temporary path; the block writes it whole (it does not exist yet).

    Raises:
        Whatever the block raises, after removing the temporary file; `path` is untouched.
    """
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    try:
        yield tmp
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    finally:
        for suffix in side_suffixes:
            Path(f"{tmp}{suffix}").unlink(missing_ok=True)


def move_aside(path: Path, to: Path) -> None:
    """Move `path` to `to` on the same file system in one step (a rename): the other half
    of replacing a file that must be kept (the old lab.db a restore keeps, its -wal and
    -shm), or a finished piece becoming the temporary file of a whole (`join_parts`)."""
    os.replace(path, to)


def write_text_atomic(path: Path, text: str) -> Path:
    """Write `text` (UTF-8) to `path` whole or not at all; returns `path`."""
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return path
