"""The job kinds a worker runs: one module each, named here once.

A kind's module defines `KIND` (a `jobs.kinds.base.JobKind`). A worker imports a
kind's module only when it runs a job of that kind.
"""

from __future__ import annotations

import importlib

from core.errors import StoreError
from jobs.kinds.base import JobKind

KINDS: dict[str, str] = {
    "episodes": "jobs.kinds.episodes",
    "replay": "jobs.kinds.replay",
    "traces": "jobs.kinds.traces",
}
"""`jobs.kind` → the module that defines its `KIND`."""


def job_kind(name: str) -> JobKind:
    """The kind of a jobs row's `kind`.

    Raises:
        StoreError: no such kind (a job written by a newer lab).
    """
    module = KINDS.get(name)
    if module is None:
        raise StoreError(f"job kind {name!r} is not one this lab runs ({', '.join(KINDS)}); "
                         f"run it with the lab version that queued it")
    kind: JobKind = importlib.import_module(module).KIND
    return kind
