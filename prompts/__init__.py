"""Prompt templates, one file per piece (SPEC §6–§8).

A researcher may edit any file here; freezing a pre-registration amendment pins
the exact bytes of every file by sha256. A long-lived worker never serves stale
text: `load` stats the file on each call and re-reads it (and re-hashes it) when
its modification time, size or inode changed. An episode run inside `recording()`
learns the sha256 of every file it used, and keeps using the version it read
first if a file changes while it runs.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import os
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path
from typing import NamedTuple

PROMPT_DIR = Path(__file__).resolve().parent
"""Where the prompt files are read from (read at each call, so tests may point it elsewhere)."""


class Prompt(NamedTuple):
    """One version of a prompt file."""

    key: str
    """"prompts/<name>.txt", as in `file_hashes` and the pre-registration pins."""
    text: str
    """The file's text without its trailing newline."""
    sha256: str
    """sha256 of the file's exact bytes."""


class Recording:
    """The prompt files served to one episode, each at the version first read."""

    def __init__(self) -> None:
        self.used: dict[str, Prompt] = {}

    def hashes(self) -> dict[str, str]:
        """sha256 per "prompts/<name>.txt" of the files used so far."""
        return {p.key: p.sha256 for p in sorted(self.used.values())}


_RECORDING: contextvars.ContextVar[Recording | None] = contextvars.ContextVar(
    "prompts_recording", default=None)
"""The recording of the episode running in this context (None: not recording). A
ContextVar rather than shared state: each asyncio task (one episode) sees its own."""


@lru_cache(maxsize=256)
def _read(path: str, stamp: tuple[int, int, int, int]) -> Prompt:
    """The file at `path` as it is at `stamp` (cached per stamp; a new stamp re-reads it)."""
    data = Path(path).read_bytes()
    return Prompt(f"prompts/{Path(path).name}", data.decode("utf-8").rstrip("\n"),
                  hashlib.sha256(data).hexdigest())


def current(name: str) -> Prompt:
    """The version of prompts/<name>.txt on disk now.

    Raises:
        FileNotFoundError: when no such prompt file exists.
    """
    path = PROMPT_DIR / f"{name}.txt"
    st = os.stat(path)
    return _read(str(path), (st.st_mtime_ns, st.st_size, st.st_ino, st.st_ctime_ns))


def load(name: str) -> str:
    """Return the text of prompts/<name>.txt without its trailing newline.

    Inside `recording()`, the first version read is kept for the rest of the
    recording and its sha256 is recorded.

    Args:
        name: file stem, e.g. "system" or "side_channel".

    Raises:
        FileNotFoundError: when no such prompt file exists.
    """
    rec = _RECORDING.get()
    if rec is None:
        return current(name).text
    if name not in rec.used:
        rec.used[name] = current(name)
    return rec.used[name].text


@contextlib.contextmanager
def recording() -> Iterator[Recording]:
    """Record the prompt files `load` serves in this context (one episode)."""
    rec = Recording()
    token = _RECORDING.set(rec)
    try:
        yield rec
    finally:
        _RECORDING.reset(token)


def file_hashes() -> dict[str, str]:
    """sha256 of the exact bytes of every prompt file, keyed by its path under prompts/."""
    return {
        f"prompts/{p.name}": hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(PROMPT_DIR.glob("*.txt"))
    }
