"""`lab figures`: each figure's sidecar holds exactly the rows `lab results
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
                 "regret_heatmap": ("policies", {"regret"}),
                 "judged_but_not_acted": ("judgments", {"USELESS on failed",
                                                        "answered after 5 own useless"}),
                 "delta_grid": ("delta", {"delta"}),
                 "cost_success": ("cost", {"tool calls", "success"})}
"""Figure -> (the table it reads, the measures it draws; None: see the test)."""


@pytest.fixture(scope="module")
def figures(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, str]:
    db = study_db(tmp_path_factory)
    out = tmp_path_factory.mktemp("figures")
    # no --format: the default writes all three (tests/test_docs_commands.py draws PNG only)
    code, stdout, stderr = lab(db, "figures", str(out), "--resamples", str(RESAMPLES))
    assert code == 0, stderr
    assert "wrote 12 figures" in stdout
    return db, out, stderr


TRACE_FIGURES = ("trace_risk_coverage", "trace_oa_cost", "trace_reliability")
"""The second seed's figures of its sweeps table: the study has no trace states, so
they are skipped (with the calibration-by-depth figure)."""


def test_every_figure_is_written_with_its_sidecar(figures: tuple[Path, Path, str]) -> None:
    _, out, stderr = figures
    for name in FIGURE_TABLES:
        for suffix in ("svg", "pdf", "png", "json"):
            assert (out / f"{name}.{suffix}").stat().st_size > 1000, (name, suffix)
    skipped = [line.split(":")[0] for line in stderr.splitlines() if line.startswith("skipped")]
    # no belief probes either: Figure 6 is skipped too
    assert skipped == [f"skipped {name}" for name in ("beliefs", *TRACE_FIGURES,
                                                       "trace_ece_by_depth")]


def test_sidecar_rows_are_the_tables_json_rows(figures: tuple[Path, Path, str]) -> None:
    db, out, _ = figures
    tables = {t: results_json(db, t) for t, _ in FIGURE_TABLES.values()}  # each once
    for name, (table, measures) in FIGURE_TABLES.items():
        side = json.loads((out / f"{name}.json").read_text(encoding="utf-8"))
        want = tables[table]
        assert side["rows"], name
        if name == "success_by_regime":  # the table at the primary budget, row for row
            assert side["rows"] == [r for r in want if r["budget"] == 8]
        elif name == "answer_action_by_budget":  # the median action, on persistent
            assert side["rows"] == [r for r in want if r["measure"].startswith("median_action@")
                                    and r["regimes"] == "persistent"]
        elif name == "judged_but_not_acted":  # the unaided arm's two shares
            assert measures is not None
            assert side["rows"] == [r for r in want if r["measure"] in measures
                                    and r["arm"].split(":")[0] == "none"
                                    and r["budget"] == 8]
        elif name == "delta_grid":  # Δ on own judgments by t, one run
            assert side["rows"] == [r for r in want if r["measure"] == "delta"
                                    and r["scope"] == "own judgments, by t"
                                    and r["budget"] == 8]
        elif name == "delta_forest":  # Δ matched by t and the design contrast
            assert measures is not None
            assert side["rows"] == [r for r in want if r["measure"] in measures
                                    and "×" not in r["scope"] and r["budget"] == 8]
        elif name == "leaving":
            assert side["rows"] == [r for r in want if r["measure"] not in
                                    ("median_first_switch",)]
        elif name in ("ece_by_depth", "regret_heatmap", "risk_coverage", "hazard_by_run"):
            # a subset of the measures' rows (by depth; Table 17's scope; raw/isotonic)
            assert all(r in want for r in side["rows"]), name
        else:  # at the primary budget
            assert measures is not None
            assert side["rows"] == [r for r in want if r["measure"] in measures
                                    and r["budget"] == 8], name


def test_sidecar_provenance_names_runs_hashes_and_version(figures: tuple[Path, Path, str]) -> None:
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
    assert side["files"] == ["success_by_regime.png", "success_by_regime.svg",
                             "success_by_regime.pdf"]  # the default formats, in their order


def test_same_data_gives_the_same_svg_and_pdf_bytes(figures: tuple[Path, Path, str], tmp_path: Path
                                                   ) -> None:
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


def test_a_figure_the_selection_cannot_feed_is_skipped_with_one_line(
        figures: tuple[Path, Path, str], tmp_path: Path) -> None:
    db, _, _ = figures
    code, stdout, stderr = lab(db, "figures", str(tmp_path / "f"), "--resamples", "10",
                               "--format", "svg", "--models", "sim-own5",
                               "--conditions", "none", "--table", "success", "--table",
                               "leaving")
    assert code == 0, stderr
    skipped = [line for line in stderr.splitlines() if line.startswith("skipped ")]
    assert any(line.startswith("skipped leaving: no leaving rows") for line in skipped)
    assert not (tmp_path / "f" / "leaving.svg").exists()
    assert (tmp_path / "f" / "success_by_regime.svg").exists()


def test_one_tables_figures_are_chosen_as_among_every_table(
        figures: tuple[Path, Path, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--table leaving` computes the leaving table and the table the selection is chosen
    from, not every table: the study's confirmatory runs have no leaving rows, so the
    figure is skipped, where the leaving table alone would have chosen its other run."""
    import analysis.figures.study as study
    from tests.helpers.figure_rows import lone_table_study

    db, _, _ = figures
    asked = []

    def study_rows(*args: object, names: tuple[str, ...] | None = None, **kw: object) -> object:
        asked.append(names)
        return lone_table_study(names)

    monkeypatch.setattr(study, "study_rows", study_rows)
    code, _, stderr = lab(db, "figures", str(tmp_path / "f"), "--format", "svg", "--table",
                          "leaving")
    assert code == 0, stderr
    assert asked == [("leaving", "success")]
    # drawn among every table it is skipped too (tests/test_figure_checks.py)
    assert stderr.startswith("skipped leaving: ")


def test_bad_format_is_one_line(figures: tuple[Path, Path, str], tmp_path: Path) -> None:
    db, _, _ = figures
    code, _, stderr = lab(db, "figures", str(tmp_path / "g"), "--format", "png,gif")
    assert code != 0
    assert stderr.strip().splitlines() == [
        "error: --format 'png,gif': choose from png, svg, pdf, comma-separated, e.g. "
        "--format png,svg"]


def test_column_and_page_styles_are_their_widths_in_print(figures: tuple[Path, Path, str],
                                                          tmp_path: Path) -> None:
    """--style column is 3.3 in wide and the default (page) 6.9 in, at 300 dpi."""
    db, out, _ = figures
    code, _, err = lab(db, "figures", str(tmp_path / "t"), "--resamples", str(RESAMPLES),
                       "--format", "png", "--style", "column", "--table", "budgets")
    assert code == 0, err
    from matplotlib.image import imread

    page = imread(out / "answer_action_by_budget.png").shape
    column = imread(tmp_path / "t" / "answer_action_by_budget.png").shape
    assert (column[1], page[1]) == (990, 2070)


def test_the_trace_figures_draw_the_trace_sweeps_rows(tmp_path: Path) -> None:
    """Trace states of the trace sim (as tests/test_trace_tables_cli.py stores them) give
    the risk–coverage, OA–cost and reliability figures, whose rows are those of `lab
    results trace_sweeps --format json`."""
    from analysis.replay.trace_sim import sim_traces
    from core import store
    from core.store import traces as traces_store
    from tests.golden_study import build_study

    db_path = tmp_path / "lab.db"
    build_study(db_path, grid=(("sim-own5", "none", 8),))
    db = store.connect(db_path)
    traces_store.write_traces(db, [traces_store.TraceRecord(
        run=r.run, model=r.model, dataset=r.dataset, set_name=r.set_name,
        question_id=r.question_id, depth=int(r.depth), plan_sha256=r.plan_sha256,
        answer=r.answer, confidence=float(r.confidence), parsed=True, correct=bool(r.correct),
        prompt_tokens=int(r.prompt_tokens), completion_tokens=int(r.completion_tokens))
        for r in sim_traces(9).itertuples()])
    db.conn.close()
    code, _, err = lab(db_path, "figures", str(tmp_path / "f"), "--resamples", "20",
                       "--format", "svg", "--table", "trace_sweeps")
    assert code == 0, err
    code, out, err = lab(db_path, "results", "trace_sweeps", "--format", "json",
                         "--resamples", "20")
    assert code == 0, err
    want = json.loads(out)
    for name in TRACE_FIGURES:
        side = json.loads((tmp_path / "f" / f"{name}.json").read_text(encoding="utf-8"))
        assert side["rows"] and all(r in want for r in side["rows"]), name
        assert (tmp_path / "f" / f"{name}.svg").stat().st_size > 1000
    from analysis.figures.view import write_view_figures
    from core.store.selection import Selection

    db = store.connect(db_path, create=False)
    try:  # the Results screen's Trace sweeps view: its three figures
        view = write_view_figures(db, Selection(), "trace_sweeps", tmp_path / "v", 20,
                                  formats=("svg",))
    finally:
        db.conn.close()
    assert [p.name for p in view.paths if p.suffix == ".svg"] == [f"{n}.svg" for n in
                                                                 TRACE_FIGURES]
    oa_cost = json.loads((tmp_path / "f" / "trace_oa_cost.json").read_text(encoding="utf-8"))
    assert oa_cost["rows"] == [r for r in want if r["measure"] in ("cost", "OA") and (
        r["scope"].startswith("budget ") or r["scope"] == "baseline")]


def test_a_results_views_figures_are_its_tables(figures: tuple[Path, Path, str], tmp_path: Path
                                               ) -> None:
    """The Results screen's `F` (analysis.figures.view): the view's figures only, their
    rows those of the table the view shows; a view without one writes nothing."""
    from analysis.figures.view import write_view_figures
    from core import store
    from core.store.selection import Selection

    db_path, out, _ = figures
    db = store.connect(db_path, create=False)
    try:
        written = write_view_figures(db, Selection(), "success", tmp_path / "s", RESAMPLES,
                                     formats=("svg",))
        assert [p.name for p in written.paths] == ["success_by_regime.svg",
                                                   "success_by_regime.json"]
        assert (tmp_path / "s" / "success_by_regime.svg").read_bytes() == \
            (out / "success_by_regime.svg").read_bytes()
        answering = write_view_figures(db, Selection(), "answering", tmp_path / "a",
                                       RESAMPLES, formats=("png",))
        assert [p.name for p in answering.paths] == ["answer_action_by_budget.png",
                                                     "answer_action_by_budget.json"]
        assert write_view_figures(db, Selection(), "nothing", tmp_path / "n", RESAMPLES
                                  ).paths == ()
    finally:
        db.conn.close()


def test_every_budget_and_mean6_are_drawn_when_asked(figures: tuple[Path, Path, str], tmp_path: Path
                                                    ) -> None:
    db, _, _ = figures
    code, _, err = lab(db, "figures", str(tmp_path / "b"), "--resamples", str(RESAMPLES),
                       "--format", "svg", "--table", "success", "--budgets", "all",
                       "--regimes", "mean6")
    assert code == 0, err
    side = json.loads((tmp_path / "b" / "success_by_regime.json").read_text(encoding="utf-8"))
    assert side["rows"] == results_json(db, "success")
    assert {r["budget"] for r in side["rows"]} == {8, 12}


def test_a_table_without_a_figure_says_so_in_one_line(figures: tuple[Path, Path, str],
                                                      tmp_path: Path) -> None:
    db, _, _ = figures
    code, stdout, stderr = lab(db, "figures", str(tmp_path / "c"), "--resamples", "10",
                               "--format", "svg", "--table", "index")
    assert code == 0, stderr
    assert stderr.strip().splitlines() == [
        "no figure draws the index table; `lab results index` prints it"]
    assert "wrote 0 figures" in stdout


def test_each_figure_declares_results_views_that_exist() -> None:
    """A figure names the Results views whose `F` writes it; every name is a view of the
    table registry, and every view of a table a figure draws is claimed by one."""
    from analysis.figures import FIGURES
    from analysis.tables.registry import views

    known = {v.id: t.name for v, t in views()}
    declared = {v for f in FIGURES for v in f.views}
    assert declared <= set(known)
    assert {v for v, t in known.items() if any(t in f.tables for f in FIGURES)
            } - declared == set()
    assert [f.name for f in FIGURES if "hazard" in f.views] == ["hazard_by_run",
                                                                 "hazard_slopes"]


def test_no_figure_drawn_leaves_no_empty_folder(figures: tuple[Path, Path, str], tmp_path: Path
                                               ) -> None:
    """Every figure asked for skipped: the folders made for them go again (the console's
    `F` on such a table left empty figures-VIEW-TIME folders behind)."""
    from analysis.figures import write_figures
    from analysis.figures.leaving import FIGURES as LEAVING
    from analysis.figures.study import study_rows
    from analysis.figures.style import STYLES
    from core import store
    from core.store.selection import Selection

    db_path, _, _ = figures
    db = store.connect(db_path)
    try:
        study = study_rows(db, Selection(models=("sim-own5",), conditions=("none",)), 10, 0,
                           names=("leaving",))
    finally:
        db.conn.close()
    (tmp_path / "kept").mkdir()
    written = write_figures(study, tmp_path / "kept" / "new" / "deeper", ("svg",),
                            STYLES["page"], LEAVING)
    assert written.paths == () and written.skipped[0][0] == "leaving"
    assert list((tmp_path / "kept").iterdir()) == []
