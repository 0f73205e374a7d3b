"""Question sets made from a released list of ids (`lab sets import`).

A list is a JSON list of ids, a text file with one id per line, or a JSON object with
``question_ids`` (the main paper's manifests also carry ``version``, ``seed_tag``,
``dataset_sha256`` and ``excluded``, recorded with the set). `read_id_list` reads and
checks the file alone; `import_set` checks every id against the dataset and stores the
set in one transaction (nothing is stored when an id is missing), then links the
imported runs whose split has the set's name to it.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlite_utils import Database

from core import json_text, store
from core.data import ids_hash
from core.errors import ConfigError, DataError, StoreError
from core.question_sets import HELD_OUT_PREFIXES, SetDraft, check_set_name
from core.store.imports import link_set

MANIFEST_FIELDS = ("version", "seed_tag", "dataset_sha256", "excluded")
"""The manifest's fields recorded with the set (besides the file's name and sha256)."""
_VERSION_SUFFIX = re.compile(r"_v\d+(\.\d+)*$")
_SHOWN = 3
"""Missing ids named in the error line."""


@dataclass(frozen=True)
class IdList:
    """A read list of question ids.

    Attributes:
        path: the file.
        ids: the ids, in file order.
        manifest: the file's name and sha256, and the manifest fields it had.
    """

    path: Path
    ids: tuple[str, ...]
    manifest: dict[str, Any]


def default_name(path: Path) -> str:
    """The set name a file gives: its stem without a version suffix
    (``test300_v1.json`` → ``test300``)."""
    stem = path.name.split(".", 1)[0]
    return _VERSION_SUFFIX.sub("", stem) or stem


def _parse(path: Path, text: str) -> tuple[list[Any], dict[str, Any]]:
    stripped = text.lstrip()
    if not stripped.startswith(("[", "{")):
        return [line.strip() for line in text.splitlines() if line.strip()], {}
    try:
        data = json_text.loads(text)
    except json.JSONDecodeError as exc:
        raise DataError(f"{path}: invalid JSON at line {exc.lineno} column {exc.colno}: "
                        f"{exc.msg}") from None
    if isinstance(data, list):
        return data, {}
    if "question_ids" not in data:
        raise DataError(f"{path}: a JSON object needs question_ids (a list of ids)")
    ids = data["question_ids"]
    if not isinstance(ids, list):
        raise DataError(f"{path}: question_ids must be a list of ids, got "
                        f"{type(ids).__name__}")
    return ids, {k: data[k] for k in MANIFEST_FIELDS if k in data}


def read_id_list(path: Path | str) -> IdList:
    """Read and check a list of ids; nothing is stored.

    Raises:
        ConfigError: no such file.
        DataError: not a list of non-empty string ids, an id twice, or no id.
    """
    path = Path(path).expanduser()
    if not path.is_file():
        raise ConfigError(f"{path}: no such file")
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DataError(f"{path}: not UTF-8 text: {exc}") from None
    ids, fields = _parse(path, text)
    seen: dict[str, int] = {}
    for i, qid in enumerate(ids):
        if not isinstance(qid, str) or not qid.strip():
            raise DataError(f"{path}: id {i + 1} is {qid!r}; ids are non-empty strings")
        if qid in seen:
            raise DataError(f"{path}: id {qid} is listed twice (entries {seen[qid] + 1} and "
                            f"{i + 1})")
        seen[qid] = i
    if not ids:
        raise DataError(f"{path}: no question ids")
    manifest = {"file": path.name, "sha256": hashlib.sha256(raw).hexdigest(), **fields}
    return IdList(path, tuple(ids), manifest)


def import_set(db: Database, path: Path | str, dataset: str, name: str | None = None,
               held_out: bool | None = None) -> tuple[SetDraft, int]:
    """Make a question set from a list of ids, every one in the dataset.

    Args:
        db: an open lab.db.
        path: the list (JSON list, one id per line, or a manifest).
        dataset: the dataset the ids must all be in.
        name: the set's name (default: the file's, without a version suffix).
        held_out: held-out or dev; None: held-out when the name starts with test or fresh.

    Returns:
        (the stored set, cells of imported runs linked to it).

    Raises:
        ConfigError: a bad name or an unknown dataset.
        DataError: the file is malformed, or ids are not in the dataset (one line: how
            many, and the first few); nothing is stored.
        StoreError: a set of that name exists.
    """
    read = read_id_list(path)
    name = check_set_name(name or default_name(read.path))
    if name in {s["name"] for s in store.question_sets(db)}:
        raise StoreError(f"question set '{name}' already exists; sets are frozen once "
                         f"made (give another --name)")
    known = store.dataset_labels(db, dataset)
    if not known:
        raise ConfigError(f"dataset '{dataset}' has no questions in lab.db; import it first "
                          f"(lab data import); known: " + (", ".join(store.datasets(db))
                                                         or "none"))
    missing = [q for q in read.ids if q not in known]
    if missing:
        shown = ", ".join(missing[:_SHOWN]) + (" …" if len(missing) > _SHOWN else "")
        raise DataError(f"{read.path}: {len(missing)} of {len(read.ids)} ids are not in "
                        f"dataset '{dataset}': {shown}")
    draft = SetDraft(name=name, dataset=dataset, ids=read.ids, seed=0, exclude=(),
                     held_out=name.startswith(HELD_OUT_PREFIXES) if held_out is None
                     else held_out, sha256=ids_hash(read.ids), labels=(),
                     available=len(known), excluded=0)
    with store.write(db):
        store.save_question_set(db, draft.name, draft.dataset, draft.ids, draft.seed,
                                draft.exclude, draft.held_out, draft.sha256, read.manifest)
        linked = link_set(db, name, draft.ids)
    return draft, linked
