"""Importing a data file into lab.db (docs/data.md).

`read_data_file` reads and validates a whole HotpotQA file or FEVER folder without
touching lab.db; `store_data_file` stores every question in one transaction (a
malformed file stores nothing). `lab data import` and the console's Sets view both
call them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from sqlite_utils import Database

from core import store
from core.data import CLAIM_TYPE, TASK_FEVER, Question, load_hotpotqa, load_musique
from core.errors import ConfigError
from core.fever import load_fever

KINDS = ("hotpotqa", "fever", "musique")
"""What `lab data import KIND` reads: a HotpotQA JSON/JSONL file, a FEVER folder, or a
MuSiQue JSONL file (the second seed's dataset)."""


@dataclass(frozen=True)
class DataFile:
    """A validated data file, not stored yet.

    Attributes:
        kind: "hotpotqa" or "fever".
        path: the file (HotpotQA) or folder (FEVER) read.
        dataset: the dataset its questions are stored under.
        questions: every question, validated.
        include_nei: FEVER: NOT ENOUGH INFO claims were kept.
        skipped_nei: FEVER: NOT ENOUGH INFO claims skipped.
        skipped_no_text: FEVER: claims skipped for having no evidence text at all.
        skipped_unanswerable: MuSiQue: records with `answerable: false` skipped.
    """

    kind: str
    path: Path
    dataset: str
    questions: tuple[Question, ...]
    include_nei: bool = False
    skipped_nei: int = 0
    skipped_no_text: int = 0
    skipped_unanswerable: int = 0

    @property
    def noun(self) -> str:
        """"claim" for FEVER, "question" for HotpotQA."""
        return "claim" if self.kind == "fever" else "question"


def read_data_file(kind: str, path: Path | str, dataset: str | None = None,
                   include_nei: bool = False) -> DataFile:
    """Read and validate a whole data file; nothing is stored.

    Args:
        kind: "hotpotqa" (the official JSON list or the Hugging Face column format,
            JSON or JSONL), "fever" (a folder holding claims.jsonl and pages.json) or
            "musique" (the answerable dev JSONL).
        path: the file or folder (`~` is expanded).
        dataset: the dataset name to store under (default: `kind`).
        include_nei: FEVER only: keep NOT ENOUGH INFO claims.

    Returns:
        The validated questions.

    Raises:
        ConfigError: an unknown kind, a missing path, a folder for HotpotQA, or
            include_nei for HotpotQA.
        DataError: the file is malformed (naming the file, record and field).
    """
    if kind not in KINDS:
        raise ConfigError(f"unknown data kind '{kind}'; use one of: {', '.join(KINDS)}")
    path = Path(path).expanduser()
    dataset = dataset or kind
    if not str(path).strip() or not path.exists():
        raise ConfigError(f"{path}: no such file or directory")
    if kind == "fever":
        read = load_fever(path, dataset=dataset, include_nei=include_nei)
        return DataFile(kind, path, dataset, tuple(read.questions), include_nei,
                        read.skipped_nei, read.skipped_no_text)
    if include_nei:
        raise ConfigError("--include-nei applies to `lab data import fever` only")
    if path.is_dir():
        raise ConfigError(f"{path}: is a directory; {kind} imports one JSON or JSONL file")
    if kind == "musique":
        mus = load_musique(path, dataset=dataset)
        return DataFile(kind, path, dataset, mus.questions,
                        skipped_unanswerable=mus.skipped_unanswerable)
    return DataFile(kind, path, dataset, tuple(load_hotpotqa(path, dataset=dataset)))


def check_task(db: Database, dataset: str, questions: Sequence[Question]) -> None:
    """Refuse to mix FEVER claims and HotpotQA questions in one dataset.

    Raises:
        ConfigError: the dataset would hold both.
    """
    stored = {kind == CLAIM_TYPE for kind, _ in store.dataset_labels(db, dataset).values()}
    new = {q.task == TASK_FEVER for q in questions}
    if len(stored | new) > 1:
        raise ConfigError(f"dataset '{dataset}' would mix FEVER claims and HotpotQA questions; "
                          f"import into another dataset with --dataset NAME")


def already_stored(db: Database, data: DataFile) -> int:
    """How many of the file's questions its dataset holds already (read only)."""
    stored = store.dataset_labels(db, data.dataset)
    return sum(q.id in stored for q in data.questions)


def store_data_file(db: Database, data: DataFile) -> tuple[int, int]:
    """Store every question of a validated file in one transaction: all or none.

    Returns:
        (newly stored, already present).

    Raises:
        ConfigError: the dataset would mix FEVER claims and HotpotQA questions.
        StoreError: an id is stored with different content; nothing is written.
    """
    check_task(db, data.dataset, data.questions)
    return store.insert_questions(db, data.questions)
