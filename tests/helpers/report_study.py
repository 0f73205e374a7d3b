"""A small sim study that feeds every figure, for the figures and report tests.

`tests/golden_study.py`'s study (six arms, the six mean6 regimes, six demo questions, one
errored episode: every table of `lab results all` has rows) plus answer-now branches on
its episodes (`lab replay answer-now`, run by a worker), so the controllers and policies
tables have rows too. Built once per test session (about 5 s) and shared read-only.
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest

RESAMPLES = 30
"""Few resamples: the tests compare rows, not intervals' precision."""
_BUILT: dict[str, Path] = {}


def lab(db: Path, *args: str) -> tuple[int, str, str]:
    """Run `lab --db DB ARGS…` in-process; (exit code, stdout, stderr)."""
    from console.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["--db", str(db), *args])
    return code, out.getvalue(), err.getvalue()


def results_json(db: Path, table: str, *filters: str) -> list[dict[str, object]]:
    """`lab results TABLE --format json --resamples RESAMPLES` rows of table TABLE only."""
    code, out, err = lab(db, "results", table, "--format", "json", "--resamples",
                         str(RESAMPLES), *filters)
    assert code == 0, err
    return [r for r in json.loads(out) if r["table"] == table]


def study_db(factory: pytest.TempPathFactory) -> Path:
    """The study's lab.db (built on first use in this session)."""
    if "db" not in _BUILT:
        from tests.golden_study import RUN, build_study

        path = factory.mktemp("report_study") / "lab.db"
        build_study(path)
        for args in (("replay", "answer-now", "--run", RUN), ("worker", "--until-idle")):
            code, _, err = lab(path, *args)
            assert code == 0, err
        _BUILT["db"] = path
    return _BUILT["db"]
