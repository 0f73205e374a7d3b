"""A lab.db holding only the second seed's trace states draws its figures and writes
its report (no episodes needed); a lab.db with neither says what is missing."""

from __future__ import annotations

import json
from pathlib import Path

from core import store
from tests.helpers.report_study import lab
from tests.test_trace_tables_cli import _store_sim


def test_figures_draw_the_trace_study_alone(tmp_path: Path) -> None:
    db = tmp_path / "lab.db"
    _store_sim(db)
    code, out, err = lab(db, "figures", str(tmp_path / "figs"), "--resamples", "20",
                         "--format", "svg")
    assert code == 0, err
    assert "wrote 4 figures" in out
    drawn = sorted(p.name for p in (tmp_path / "figs").glob("*.json"))
    assert drawn == ["trace_ece_by_depth.json", "trace_oa_cost.json",
                     "trace_reliability.json", "trace_risk_coverage.json"]
    rows = json.loads((tmp_path / "figs" / "trace_oa_cost.json").read_text())
    assert rows


def test_the_report_holds_the_trace_tables_alone(tmp_path: Path) -> None:
    db = tmp_path / "lab.db"
    _store_sim(db)
    page = tmp_path / "study.html"
    code, out, err = lab(db, "report", str(page), "--resamples", "20")
    assert code == 0, err
    html = page.read_text(encoding="utf-8")
    for table in ("trace_table1", "trace_table2", "trace_table3", "trace_calibration"):
        assert table in html


def test_a_lab_db_without_episodes_or_traces_says_so(tmp_path: Path) -> None:
    db = tmp_path / "lab.db"
    store.connect(db).conn.close()
    for args in (("figures", str(tmp_path / "figs")), ("report", str(tmp_path / "s.html"))):
        code, _, err = lab(db, *args)
        assert code == 1 and "no finished episodes or trace states" in err
