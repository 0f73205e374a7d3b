"""Prompt templates, one file per piece (docs/prompts.md).

A researcher may edit any file here; freezing a pre-registration amendment pins
the exact bytes of every file by sha256. A long-lived worker never serves stale
text: `load` stats the file on each call and re-reads it (and re-hashes it) when
its modification time, size or inode changed. An episode run inside `recording()`
learns the sha256 of every file it used, and keeps using the version it read
first if a file changes while it runs.

A prompt pack (docs/prompts.md) replaces the text of some or all pieces: inside
`using(pack)` every `load`, `current`, `file_hashes` and `texts` call serves the
pack's piece where it has one, keyed and hashed exactly like the file it replaces,
so the recorded per-episode hashes change with the wording. The worker enters it
once per job with the pack its cell was enqueued with (a ContextVar: each asyncio
task sees the pack of its own job).
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import os
from collections.abc import Iterator, Mapping
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


_PACK: contextvars.ContextVar[Mapping[str, str] | None] = contextvars.ContextVar(
    "prompts_pack", default=None)
"""The prompt pack in use in this context: piece name -> exact file text (None: built-in)."""


@contextlib.contextmanager
def using(pack: Mapping[str, str] | None) -> Iterator[None]:
    """Serve `pack`'s pieces instead of the built-in files in this context.

    Args:
        pack: piece name (file stem, e.g. "system") -> the piece's exact file text;
            None or empty: the built-in files.
    """
    token = _PACK.set(dict(pack) if pack else None)
    try:
        yield
    finally:
        _PACK.reset(token)


def set_pack(pack: Mapping[str, str] | None) -> None:
    """Serve `pack`'s pieces from now on in this context (a worker's job task: every job
    sets its own cell's pack, None for the built-in files)."""
    _PACK.set(dict(pack) if pack else None)


@lru_cache(maxsize=1024)
def _from_text(name: str, text: str) -> Prompt:
    """A pack's piece as a Prompt, hashed over its UTF-8 bytes like a file."""
    return Prompt(f"prompts/{name}.txt", text.rstrip("\n"),
                  hashlib.sha256(text.encode("utf-8")).hexdigest())


def builtin_names() -> list[str]:
    """The stems of every built-in prompt file, sorted."""
    return sorted(p.stem for p in PROMPT_DIR.glob("*.txt"))


def builtin_text(name: str) -> str:
    """The exact text of the built-in prompts/<name>.txt (trailing newline kept).

    Raises:
        FileNotFoundError: when no such prompt file exists.
    """
    return (PROMPT_DIR / f"{name}.txt").read_bytes().decode("utf-8")


@lru_cache(maxsize=256)
def _read(path: str, stamp: tuple[int, int, int, int]) -> Prompt:
    """The file at `path` as it is at `stamp` (cached per stamp; a new stamp re-reads it)."""
    data = Path(path).read_bytes()
    return Prompt(f"prompts/{Path(path).name}", data.decode("utf-8").rstrip("\n"),
                  hashlib.sha256(data).hexdigest())


def current(name: str) -> Prompt:
    """The version of prompts/<name>.txt in use now: the active pack's piece, else the file.

    Raises:
        FileNotFoundError: when no such prompt file exists.
    """
    pack = _PACK.get()
    if pack is not None and name in pack:
        return _from_text(name, pack[name])
    path = _path(name)
    st = os.stat(path)
    return _read(path, (st.st_mtime_ns, st.st_size, st.st_ino, st.st_ctime_ns))


_PATHS: dict[tuple[Path, str], str] = {}
"""Each piece's file path by (PROMPT_DIR, name): a pathlib join per load cost more than
the stat that follows it (a few per model call)."""


def _path(name: str) -> str:
    """The path of prompts/<name>.txt under the current PROMPT_DIR."""
    key = (PROMPT_DIR, name)
    path = _PATHS.get(key)
    if path is None:
        path = _PATHS[key] = str(PROMPT_DIR / f"{name}.txt")
    return path


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
    """sha256 of the exact bytes of every prompt piece in use, keyed "prompts/<name>.txt".

    The built-in files, each replaced by the active pack's piece where it has one.
    """
    return {key: hashlib.sha256(text.encode("utf-8")).hexdigest()
            for key, text in texts().items()}


def texts() -> dict[str, str]:
    """The exact text of every prompt piece in use, keyed like `file_hashes`."""
    pack = _PACK.get() or {}
    return {f"prompts/{name}.txt": pack[name] if name in pack else builtin_text(name)
            for name in builtin_names()}
