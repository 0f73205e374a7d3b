"""The top of the report, what a co-author reads first: the title, when and by which lab
it was made, every run in lab.db (episodes, probes, trace states; confirmatory or
exploratory), and a summary box with the verdict counts, each registered test's
one-line result and the headline contrasts."""

from __future__ import annotations

import os
from collections import Counter
from datetime import UTC, datetime
from html import escape
from typing import Any

from analysis.figures.study import RowDict, StudyRows

EXPLORATORY_BADGE = '<span class="badge">exploratory</span>'
"""The mark on every exploratory run, row and figure."""
HEADLINES = 8
"""Headline contrasts shown in the summary box; the rest are in the Δ table."""


def generated_at(now: datetime | None = None) -> str:
    """When the report was made, as UTC ISO 8601 to the second.

    Args:
        now: the time (default: now, or ``SOURCE_DATE_EPOCH`` when set, so a build that
            must be reproducible byte for byte can fix it).

    Returns:
        e.g. "2026-12-04 19:57:06 UTC".
    """
    if now is None:
        epoch = os.environ.get("SOURCE_DATE_EPOCH", "").strip()
        now = (datetime.fromtimestamp(int(epoch), UTC) if epoch.isdigit()
               else datetime.now(UTC))
    return now.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def report_title(study: StudyRows, title: str | None) -> str:
    """The page's title: `title` when given, else the title of the amendment that governs
    the selection's runs (the first, when several), else "lab report"."""
    if title:
        return title
    for a in study.amendments:
        if a.get("state") == "frozen" and a.get("title"):
            return str(a["title"])
    return "lab report"


def is_exploratory(row: RowDict) -> bool:
    """Whether a results row covers a run no frozen amendment governs."""
    return "exploratory" in str(row.get("amendment") or "").split(",")


def runs_html(contents: list[dict[str, Any]]) -> str:
    """Every run of lab.db as one line each: its amendment (or the exploratory badge),
    its finished episodes, probes by kind and trace states."""
    if not contents:
        return '<p class="meta">No runs in lab.db.</p>'
    items = []
    for run in contents:
        held = []
        if run["episodes"]:
            held.append(f"{run['episodes']:,} episodes")
        held += [f"{n:,} {kind.replace('_', '-')} probes" for kind, n in run["probes"].items()]
        if run["states"]:
            held.append(f"{run['states']:,} trace states")
        state = (f"governed by <code>{escape(str(run['amendment']))}</code>"
                 if run["amendment"] else EXPLORATORY_BADGE)
        items.append(f"<li><code>{escape(run['name'])}</code> {state} · "
                     f"{escape(' · '.join(held) or 'nothing stored yet')}</li>")
    return '<ul class="runs">' + "".join(items) + "</ul>"


def _verdict_counts(outcomes: list[Any]) -> str:
    counts = Counter(o.verdict for o in outcomes)
    return " · ".join(f"{n} {escape(v)}" for v, n in counts.most_common())


def _interval(row: RowDict) -> str:
    def num(x: Any) -> str:
        return "n.a." if x is None or isinstance(x, str) else f"{x:+.2f}"
    return f"{num(row['estimate'])} [{num(row['ci_low'])}, {num(row['ci_high'])}]"


APART = (("dataset", "{}"), ("question_set", "set {}"), ("runs", "run {}"),
         ("seeds", "seed {}"), ("replicates", "rep {}"), ("regimes", "{}"))
"""Row fields that tell headline contrasts apart beside model, arm and budget, and how a
line names each: only the fields whose values differ among the lines are named."""


def apart(rows: list[RowDict]) -> list[str]:
    """Each row's `APART` fields that differ among `rows`, as a " · "-joined text ("" for a
    row when none differ)."""
    varying = [(f, text) for f, text in APART if len({str(r.get(f) or "") for r in rows}) > 1]
    return [" · ".join(text.format(r[f]) for f, text in varying if r.get(f) not in (None, ""))
            for r in rows]


def headline_rows(study: StudyRows) -> list[RowDict]:
    """The headline contrasts: the Δ table's design contrast (persistent minus late onset)
    of every model and arm."""
    return [r for r in study.table_rows("delta") if r["measure"] == "design"]


def summary_html(study: StudyRows, outcomes: list[Any], verdict_class: Any) -> str:
    """The summary box: verdict counts, one line per registered test, headline contrasts.

    Args:
        study: the results rows.
        outcomes: the registered tests' outcomes (`amendment_outcomes`).
        verdict_class: verdict text -> CSS class (green, red or none).

    Returns:
        A `<section id="summary">` element.
    """
    out = ['<section id="summary" class="summary"><h2>Summary</h2>']
    if outcomes:
        out.append(f"<p><strong>Registered tests:</strong> {_verdict_counts(outcomes)} "
                   f"(of {len(outcomes)}).</p><ul class=\"verdicts\">")
        for o in outcomes:
            out.append(f"<li><strong>{escape(o.amendment)} {escape(o.id)}</strong> "
                       f"<span class=\"{verdict_class(o.verdict)}\">{escape(o.verdict)}"
                       f"</span>: {escape(o.prediction)} — {escape(o.numbers)}</li>")
        out.append("</ul>")
    else:
        out.append("<p><strong>Registered tests:</strong> none frozen; every result below is "
                   f"{EXPLORATORY_BADGE}.</p>")
    heads = headline_rows(study)
    if heads:
        out.append("<p><strong>Headline contrasts</strong> (Δ design: persistent − late "
                   "onset, 95% question-bootstrap interval):</p><ul class=\"headlines\">")
        for r, where in zip(heads[:HEADLINES], apart(heads)):
            badge = f" {EXPLORATORY_BADGE}" if is_exploratory(r) else ""
            where = f" · {escape(where)}" if where else ""
            out.append(f"<li>{escape(str(r['model']))} · {escape(str(r['arm']))} · "
                       f"B{escape(str(r['budget']))}{where}: {escape(_interval(r))}{badge}"
                       "</li>")
        out.append("</ul>")
        if len(heads) > HEADLINES:
            out.append(f'<p class="note">{len(heads) - HEADLINES} more in '
                       '<a href="#table-delta">table delta</a>.</p>')
    episodes = f"{study.n_episodes:,} finished episodes"
    errored = f", {study.errored:,} errored left out" if study.errored else ""
    out.append(f'<p class="note">{episodes}{errored}; details under '
               '<a href="#outcomes">Outcomes</a> and <a href="#covers">What this covers'
               "</a>.</p></section>")
    return "\n".join(out)
