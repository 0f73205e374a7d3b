"""The lab version, in a module of its own: the analysis records it in every exported row
and cache key without importing the pre-registration machinery.

`__version__` is the one place it is written: pyproject.toml reads it from here when lab
is installed (`[tool.setuptools.dynamic]`), so the installed metadata and every recorded
row agree. Read as a constant rather than through `importlib.metadata`, whose import
(its e-mail header parser) is about 40 ms of every `lab` command's start.
"""

from __future__ import annotations

__version__ = "0.1.0"


def project_version() -> str:
    """The lab version recorded in exported rows, cache keys and frozen amendments."""
    return __version__
