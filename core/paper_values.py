"""Published values in the format the main paper's authors released, read and validated.

The file (``data/episodes/paper_values.json`` of the authors' release) is one JSON
object whose keys are ``SPLIT/MODEL__CONDITION`` (``test300/qwen3-8b__enforced_rule``)
and whose values hold the published time-matched contrast of that cell: ``delta``, its
95% interval ``ci_low`` and ``ci_high``, and ``mean6`` (the six-regime success; null
or absent where the file gives none). Model and condition names are read as
`lab data import episodes` reads them (`core.released_episodes.arm_of`: ``unaided`` is
lab's ``none``); the split is the name of the run the values are compared with.

`read_paper_values` validates the whole file and never touches lab.db: a malformed
file is one error line naming the key and the field.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlite_utils import Database

from core import json_text
from core.errors import ConfigError, DataError
from core.released_episodes import CONDITIONS, arm_of
from core.store.references import ReferenceSet, ReferenceValue, store_reference_set

LICENSE = "CC BY 4.0 (the main paper's released values)"
"""The license line recorded with an imported file of published values."""
DEFAULT_NAME = "paper"
"""The name a reference set takes when none is given."""
FIELDS = ("delta", "ci_low", "ci_high", "mean6")
"""The fields of one published cell (mean6 may be null or absent)."""
_REQUIRED = ("delta", "ci_low", "ci_high")
_RANGE = {"delta": (-1.0, 1.0), "ci_low": (-1.0, 1.0), "ci_high": (-1.0, 1.0),
          "mean6": (0.0, 1.0)}
"""Where each value must lie: Δ is a difference of two shares, mean6 a share."""


@dataclass(frozen=True)
class PaperValue:
    """One published cell.

    Attributes:
        key: the key as the file wrote it.
        split: the split (the run it is compared with).
        model: the model's name.
        arm: lab's arm for the condition.
        delta: the published Δ.
        ci_low: its 95% interval's lower bound.
        ci_high: its upper bound.
        mean6: the published six-regime success, None where the file gives none.
    """

    key: str
    split: str
    model: str
    arm: str
    delta: float
    ci_low: float
    ci_high: float
    mean6: float | None


@dataclass(frozen=True)
class PaperValues:
    """A whole file of published values, validated, nothing stored.

    Attributes:
        path: the file read.
        sha256: of its bytes.
        values: every cell, in file order.
    """

    path: Path
    sha256: str
    values: tuple[PaperValue, ...]

    @property
    def splits(self) -> tuple[str, ...]:
        """The splits its cells name, in order of appearance."""
        return tuple(dict.fromkeys(v.split for v in self.values))


def check_reference_name(name: str) -> str:
    """The name, if it can name a reference set (``--against NAME[/SPLIT]``, and
    ``run:OTHER`` names a run instead).

    Raises:
        ConfigError: an empty name, or one with a space, '/', ':', '\\' or ','.
    """
    if not name.strip() or any(c.isspace() or c in "/:\\," or not c.isprintable()
                               for c in name):
        raise ConfigError(f"reference name {name!r}: use a non-empty name without spaces, "
                          f"'/', ':', '\\' or ',', e.g. --name paper")
    return name


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise DataError(f"{key}: given twice in the file")
        out[key] = value
    return out


def _number(path: Path, key: str, field: str, value: Any) -> float:
    where = f"{path}: {key}: {field}"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise DataError(f"{where}: must be a number, got {value!r}")
    number = float(value)
    lo, hi = _RANGE[field]
    if not math.isfinite(number) or not lo <= number <= hi:
        raise DataError(f"{where}: {value!r} is outside [{lo:g}, {hi:g}]")
    return number


def _cell(path: Path, key: Any, record: Any) -> PaperValue:
    split, slash, cell = key.partition("/")
    model, sep, condition = cell.rpartition("__")
    if not slash or not sep or "/" in cell or not split.strip() or not model.strip() \
            or not split.isprintable() or not model.isprintable():
        raise DataError(f"{path}: {key!r}: key: must read SPLIT/MODEL__CONDITION, e.g. "
                        f"test300/qwen3-8b__enforced_rule")
    arm = arm_of(condition)
    if arm is None:
        raise DataError(f"{path}: {key}: condition: {condition!r} is no released condition "
                        f"({', '.join(CONDITIONS)}) nor lab arm")
    if not isinstance(record, dict):
        raise DataError(f"{path}: {key}: value: must be an object with "
                        f"{', '.join(FIELDS)}, got {type(record).__name__}")
    unknown = [f for f in record if f not in FIELDS]
    if unknown:
        raise DataError(f"{path}: {key}: {unknown[0]}: unknown field; a cell holds "
                        f"{', '.join(FIELDS)}")
    for field in _REQUIRED:
        if field not in record:
            raise DataError(f"{path}: {key}: {field}: missing")
    delta, low, high = (_number(path, key, f, record[f]) for f in _REQUIRED)
    if low > high:
        raise DataError(f"{path}: {key}: ci_low: {low!r} is above ci_high {high!r}")
    mean6 = record.get("mean6")
    return PaperValue(key, split, model, arm, delta, low, high,
                      None if mean6 is None else _number(path, key, "mean6", mean6))


def read_paper_values(path: Path | str) -> PaperValues:
    """Read and validate a whole file of published values; nothing is stored.

    Args:
        path: the JSON file (`~` is expanded).

    Returns:
        The validated values.

    Raises:
        ConfigError: no such file, or a folder.
        DataError: the first malformed cell, as one line naming the file, the key and
            the field; invalid JSON, a key given twice, two keys for one split × model ×
            arm (``unaided`` and ``none``), or a file without cells.
    """
    path = Path(path).expanduser()
    if not path.exists():
        raise ConfigError(f"{path}: no such file")
    if path.is_dir():
        raise ConfigError(f"{path}: is a directory; give the paper_values.json file")
    data = path.read_bytes()
    try:
        top = json_text.loads(data.decode("utf-8"), object_pairs_hook=_unique_keys)
    except UnicodeDecodeError as exc:
        raise DataError(f"{path}: not UTF-8 text: {exc.reason}") from None
    except json.JSONDecodeError as exc:
        raise DataError(f"{path}: invalid JSON: {exc.msg} (line {exc.lineno}, column "
                        f"{exc.colno})") from None
    except DataError as exc:
        raise DataError(f"{path}: {exc}") from None
    if not isinstance(top, dict):
        raise DataError(f"{path}: must be one JSON object of \"SPLIT/MODEL__CONDITION\": "
                        f"{{delta, ci_low, ci_high, mean6}}, got {type(top).__name__}")
    if not top:
        raise DataError(f"{path}: no values")
    values: list[PaperValue] = []
    seen: dict[tuple[str, str, str], str] = {}
    for key, record in top.items():
        value = _cell(path, key, record)
        cell = (value.split, value.model, value.arm)
        if cell in seen:
            raise DataError(f"{path}: {key}: condition: the same cell as {seen[cell]!r} "
                            f"(lab's arm {value.arm})")
        seen[cell] = key
        values.append(value)
    return PaperValues(path, hashlib.sha256(data).hexdigest(), tuple(values))


def store_paper_values(db: Database, read: PaperValues, name: str, dataset: str, budget: int,
                       replace: bool = False) -> None:
    """Store validated values as reference set `name`, in one transaction.

    Args:
        db: an open lab.db.
        read: the validated file.
        name: the set's name (`check_reference_name`).
        dataset: the dataset the values were computed on.
        budget: the action budget they ran under.
        replace: replace a set of that name (else it is refused).

    Raises:
        ConfigError: an unusable name.
        StoreError: a set of that name exists and `replace` is False (nothing written).
    """
    reference = ReferenceSet(check_reference_name(name), read.path.name, read.sha256, LICENSE,
                             dataset, budget, "", len(read.values), ",".join(read.splits))
    store_reference_set(db, reference, [
        ReferenceValue(v.split, v.model, v.arm, v.key, v.delta, v.ci_low, v.ci_high, v.mean6)
        for v in read.values], replace)
