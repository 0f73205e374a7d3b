"""`lab report FILE.html`: one valid, self-contained page whose every results
table holds exactly the numbers of `lab results --format json`, with the figures inline,
the pre-registration's outcomes, freeze times, hashes and deviations, and provenance."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from analysis.figures.study import StudyRows
from analysis.report.tables import EXACT, LEFT_OUT, exact, fmt
from tests.helpers.console import copy_db
from tests.helpers.html_check import check_html, report_tables
from tests.helpers.report_study import RESAMPLES, lab, registered_study


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The study with a frozen amendment and a deviation, and its report."""
    db = registered_study(tmp_path_factory)
    path = tmp_path_factory.mktemp("report") / "study.html"
    code, out, err = lab(db, "report", str(path), "--resamples", str(RESAMPLES))
    assert code == 0, err
    assert out.startswith(f"wrote {path} (")
    return db, path.read_text(encoding="utf-8")


def test_the_page_is_valid_and_self_contained(report: tuple[Path, str]) -> None:
    _, html = report
    assert check_html(html) == []
    assert "<script>" in html and html.count("<script") == 1  # only the inline sorter
    assert "http://" not in html.replace('"http://www.w3.org/2000/svg"', "").replace(
        '"http://www.w3.org/1999/xlink"', "")


def test_html5lib_parses_it_strictly(report: tuple[Path, str]) -> None:
    import html5lib  # the test extra installs it
    _, html = report
    html5lib.HTMLParser(strict=True, namespaceHTMLElements=False).parse(html)


def test_every_table_holds_the_numbers_of_lab_results_json(report: tuple[Path, str]) -> None:
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


def test_covers_provenance_and_errored_counts(report: tuple[Path, str]) -> None:
    from core.version import project_version

    _, html = report
    assert f"lab {project_version()}" in html
    assert "git commit" in html
    assert "exploratory" in html or "governed by" in html
    assert "217 finished" in html and "1 without a complete retry" in html
    assert "model error: connection refused" in html  # the errored episode's reason


def test_the_preregistration_with_outcomes_hashes_and_deviations(report: tuple[Path, str]) -> None:
    db, html = report
    from core import store
    from core.store import prereg as rows

    a1 = rows.amendment(store.connect(db, create=False), "A1")
    assert a1["content_sha256"] in html and a1["frozen_at"] in html
    assert "one errored episode was run again" in html
    assert "Outcomes of the registered tests" in html and ">H1<" in html


def test_every_figure_is_inline_svg(report: tuple[Path, str]) -> None:
    _, html = report
    for name in ("success_by_regime", "delta_forest", "hazard_by_run", "leaving",
                 "risk_coverage", "regret_heatmap"):
        start = html.index(f'<figure id="figure-{name}"')
        assert html[start:start + 200].count("<svg ") == 1, name
    assert "<img" not in html


def test_a_report_needs_an_html_name(report: tuple[Path, str], tmp_path: Path) -> None:
    db, _ = report
    code, _, err = lab(db, "report", str(tmp_path / "study.pdf"))
    assert code != 0 and err.startswith("error: ") and "FILE.html" in err


def _order(html: str, *needles: str) -> list[int]:
    return [html.index(n) for n in needles]


def test_it_reads_top_down_title_time_runs_summary_then_outcomes(report: tuple[Path, str]) -> None:
    from core.version import project_version

    _, html = report
    at = _order(html, "<h1>", "Generated <time>", '<ul class="runs">', 'id="summary"',
                "<nav", 'id="outcomes"', 'id="figures"', 'id="tables"', 'id="covers"',
                'id="errored"', 'id="prereg"')
    assert at == sorted(at)
    header = html[html.index("<header>"):html.index("</header>")]
    assert f"lab {project_version()}" in header
    assert "<code>golden</code>" in header and "216 episodes" in header
    assert "answer-now probes" in header


def test_title_and_generation_time(report: tuple[Path, str], tmp_path: Path,
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    db, html = report
    assert "<title>lab report</title>" in html  # A1 governs no run of this selection
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1800000000")
    # one model's unaided arm: the title and time do not depend on what is drawn
    code, _, err = lab(db, "report", str(tmp_path / "t.html"), "--resamples", "5",
                       "--title", "Budget study <draft>", "--models", "sim-own5",
                       "--conditions", "none")
    assert code == 0, err
    page = (tmp_path / "t.html").read_text(encoding="utf-8")
    assert "<title>Budget study &lt;draft&gt;</title>" in page
    assert "<h1>Budget study &lt;draft&gt;</h1>" in page
    assert "Generated <time>2027-01-15 08:00:00 UTC</time>" in page


def test_the_title_defaults_to_the_governing_amendments() -> None:
    from analysis.report.summary import report_title

    study = _study({}, amendments=[{"id": "A1", "title": "Rule helps", "state": "frozen"}])
    assert report_title(study, None) == "Rule helps"
    assert report_title(study, "Mine") == "Mine"
    assert report_title(_study({}), None) == "lab report"


def test_the_summary_box_holds_verdicts_and_headline_contrasts(report: tuple[Path, str]) -> None:
    db, html = report
    box = html[html.index('id="summary"'):html.index("</section>", html.index('id="summary"'))]
    assert "1 n.a. (of 1)" in box
    assert "<strong>A1 H1</strong>" in box
    design = [r for r in json.loads(lab(db, "results", "delta", "--format", "json",
                                        "--resamples", str(RESAMPLES))[1])
              if r["measure"] == "design"]
    assert 0 < len(design) <= 8
    assert box.count("<li>") == len(design) + 1
    r = design[0]
    assert (f"{r['model']} · {r['arm']} · B{r['budget']}: {r['estimate']:+.2f} "
            f"[{r['ci_low']:+.2f}, {r['ci_high']:+.2f}]") in box


def test_headline_contrasts_name_what_tells_them_apart() -> None:
    """Headline lines of the same model, arm and budget from different runs (or datasets,
    sets, seeds, replicates) each name theirs; what all lines share is not repeated."""
    from analysis.report.summary import summary_html

    def design(run: str, dataset: str = "fever", estimate: float = 0.1) -> dict:
        return {"table": "delta", "measure": "design", "model": "sim-clock6",
                "arm": "enforced_rule", "budget": 8, "dataset": dataset, "question_set": "fv",
                "runs": run, "seeds": "0", "replicates": "0", "regimes": "pers.+late3",
                "estimate": estimate, "ci_low": 0.0, "ci_high": 0.2, "amendment": "A1"}

    def lines(rows: list[dict]) -> list[str]:
        box = summary_html(_study({"delta": rows}), [], lambda v: "")
        return re.findall(r"<li>(.*?): ", box)

    assert lines([design("fc"), design("fd")]) == [
        "sim-clock6 · enforced_rule · B8 · run fc", "sim-clock6 · enforced_rule · B8 · run fd"]
    assert lines([design("fc"), design("fc", "hotpotqa")]) == [
        "sim-clock6 · enforced_rule · B8 · fever", "sim-clock6 · enforced_rule · B8 · hotpotqa"]
    assert lines([design("fc")]) == ["sim-clock6 · enforced_rule · B8"]


def _paper_rows(html: str, name: str) -> list[list[str]]:
    import re

    start = html.index(f'<table class="paper" data-paper="{name}"')
    body = html[start:html.index("</table>", start)]
    rows = []
    for tr in re.findall(r"<tr[^>]*>(.*?)</tr>", body, re.S):
        cells = re.findall(r"<td[^>]*>(.*?)</td>", tr, re.S)
        if cells:
            rows.append([re.sub(r"\s*<span class=\"badge\">.*?</span>", "", c) for c in cells])
    return rows


@pytest.mark.parametrize("name", ["success", "delta", "hazard"])
def test_each_table_is_first_shown_as_the_terminal_prints_it(report: tuple[Path, str], name: str
                                                            ) -> None:
    import re
    from html import unescape

    db, html = report
    code, out, err = lab(db, "results", name, "--resamples", str(RESAMPLES))
    assert code == 0, err
    rows = _paper_rows(html, name)
    assert rows
    lines = out.splitlines()
    for cells in rows:
        pattern = r"^\s*" + r"\s+".join(re.escape(unescape(c)) for c in cells if c) + r"\s*$"
        assert any(re.match(pattern, line) for line in lines), (name, cells)
    # the exact rows stay in the page, collapsed under it
    start = html.index(f'id="table-{name}"')
    assert html.index("<details><summary>All ", start) < html.index(
        f'data-table="{name}"', start)


def test_every_exploratory_row_run_and_figure_carries_the_badge(report: tuple[Path, str]) -> None:
    import re

    _, html = report
    assert '<code>golden</code> <span class="badge">exploratory</span>' in html
    for tr in re.findall(r'<table class="paper".*?</table>', html, re.S):
        rows = re.findall(r"<tr[^>]*>.*?</tr>", tr, re.S)[1:]
        assert rows and all('class="badge"' in r and 'class="exploratory"' in r
                            for r in rows)
    captions = re.findall(r"<figcaption>.*?</figcaption>", html, re.S)
    assert len(captions) == 12  # every figure the study feeds (none of the trace states)
    assert all(c.startswith('<figcaption><span class="badge">exploratory') for c in captions)


def test_a_governed_row_has_no_badge() -> None:
    from analysis.report.summary import is_exploratory

    assert is_exploratory({"amendment": "exploratory"})
    assert is_exploratory({"amendment": "A1,exploratory"})
    assert not is_exploratory({"amendment": "A1"})
    assert not is_exploratory({"amendment": None})


def _study(rows: dict, amendments: list | None = None) -> StudyRows:
    from analysis.figures.study import StudyRows
    from core.store.selection import Selection

    return StudyRows((), rows, [], (), 0, "", 0, Selection(), 10, 0, amendments or [])


def test_trace_pseudo_arms_are_not_listed_as_arms() -> None:
    from analysis.report.sections import covers

    study = _study({"success": [{"model": "m", "arm": "none"}],
                    "trace_table1": [{"model": "t", "arm": "trace states"}]})
    html = covers(study, "0", "abc", "lab.db")
    arms = html[html.index("<dt>arms</dt>"):]
    arms = arms[:arms.index("</dd>")]
    assert "none" in arms and "trace states" not in arms
    models = html[html.index("<dt>models</dt>"):]
    assert "m, t" in models[:models.index("</dd>")]


def test_the_header_lists_trace_runs_probes_and_states(report: tuple[Path, str], tmp_path: Path
                                                      ) -> None:
    from core import store
    from core.store.runs import run_contents

    db_path, _ = report
    copy_db(db_path, tmp_path / "lab.db")
    db = store.connect(tmp_path / "lab.db", create=False)
    db.conn.execute("INSERT INTO traces (run, model, dataset, set_name, question_id, depth, "
                    "plan_sha256, created_at) VALUES ('seed2', 'm', 'demo', 'd6', 'q1', 0, "
                    "'x', 'now'), ('seed2', 'm', 'demo', 'd6', 'q1', 1, 'x', 'now')")
    db.conn.commit()
    contents = run_contents(db)
    assert [c["name"] for c in contents] == ["golden", "seed2"]
    golden, seed2 = contents
    assert golden["episodes"] == 216 and golden["probes"]["answer_now"] > 0
    assert golden["amendment"] is None and golden["states"] == 0
    assert seed2 == {"name": "seed2", "amendment": None, "episodes": 0, "probes": {},
                     "states": 2}
    from analysis.report.summary import runs_html

    assert "<code>seed2</code>" in runs_html(contents) and "2 trace states" in runs_html(
        contents)


def test_a_report_on_the_same_rows_draws_no_figure_again(
        report: tuple[Path, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`lab report` again on unchanged rows (the module's lab.db and its results cache,
    copied, with another title) serves every figure from the cache: nothing is drawn,
    and the figures are the module's report's SVG text. Rows that differ (another
    selection) are drawn again."""
    import re
    import shutil

    from analysis.base.cache import SUFFIX
    from analysis.report import figure_cache

    built, first = report
    db = copy_db(built, tmp_path / "lab.db")
    shutil.copytree(f"{built}{SUFFIX}", f"{db}{SUFFIX}")
    drawn: list[int] = []
    render = figure_cache.render_svgs

    def counted(*args: object, **kwargs: object) -> object:
        drawn.append(1)
        return render(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(figure_cache, "render_svgs", counted)

    def page(name: str, *args: str) -> str:
        code, _, err = lab(db, "report", str(tmp_path / name), "--resamples",
                           str(RESAMPLES), *args)
        assert code == 0, err
        return (tmp_path / name).read_text(encoding="utf-8")

    def figures(html: str) -> list[str]:
        return re.findall(r"<svg .*?</svg>", html, re.S)

    again = page("b.html", "--title", "Budget study, second look")
    assert drawn == []
    assert len(figures(first)) >= 8 and figures(again) == figures(first)
    assert "Budget study, second look" in again
    page("c.html", "--models", "sim-own5")
    assert len(drawn) == 1


def test_the_figures_key_changes_with_any_content_of_the_rows() -> None:
    """The report's figures are kept by `content_hash`: equal content gives one key,
    however it was built, and a changed value, row, table note or field another."""
    from dataclasses import replace

    from analysis.base.rows import Table
    from analysis.report.figure_cache import content_hash

    def study(value: float = 0.5, note: str = "n") -> StudyRows:
        rows = {"success": [{"model": "m", "arm": "none", "estimate": value}]}
        return replace(_study(rows), tables=(Table("success", "Success", (), (note,)),))

    assert content_hash(study()) == content_hash(study())
    keys = {content_hash(s) for s in (study(), study(0.25), study(note="other"),
                                      replace(study(), n_episodes=7),
                                      replace(study(), amendments=[{"id": "A1"}]))}
    assert len(keys) == 5


def _figures_params(options: list[str]) -> dict:
    """What `lab figures DIR OPTIONS` is called with: its own parser's values."""
    from console.cli.figures import figures_cmd

    return figures_cmd.make_context("figures", ["DIR", *options]).params


def test_the_figures_command_of_a_report_draws_every_row_of_its_selection() -> None:
    """A report's figure draws every row of the report's selection, where `lab figures`
    by default draws the declared ones (confirmatory runs, the primary budget, the main
    family). The options the report names, read by `lab figures`' own parser, declare
    every row of a study with a confirmatory and an exploratory run, two budgets and two
    regime families, and give back the report's filters, pooling, resamples, seed and
    gate: on the synthetic study, and with every filter and a changed gate and split."""
    from dataclasses import replace

    from analysis.figures.select import Declared, declare
    from analysis.replay.gate import Gate
    from analysis.report.sections import figures_options
    from analysis.tables.results import ResultsSpec
    from console.cli.figures import parse_budgets
    from console.cli.results import results_spec
    from core.store.selection import Selection, selection_from
    from tests.helpers.figure_rows import synthetic_study

    plain = synthetic_study()
    default, _ = declare(plain, Declared())
    assert sum(map(len, default.rows.values())) < sum(map(len, plain.rows.values()))
    filtered = synthetic_study(
        selection=Selection(sets=("d8", "d 9"), seeds=(0, 3), models=("sim-own5", "sim-never"),
                            conditions=("none", "enforced_rule:k=7,judge=true"),
                            regimes=("clean", "persistent"), pool=("seeds",)),
        resamples=120, seed=4,
        spec=ResultsSpec(gate=Gate(0.25, 0.8, 3), fit_depths="all", split_seed=2, judge=True))
    for study in (plain, filtered):
        p = _figures_params(figures_options(study))
        chosen, every_budget = parse_budgets(p["budgets"])
        declared = Declared(chosen, every_budget, p["family"], bool(p["runs"]))
        assert declare(study, declared)[0].rows == study.rows
        assert selection_from(p["runs"], p["sets"], p["seeds"], p["models"], p["conditions"],
                              p["regimes"], p["pool"]) == \
            replace(study.selection, runs=study.runs)
        assert (p["resamples"], p["seed"]) == (study.resamples, study.seed)
        spec = results_spec(p["resamples"], p["seed"], p["tau_lo"], p["tau_hi"],
                            p["max_retrievals"], p["fit_depths"], p["split_seed"], p["judge"])
        assert spec.trace_settings() == (study.spec or ResultsSpec()).trace_settings()


def test_the_reports_figures_command_draws_the_reports_rows(
        report: tuple[Path, str], tmp_path: Path) -> None:
    """The `lab figures` command the report's Figures section names, run as written (its
    success figures only, as SVG), writes sidecars whose rows are those the report's
    figures drew, as many as each caption counts."""
    import html as html_text
    import re
    import shlex

    import matplotlib.pyplot as plt
    from sqlite_utils import Database

    from analysis.figures import figures_for
    from analysis.figures.base import Skipped
    from analysis.figures.study import study_rows
    from analysis.figures.style import STYLES, styled
    from core.store.selection import Selection

    db, page = report
    shown = re.findall(r'<code class="command">(.*?)</code>', page)
    assert len(shown) == 1
    words = shlex.split(html_text.unescape(shown[0]))
    assert words[:3] == ["lab", "figures", "DIR"] and "--resamples" in words
    out = tmp_path / "figs"
    code, _, err = lab(db, "figures", str(out), *words[3:], "--table", "success",
                       "--format", "svg")
    assert code == 0, err
    study = study_rows(Database(db), Selection(), RESAMPLES, 0)
    drawn = 0
    for fig in figures_for(("success",)):
        with styled(STYLES["paper"]):
            built = fig.build(study, STYLES["paper"])
        if isinstance(built, Skipped):
            continue
        plt.close(built.figure)
        side = json.loads((out / f"{fig.name}.json").read_text(encoding="utf-8"))
        assert side["rows"] == built.rows
        assert f"{len(built.rows)} rows of table success)" in page
        drawn += 1
    assert drawn >= 1
