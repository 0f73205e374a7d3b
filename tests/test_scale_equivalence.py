"""Issue 14: the fast analysis path gives the same numbers, to the last digit, as the
path that read every step into pandas (fixture computed before the change, same seeds).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from analysis.measures import TABLES, compute, load_frames
from core import store
from core.store.frames import Selection
from tests.scale_fixture import HAZARD_BOOT, N_BOOT, POOLS, load_fixture, results_json, write_rows


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    """The fixture's rows written through the store into a fresh lab.db."""
    data = load_fixture()
    path = tmp_path_factory.mktemp("scale") / "lab.db"
    write_rows(store.connect(path), data)
    return path, data


@pytest.mark.parametrize("pool", POOLS, ids=lambda p: ",".join(p) or "split")
def test_every_table_identical_to_the_reference(stored: tuple[Path, dict],
                                                pool: tuple[str, ...]) -> None:
    path, data = stored
    db = store.connect(path)
    got = results_json(compute(load_frames(db, Selection(pool=pool)), TABLES, N_BOOT,
                               HAZARD_BOOT, 0))
    want = data["results"][",".join(pool) or "-"]
    assert got.keys() == want.keys()
    for key in want:
        if key != "tables":
            assert got[key] == want[key], key
    assert [len(t) for t in got["tables"]] == [len(t) for t in want["tables"]]
    for g_table, w_table in zip(got["tables"], want["tables"]):
        for g, w in zip(g_table, w_table):
            assert g == w, (g["table"], g["model"], g["arm"], g["measure"], g["scope"])
