"""What `lab` sets in its own environment before numpy is imported, and the environment
as it was given, for the servers `lab serve` starts.

The settings are read once, when numpy (and the BLAS library it loads) is imported, so
they must be in the environment before that; a value the environment already holds is
kept (docs/performance.md: "Toward a second per table" for the pages, "OpenBLAS's idle
threads" for the threads):

- ``NUMPY_MADVISE_HUGEPAGE=0``: numpy asks Linux for huge pages for every array of 4 MB
  or more; where the kernel compacts memory to find them on the spot (transparent huge
  pages' ``defrag`` set to ``madvise``, a common default), each such array costs system
  time when first written. A `lab results` table at 198,000 episodes allocates hundreds
  of them: 0.7 s of system time, 0.45 s with ordinary pages, the same memory and numbers.
- ``OPENBLAS_NUM_THREADS=1``: OpenBLAS starts a thread per further core when it is
  loaded, and those threads spin for a while: about 0.1 s of a second core's time in
  each `lab` process that imports numpy, on the core that `lab results` reads lab.db
  with meanwhile. Analysis runs BLAS on one thread anyway (`analysis.stats.blas`), so
  no number changes.
- ``OPENBLAS_CORETYPE=Haswell`` on an x86-64 CPU with AVX2 and FMA: OpenBLAS picks its
  kernels by the CPU it finds, and its AVX-512 kernels (SkylakeX, Cooperlake) sum in
  another order than its AVX2 ones (Haswell, Zen), so the hazard model's coefficients
  and some Δ estimates differed in their last digits between an AVX-512 machine and any
  other (at 198,000 sim episodes 368 of 1,320 hazard rows, 26 of 550 Δ rows). One kernel on
  every such CPU makes a lab.db's tables byte-identical wherever they are computed
  (`tests/test_results_golden.py`); the products are small, so the speed is the same.
  A CPU without AVX2 and another architecture keep OpenBLAS's own choice.
"""

from __future__ import annotations

import os
import platform
from collections.abc import MutableMapping
from pathlib import Path

BLAS_KERNEL = "Haswell"
"""The OpenBLAS kernels lab's numbers are computed with on x86-64 (AVX2 and FMA)."""


def _cpu_flags(cpuinfo: Path = Path("/proc/cpuinfo")) -> frozenset[str]:
    """The first processor's feature flags (Linux); empty where they cannot be read."""
    try:
        with cpuinfo.open(encoding="ascii", errors="replace") as lines:
            for line in lines:
                if line.startswith("flags"):
                    return frozenset(line.partition(":")[2].split())
    except OSError:
        pass
    return frozenset()


def blas_kernel(machine: str | None = None, flags: frozenset[str] | None = None
                ) -> str | None:
    """`BLAS_KERNEL` where the CPU runs it (x86-64 with AVX2 and FMA), else None."""
    machine = platform.machine() if machine is None else machine
    if machine.lower() not in ("x86_64", "amd64"):
        return None
    flags = _cpu_flags() if flags is None else flags
    return BLAS_KERNEL if {"avx2", "fma"} <= flags else None


_KERNEL = blas_kernel()
DEFAULTS = {"NUMPY_MADVISE_HUGEPAGE": "0", "OPENBLAS_NUM_THREADS": "1",
            **({"OPENBLAS_CORETYPE": _KERNEL} if _KERNEL else {})}
"""Variable -> the value `lab` gives it when the environment holds none."""

_SET_HERE: set[str] = set()
"""The DEFAULTS this process put into os.environ itself."""


def set_defaults(environ: MutableMapping[str, str] = os.environ) -> None:
    """Give each of DEFAULTS its value in `environ` unless it already holds one."""
    for name, value in DEFAULTS.items():
        if name not in environ:
            environ[name] = value
            if environ is os.environ:
                _SET_HERE.add(name)


def as_given() -> dict[str, str]:
    """This process's environment without the defaults `set_defaults` put into it: what
    a program lab starts for the user (a vLLM server) gets, as if started by hand."""
    return {k: v for k, v in os.environ.items()
            if not (k in _SET_HERE and v == DEFAULTS[k])}
