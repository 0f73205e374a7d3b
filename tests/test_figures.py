"""`lab figures` (SPEC §14): each figure's sidecar holds exactly the rows `lab results
TABLE --format json` prints, the same data gives the same SVG/PDF bytes, and a figure the
selection cannot feed is skipped with one line, never drawn empty."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers.report_study import RESAMPLES, lab, results_json, study_db

FIGURE_TABLES = {"success_by_regime": ("success", None),
                 "delta_forest": ("delta", {"delta", "design"}),
                 "hazard_by_run": ("hazard", {"hazard"}),
                 "hazard_slopes": ("hazard", {"beta", "gamma"}),
                 "answer_action_by_budget": ("budgets", None),
                 "leaving": ("leaving", None),
                 "risk_coverage": ("controllers", {"coverage", "committed_accuracy"}),
                 "ece_by_depth": ("controllers", {"ece"}),
                 "regret_heatmap": ("policies", {"regret"})}
"""Figure -> (the table it reads, the measures it draws; None: see the test)."""


@pytest.fixture(scope="module")
def figures(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, str]:
    db = study_db(tmp_path_factory)
    out = tmp_path_factory.mktemp("figures")
    code, stdout, stderr = lab(db, "figures", str(out), "--resamples", str(RESAMPLES),
                               "--format", "svg,pdf,png")
    assert code == 0, stderr
    assert "wrote 9 figures" in stdout
    return db, out, stderr


def test_every_figure_is_written_with_its_sidecar(figures):
    _, out, stderr = figures
    for name in FIGURE_TABLES:
        for suffix in ("svg", "pdf", "png", "json"):
            assert (out / f"{name}.{suffix}").stat().st_size > 1000, (name, suffix)
    assert "skipped" not in stderr


def test_sidecar_rows_are_the_tables_json_rows(figures):
    db, out, _ = figures
    for name, (table, measures) in FIGURE_TABLES.items():
        side = json.loads((out / f"{name}.json").read_text(encoding="utf-8"))
        want = results_json(db, table)
        assert side["rows"], name
        if name == "success_by_regime":  # the whole table, row for row
            assert side["rows"] == want
        elif name == "answer_action_by_budget":  # the median action, on persistent
            assert side["rows"] == [r for r in want if r["measure"].startswith("median_action@")
                                    and r["regimes"] == "persistent"]
        elif name == "leaving":
            assert side["rows"] == [r for r in want if r["measure"] not in
                                    ("median_first_switch",)]
        elif name in ("ece_by_depth", "regret_heatmap", "risk_coverage", "hazard_by_run"):
            # a subset of the measures' rows (by depth; Table 17's scope; raw/isotonic)
            assert all(r in want for r in side["rows"]), name
        else:
            assert side["rows"] == [r for r in want if r["measure"] in measures], name


def test_sidecar_provenance_names_runs_hashes_and_version(figures):
    from core.version import project_version

    _, out, _ = figures
    side = json.loads((out / "success_by_regime.json").read_text(encoding="utf-8"))
    prov = side["provenance"]
    assert prov["lab_version"] == project_version()
    assert [p["run"] for p in prov["runs"]] == ["golden"]
    assert prov["runs"][0]["amendment"] is None  # exploratory
    assert prov["condition_hashes"] and all(len(h) == 64 for h in prov["condition_hashes"])
    assert len(prov["rows_sha256"]) == 64 and prov["resamples"] == RESAMPLES
    assert prov["git_commit"]  # a commit, or "unknown" outside a checkout
    assert side["files"] == ["success_by_regime.svg", "success_by_regime.pdf",
                             "success_by_regime.png"]


def test_same_data_gives_the_same_svg_and_pdf_bytes(figures, tmp_path):
    db, out, _ = figures
    again = tmp_path / "again"
    code, _, err = lab(db, "figures", str(again), "--resamples", str(RESAMPLES),
                       "--format", "svg,pdf", "--table", "success", "--table", "hazard")
    assert code == 0, err
    for name in ("success_by_regime", "hazard_by_run", "hazard_slopes"):
        for suffix in ("svg", "pdf"):
            assert (again / f"{name}.{suffix}").read_bytes() == \
                (out / f"{name}.{suffix}").read_bytes(), (name, suffix)
    svg = (out / "success_by_regime.svg").read_text(encoding="utf-8")
    assert "<dc:date>" not in svg and "DejaVu" in svg


def test_a_figure_the_selection_cannot_feed_is_skipped_with_one_line(figures, tmp_path):
    db, _, _ = figures
    code, stdout, stderr = lab(db, "figures", str(tmp_path / "f"), "--resamples", "10",
                               "--format", "svg", "--models", "sim-own5",
                               "--conditions", "none")
    assert code == 0, stderr
    skipped = [line for line in stderr.splitlines() if line.startswith("skipped ")]
    assert any(line.startswith("skipped leaving: no leaving rows") for line in skipped)
    assert not (tmp_path / "f" / "leaving.svg").exists()
    assert (tmp_path / "f" / "success_by_regime.svg").exists()


def test_bad_format_is_one_line(figures, tmp_path):
    db, _, _ = figures
    code, _, stderr = lab(db, "figures", str(tmp_path / "g"), "--format", "png,gif")
    assert code != 0
    assert stderr.strip().splitlines() == [
        "error: --format 'png,gif': choose from png, svg, pdf, comma-separated, e.g. "
        "--format png,svg"]


def test_talk_style_is_larger(figures, tmp_path):
    db, out, _ = figures
    code, _, err = lab(db, "figures", str(tmp_path / "t"), "--resamples", str(RESAMPLES),
                       "--format", "png", "--style", "talk", "--table", "budgets")
    assert code == 0, err
    from matplotlib.image import imread

    paper = imread(out / "answer_action_by_budget.png").shape
    talk = imread(tmp_path / "t" / "answer_action_by_budget.png").shape
    assert talk[1] > paper[1] * 0.8 and talk != paper
