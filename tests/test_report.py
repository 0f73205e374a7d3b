"""`lab report FILE.html` (SPEC §14): one valid, self-contained page whose every results
table holds exactly the numbers of `lab results --format json`, with the figures inline,
the pre-registration's outcomes, freeze times, hashes and deviations, and provenance."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from analysis.report.tables import EXACT, LEFT_OUT, exact, fmt
from tests.helpers.html_check import check_html, report_tables
from tests.helpers.report_study import RESAMPLES, lab, study_db

PREREG_TESTS = [{"id": "H1", "kind": "paired_diff", "metric": "mean6", "a": "enforced_rule:k=3",
                 "b": "none", "alternative": "greater", "models": ["sim-own5"],
                 "runs": ["golden"]}]
PREREG_SCOPE = {"models": ["sim-own5"], "conditions": ["none", "enforced_rule:k=3"],
                "regimes": ["clean", "persistent"], "question_sets": ["d6"], "budgets": [8]}


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The study with a frozen amendment and a deviation, and its report."""
    where = tmp_path_factory.mktemp("report")
    db = where / "lab.db"
    shutil.copy(study_db(tmp_path_factory), db)
    (where / "tests.json").write_text(json.dumps(PREREG_TESTS), encoding="utf-8")
    (where / "scope.json").write_text(json.dumps(PREREG_SCOPE), encoding="utf-8")
    for args in (("sets", "create", "d6", "--dataset", "demo", "--n", "6", "--seed", "1"),
                 ("prereg", "new", "--title", "Rule helps", "--tests", str(where / "tests.json"),
                  "--scope", str(where / "scope.json")),
                 ("prereg", "freeze", "A1", "--yes"),
                 ("prereg", "deviation", "A1", "one errored episode was run again")):
        code, _, err = lab(db, *args)
        assert code == 0, (args, err)
    code, out, err = lab(db, "report", str(where / "study.html"), "--resamples", str(RESAMPLES))
    assert code == 0, err
    assert out.startswith(f"wrote {where / 'study.html'} (")
    return db, (where / "study.html").read_text(encoding="utf-8")


def test_the_page_is_valid_and_self_contained(report):
    _, html = report
    assert check_html(html) == []
    assert "<script>" in html and html.count("<script") == 1  # only the inline sorter
    assert "http://" not in html.replace('"http://www.w3.org/2000/svg"', "").replace(
        '"http://www.w3.org/1999/xlink"', "")


def test_html5lib_parses_it_strictly(report):
    import html5lib  # the test extra installs it
    _, html = report
    html5lib.HTMLParser(strict=True, namespaceHTMLElements=False).parse(html)


def test_every_table_holds_the_numbers_of_lab_results_json(report):
    db, html = report
    code, out, err = lab(db, "results", "all", "--format", "json", "--resamples", str(RESAMPLES))
    assert code == 0, err
    want: dict[str, list[dict]] = {}
    for row in json.loads(out):
        want.setdefault(row["table"], []).append(row)
    for name in ("policies", "controllers"):
        code, out, err = lab(db, "results", name, "--format", "json", "--resamples",
                             str(RESAMPLES))
        assert code == 0, err
        want[name] = json.loads(out)
    got = report_tables(html)
    assert set(want) <= set(got), set(want) - set(got)
    for name, rows in want.items():
        shown = [r for r in rows if r["measure"] not in LEFT_OUT.get(name, ())]
        if name == "policies":  # per-policy rows are counted on the page, not shown
            assert len(shown) < len(rows) and f"{len(rows) - len(shown):,} rows (" in html
        rows = shown
        assert len(got[name]) == len(rows), name
        for i, (cells, row) in enumerate(zip(got[name], rows)):
            for field, cell in cells.items():
                if field in EXACT:
                    assert cell["v"] == exact(row[field]), (name, i, field)
                assert cell["text"] == fmt(row[field], field), (name, i, field)


def test_covers_provenance_and_errored_counts(report):
    from core.version import project_version

    _, html = report
    assert f"lab {project_version()}" in html
    assert "git commit" in html
    assert "exploratory" in html or "governed by" in html
    assert "217 finished" in html and "1 without a complete retry" in html
    assert "model error: connection refused" in html  # the errored episode's reason


def test_the_preregistration_with_outcomes_hashes_and_deviations(report):
    db, html = report
    from core import store
    from core.store import prereg as rows

    a1 = rows.amendment(store.connect(db, create=False), "A1")
    assert a1["content_sha256"] in html and a1["frozen_at"] in html
    assert "one errored episode was run again" in html
    assert "Outcomes of the registered tests" in html and ">H1<" in html


def test_every_figure_is_inline_svg(report):
    _, html = report
    for name in ("success_by_regime", "delta_forest", "hazard_by_run", "leaving",
                 "risk_coverage", "regret_heatmap"):
        start = html.index(f'<figure id="figure-{name}">')
        assert html[start:start + 200].count("<svg ") == 1, name
    assert "<img" not in html


def test_a_report_needs_an_html_name(report, tmp_path):
    db, _ = report
    code, _, err = lab(db, "report", str(tmp_path / "study.pdf"))
    assert code != 0 and err.startswith("error: ") and "FILE.html" in err
