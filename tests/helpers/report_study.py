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
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.console import copy_db

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


def results_json(db: Path, table: str, *filters: str) -> list[dict[str, Any]]:
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
        _BUILT["db"] = _whole(path)
    return _BUILT["db"]


def _whole(path: Path) -> Path:
    """`path` with everything in lab.db's file itself, checked: every job done, answer-now
    probes stored and none errored. The in-process commands leave their connections to
    the garbage collector, so the last writes (the probes) could still sit in the -wal
    file when the study is copied as one file. A clean CI run once drew 9 of the
    report's 12 figures (the three that need the probes missing; not reproduced since):
    this rules the copy out and names the probes if they were never made."""
    conn = sqlite3.connect(path)
    try:
        busy = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
        jobs = dict(conn.execute("SELECT state, count(*) FROM jobs GROUP BY state"))
        probes, errored = conn.execute(
            "SELECT count(*), count(error) FROM probes WHERE kind = 'answer_now'").fetchone()
    finally:
        conn.close()
    assert busy == 0, "lab.db's -wal could not be checkpointed"
    assert set(jobs) == {"done"} and probes and not errored, (jobs, probes, errored)
    return path


PREREG_TESTS = [{"id": "H1", "kind": "paired_diff", "metric": "mean6", "a": "enforced_rule:k=3",
                 "b": "none", "alternative": "greater", "models": ["sim-own5"],
                 "runs": ["golden"]}]
PREREG_SCOPE = {"models": ["sim-own5"], "conditions": ["none", "enforced_rule:k=3"],
                "regimes": ["clean", "persistent"], "question_sets": ["d6"], "budgets": [8]}


def registered_study(factory: pytest.TempPathFactory) -> Path:
    """A copy of the study with amendment A1 ("Rule helps", one registered test)
    frozen and a deviation recorded (built on first use in this session)."""
    if "registered" not in _BUILT:

        where = factory.mktemp("registered_study")
        db = where / "lab.db"
        copy_db(study_db(factory), db)
        (where / "tests.json").write_text(json.dumps(PREREG_TESTS), encoding="utf-8")
        (where / "scope.json").write_text(json.dumps(PREREG_SCOPE), encoding="utf-8")
        for args in (("sets", "create", "d6", "--dataset", "demo", "--n", "6", "--seed", "1"),
                     ("prereg", "new", "--title", "Rule helps", "--tests",
                      str(where / "tests.json"), "--scope", str(where / "scope.json")),
                     ("prereg", "freeze", "A1", "--yes"),
                     ("prereg", "deviation", "A1", "one errored episode was run again")):
            code, _, err = lab(db, *args)
            assert code == 0, (args, err)
        _BUILT["registered"] = db
    return _BUILT["registered"]
