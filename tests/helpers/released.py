"""Small files in the released episode format, written by hand, and the released cell.

`HAND` is six episodes of one model in enforced_rule on two questions, chosen so that
every table has a value to check by hand (tests/test_episode_import.py works them
out); `released_cell` finds the one released cell the project keeps beside its
checkout for development, or None.
"""

from __future__ import annotations

import gzip
import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

U, F, X, N = "USELESS", "USEFUL", "UNPARSED", None
S, L, INV, FIN = "search", "lookup", "invalid", "finish"

HAND: tuple[dict[str, Any], ...] = tuple(
    {"model": "m1", "condition": "enforced_rule", "split": "s1", "question_id": q,
     "regime": regime, "actions": actions, "judgments": judgments, "success": success}
    for q, regime, actions, judgments, success in (
        ("q1", "persistent", [S, S, S, S, FIN], [U, U, U, U], False),
        ("q1", "recover_after_1", [S, S, S, S, S, FIN], [F, U, F, U, U], True),
        ("q2", "persistent", [S, INV, S, S, S, S, S, S], [U, N, U, U, U, U, U, N], False),
        ("q2", "recover_after_1", [S, S, S, FIN], [U, U, U], True),
        ("q1", "clean", [S, FIN], [F], True),
        ("q2", "clean", [L, FIN], [X], False),
    ))
"""Six released records (model m1, enforced_rule, split s1)."""

CELL_NAME = "qwen3-8b__enforced_rule__test300.jsonl"
"""The released cell kept for development: Qwen3-8B, enforced_rule, test300."""
CELL_DELTA = 0.3290158751511114
CELL_CI = (0.28620321469840504, 0.37270849065753436)
CELL_SUCCESS = {"persistent": 46, "recover_after_1": 158, "recover_after_2": 158,
                "recover_after_3": 141, "late_onset_from_3": 164}
"""The published Δ, its interval and the successes of 300 per regime for that cell."""


def write_released(path: Path, records: Iterable[Mapping[str, Any]],
                   drop: Iterable[str] = ()) -> Path:
    """Write records as a released file (gzipped when the name ends in .gz).

    Args:
        path: the file.
        records: the records.
        drop: fields to leave out of every record (as the development cell lacks
            model, condition and split).
    """
    gone = set(drop)
    text = "".join(json.dumps({k: v for k, v in r.items() if k not in gone}) + "\n"
                   for r in records)
    if path.name.endswith(".gz"):
        with gzip.open(path, "wt", encoding="utf-8") as f:
            f.write(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def released_cell() -> Path | None:
    """The released development cell: $LAB_PAPER_EPISODES (the file or its folder), else
    shared/data/paper-episodes/ in a folder above the checkout; None when absent."""
    given = os.environ.get("LAB_PAPER_EPISODES")
    candidates = [Path(given)] if given else [
        parent / "shared" / "data" / "paper-episodes"
        for parent in Path(__file__).resolve().parents]
    for candidate in candidates:
        path = candidate / CELL_NAME if candidate.is_dir() else candidate
        if path.is_file():
            return path
    return None
