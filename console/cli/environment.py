"""What `lab` sets in its own environment before numpy is imported, and the environment
as it was given, for the servers `lab serve` starts.

Both settings are read once, when numpy (and the BLAS library it loads) is imported, so
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
"""

from __future__ import annotations

import os
from collections.abc import MutableMapping

DEFAULTS = {"NUMPY_MADVISE_HUGEPAGE": "0", "OPENBLAS_NUM_THREADS": "1"}
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
