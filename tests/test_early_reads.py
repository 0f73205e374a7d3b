"""The packs `lab results` starts reading before its imports (`core.store.early_reads`)
are what the frames read instead of reading them again, give the very frames the frames
read themselves, and are left alone where they describe other data."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from analysis.measures.frames import load_frames
from core import store
from core.store import packs as P
from core.store.early_reads import EarlyReads
from core.store.selection import Selection
from tests.helpers.scale import load_fixture, write_rows


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("early") / "lab.db"
    write_rows(store.connect(path), load_fixture())
    return path


def no_reads_here(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the frames' own reads of the key and decision packs fail (the thread of an
    EarlyReads made before keeps the functions it imported)."""
    def refuse(*_args: object) -> None:
        raise AssertionError("read again instead of taking the early read")

    monkeypatch.setattr(P, "key_pack_text", refuse)
    monkeypatch.setattr(P, "read_pack_span", refuse)


def test_the_frames_take_the_early_reads_and_read_the_same(stored: Path,
                                                           monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    db = store.connect(stored)
    want = load_frames(db, Selection())
    want_keys, want_decisions = want.episode_keys, want.decisions
    early = EarlyReads(stored, decisions=True)
    with monkeypatch.context() as m:
        no_reads_here(m)
        got = load_frames(db, Selection(), early=early)
        got.prefetch_decisions()
        assert got.episode_keys.equals(want_keys)
        assert got.decisions.equals(want_decisions)
    early.close()


def test_columns_beside_the_keys_come_from_the_early_read(stored: Path,
                                                         monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    db = store.connect(stored)
    values = ("correct", "tool_calls", "cost_usd")
    want = load_frames(db, Selection()).episode_columns(values)
    early = EarlyReads(stored, decisions=False)
    with monkeypatch.context() as m:
        no_reads_here(m)
        got = load_frames(db, Selection(), early=early).episode_columns(values)
    assert got.equals(want)
    early.close()


def test_reads_of_other_data_are_not_taken(stored: Path, tmp_path: Path) -> None:
    path = tmp_path / "lab.db"
    path.write_bytes(stored.read_bytes())
    early = EarlyReads(path, decisions=True)
    early._thread.join()  # read before the change below
    db = store.connect(path)
    with db.conn:
        db.conn.execute("DELETE FROM episodes WHERE id = (SELECT max(id) FROM episodes)")
    want = load_frames(db, Selection())
    got = load_frames(db, Selection(), early=early)
    got.prefetch_decisions()
    assert len(got.episode_keys) == len(want.episode_keys)
    assert got.episode_keys.equals(want.episode_keys)
    assert got.decisions.equals(want.decisions)
    early.close()


def test_a_filtered_selection_reads_its_own(stored: Path) -> None:
    db = store.connect(stored)
    selection = Selection(seeds=(1,))
    early = EarlyReads(stored, decisions=True)
    got = load_frames(db, selection, early=early)
    assert got.episode_keys.equals(load_frames(db, selection).episode_keys)
    every = load_frames(db, Selection()).source
    assert every is not None  # even beside every episode's fingerprint: not its rows
    assert early.take_key_packs(every.path, selection, every.fingerprint) is None
    assert early.take_decision_packs(every.path, selection, every.fingerprint) is None
    early.close()


def test_a_failed_early_read_leaves_the_frames_reading_their_own(tmp_path: Path) -> None:
    early = EarlyReads(tmp_path / "missing.db", decisions=True)
    early._thread.join()
    db = store.connect(tmp_path / "other.db")
    frames = load_frames(db, Selection(), early=early)
    assert frames.source is not None
    assert early.take_key_packs(frames.source.path, Selection(), frames.source.fingerprint) \
        is None
    early.close()


def test_a_read_that_fails_midway_hands_over_nothing(stored: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """A lab.db that fails after its fingerprint was read (a corrupt page under the
    episodes) leaves no reader waiting: the keys and packs are None, read by the
    frames themselves (which then fail the way they always did)."""
    import core.store.early_reads as E

    def corrupt(*_args: object) -> None:
        raise sqlite3.DatabaseError("database disk image is malformed")

    monkeypatch.setattr(E, "key_pack_text", corrupt)
    early = EarlyReads(stored, decisions=True)
    early._thread.join(timeout=60)
    assert not early._thread.is_alive()
    assert early._keys is not None and early._keys.done()  # else a reader waits forever
    assert early._packs is not None and early._packs.done()
    every = load_frames(store.connect(stored), Selection()).source
    assert every is not None
    assert early.take_key_packs(every.path, Selection(), every.fingerprint) is None
    packs = early.take_decision_packs(every.path, Selection(), every.fingerprint)
    assert packs is not None and packs.result(timeout=60) is None
    early.close()


def test_nothing_is_read_early_for_tables_the_results_cache_keeps(
        stored: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`lab results TABLE` again on the same data and options takes the table from the
    results cache, so the thread reads no pack (at 198,000 episodes it read 0.3 s of
    SQLite and about 45 MB of packs that were never used); the rows are the same. The
    same table with other options, or a table not kept yet, is read early again."""
    import core.store.early_reads as E
    from console.cli import main
    from tests.helpers.console import copy_db

    db = copy_db(stored, tmp_path / "lab.db")
    reads: list[str] = []
    for name in ("key_pack_text", "read_pack_span"):
        real = getattr(E, name)

        def counted(*args: object, real: object = real, name: str = name) -> object:
            reads.append(name)
            return real(*args)  # type: ignore[operator]

        monkeypatch.setattr(E, name, counted)

    def rows(*args: str) -> str:
        import io
        from contextlib import redirect_stdout

        out = io.StringIO()
        with redirect_stdout(out):
            assert main(["--db", str(db), "results", *args, "--format", "json",
                         "--resamples", "40"]) in (0, None)
        return out.getvalue()

    first = rows("delta")
    assert reads == ["key_pack_text", "read_pack_span"]
    assert rows("delta") == first
    assert len(reads) == 2  # kept: nothing read early
    rows("delta", "--delta-regimes", "mean6")
    assert len(reads) == 4
    rows("delta", "--seed", "3")
    assert len(reads) == 6
    rows("success")  # not kept yet (no decisions: its keys only), then kept
    rows("success")
    assert reads[6:] == ["key_pack_text"]
    rows("all")
    rows("all")
    assert reads[7:] == ["key_pack_text", "read_pack_span"]
