"""`lab report FILE.html`: one self-contained HTML page to send to a co-author
(docs/figures.md).

Inline CSS and SVG, no network, readable without JavaScript (a small inline script
sorts tables and zooms figures). Read top-down: the title (the governing amendment's or
`--title`), when and by which lab it was generated, every run in lab.db (episodes,
probes, trace states; governed or exploratory), a summary box (verdict counts, each
registered test's one-line result, the headline contrasts), the contents, the
outcomes, the figures (`analysis.figures`, numbered, at column width; drawn once per
rows and style, `analysis.report.figure_cache`), every results
table as the terminal prints it with its exact rows (those of `lab results --format
json`, exact values in each numeric cell's data-v) collapsed under it, then where the
numbers come from, errored records and the pre-registration in full. Every exploratory
run, row and figure carries a badge. Under 600 px the page is one column; printed,
tables wrap to the page's width.

Tables aggregate, so the file's size follows the number of groups, not of episodes
(`bench/report_size.py` measures it on the 198,000-episode scale study).
"""

from __future__ import annotations

from html import escape
from pathlib import Path

from sqlite_utils import Database

from analysis.figures.study import StudyRows, git_commit
from analysis.figures.style import STYLES
from analysis.report import sections, summary
from analysis.report.assets import CSS, SORT_JS
from analysis.report.figure_cache import report_svgs
from analysis.report.tables import numeric_css, table_html
from core.atomic_write import write_text_atomic
from core.store.connection import db_file
from core.store.selection import Selection


def build_report(db: Database, study: StudyRows, db_name: str = "lab.db",
                 style: str = "paper", title: str | None = None,
                 generated: str | None = None) -> str:
    """The report's HTML text, in the order a co-author reads it: title, time and lab
    version, every run, the summary box (verdicts, headline contrasts), the contents,
    the registered tests' outcomes, the figures, the results tables as the terminal
    prints them, then where the numbers come from, errored records and the
    pre-registration in full.

    Args:
        db: the open lab.db the study was read from (pre-registration, errored records).
        study: the results rows (`analysis.figures.study.study_rows`).
        db_name: the lab.db's name, as shown in the report.
        style: figure style, "paper" or "talk".
        title: the page's title (default: the governing amendment's, else "lab report").
        generated: when it was made (default `summary.generated_at()`).

    Returns:
        The whole HTML document.
    """
    from analysis.prereg.document import amendment_outcomes
    from core.store import prereg as prereg_rows
    from core.store.monitor import errored_by_reason
    from core.store.runs import run_contents
    from core.version import project_version

    version, commit = project_version(), git_commit()
    amendments = prereg_rows.amendments(db)
    frozen = [str(a["id"]) for a in amendments if a["state"] == "frozen"]
    outcomes = amendment_outcomes(db, frozen, study.resamples) if frozen else []
    deviations = {str(a["id"]): prereg_rows.deviations(db, str(a["id"])) for a in amendments}
    rendered = report_svgs(db_file(db), study, STYLES[style])
    numbers = sections.figure_number(rendered)
    name = summary.report_title(study, title)
    when = generated or summary.generated_at()
    toc = [("summary", "Summary"), ("outcomes", "Outcomes of the registered tests"),
           ("figures", "Figures"), ("tables", "Results tables"),
           ("covers", "What this covers"), ("errored", "Errored records"),
           ("prereg", "Pre-registration")]
    figure_toc = "".join(
        f'<li><a href="#figure-{escape(r.figure.name)}">Figure {numbers[r.figure.name]}. '
        f"{escape(r.figure.title)}</a></li>" for r in rendered if r.svg)
    table_toc = "".join(f'<li><a href="#table-{escape(t.name)}">{escape(t.name)}</a></li>'
                        for t in study.tables)
    nav = "".join(
        f'<li><a href="#{k}">{escape(v)}</a>'
        + (f"<ol>{figure_toc}</ol>" if k == "figures" and figure_toc else "")
        + (f'<ol class="inline">{table_toc}</ol>' if k == "tables" and table_toc else "")
        + "</li>" for k, v in toc)
    parts = [
        "<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f'<meta name="generator" content="lab {escape(version)}">',
        f"<title>{escape(name)}</title>",
        f"<style>{CSS}", *(numeric_css(t.name, study.table_rows(t.name)) for t in study.tables),
        "</style>", "</head>", "<body>",
        f"<header><h1>{escape(name)}</h1>",
        f'<p class="meta">Generated <time>{escape(when)}</time> · lab {escape(version)} · '
        f'commit <span class="hash">{escape(commit)}</span> · <code>{escape(db_name)}</code> · '
        f"{study.n_episodes:,} episodes in this selection</p>",
        summary.runs_html(run_contents(db)), "</header>",
        summary.summary_html(study, outcomes, sections.verdict_class),
        f'<nav aria-label="Contents"><h2>Contents</h2><ol>{nav}</ol></nav>',
        '<section id="outcomes"><h2>Outcomes of the registered tests</h2>',
        sections.outcomes(outcomes, amendments), "</section>",
        '<section id="figures"><h2>Figures</h2>',
        '<p class="note">Click a figure to zoom it to the window\'s width; click again '
        "to return.</p>", sections.figures_lead(study), sections.figures(rendered),
        "</section>",
        '<section id="tables"><h2>Results tables</h2>',
        '<p class="note">Each table as <code>lab results</code> prints it: estimates with 95% '
        "question-bootstrap intervals; n.a. or –: undefined. Under each, collapsed, every "
        "row with its exact values (sortable when JavaScript is on).</p>",
        *(table_html(t, study.table_rows(t.name)) for t in study.tables), "</section>",
        '<section id="covers"><h2>What this covers</h2>',
        sections.covers(study, version, commit, db_name), "</section>",
        '<section id="errored"><h2>Errored records</h2>',
        sections.errored(errored_by_reason(db)), "</section>",
        '<section id="prereg"><h2>Pre-registration</h2>',
        sections.prereg(amendments, deviations), "</section>",
        f"<script>{SORT_JS}</script>", "</body>", "</html>", ""]
    return "\n".join(parts)


def write_study_report(db: Database, path: Path, selection: Selection | None = None,
                       resamples: int = 2000, seed: int = 0, db_name: str = "lab.db",
                       style: str = "paper", title: str | None = None) -> tuple[Path, int]:
    """Compute the study's rows and write its report to `path` (`lab report`, and the
    console's Dashboard `W`).

    Args:
        db: an open lab.db.
        path: the .html file to write.
        selection: filters and pooling (default everything).
        resamples: question-level bootstrap resamples.
        seed: bootstrap seed.
        db_name: the lab.db's name, as shown in the report.
        style: figure style.
        title: the page's title (default: the governing amendment's).

    Returns:
        The path and the file's size in bytes.
    """
    from analysis.figures.study import study_rows

    study = study_rows(db, selection or Selection(), resamples, seed)
    html = build_report(db, study, db_name, style, title)
    write_text_atomic(path, html)
    return path, len(html.encode("utf-8"))
