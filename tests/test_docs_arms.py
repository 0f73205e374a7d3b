"""The conditions table (docs/conditions.md, moved there from README) names every arm
of `core.conditions.ARMS`, in order, with exactly its knobs and their defaults."""

from __future__ import annotations

import re
from dataclasses import fields
from pathlib import Path

from core.conditions import ARMS, Condition

DOC = Path(__file__).resolve().parents[1] / "docs" / "conditions.md"
HEADER = "| arm [knobs = default] | what it does | who stops |"
ROW = re.compile(r"^\| `(?P<arm>[a-z_]+)` \[(?P<knobs>[^\]]*)\] \|")


def _table() -> list[tuple[str, dict[str, str]]]:
    """(arm, {knob: default text}) of each row of the docs' conditions table."""
    lines = DOC.read_text(encoding="utf-8").splitlines()
    assert lines.count(HEADER) == 1, "docs/conditions.md has one conditions table"
    rows = []
    for line in lines[lines.index(HEADER) + 2:]:
        if not line.startswith("|"):
            break
        m = ROW.match(line)
        assert m, f"conditions row without `arm` [knobs]: {line[:60]}"
        knobs = dict(k.strip().split("=", 1) for k in m["knobs"].split(",") if k.strip())
        rows.append((m["arm"], knobs))
    return rows


def test_every_arm_is_in_the_conditions_table_in_order() -> None:
    assert [arm for arm, _ in _table()] == list(ARMS)


def test_each_row_lists_the_arms_knobs_with_their_defaults() -> None:
    defaults = {f.name: f.default for f in fields(Condition) if f.init}
    for arm, knobs in _table():
        assert tuple(knobs) == ARMS[arm].knobs, arm
        for knob, text in knobs.items():
            if defaults[knob] is None:  # random_rule's rate: resolved per model
                assert "dev" in text, (arm, knob)
            else:
                assert float(text) == defaults[knob], (arm, knob)
