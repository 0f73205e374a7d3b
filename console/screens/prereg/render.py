"""Text for the Pre-registration screen: amendment documents, pins, outcomes, diffs.

Pure functions from the rows that core.prereg / core.store.prereg / analysis.prereg.outcomes
return to Markdown strings and Rich `Text`; no lab.db, no statistics. Every state
and verdict is a word and a sign, never a colour alone (16 colours, NO_COLOR).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

from rich.text import Text

from core.wording import plural

STATE_MARK: Mapping[str, str] = MappingProxyType({"frozen": "■ frozen", "draft": "✎ draft"})
VERDICT_STYLE: Mapping[str, tuple[str, str]] = MappingProxyType({
    "pass": ("✓ pass", "bold green"),
    "fail": ("✗ fail", "bold red"),
    "partial": ("◐ partial", "bold yellow"),
    "n.a.": ("– n.a.", "dim"),
})


def short_hash(digest: str | None, n: int = 12) -> str:
    """The first `n` hex digits of a sha256, or "-" when there is none."""
    return digest[:n] if digest else "-"


def state_text(state: str) -> str:
    """An amendment's state as a sign and a word."""
    return STATE_MARK.get(state, state)


def verdict_text(verdict: str) -> Text:
    """A verdict as a sign, a word and a colour (the colour is never the only cue)."""
    word, style = VERDICT_STYLE.get(verdict, (verdict, ""))
    return Text(word, style=style)


def _json_inline(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False)


def existed_line(existed: Sequence[Mapping[str, Any]] | None) -> str:
    """'Data existed at freeze' in words: no, or how many episodes in which runs/cells."""
    if not existed:
        return "no episodes in its scope existed"
    episodes = sum(int(d["episodes"]) for d in existed)
    runs = sorted({str(d["run"]) for d in existed})
    return (f"YES: {plural(episodes, 'episode')} in {plural(len(existed), 'cell')} already existed "
            f"(runs {', '.join(runs)})")


def amendment_markdown(row: Mapping[str, Any],
                       deviations: Sequence[Mapping[str, Any]] = ()) -> str:
    """One amendment as Markdown: title, state, hashes, scope, registered tests, body.

    Args:
        row: the amendment row (core.store.prereg.amendment).
        deviations: its deviations, oldest first.
    """
    out = [f"## {row['id']}: {row['title']}", ""]
    if row["state"] == "frozen":
        out += [f"**{state_text('frozen')}** at {str(row['frozen_at'])[:19]} UTC "
                f"(lab {row['version']})  ",
                f"sha256 `{short_hash(row['content_sha256'], 16)}…` · previous "
                f"`{short_hash(row['prev_sha256'], 16)}…`  ",
                f"Data at freeze: {existed_line(row.get('data_existed'))}", ""]
    else:
        out += [f"**{state_text('draft')}**: editable (`e`), not yet governing any run; "
                f"`f` freezes it.", ""]
    out += ["### Scope", ""]
    scope = row.get("scope") or {}
    if scope:
        out += [f"- **{key}**: {', '.join(map(str, values))}" for key, values in scope.items()]
    else:
        out.append("_no scope yet: a draft needs one before it can be frozen_")
    out += ["", f"### Registered tests ({len(row.get('tests') or [])})", ""]
    for test in row.get("tests") or []:
        rule = {k: v for k, v in test.items() if k != "id"}
        out.append(f"- **{test['id']}** `{_json_inline(rule)}`")
    if not row.get("tests"):
        out.append("_none_")
    if deviations:
        out += ["", f"### Deviations ({len(deviations)})", ""]
        out += [f"- **{d['id']}** ({str(d['created_at'])[:19]}): {d['text']}" for d in deviations]
    out += ["", "### Body", "", (row.get("body") or "").rstrip() or "_(no body)_"]
    return "\n".join(out) + "\n"


def pins_text(pins: Mapping[str, Mapping[str, str]]) -> Text:
    """What a freeze pins, one item a line with its sha256's first 12 hex digits (the
    section's title says so once, so a line fits beside the amendment list)."""
    out = Text()
    titles = (("prompts", "prompt files"), ("question_sets", "question sets"),
              ("conditions", "condition specs"), ("regimes", "regime specs"),
              ("models", "model specs"))
    for key, title in titles:
        items = pins.get(key) or {}
        out.append(f"{title} ({len(items)}){', sha256' if items else ''}\n", style="bold")
        if not items:
            out.append("  none\n")
        width = max((len(name) for name in items), default=0)
        for name, digest in items.items():
            out.append(f"  {name:<{width}}  {short_hash(digest)}\n")
    return out


def outcome_text(outcomes: Sequence[Any]) -> Text:
    """Registered-test outcomes: verdict (sign, word, colour), prediction, numbers, data used.

    Args:
        outcomes: analysis.prereg.outcomes.Outcome objects.
    """
    out = Text()
    if not outcomes:
        out.append("no registered tests to evaluate\n")
        return out
    for o in outcomes:
        after = ("no freeze check" if o.after_freeze is None
                 else "all started after the freeze" if o.after_freeze
                 else "ALL STARTED BEFORE THE FREEZE" if o.n_before >= o.n_episodes
                 else f"{o.n_before} OF {o.n_episodes} STARTED BEFORE THE FREEZE")
        out.append(f"{o.id:<6} ", style="bold")
        out.append_text(verdict_text(o.verdict))
        out.append(f"  {o.prediction}\n")
        parts = list(getattr(o, "parts", ()))
        if len(parts) > 1:  # a multi-part test: one line per part, then its tally
            out.append_text(parts_text(parts, o.kind == "classify"))
        elif o.numbers:
            out.append(f"       {o.numbers}\n")
        runs = ", ".join(o.runs) if o.runs else "no runs"
        out.append(f"       {o.n_episodes:,} episodes from {runs} ({after})\n\n")
    return out


PART_MARK: Mapping[str, tuple[str, str]] = MappingProxyType({
    "pass": ("✓", "green"), "fail": ("✗", "red"), "n.a.": ("–", "dim"),
    "reported": ("·", "dim"),
})
"""A part's verdict as a sign (its word is in the line when it is not pass or fail)."""


def _num(x: float | None, signed: bool = True) -> str:
    if x is None or math.isnan(x):
        return "–"
    return f"{x:+.3f}" if signed else f"{x:.3f}"


def parts_text(parts: Sequence[Any], classify: bool = False) -> Text:
    """Each part of a multi-part registered test on its own line (model, and dataset/set
    when the test covers several; what else tells it apart; its number, interval and
    p, or its label), then how many of the decided parts pass.

    Args:
        parts: analysis.prereg.outcomes Part objects (unit, what, verdict, estimate,
            ci_low, ci_high, p, p_adjusted, holm_m, detail).
        classify: a `classify` test: each part's verdict is the label that held.
    """
    several = len({(p.unit.dataset, p.unit.question_set) for p in parts}) > 1
    out = Text()
    for p in parts:
        head = " ".join(x for x in (p.unit.text(several), p.what) if x)
        mark, style = PART_MARK.get(p.verdict, ("•", "bold"))
        out.append(f"       {mark} ", style=style)
        if classify or p.verdict not in PART_MARK:
            shown = p.detail if p.detail not in ("", "else") else ""
            out.append(f"{head}: {p.verdict}" + (f" ({shown})" if shown else "") + "\n")
            continue
        if math.isnan(p.estimate):
            out.append(f"{head}: {p.verdict} ({p.detail})\n" if p.detail else
                       f"{head}: {p.verdict}\n")
            continue
        ci = "" if math.isnan(p.ci_low) else f" [{_num(p.ci_low)}, {_num(p.ci_high)}]"
        pv = "" if math.isnan(p.p) else f" p={p.p:.4f}" + (
            "" if p.holm_m <= 1 else f" (Holm {p.p_adjusted:.4f}, m={p.holm_m})")
        word = "" if p.verdict in ("pass", "fail") else f" {p.verdict}"
        out.append(f"{head} {_num(p.estimate)}{ci}{pv}{word}"
                   + (f" ({p.detail})" if p.detail else "") + "\n")
    decided = [p for p in parts if p.verdict in ("pass", "fail", "n.a.")]
    if not classify and decided:
        passed = sum(p.verdict == "pass" for p in decided)
        out.append(f"       {passed} of {len(decided)} parts pass\n")
    return out


def diff_text(diffs: Mapping[str, str]) -> Text:
    """Unified diffs of changed pinned prompt files, +/- lines marked and coloured."""
    out = Text()
    for name, diff in diffs.items():
        out.append(f"{name}\n", style="bold")
        for line in diff.splitlines():
            style = ("bold" if line.startswith(("---", "+++")) else
                     "green" if line.startswith("+") else
                     "red" if line.startswith("-") else
                     "cyan" if line.startswith("@@") else "")
            out.append(line + "\n", style=style)
        out.append("\n")
    return out
