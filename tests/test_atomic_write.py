"""Files lab writes (exports, the report, the results cache) are whole or absent: the
old file stays until the new one is complete, and a failed write leaves no temporary."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.atomic_write import atomic_path, write_text_atomic


def test_a_write_replaces_the_file_whole_and_leaves_nothing_beside_it(tmp_path: Path) -> None:
    path = tmp_path / "table.csv"
    path.write_text("old\n")
    assert write_text_atomic(path, "new\n") == path
    assert path.read_text() == "new\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["table.csv"]


def test_a_failed_write_keeps_the_old_file_and_removes_its_temporary(tmp_path: Path) -> None:
    path = tmp_path / "table.csv"
    path.write_text("old\n")
    with pytest.raises(RuntimeError), atomic_path(path) as tmp:
        tmp.write_text("half")
        assert tmp.parent == tmp_path and tmp.name.startswith(".table.csv.")
        assert path.read_text() == "old\n"  # not replaced before the block ends
        raise RuntimeError("disk full")
    assert path.read_text() == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["table.csv"]


def test_two_writes_of_one_file_never_share_a_temporary(tmp_path: Path) -> None:
    path = tmp_path / "cache.pkl"
    with atomic_path(path) as first, atomic_path(path) as second:
        assert first != second
        first.write_text("a")
        second.write_text("b")
    assert path.read_text() == "a"  # the outer block ends last: its rename wins
