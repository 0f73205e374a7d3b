"""Question sets (docs/data.md): named, frozen, hashed samples of a dataset.

`draw_set` checks a request and draws the ids (it only reads lab.db); `save_set`
stores the draw in one transaction. `lab sets create` and the console's Sets view
both call them, so a set made either way holds the same ids under the same hash.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from sqlite_utils import Database

from core import store
from core.data import CLAIM_TYPE, TASK_FEVER, TASK_HOTPOTQA, ids_hash, sample_ids
from core.errors import ConfigError, StoreError
from core.fever import balanced_sample
from core.limits import INT64_MAX

HELD_OUT_PREFIXES = ("test", "fresh")
"""A set whose name starts with one of these is held-out unless said otherwise."""


@dataclass(frozen=True)
class SetDraft:
    """A drawn question set, not stored yet.

    Attributes:
        name: the set's name.
        dataset: the dataset drawn from.
        ids: the drawn question ids, in order.
        seed: the sampling seed.
        exclude: the sets whose questions could not be drawn.
        held_out: whether the set is held-out (pre-registered runs only).
        sha256: `ids_hash(ids)`.
        labels: (label, count) of the drawn FEVER claims; empty for HotpotQA.
        available: questions in the dataset.
        excluded: questions of the dataset ruled out by `exclude`.
    """

    name: str
    dataset: str
    ids: tuple[str, ...]
    seed: int
    exclude: tuple[str, ...]
    held_out: bool
    sha256: str
    labels: tuple[tuple[str, int], ...]
    available: int
    excluded: int

    @property
    def kind(self) -> str:
        """"held-out" or "dev"."""
        return "held-out" if self.held_out else "dev"

    def balance(self) -> str:
        """` (5 REFUTES, 5 SUPPORTS)` for a balanced FEVER set, "" otherwise."""
        if not self.labels:
            return ""
        return " (" + ", ".join(f"{n} {label}" for label, n in self.labels) + ")"


@dataclass(frozen=True)
class DatasetInfo:
    """One dataset in lab.db, for choosing what to draw a set from.

    Attributes:
        name: the dataset name.
        task: "hotpotqa" or "fever".
        questions: questions (or claims) stored.
        sets: question sets drawn from it.
        unused: its questions in no set yet (what a set excluding every other can draw).
    """

    name: str
    task: str
    questions: int
    sets: int
    unused: int


def overview(db: Database) -> tuple[list[DatasetInfo], list[dict[str, Any]]]:
    """Every dataset and every question set (without id lists), for listing.

    Args:
        db: an open lab.db (only read).

    Returns:
        (datasets by name, sets by name as `store.question_sets` gives them).
    """
    sets = store.question_sets(db)
    used: dict[str, set[str]] = {}
    for s in sets:
        used.setdefault(s["dataset"], set()).update(store.question_set(db, s["name"])["ids"])
    infos = []
    for name, count in store.datasets(db).items():
        rows = store.dataset_labels(db, name)
        task = TASK_FEVER if any(kind == CLAIM_TYPE for kind, _ in rows.values()) \
            else TASK_HOTPOTQA
        infos.append(DatasetInfo(name, task, count, sum(s["dataset"] == name for s in sets),
                                 len(rows.keys() - used.get(name, set()))))
    return infos, sets


def check_set_name(name: str) -> str:
    """The name, if it can name a set (no spaces, '/', '\\' or ',').

    Raises:
        ConfigError: an empty or unusable name, with an example.
    """
    if not name.strip() or any(c.isspace() or c in "/\\," for c in name):
        raise ConfigError(f"set name {name!r}: use a non-empty name without spaces, '/', '\\' "
                          f"or ',', e.g. dev100")
    return name


def split_names(values: Iterable[str]) -> tuple[str, ...]:
    """Set names given repeatedly or comma-separated, de-duplicated in order."""
    return tuple(dict.fromkeys(p.strip() for v in values for p in v.split(",") if p.strip()))


def draw_set(db: Database, name: str, dataset: str, n: int, seed: int,
             exclude: Iterable[str] = (), held_out: bool | None = None) -> SetDraft:
    """Draw `n` questions of `dataset` without replacement, disjoint from `exclude`.

    From a FEVER dataset the set is balanced: the same number of claims per label,
    each label drawn with the seed from its own claims, then shuffled with the seed.

    Args:
        db: an open lab.db (only read).
        name: the new set's name (not stored yet).
        dataset: the dataset to draw from.
        n: how many questions (>= 1).
        seed: the sampling seed (a 64-bit integer).
        exclude: sets whose questions must not be drawn (names, or comma-separated).
        held_out: held-out or dev; None: held-out when the name starts with
            test or fresh.

    Returns:
        The draw.

    Raises:
        ConfigError: a bad name, n or seed, or a dataset with no questions.
        StoreError: a set of that name exists, or an excluded set does not.
        DataError: too few questions left, or n does not divide among FEVER labels.
    """
    check_set_name(name)
    if not 1 <= n <= INT64_MAX:
        raise ConfigError(f"n must be a whole number from 1, got {n}")
    if not -INT64_MAX - 1 <= seed <= INT64_MAX:
        raise ConfigError(f"seed must fit in 64 bits (at most {INT64_MAX:,}), got {seed}")
    names = {s["name"] for s in store.question_sets(db)}
    if name in names:
        raise StoreError(f"question set '{name}' already exists; sets are frozen once made")
    exclude = split_names(exclude)
    rows = store.dataset_labels(db, dataset)
    if not rows:
        raise ConfigError(f"dataset '{dataset}' has no questions in lab.db; known: "
                          + (", ".join(store.datasets(db)) or "none"))
    excluded: set[str] = set()
    for other in exclude:
        excluded.update(store.question_set(db, other)["ids"])
    claims = {qid: label for qid, (kind, label) in rows.items() if kind == CLAIM_TYPE}
    if claims:  # FEVER: the same number of claims per label
        ids = balanced_sample(claims, n, seed, excluded)
    else:
        ids = sample_ids(list(rows), n, seed, excluded)
    labels = tuple((label, sum(claims[i] == label for i in ids))
                   for label in sorted(set(claims.values())))
    return SetDraft(name=name, dataset=dataset, ids=tuple(ids), seed=seed, exclude=exclude,
                    held_out=name.startswith(HELD_OUT_PREFIXES) if held_out is None
                    else held_out, sha256=ids_hash(ids), labels=labels,
                    available=len(rows), excluded=len(excluded & rows.keys()))


def save_set(db: Database, draft: SetDraft) -> None:
    """Store a drawn set (one transaction; sets are never changed afterwards).

    Raises:
        StoreError: a set of that name exists by now.
    """
    store.save_question_set(db, draft.name, draft.dataset, draft.ids, draft.seed,
                            draft.exclude, draft.held_out, draft.sha256)
