"""Figures are drawn on every core (`analysis.base.parallel`): the files and the
report's SVGs are the same bytes whichever process drew them, the work really runs in
other processes when there are cores for it, and a piece that fails raises here."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

import analysis.base.parallel as parallel
from analysis.figures import render_svgs, write_figures
from analysis.figures.study import StudyRows
from tests.helpers.figure_rows import MODELS, study_table_rows, synthetic_study


def _small_study() -> StudyRows:
    """The synthetic study with one model (every figure still drawn, in half the time)."""
    return synthetic_study({t: [r for r in rows if r["model"] == MODELS[0]]
                            for t, rows in study_table_rows().items()})


def _files(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir())}


@pytest.fixture
def cores(monkeypatch: pytest.MonkeyPatch) -> Callable[[int], None]:
    def set_cores(n: int) -> None:
        monkeypatch.setattr(parallel, "cores", lambda: n)
    return set_cores


def test_items_are_drawn_in_other_processes_in_order(cores: Callable[[int], None]) -> None:
    cores(2)
    got = parallel.each(6, lambda i: (i * i, os.getpid()))
    assert [v for v, _ in got] == [0, 1, 4, 9, 16, 25]
    assert os.getpid() not in {pid for _, pid in got}


def test_a_piece_that_fails_raises_its_error_here(cores: Callable[[int], None]) -> None:
    cores(2)

    def work(i: int) -> int:
        if i == 3:
            raise ValueError("piece three broke")
        return i

    with pytest.raises(ValueError, match="piece three broke"):  # the error itself
        parallel.each(5, work)

    class Unpicklable(Exception):
        def __init__(self, a: int, b: int) -> None:
            super().__init__(f"{a} and {b}")

    def odd(i: int) -> int:
        raise Unpicklable(i, 2)

    with pytest.raises(parallel.PieceFailed, match="Unpicklable: 0 and 2"):
        parallel.each(3, odd)


def test_a_sigterm_handler_does_not_keep_the_processes(cores: Callable[[int], None]) -> None:
    """The worker installs a SIGTERM handler in the process that runs it (tests do):
    the forked processes leave by themselves and never wait for a signal."""
    cores(2)
    previous = signal.signal(signal.SIGTERM, lambda *_: None)
    try:
        assert parallel.each(8, lambda i: -i) == [-i for i in range(8)]
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_one_core_or_another_thread_draws_here(cores: Callable[[int], None]) -> None:
    cores(1)
    assert {pid for pid in parallel.each(3, lambda i: os.getpid())} == {os.getpid()}
    cores(2)
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:  # forking while another thread runs could hang the child: drawn here
        assert {pid for pid in parallel.each(3, lambda i: os.getpid())} == {os.getpid()}
    finally:
        stop.set()
        other.join()


def test_files_are_the_same_bytes_drawn_here_or_on_two_cores(cores: Callable[[int], None],
                                                             tmp_path: Path) -> None:
    study = _small_study()
    cores(1)
    alone = write_figures(study, tmp_path / "alone", ("svg", "pdf"))
    cores(2)
    shared = write_figures(study, tmp_path / "shared", ("svg", "pdf"))
    assert [p.name for p in alone.paths] == [p.name for p in shared.paths]
    assert alone.skipped == shared.skipped
    assert len(alone.paths) > 10
    assert _files(tmp_path / "alone") == _files(tmp_path / "shared")


def test_report_svgs_are_the_same_drawn_here_or_on_two_cores(cores: Callable[[int], None]) -> None:
    study = _small_study()
    cores(1)
    alone = render_svgs(study)
    cores(2)
    shared = render_svgs(study)
    assert [(r.figure.name, r.svg, r.rows, r.note) for r in alone] == \
        [(r.figure.name, r.svg, r.rows, r.note) for r in shared]
    assert sum(bool(r.svg) for r in shared) >= 4


def test_study_rows_on_two_cores_are_those_on_one(cores: Callable[[int], None],
                                                  tmp_path_factory: pytest.TempPathFactory) -> None:
    """The episode tables and the tables on answer-now branches are computed side by side
    in two forked processes, each reading lab.db through its own connection: the same
    tables, rows, runs and counts as computed one after the other here."""
    import shutil

    from analysis.figures.study import study_rows
    from core import store
    from core.store.selection import Selection
    from tests.helpers.report_study import RESAMPLES, study_db

    path = study_db(tmp_path_factory)
    got = {}
    for n in (1, 2):
        cores(n)
        shutil.rmtree(f"{path}.results", ignore_errors=True)  # computed, not read back
        db = store.connect(path)
        s = study_rows(db, Selection(), RESAMPLES)
        db.conn.close()
        got[n] = ([t.name for t in s.tables], s.rows, s.runs, s.errored, s.pooled,
                  s.n_episodes, s.provenance)
    assert got[1] == got[2]
    assert {"policies", "controllers", "success"} <= set(got[2][0])
