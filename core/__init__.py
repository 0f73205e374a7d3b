"""The experiment: data, environment, agent protocol, conditions, models and storage.

Imports nothing from console, jobs or analysis.
"""

import sys


def _load_sqlite_utils_without_pandas() -> None:
    """Import sqlite_utils while pandas and numpy are hidden from it.

    sqlite_utils imports pandas and numpy whenever they are installed, only to add their
    scalar types to the column-type map it consults when it creates a table from Python
    values; that import is about 0.35 s of CPU in every `lab` process, the worker and
    commands that never build a frame included. lab creates its tables with declared
    types (core/schema) and hands sqlite_utils plain Python values, so it loads
    sqlite_utils without them; analysis imports pandas and numpy itself when it needs
    them. console, jobs and analysis import core first in their `__init__`, so it runs
    before any of their modules imports sqlite_utils. Two tests in tests/test_cli.py hold
    both halves: a plain command and the console's start load neither, and creating a
    table from a numpy value still fails loudly rather than silently.
    """
    if "sqlite_utils" in sys.modules:
        return
    hidden = [name for name in ("pandas", "numpy") if name not in sys.modules]
    for name in hidden:
        sys.modules[name] = None  # type: ignore[assignment]  # an import of it raises
    try:
        import sqlite_utils.db  # noqa: F401
    finally:
        for name in hidden:
            if sys.modules.get(name, ...) is None:
                del sys.modules[name]


_load_sqlite_utils_without_pandas()
