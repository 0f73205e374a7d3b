"""The cyclic garbage collector in a short `lab` command that loads the analysis.

`lab results` and `lab export` import pandas, numpy and lab's analysis: about 58,000
objects the collector tracks (modules, classes, functions and their dicts) that live
until the process ends. Python's collector scans all of them in every full collection,
and the interpreter's shutdown runs such collections after the command's output is
written. `freeze_loaded` leaves what is loaded at that point out of every later scan
(`gc.freeze`), so the scans at exit cover only what the command built afterwards.

What the command builds after the freeze is collected as before: a SQLite connection
opened after it and never closed is still closed at exit, so lab.db's ``-wal`` and
``-shm`` files are still removed. Anything opened before it must be closed explicitly:
`console.cli.options.open_db` closes the command's lab.db when the command ends, and
the early reads close theirs. Freezing at the end of the command instead would leave
every connection out of the exit's collection (in CPython 3.11 a connection and its
statement cache refer to each other, so only the collector frees them), and lab.db's
WAL beside it (docs/performance.md).
"""

from __future__ import annotations

import gc

import click

OWNS_PROCESS = "owns_process"
"""The key of the command's ``ctx.obj`` saying that this process is `lab` itself: `main`
was called without arguments, so it runs the process's own command line (the `lab`
script, ``python -m console.cli``). A caller that passes arguments (the tests, which run
hundreds of commands in one process) keeps its collector as it is."""


def freeze_loaded(ctx: click.Context) -> None:
    """Leave every object alive now out of the collector's later scans, where the
    command owns its process (once its modules are imported; objects frozen now are
    never collected)."""
    if (ctx.obj or {}).get(OWNS_PROCESS):
        gc.freeze()
