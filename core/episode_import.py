"""Importing released episode files into a run (`lab data import episodes`).

`read_episode_import` validates every file and checks them against lab.db (the run,
the questions' dataset, the question set the split names) without writing anything;
`store_episode_import` then stores the whole import in one transaction. A malformed
file, or one that does not fit lab.db, stores nothing.

Each (model, condition, regime, split) becomes one cell of the run, with the arm's
default spec (so its hash is the arm's), the regime, budget 8 (the main paper's),
seed 0 and, when a question set of the split's name exists, that set.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlite_utils import Database

from core import store
from core.canonical import canonical_json
from core.conditions import Condition
from core.episode import utc_now
from core.errors import ConfigError, DataError, StoreError
from core.regimes import parse_regime
from core.released_episodes import (
    DEFAULT_BUDGET,
    IMPORTED_SOURCE,
    LICENSE,
    ReleasedEpisode,
    ReleasedFile,
    episode_result,
    read_released,
)
from core.store.imports import ImportedFile, check_import_run, question_datasets, store_import

_Key = tuple[str, str, str, str]
"""(model, condition, regime, split): one imported cell."""


@dataclass(frozen=True)
class EpisodeImport:
    """An import checked against lab.db, not stored yet.

    Attributes:
        run: the run to store into.
        dataset: the dataset its questions belong to.
        budget: the action budget the episodes ran under.
        files: the validated files.
        sets: {split: the question set of that name} for the splits that have one.
        unknown: question ids no dataset holds yet (kept by id under `dataset`).
    """

    run: str
    dataset: str
    budget: int
    files: tuple[ReleasedFile, ...]
    sets: dict[str, str]
    unknown: tuple[str, ...]

    @property
    def episodes(self) -> int:
        """Records over all files."""
        return sum(len(f.episodes) for f in self.files)

    def cells(self) -> dict[_Key, list[ReleasedEpisode]]:
        """The episodes of each cell, in file order."""
        out: dict[_Key, list[ReleasedEpisode]] = {}
        for f in self.files:
            for e in f.episodes:
                out.setdefault((*e.cell, e.split), []).append(e)
        return out


def read_episode_import(db: Database, paths: Sequence[Path | str], model: str | None = None,
                        condition: str | None = None, run: str | None = None,
                        dataset: str = "hotpotqa",
                        budget: int = DEFAULT_BUDGET) -> EpisodeImport:
    """Validate released files and check them against lab.db; nothing is stored.

    Args:
        db: an open lab.db (only read).
        paths: the released files (.jsonl or .jsonl.gz).
        model: fills ``model`` where a file lacks it.
        condition: fills ``condition`` where a file lacks it.
        run: the run to import into (default: the records' split).
        dataset: the dataset the question ids belong to.
        budget: the action budget the episodes ran under.

    Returns:
        The checked import.

    Raises:
        ConfigError: no file, a missing file, no run name to be had, or the run holds
            episodes run here.
        DataError: a malformed record (file, line and field), an episode given twice,
            a question stored under another dataset, or one outside the question set
            its split names.
    """
    if not paths:
        raise ConfigError("give at least one released episode file")
    files = tuple(read_released(p, model, condition, budget) for p in paths)
    seen: dict[tuple[str, ...], str] = {}
    for f in files:
        for e in f.episodes:
            key = (*e.cell, e.split, e.question_id)
            where = f"{f.path}: line {e.line}"
            if key in seen:
                raise DataError(f"{where}: question_id: {e.question_id} in {e.model} "
                                f"{e.condition} {e.regime} again (first at {seen[key]})")
            seen[key] = where
    splits = tuple(dict.fromkeys(s for f in files for s in f.splits))
    if run is None:
        if len(splits) != 1 or not splits[0]:
            named = [s for s in splits if s]
            said = ("name no split" if not named else
                    f"name {len(named)} splits ({', '.join(named)})" if len(named) > 1 else
                    f"name the split {named[0]} and some records none")
            raise ConfigError(f"the records {said}; give the run to import into with "
                              f"--run NAME")
        run = splits[0]
    if not run.strip() or not run.isprintable():
        raise ConfigError(f"run name {run!r}: give a printable, non-empty name, e.g. --run "
                          f"test300")
    try:
        check_import_run(db, run)
    except StoreError as exc:
        raise ConfigError(str(exc)) from None
    known = question_datasets(db)
    sets = {s["name"]: s for s in store.question_sets(db) if s["name"] in splits}
    members = {name: set(store.question_set(db, name)["ids"]) for name in sets}
    unknown: dict[str, None] = {}
    for f in files:
        for e in f.episodes:
            where = f"{f.path}: line {e.line}: question_id"
            held = known.get(e.question_id)
            if held is None:
                unknown[e.question_id] = None
            elif held != dataset:
                raise DataError(f"{where}: {e.question_id} is in dataset '{held}', not "
                                f"'{dataset}'; give --dataset {held}")
            if e.split in sets:
                if sets[e.split]["dataset"] != dataset:
                    raise DataError(f"{where}: question set '{e.split}' is of dataset "
                                    f"'{sets[e.split]['dataset']}', not '{dataset}'")
                if e.question_id not in members[e.split]:
                    raise DataError(f"{where}: {e.question_id} is not in question set "
                                    f"'{e.split}' (its split)")
    return EpisodeImport(run=run, dataset=dataset, budget=budget, files=files,
                         sets={name: name for name in sets}, unknown=tuple(unknown))


def cell_columns(key: _Key, budget: int, question_set: str | None) -> dict[str, Any]:
    """The `cells` row of an imported cell (no run id).

    The model's spec is its name and the backend ``imported``; the condition is the
    arm with lab's default knobs (the main paper's), so its hash is the arm's.
    """
    model, arm, regime_name, split = key
    condition = Condition(arm)
    regime = parse_regime(regime_name)
    model_spec = {"name": model, "backend": IMPORTED_SOURCE}
    spec = {"model": model_spec, "condition": condition.spec(), "regime": regime.name,
            "question_set": split or None, "budget": budget, "seed": 0, "replicate": 0,
            "imported": True}
    return {"model": model, "model_spec": canonical_json(model_spec), "condition": arm,
            "condition_spec": condition.to_json(), "condition_hash": condition.spec_hash(),
            "regime": regime.name, "regime_hash": regime.spec_hash(),
            "question_set": question_set, "budget": budget, "seed": 0, "replicate": 0,
            "spec_hash": store.cell_hash(spec), "prompt_pack": None}


def store_episode_import(db: Database, plan: EpisodeImport) -> int:
    """Store a checked import in one transaction (all or nothing).

    Returns:
        Episodes stored.

    Raises:
        StoreError: an episode of the import is stored in the run already.
    """
    now = utc_now()
    cells = [(cell_columns(key, plan.budget, plan.sets.get(key[3])),
              [episode_result(e, plan.budget, now) for e in episodes])
             for key, episodes in plan.cells().items()]
    files = [ImportedFile(f.path.name, f.sha256, len(f.episodes), LICENSE,
                          ",".join(s for s in f.splits if s)) for f in plan.files]
    return store_import(db, plan.run, cells, files, {q: plan.dataset for q in plan.unknown})
