"""Reference sets: published values imported under a name (`lab data import paper-values`),
which `lab results replication` sets beside lab's own numbers.

A set records the source file's name and sha256, the data's license line, and the
dataset and action budget its values were computed on; each value is one split ×
model × arm with Δ, its interval and mean6 (None where the file gave none).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlite_utils import Database

from core.episode import utc_now
from core.errors import StoreError
from core.store.base import write


@dataclass(frozen=True)
class ReferenceSet:
    """One imported reference set (a `reference_sets` row and how many values it holds).

    Attributes:
        name: its name in lab (what ``--against`` names).
        file: the source file's name (no folder).
        sha256: of the file's bytes.
        license: the data's license line.
        dataset: the dataset its values were computed on.
        budget: the action budget they ran under.
        imported_at: when (ISO UTC).
        values: cells it holds.
        splits: the splits they name, comma-separated.
    """

    name: str
    file: str
    sha256: str
    license: str
    dataset: str
    budget: int
    imported_at: str
    values: int
    splits: str


@dataclass(frozen=True)
class ReferenceValue:
    """One published cell of a reference set.

    Attributes:
        split: the split (the run it is compared with).
        model: the model.
        arm: lab's arm.
        source_key: the key as the file wrote it.
        delta: Δ.
        ci_low: its interval's lower bound.
        ci_high: its upper bound.
        mean6: six-regime success, None where the file gave none.
    """

    split: str
    model: str
    arm: str
    source_key: str
    delta: float
    ci_low: float
    ci_high: float
    mean6: float | None


_SETS_SQL = (
    "SELECT s.name, s.file, s.sha256, s.license, s.dataset, s.budget, s.imported_at, "
    "(SELECT count(*) FROM reference_values v WHERE v.set_id = s.id), "
    "COALESCE((SELECT group_concat(split, ',') FROM (SELECT DISTINCT split FROM "
    "reference_values v WHERE v.set_id = s.id ORDER BY split)), '') "
    "FROM reference_sets s")


def reference_sets(db: Database) -> list[ReferenceSet]:
    """Every reference set, in import order (the first is the default reference)."""
    return [ReferenceSet(*row) for row in db.conn.execute(_SETS_SQL + " ORDER BY s.id")]


def reference_set(db: Database, name: str) -> ReferenceSet | None:
    """The reference set called `name`, or None."""
    row = db.conn.execute(_SETS_SQL + " WHERE s.name = ?", (name,)).fetchone()
    return None if row is None else ReferenceSet(*row)


def reference_values(db: Database, name: str) -> list[ReferenceValue]:
    """The values of reference set `name`, by split, model and arm (empty if no such set)."""
    return [ReferenceValue(*row) for row in db.conn.execute(
        "SELECT v.split, v.model, v.arm, v.source_key, v.delta, v.ci_low, v.ci_high, v.mean6 "
        "FROM reference_values v JOIN reference_sets s ON s.id = v.set_id WHERE s.name = ? "
        "ORDER BY v.split, v.model, v.arm", (name,))]


def store_reference_set(db: Database, reference: ReferenceSet,
                        values: Sequence[ReferenceValue], replace: bool = False) -> None:
    """Store a reference set and its values in one transaction (all or nothing).

    Args:
        db: an open lab.db.
        reference: the set (its `imported_at`, `values` and `splits` are ignored).
        values: its cells.
        replace: replace a set of the same name (else one is refused).

    Raises:
        StoreError: a set of that name exists and `replace` is False (nothing written).
    """
    with write(db):
        old = db.conn.execute("SELECT id, file, sha256 FROM reference_sets WHERE name = ?",
                              (reference.name,)).fetchone()
        if old is not None:
            if not replace:
                raise StoreError(f"reference set '{reference.name}' exists (from {old[1]}, "
                                 f"sha256 {old[2][:12]}); give --replace to replace it, or "
                                 f"--name to import under another name")
            db.conn.execute("DELETE FROM reference_values WHERE set_id = ?", (old[0],))
            db.conn.execute("DELETE FROM reference_sets WHERE id = ?", (old[0],))
        cursor = db.conn.execute(
            "INSERT INTO reference_sets (name, file, sha256, license, dataset, budget, "
            "imported_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (reference.name, reference.file, reference.sha256, reference.license,
             reference.dataset, reference.budget, utc_now()))
        db.conn.executemany(
            "INSERT INTO reference_values (set_id, split, model, arm, source_key, delta, "
            "ci_low, ci_high, mean6) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [(cursor.lastrowid, v.split, v.model, v.arm, v.source_key, v.delta, v.ci_low,
              v.ci_high, v.mean6) for v in values])
