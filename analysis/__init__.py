"""Results tables, figures, replay, pre-registration checks and the report."""

import core  # noqa: F401  # first, so sqlite_utils loads without pandas (core/__init__.py)
