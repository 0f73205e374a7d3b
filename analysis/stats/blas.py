"""One BLAS thread for analysis: its matrix products are many and small.

A study's tables run thousands of products of a resample-weight batch (250 × ~300)
with per-question counts. OpenBLAS splits each over every core; on two busy cores that
made each product ~9 times slower than one thread (1.1 ms vs 10 ms for 250 × 300 ×
192 here). Each element of a product is computed by one thread either way, so the
numbers do not change, only the time.
"""

from __future__ import annotations

import ctypes
import functools
import os
import re
from pathlib import Path

_SETTERS = ("scipy_openblas_set_num_threads64_", "scipy_openblas_set_num_threads",
            "openblas_set_num_threads64_", "openblas_set_num_threads")


@functools.lru_cache(maxsize=1)
def single_thread() -> int:
    """Set every OpenBLAS this process has loaded to one thread (once per process).

    Returns:
        How many libraries were set (0 where /proc is missing or no OpenBLAS is loaded;
        then nothing changes).
    """
    maps = Path("/proc/self/maps")
    if not maps.exists():
        return 0
    done = 0
    for path in sorted(set(re.findall(r"(/\S*openblas\S*\.so\S*)", maps.read_text()))):
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        setter = next((getattr(lib, s) for s in _SETTERS if hasattr(lib, s)), None)
        if setter is not None:
            setter(1)
            done += 1
    return done


def worker_threads() -> int:
    """Threads for analysis work that runs in numpy or SQLite with the GIL released:
    one per CPU core this process may use, at most 4 (each runs single-threaded BLAS,
    so a product's numbers do not depend on the count)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    return max(1, min(4, cores))
