"""The local job queue: grids → cells → jobs, Huey workers, the crash-safe ledger."""

import core  # noqa: F401  # first, so sqlite_utils loads without pandas (core/__init__.py)
