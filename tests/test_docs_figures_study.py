"""docs/figures.md shows every figure: those the demo draws come from the demo
(`tests/test_docs_commands.py`), the rest (two budgets, a two-source arm, answer-now
branches, belief probes, trace states) from a tiny study built here through the real
queue (`tests/helpers/figures_study.py`, about 10 s of building). Each is the PNG this
test draws at `--style column` (one column wide), under the `lab figures … --table`
command that makes it; LAB_REDRAW_DOCS_FIGURES=1 writes them anew."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

from tests.helpers.figures_study import figures_study
from tests.helpers.report_study import lab

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "figures.md"
PICTURES = ROOT / "docs" / "figures"
SHOWN = re.compile(r"!\[[^\]]+\]\(figures/(demo|study)_([a-z0-9_]+)\.png\)")
REDRAW = "LAB_REDRAW_DOCS_FIGURES"


def test_docs_figures_show_every_figure_each_from_the_demo_or_the_study(
        tmp_path_factory: pytest.TempPathFactory, tmp_path: Path) -> None:
    from matplotlib.image import imread

    from analysis.figures import FIGURES

    page = PAGE.read_text(encoding="utf-8")
    shown = SHOWN.findall(page)
    names = [name for _, name in shown]
    assert sorted(names) == sorted(f.name for f in FIGURES), (
        "docs/figures.md must show every figure once")
    assert len(names) == len(set(names))
    study = [name for source, name in shown if source == "study"]
    db = figures_study(tmp_path_factory)
    # only the tables of the study's figures: the demo's are drawn (and checked) on the
    # demo by tests/test_docs_commands.py
    tables = dict.fromkeys(next(f.tables[0] for f in FIGURES if f.name == name)
                           for name in study)
    code, _, err = lab(db, "figures", str(tmp_path), "--style", "column", "--format", "png",
                       "--resamples", "100", *(a for t in tables for a in ("--table", t)))
    assert code == 0, err
    assert sorted(p.stem for p in tmp_path.glob("*.png")) == sorted(study), err
    for name in study:
        fresh = tmp_path / f"{name}.png"
        assert fresh.exists(), f"the study does not draw {name}: {err}"
        committed = PICTURES / f"study_{name}.png"
        if os.environ.get(REDRAW) == "1":
            shutil.copy(fresh, committed)
        assert committed.exists(), f"{committed} missing: run this test with {REDRAW}=1"
        assert imread(committed).shape[1] == imread(fresh).shape[1] == 990, name
        table = next(f.tables[0] for f in FIGURES if f.name == name)
        before = page[:page.index(f"(figures/study_{name}.png)")]
        assert f"--table {table}" in before[before.rfind("```sh"):], (
            f"docs/figures.md: no `lab figures … --table {table}` command above {name}")
