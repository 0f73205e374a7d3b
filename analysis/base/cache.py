"""Results cache: a table already computed for the same data and spec is read, not recomputed.

Where: a folder beside lab.db, ``<lab.db>.results/``, one pickle per (table, spec,
selection, data state). Readers write it, so it lives outside lab.db: computing a
table never takes lab.db's write lock, and workers are never blocked by a reader.
Files are written to a temporary name and renamed, so a reader never sees half of
one; the folder keeps the newest `KEEP` files.

Key: the project version, the schema version, a hash of the analysis code, the
selection (filters and pooling), the table name, its parameters (resamples, seed,
λ, reference) and the selection's `core.store.frames.Fingerprint`: its episode
count and largest episode id (a new episode changes them only for the selections
it falls in) and lab.db's change counter (any update or delete). So the console
and repeated CLI calls never recompute unchanged numbers, and a stored episode
invalidates exactly the selections that contain it. Delete the folder at any time
to drop the cache.

The hazard table's LPM fits are also kept by the content of each group's sample
(`shared_key`, `analysis.measures.hazard.sample_key`), for any selection and data state: new
episodes refit only the groups whose samples they change.
"""

from __future__ import annotations

import functools
import hashlib
import json
import pickle
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from analysis.base.source import FrameSource
from core.atomic_write import atomic_path

KEEP = 256
"""Cache files kept per lab.db (the oldest are removed beyond this)."""
SUFFIX = ".results"
REFERENCE = "none"
"""The arm the paired table compares every other arm with by default (the unaided one).
Part of an episode table's key (`ResultsCache.table_key`), so it is defined here, where
`lab results` reads it before pandas is imported."""


def hazard_resamples(resamples: int) -> int:
    """The resamples the hazard model takes when the tables take `resamples`: at most
    1,000 (part of an episode table's key too, so defined beside `REFERENCE`)."""
    return min(resamples, 1000)


@functools.lru_cache(maxsize=1)
def code_hash() -> str:
    """sha256 of the analysis code and the decision and regime definitions (a change drops
    the cache: e.g. the regimes Δ pools).

    Cached for the process: the files do not change under a running program.
    """
    root = Path(__file__).resolve().parents[1]  # analysis/
    files = sorted(root.rglob("*.py")) + [root.parent / "core" / name
                                          for name in ("decisions.py", "regimes.py")]
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.relative_to(root.parent).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


class ResultsCache:
    """The cache folder of one lab.db.

    Args:
        db_path: the lab.db file.
    """

    def __init__(self, db_path: str | Path) -> None:
        self.directory = Path(f"{db_path}{SUFFIX}")

    def key(self, source: FrameSource, name: str, spec: dict[str, Any]) -> str:
        """The file stem of one table computed on one selection's data with one spec."""
        from core.schema import SCHEMA_VERSION
        from core.version import project_version

        payload = {"version": project_version(), "schema": SCHEMA_VERSION, "code": code_hash(),
                   "selection": asdict(source.selection),
                   "state": asdict(source.fingerprint), "table": name, "spec": spec}
        text = json.dumps(payload, sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()

    def table_key(self, source: FrameSource, name: str, options: Sequence[str], n_boot: int,
                  hazard_boot: int, seed: int, lam: float, reference: str,
                  delta_regimes: str) -> str:
        """The key of episode table `name` (`key` with the tables' spec): what
        `analysis.tables.compute.compute` looks up, and `lab results` asks for before the
        tables' code is imported.

        Args:
            source: the selection's source.
            name: an episode table.
            options: the `ResultsSpec` options the table reads besides the rest
                (`analysis.tables.registry.TableDef.options`).
            n_boot, hazard_boot, seed, lam, reference, delta_regimes: the spec.
        """
        spec: dict[str, Any] = {"n_boot": n_boot, "hazard_boot": hazard_boot, "seed": seed,
                                "lam": lam, "reference": reference}
        chosen = {"delta_regimes": delta_regimes}
        return self.key(source, name, {**spec, **{o: chosen[o] for o in options}})

    def has(self, key: str) -> bool:
        """Whether a value is kept under `key` (it may still turn out unreadable)."""
        return (self.directory / f"{key}.pkl").exists()

    def shared_key(self, name: str, spec: dict[str, Any]) -> str:
        """The file stem of values that hold for any selection and data state (the
        hazard table's LPM fits by sample content): the version, schema, code hash,
        `name` and `spec` only.

        Args:
            name: what is stored.
            spec: the parameters the values depend on.

        Returns:
            The key.
        """
        from core.schema import SCHEMA_VERSION
        from core.version import project_version

        payload = {"version": project_version(), "schema": SCHEMA_VERSION, "code": code_hash(),
                   "shared": name, "spec": spec}
        return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()

    def get(self, key: str) -> Any | None:
        """The cached value, or None when absent or unreadable (then it is recomputed)."""
        path = self.directory / f"{key}.pkl"
        try:
            with path.open("rb") as fh:
                return pickle.load(fh)
        except FileNotFoundError:
            return None
        except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError):
            # a file from an older lab or a damaged one: recompute and overwrite it
            return None

    def put(self, key: str, value: Any) -> None:
        """Store a value (atomically); an unwritable folder only means no caching."""
        try:
            self.directory.mkdir(exist_ok=True)
            with atomic_path(self.directory / f"{key}.pkl") as tmp, tmp.open("wb") as fh:
                pickle.dump(value, fh, protocol=pickle.HIGHEST_PROTOCOL)
            self._trim()
        except OSError:
            return  # read-only place or full disk: the numbers are still returned, uncached

    def _trim(self) -> None:
        files = sorted(self.directory.glob("*.pkl"), key=lambda p: p.stat().st_mtime)
        for path in files[:-KEEP]:
            path.unlink(missing_ok=True)
