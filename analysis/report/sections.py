"""The report's sections as HTML fragments: what the study covers and pools, the
errored records, the pre-registration with its outcomes, and the figures."""

from __future__ import annotations

import json
from dataclasses import asdict
from html import escape
from typing import Any

from analysis.base.cache import hazard_resamples
from analysis.figures import Rendered
from analysis.figures.study import StudyRows
from analysis.report.summary import EXPLORATORY_BADGE, is_exploratory
from analysis.report.svg import inline_svg


def facts(pairs: list[tuple[str, str]]) -> str:
    """A definition list of (term, already-escaped HTML) pairs."""
    return '<dl class="facts">' + "".join(f"<dt>{escape(k)}</dt><dd>{v}</dd>"
                                          for k, v in pairs) + "</dl>"


def _distinct(study: StudyRows, field: str, episodes_only: bool = False) -> list[str]:
    """The values of `field` over every table's rows, or only the episode tables' (the
    trace and probe tables' pseudo-arms, such as trace states, are not arms)."""
    from analysis.tables.registry import EPISODES, table_names

    values: dict[str, None] = {}
    episode_tables = set(table_names(EPISODES))
    for name, rows in study.rows.items():
        if episodes_only and name not in episode_tables:
            continue
        for r in rows:
            for v in str(r.get(field) or "").split(","):
                if v:
                    values[v] = None
    return list(values)


def covers(study: StudyRows, version: str, commit: str, db_name: str) -> str:
    """Where the numbers come from: lab version and commit, the selection, what the rows
    cover and pool, each run's amendment and deviations."""
    selection = {k: v for k, v in asdict(study.selection).items() if v}
    runs = []
    for p in study.provenance:
        state = (f"governed by <code>{escape(str(p['amendment']))}</code>" if p["amendment"]
                 else "<strong>exploratory</strong> (no governing amendment)")
        devs = "".join(f"<li>{escape(str(d))}</li>" for d in p["deviations"])
        runs.append(f"<li><code>{escape(str(p['run']))}</code>: {state}"
                    + (f"<ul>{devs}</ul>" if devs else "") + "</li>")
    models, arms = _distinct(study, "model"), _distinct(study, "arm", episodes_only=True)
    pairs = [
        ("lab version", escape(version)),
        ("git commit", f'<span class="hash">{escape(commit)}</span>'),
        ("database", f"<code>{escape(db_name)}</code>"),
        ("selection", escape(json.dumps(selection, ensure_ascii=False)) if selection
         else "everything in lab.db"),
        ("pooled", escape(study.pooled) if study.pooled else
         "nothing: every run, seed, replicate and question set has its own rows"),
        ("episodes", f"{study.n_episodes:,} finished (errored ones left out of every "
                     f"estimate: {study.errored:,} without a complete retry)"),
        ("models", escape(", ".join(models))),
        ("arms", escape(", ".join(arms))),
        ("regimes", escape(", ".join(_distinct(study, "regimes")))),
        ("datasets", escape(", ".join(_distinct(study, "dataset")))),
        ("question sets", escape(", ".join(_distinct(study, "question_set")) or "(none named)")),
        ("seeds", escape(", ".join(_distinct(study, "seeds")))),
        ("bootstrap", f"{study.resamples:,} question-level resamples (hazard model: "
                      f"{hazard_resamples(study.resamples):,}), seed {study.seed}"),
    ]
    return (facts(pairs) + "<h3>Runs</h3><ul>" + "".join(runs) + "</ul>")


def errored(reasons: list[Any]) -> str:
    """Errored episodes and probes in lab.db by reason (`errored_by_reason`)."""
    if not reasons:
        return "<p>No errored episodes or probes in lab.db.</p>"
    rows = "".join(f"<tr><td>{escape(r.unit)}</td><td>{escape(r.reason)}</td>"
                   f'<td class="num">{r.count:,}</td><td>{escape(r.example)}</td></tr>'
                   for r in reasons)
    return ('<div class="scroll"><table class="sortable" data-table="errored"><thead><tr>'
            '<th scope="col">unit</th><th scope="col">reason</th><th scope="col" '
            'class="num">count</th><th scope="col">last example</th></tr></thead><tbody>'
            + rows + "</tbody></table></div><p class=\"note\">Counts cover all of lab.db; "
            "each results row's <code>errored</code> column counts its own group's.</p>")


def verdict_class(verdict: str) -> str:
    low = verdict.lower()
    if low.startswith("supported") or low == "pass":
        return "verdict-supported"
    if low.startswith("not") or low.startswith("fail"):
        return "verdict-not"
    return ""


def prereg(amendments: list[dict[str, Any]], deviations: dict[str, list[dict[str, Any]]]
           ) -> str:
    """Every amendment: state, freeze time, hashes, tests, deviations."""
    if not amendments:
        return ("<p>No pre-registration in lab.db: every run is exploratory "
                "(<code>lab prereg new</code> drafts one).</p>")
    frozen = sum(1 for a in amendments if a["state"] == "frozen")
    entries = "entry" if len(amendments) == 1 else "entries"
    out = [f"<p>{len(amendments)} {entries}, {frozen} frozen. Hashes are sha256; each frozen "
           "entry's hash covers its content, its pins and the previous frozen entry's "
           "hash.</p>"]
    for a in amendments:
        out.append(f"<h3>{escape(str(a['id']))}: {escape(str(a['title']))}</h3>")
        if a["state"] == "frozen":
            out.append(facts([
                ("frozen", f"{escape(str(a['frozen_at']))} (lab {escape(str(a['version']))})"),
                ("sha256", f'<span class="hash">{escape(str(a["content_sha256"]))}</span>'),
                ("previous", f'<span class="hash">{escape(str(a["prev_sha256"]))}</span>'),
                ("data at freeze", escape("; ".join(
                    f"run {d['run']} cell {d['cell']} ({d['episodes']} episodes)"
                    for d in a["data_existed"])) if a["data_existed"] else "none")]))
        else:
            out.append('<p class="warn">Draft: not frozen, so nothing is registered yet.</p>')
        body = str(a["body"] or "").strip()
        out.append(f"<pre>{escape(body) or '(no body)'}</pre>" if body else
                   '<p class="muted">(no body)</p>')
        out.append(f"<p class=\"muted\">Scope: <code>{escape(json.dumps(a['scope']))}</code></p>")
        if a["tests"]:
            out.append('<div class="scroll"><table><thead><tr><th scope="col">test</th>'
                       '<th scope="col">rule</th></tr></thead><tbody>' + "".join(
                           f"<tr><td>{escape(str(t['id']))}</td><td><code>"
                           f"{escape(json.dumps({k: v for k, v in t.items() if k != 'id'}))}"
                           "</code></td></tr>" for t in a["tests"]) + "</tbody></table></div>")
        for d in deviations.get(str(a["id"]), []):
            out.append(f"<p class=\"warn\"><strong>Deviation {escape(str(d['id']))}</strong> "
                       f"({escape(str(d['created_at'])[:19])}): {escape(str(d['text']))}</p>")
    return "\n".join(out)


def outcomes(results: list[Any], amendments: list[dict[str, Any]]) -> str:
    """Every frozen amendment's registered tests with their outcome on the runs they
    govern (verdict, numbers, runs, whether every episode came after the freeze)."""
    if not results:
        frozen = any(a["state"] == "frozen" for a in amendments)
        return "<p>No registered test has an outcome: " + (
            "the frozen amendments register none.</p>" if frozen else
            "no amendment is frozen, so every run is exploratory.</p>")
    rows = []
    for o in results:
        after = ("–" if o.after_freeze is None else "all" if o.after_freeze
                 else "none" if o.n_before >= o.n_episodes else f"{o.n_before} before")
        rows.append(
            f"<tr><td>{escape(o.amendment)}</td><td>{escape(o.id)}</td>"
            f"<td>{escape(o.prediction)}</td>"
            f'<td class="{verdict_class(o.verdict)}">{escape(o.verdict)}</td>'
            f"<td>{escape(o.numbers)}</td><td>{escape(', '.join(o.runs) or '–')}</td>"
            f'<td class="num">{escape(after)} ({o.n_episodes:,})</td></tr>')
    return ('<div class="scroll"><table class="sortable" data-table="outcomes"><thead>'
            '<tr><th scope="col">amendment</th><th scope="col">test</th>'
            '<th scope="col">prediction</th><th scope="col">verdict</th>'
            '<th scope="col">numbers</th><th scope="col">runs</th>'
            '<th scope="col" class="num">episodes after freeze</th></tr></thead><tbody>'
            + "".join(rows) + "</tbody></table></div>")


def figure_number(rendered: list[Rendered]) -> dict[str, int]:
    """Figure name -> its number in the page (drawn figures only, from 1)."""
    drawn = [r.figure.name for r in rendered if r.svg]
    return {name: i + 1 for i, name in enumerate(drawn)}


def figures_options(study: StudyRows) -> list[str]:
    """The `lab figures` options that draw the rows of the report's figures.

    The report draws every row of its selection, where `lab figures` by default draws
    the declared ones (confirmatory runs, the primary budget, the main family;
    `analysis.figures.select`): every run named, every budget and every family draw them
    all. Then the report's own filters and pooling, its resamples and seed, and the
    gate, fit, split and labels the controllers' and trace tables were computed with
    where they are not the defaults.
    """
    from analysis.replay.gate import Gate
    from analysis.tables.results import ResultsSpec

    sel = study.selection
    spec = study.spec or ResultsSpec()
    gate, default_gate = spec.gate or Gate(), Gate()
    options = [o for run in study.runs for o in ("--run", run)]
    options += [o for name in sel.sets for o in ("--set", name)]
    for flag, values in (("--seeds", sel.seeds), ("--models", sel.models),
                         ("--conditions", sel.conditions), ("--regimes", sel.regimes),
                         ("--pool", sel.pool)):
        if values:
            options += [flag, ",".join(map(str, values))]
    options += ["--budgets", "all", "--family", "all", "--resamples", str(study.resamples),
                "--seed", str(study.seed)]
    for flag, value, default in (
            ("--tau-lo", gate.tau_lo, default_gate.tau_lo),
            ("--tau-hi", gate.tau_hi, default_gate.tau_hi),
            ("--max-retrievals", gate.max_retrievals, default_gate.max_retrievals),
            ("--fit-depths", spec.fit_depths, ResultsSpec.fit_depths),
            ("--split-seed", spec.split_seed, ResultsSpec.split_seed)):
        if value != default:
            options += [flag, f"{value:g}" if isinstance(value, float) else str(value)]
    return options + (["--judge"] if spec.judge else [])


def figures_lead(study: StudyRows) -> str:
    """What the figures draw, and the `lab figures` command that draws the same rows."""
    import shlex

    command = shlex.join(["lab", "figures", "DIR", *figures_options(study)])
    return ('<p class="note">Each figure draws every row of this report\'s selection: '
            "every run, budget and regime family (a figure drawing a row of an exploratory "
            "run is badged). By default <code>lab figures</code> draws only the declared "
            "ones (the confirmatory runs at the primary budget in the main family); "
            f'<code class="command">{escape(command)}</code> draws the same rows as these, '
            "each figure with a sidecar .json of them.</p>")


def figures(rendered: list[Rendered]) -> str:
    """Every figure inline as SVG at column width (a click zooms it to the window's
    width), numbered, with its caption and the exploratory badge when a row it draws
    covers an exploratory run; the skipped ones listed with why."""
    out = []
    skipped = []
    numbers = figure_number(rendered)
    for i, r in enumerate(rendered):
        if not r.svg:
            skipped.append(f"<li><strong>{escape(r.figure.title)}</strong>: "
                           f"{escape(r.note)}</li>")
            continue
        badge = f"{EXPLORATORY_BADGE} " if any(is_exploratory(row) for row in r.rows) else ""
        out.append(f'<figure id="figure-{escape(r.figure.name)}" class="zoomable" '
                   'title="Click to zoom">' + inline_svg(r.svg, f"f{i}-", r.figure.title)
                   + f"<figcaption>{badge}<strong>Figure {numbers[r.figure.name]}. "
                   f"{escape(r.figure.title)}.</strong> "
                   f"{escape(r.note)} ({len(r.rows)} rows of table "
                   f"{escape(', '.join(r.figure.tables))})</figcaption></figure>")
    if skipped:
        out.append("<p>Not drawn, for lack of rows in this selection:</p><ul>"
                   + "".join(skipped) + "</ul>")
    return "\n".join(out)
