"""Where the console writes its logs: its own error log and the logs of the workers it starts.

Both live in one folder beside lab.db, `<lab.db>.logs/` (as the results cache lives in
`<lab.db>.results/`), or, when lab.db's folder cannot be written (a read-only mount),
under `$XDG_STATE_HOME/lab/` (default `~/.local/state/lab/`), in a folder named after
lab.db's full path. No Textual here.

The error log holds one line per error the console caught (what its notice said),
followed by the traceback indented, so a researcher reads the line and a maintainer the
rest.
"""

from __future__ import annotations

import os
import re
import time
import traceback
from pathlib import Path

ERROR_LOG = "console.log"
"""The console's error log, in `log_dir`."""


def state_home() -> Path:
    """`$XDG_STATE_HOME/lab`, or `~/.local/state/lab` when it is not set."""
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "lab"


def _writable(folder: Path) -> bool:
    """Whether files can be created in `folder` (made if missing)."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return False
    probe = folder / f".probe-{os.getpid()}"
    try:
        probe.touch()
        probe.unlink()
    except OSError:
        return False
    return True


def log_dir(db_path: Path) -> Path:
    """The folder of the console's and its workers' logs for `db_path` (created).

    Beside lab.db when that folder can be written, else under `state_home()`; the
    second folder's name is lab.db's full path with every run of other characters
    than letters, digits, `.` and `-` turned into `_`.
    """
    db_path = Path(db_path).resolve()
    beside = db_path.parent / f"{db_path.name}.logs"
    if _writable(beside):
        return beside
    fallback = state_home() / re.sub(r"[^A-Za-z0-9.-]+", "_", str(db_path)).strip("_")
    fallback.mkdir(parents=True, exist_ok=True)
    return fallback


def one_line(exc: BaseException) -> str:
    """An exception as the one line a notice shows: its type and its message's first line."""
    text = str(exc).strip().splitlines()
    message = text[0] if text else ""
    name = type(exc).__name__
    return f"{name}: {message}" if message else name


def record_error(folder: Path, line: str, exc: BaseException | None = None,
                 now: float | None = None) -> Path | None:
    """Append `line` (and `exc`'s traceback, indented) to the error log in `folder`.

    Returns:
        The log's path, or None when it could not be written (a full disk: the error
        must never raise another).
    """
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() if now is None
                                                            else now))
    text = f"{stamp} error: {line}\n"
    if exc is not None:
        trace = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        text += "".join(f"    {row}\n" for row in trace.rstrip("\n").splitlines())
    path = folder / ERROR_LOG
    try:
        with path.open("a", encoding="utf-8") as f:
            f.write(text)
    except OSError:
        return None
    return path
