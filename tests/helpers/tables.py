"""A toy results table registered for one test, the way a real one is (one registry
line), and the registry as it was afterwards."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from analysis.tables import registry
from analysis.tables.registry import TableDef


@contextmanager
def registered(table: TableDef) -> Iterator[TableDef]:
    """`table` registered for the duration of a with block, the registry restored after."""
    saved = dict(registry._TABLES)
    registry.register(table)
    try:
        yield table
    finally:
        registry._TABLES.clear()
        registry._TABLES.update(saved)
