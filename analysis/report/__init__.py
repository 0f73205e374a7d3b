"""`lab report FILE.html`: one self-contained HTML page to send to a co-author (SPEC §14).

Inline CSS and SVG, no network, readable without JavaScript (a small inline script only
sorts tables). Sections: where the numbers come from (lab version, git commit,
selection, what the rows cover and pool, runs and their amendments), errored records,
the figures (`analysis.figures`), every results table (the rows of `lab results
--format json`, exact values in each numeric cell's data-v), and the pre-registration
with each registered test's outcome, freeze times, hashes and deviations.

Tables aggregate, so the file's size follows the number of groups, not of episodes
(`bench/report_size.py` measures it on the 198,000-episode scale study).
"""

from __future__ import annotations

from html import escape
from pathlib import Path

from sqlite_utils import Database

from analysis.figures import render_svgs
from analysis.figures.study import StudyRows, git_commit
from analysis.figures.style import STYLES
from analysis.report import sections
from analysis.report.assets import CSS, SORT_JS
from analysis.report.tables import numeric_css, table_html
from core.atomic_write import write_text_atomic
from core.store.selection import Selection


def build_report(db: Database, study: StudyRows, db_name: str = "lab.db",
                 style: str = "paper") -> str:
    """The report's HTML text.

    Args:
        db: the open lab.db the study was read from (pre-registration, errored records).
        study: the results rows (`analysis.figures.study.study_rows`).
        db_name: the lab.db's name, as shown in the report.
        style: figure style, "paper" or "talk".

    Returns:
        The whole HTML document.
    """
    from analysis.prereg.document import amendment_outcomes
    from core.store import prereg as prereg_rows
    from core.store.monitor import errored_by_reason
    from core.version import project_version

    version, commit = project_version(), git_commit()
    amendments = prereg_rows.amendments(db)
    frozen = [str(a["id"]) for a in amendments if a["state"] == "frozen"]
    outcomes = amendment_outcomes(db, frozen, study.resamples) if frozen else []
    deviations = {str(a["id"]): prereg_rows.deviations(db, str(a["id"])) for a in amendments}
    rendered = render_svgs(study, STYLES[style])
    toc = [("covers", "What this covers"), ("errored", "Errored records"),
           ("figures", "Figures"), ("tables", "Results tables"),
           ("prereg", "Pre-registration and outcomes")]
    parts = [
        "<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>lab report: {escape(', '.join(study.runs) or 'study')}</title>",
        f"<style>{CSS}", *(numeric_css(t.name, study.table_rows(t.name)) for t in study.tables),
        "</style>", "</head>", "<body>",
        "<header><h1>lab report</h1>",
        f'<p class="meta">Runs {escape(", ".join(study.runs))} · {study.n_episodes:,} '
        f"episodes · lab {escape(version)} · commit <span class=\"hash\">{escape(commit)}"
        "</span></p></header>",
        "<nav><ol>" + "".join(f'<li><a href="#{k}">{escape(v)}</a></li>' for k, v in toc)
        + "".join(f'<li><a href="#table-{escape(t.name)}">table {escape(t.name)}</a></li>'
                  for t in study.tables) + "</ol></nav>",
        '<section id="covers"><h2>What this covers</h2>',
        sections.covers(study, version, commit, db_name), "</section>",
        '<section id="errored"><h2>Errored records</h2>',
        sections.errored(errored_by_reason(db)), "</section>",
        '<section id="figures"><h2>Figures</h2>', sections.figures(rendered), "</section>",
        '<section id="tables"><h2>Results tables</h2>',
        '<p class="note">Estimates with 95% question-bootstrap intervals; n.a.: undefined. '
        "Click a column header to sort (JavaScript); the page reads the same without it.</p>",
        *(table_html(t, study.table_rows(t.name)) for t in study.tables), "</section>",
        '<section id="prereg"><h2>Pre-registration and outcomes</h2>',
        sections.prereg(amendments, deviations, outcomes), "</section>",
        f"<script>{SORT_JS}</script>", "</body>", "</html>", ""]
    return "\n".join(parts)


def write_study_report(db: Database, path: Path, selection: Selection | None = None,
                       resamples: int = 2000, seed: int = 0, db_name: str = "lab.db",
                       style: str = "paper") -> tuple[Path, int]:
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

    Returns:
        The path and the file's size in bytes.
    """
    from analysis.figures.study import study_rows

    study = study_rows(db, selection or Selection(), resamples, seed)
    html = build_report(db, study, db_name, style)
    write_text_atomic(path, html)
    return path, len(html.encode("utf-8"))
