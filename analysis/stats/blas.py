"""One BLAS thread for analysis: its matrix products are many and small.

A study's tables run thousands of products of a resample-weight batch (250 × ~300)
with per-question counts. OpenBLAS splits each over every core; on two busy cores that
made each product ~9 times slower than one thread (1.1 ms vs 10 ms for 250 × 300 ×
192 here). Each element of a product is computed by one thread either way, so the
numbers do not change, only the time.
"""

from __future__ import annotations

import functools
import os

from threadpoolctl import threadpool_info, threadpool_limits


@functools.lru_cache(maxsize=1)
def single_thread() -> int:
    """Set every BLAS library this process has loaded to one thread (once per process).

    Uses threadpoolctl, which finds OpenBLAS, MKL or BLIS wherever numpy loaded it; the
    limit stays for the life of the process.

    Returns:
        How many BLAS libraries were set (0 when none is loaded; then nothing changes).
    """
    found = [info for info in threadpool_info() if info.get("user_api") == "blas"]
    if found:
        threadpool_limits(limits=1, user_api="blas")
    return len(found)


def worker_threads() -> int:
    """Threads for analysis work that runs in numpy or SQLite with the GIL released:
    one per CPU core this process may use, at most 4 (each runs single-threaded BLAS,
    so a product's numbers do not depend on the count)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    return max(1, min(4, cores))
