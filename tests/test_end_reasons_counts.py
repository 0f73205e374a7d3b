"""Truncated generations and refusals are counted apart from format failures and errors.

A lab.db holds episodes of every end reason: the sims' own (finish, budget) and, on
episodes that did not answer, the reasons a real model's reply leads to
(format_failure, generation_truncated, refusal), plus an errored episode. Every place
that counts how episodes ended must show the truncated and refused ones in their own
count: the results tables (text, JSON, CSV), lab status, the Jobs and Dashboard lines,
the export's end_reason column and the end line of an episode. They are complete
episodes that did not answer, so success counts them as wrong, never as errored.
"""

from __future__ import annotations

import csv
import json
import re
import sqlite3
from pathlib import Path

import pytest

from core import store
from core.end_reasons import END_FORMAT_FAILURE, apart_text, end_text
from core.episode import EpisodeResult
from core.models.base import END_REFUSAL, END_TRUNCATED
from jobs.grid import GridRequest
from tests.helpers.cli import lab
from tests.helpers.console import build

GRID = GridRequest(models=("sim-never", "sim-own5"), conditions=("none",),
                   regimes=("clean", "persistent"), question_set="demo", run="ends")
ENDINGS = {("clean", 0): END_TRUNCATED, ("clean", 1): END_TRUNCATED,
           ("clean", 2): END_REFUSAL, ("persistent", 0): END_REFUSAL,
           ("persistent", 1): END_FORMAT_FAILURE}
"""(regime, n-th stored sim-never episode of that regime) → the end reason it is given:
clean 2 truncated + 1 refused, persistent 1 refused (+ 1 format failure, counted in
neither)."""


@pytest.fixture(scope="module")
def ends_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = build(tmp_path_factory.mktemp("ends") / "lab.db", GRID)
    conn = sqlite3.connect(path)
    with conn:
        for regime in ("clean", "persistent"):
            ids = [i for (i,) in conn.execute(
                "SELECT e.id FROM episodes e JOIN cells c ON c.id = e.cell_id WHERE "
                "c.model = 'sim-never' AND c.regime = ? AND e.answered = 0 ORDER BY e.id",
                (regime,))]
            for (r, n), reason in ENDINGS.items():
                if r == regime:
                    conn.execute("UPDATE episodes SET end_reason = ? WHERE id = ?",
                                 (reason, ids[n]))
    conn.close()
    db = store.connect(path)
    cell, qid = db.conn.execute("SELECT e.cell_id, c.regime FROM episodes e JOIN cells c "
                                "ON c.id = e.cell_id WHERE c.model = 'sim-never' "
                                "AND c.regime = 'clean'").fetchone()
    # an errored record (of a question outside the grid): an error, never truncated
    store.write_episodes(db, [(cell, EpisodeResult(
        "no-such-question", error="model error: connection refused", end_reason="error",
        started_at="2026-01-01T00:00:00", finished_at="2026-01-01T00:00:01"), None)])
    db.conn.close()
    return path


def _rows(capsys: pytest.CaptureFixture[str], db: Path, *tables: str) -> list[dict]:
    rows = []
    for table in tables:
        code, out, err = lab(capsys, "--db", db, "results", table, "--format", "json",
                             "--resamples", "20")
        assert code == 0, err
        rows += json.loads(out)
    return rows


def test_results_rows_count_truncated_and_refused_apart_from_errors(
        ends_db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = _rows(capsys, ends_db, "success", "cost")
    never = {(r["table"], r["measure"], r["scope"]): r for r in rows
             if r["model"] == "sim-never"}
    clean, persistent = never[("success", "success", "clean")], never[
        ("success", "success", "persistent")]
    assert (clean["truncated"], clean["refused"]) == (2, 1)
    assert (persistent["truncated"], persistent["refused"]) == (0, 1)
    assert clean["errored"] == persistent["errored"] == 0  # none of them is an error
    mean6 = never[("success", "success", "mean6")]
    assert (mean6["truncated"], mean6["refused"]) == (2, 2)  # the regimes it covers
    answered = never[("cost", "answered", "")]
    assert (answered["truncated"], answered["refused"]) == (2, 2)
    # complete episodes: in n as every question of the set (never left out as errored)
    own5 = [r for r in rows if r["model"] == "sim-own5"]
    assert clean["n"] == next(r["n"] for r in own5 if r["scope"] == "clean") > 0
    # a group without such episodes keeps the JSON of before: no keys at all
    assert own5 and all("truncated" not in r and "refused" not in r for r in own5)


def test_results_text_shows_the_columns_the_note_and_the_head_line(
        ends_db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = lab(capsys, "--db", ends_db, "results", "success", "--resamples", "20")
    assert code == 0, err
    head = out.splitlines()[0] + out.splitlines()[1]
    assert "2 truncated · 2 refused" in " ".join(out.split()), head
    header = next(line for line in out.splitlines() if line.startswith("model"))
    assert header.split()[-3:] == ["mean6", "truncated", "refused"]  # no errored column
    never = next(line for line in out.splitlines() if line.startswith("sim-never"))
    assert never.split()[-2:] == ["2", "2"]  # per-regime rows add up on the line
    own5 = next(line for line in out.splitlines() if line.startswith("sim-own5"))
    assert own5.split()[-2:] == ["0", "0"]
    assert "generation cut at max_tokens or a refusal" in " ".join(out.split())


def test_results_csv_always_has_the_columns(ends_db: Path, capsys: pytest.CaptureFixture[str]
                                           ) -> None:
    code, out, err = lab(capsys, "--db", ends_db, "results", "success", "--format", "csv",
                         "--resamples", "20")
    assert code == 0, err
    rows = list(csv.DictReader(out.splitlines()))
    clean = next(r for r in rows if r["model"] == "sim-never" and r["scope"] == "clean")
    own5 = next(r for r in rows if r["model"] == "sim-own5" and r["scope"] == "clean")
    assert (clean["truncated"], clean["refused"]) == ("2", "1")
    assert (own5["truncated"], own5["refused"]) == ("0", "0")


def test_status_jobs_and_dashboard_counts(ends_db: Path, capsys: pytest.CaptureFixture[str]
                                         ) -> None:
    from console.screens.jobs import grid_label, job_detail, run_label
    from core.store import monitor, progress
    from jobs.control import status

    code, out, err = lab(capsys, "--db", ends_db, "status")
    assert code == 0, err
    assert "2 truncated · 2 refused" in out, out
    db = store.connect(ends_db)
    try:
        (grid,) = status(db)
        assert (grid.truncated, grid.refused, grid.errored) == (2, 2, 0)
        assert grid.to_dict()["truncated"] == 2
        counts = monitor.queue_counts(db)
        assert (counts.truncated, counts.refused, counts.errored) == (2, 2, 1)
        jobs = progress.job_rows(db, grid.grid)
        assert sum(j.truncated for j in jobs) == 2 and sum(j.refused for j in jobs) == 2
        hit = next(j for j in jobs if j.truncated)
    finally:
        db.conn.close()
    assert "⌁ 2 truncated · 2 refused" in grid_label(grid).plain
    assert "⌁ 2 truncated · 2 refused" in run_label("ends", [grid]).plain
    assert f"{hit.truncated} truncated" in job_detail(hit).plain
    assert "errored" not in grid_label(grid).plain


def test_export_has_each_episodes_end_reason(ends_db: Path, capsys: pytest.CaptureFixture[str],
                                             tmp_path: Path) -> None:
    code, _, err = lab(capsys, "--db", ends_db, "export", tmp_path / "out", "--resamples", "20")
    assert code == 0, err
    with open(tmp_path / "out" / "episodes.csv", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    ends = [r["end_reason"] for r in rows]
    assert ends.count(END_TRUNCATED) == 2 and ends.count(END_REFUSAL) == 2
    assert ends.count(END_FORMAT_FAILURE) == 1 and ends.count("error") == 1


def test_an_episodes_end_line_names_truncation_and_refusal() -> None:
    from console.render import summary_lines
    from console.screens.live import outcome_parts

    assert end_text(END_TRUNCATED) == "generation_truncated: cut at max_tokens"
    assert end_text("budget") == "budget"
    result = EpisodeResult("q", end_reason=END_REFUSAL)
    assert "unanswered (refusal: the model refused)" in summary_lines(result, "gold")[0]
    row = {"answered": 0, "end_reason": END_TRUNCATED, "gold": "g", "forced_turns": 0,
           "refused_calls": 0, "input_tokens": 1, "output_tokens": 1}
    assert "cut at max_tokens" in outcome_parts(row)[0][1].plain
    assert apart_text({"truncated": 0, "refused": 3}) == "3 refused"


def test_the_report_shows_truncated_and_refused_columns(ends_db: Path,
                                                        capsys: pytest.CaptureFixture[str],
                                                        tmp_path: Path) -> None:
    """The HTML report's success table has the two columns (the sim-never rows hold
    them); a study without such episodes keeps its tables as they were (columns shown
    only when a row has one)."""
    out = tmp_path / "report.html"
    code, _, err = lab(capsys, "--db", ends_db, "report", str(out),
                       "--resamples", "20")
    assert code == 0, err
    page = out.read_text(encoding="utf-8")
    found = re.search(r'<table[^>]*data-table="success"', page)
    assert found, "no success table in the report"
    table = page[found.start():]
    table = table[:table.index("</table>")]
    assert 'data-f="truncated"' in table and 'data-f="refused"' in table
    clean = next(row for row in table.split("<tr>") if "<td>sim-never</td>" in row
                 and "<td>clean</td><td>success</td><td>clean</td>" in row)
    assert "<td>0</td><td>2</td><td>1</td></tr>" in clean  # errored, truncated, refused
