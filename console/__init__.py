"""The terminal console and the `lab` command line."""

import core  # noqa: F401  # first, so sqlite_utils loads without pandas (core/__init__.py)
