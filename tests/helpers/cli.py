"""Running `lab` in-process in tests and checking its refusals and its database."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path
from typing import Protocol

from console.cli import main


def dump_hash(path: Path) -> str:
    """sha256 of the database's SQL dump, read without writing to it."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return hashlib.sha256("\n".join(conn.iterdump()).encode()).hexdigest()
    finally:
        conn.close()


class ReadsOutput(Protocol):
    """Where `lab` reads a command's output: pytest's `capsys`, or a stand-in."""

    def readouterr(self) -> tuple[str, str]: ...


def lab(capsys: ReadsOutput, *args: object) -> tuple[int, str, str]:
    """Run `lab ARGS` in-process through `main`; (exit code, stdout, stderr)."""
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def one_error(code: int, err: str, *words: str) -> None:
    """A refusal: non-zero exit, exactly one stderr line, naming `words`."""
    assert code != 0, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    for word in words:
        assert word in lines[0], (word, lines[0])
