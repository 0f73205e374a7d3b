"""The installed lab version, in a module of its own: the analysis records it in every
exported row and cache key without importing the pre-registration machinery."""

from __future__ import annotations

import functools
from importlib.metadata import PackageNotFoundError, version


@functools.lru_cache(maxsize=1)
def project_version() -> str:
    """The installed lab version (read once per process: reading package metadata costs
    ~4 ms, and every exported row or JSON row records it)."""
    try:
        return version("lab")
    except PackageNotFoundError:
        return "unknown"
