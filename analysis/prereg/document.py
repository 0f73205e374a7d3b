"""The pre-registration document: every amendment's outcomes, and the whole record as
markdown (what `lab prereg export` writes)."""

from __future__ import annotations

import json
from collections.abc import Sequence

from sqlite_utils import Database

from analysis.prereg.outcomes import Outcome, evaluate
from core.store import prereg as rows


def amendment_outcomes(db: Database, amendment_ids: Sequence[str],
                       n_boot: int = 2000) -> list[Outcome]:
    """Evaluate the registered tests of the given amendments on the runs they govern.

    Args:
        db: an open lab.db.
        amendment_ids: amendment ids, in the order their outcomes are listed.
        n_boot: question-level resamples.

    Returns:
        One Outcome per registered test, amendment by amendment.

    Raises:
        StoreError: an unknown amendment id.
    """
    from analysis.measures.frames import load_frames

    amendments = [rows.amendment(db, a) for a in amendment_ids]
    named = {r for a in amendments for t in a["tests"] for r in t.get("runs", [])}
    runs = sorted(set(rows.governed_runs(db, list(amendment_ids))) | named)
    frames = load_frames(db, runs=runs or None)  # each test picks its own runs from these
    out: list[Outcome] = []
    for amendment in amendments:
        out += evaluate(amendment, frames, n_boot=n_boot)
    return out


def document_markdown(db: Database, n_boot: int = 2000) -> str:
    """The whole pre-registration as markdown: amendments, hashes, deviations, outcomes.

    Args:
        db: an open lab.db.
        n_boot: question-level resamples of the outcomes.

    Returns:
        The markdown text (ends with a newline).
    """
    entries = rows.amendments(db)
    frozen = [r["id"] for r in entries if r["state"] == "frozen"]
    results = amendment_outcomes(db, frozen, n_boot) if frozen else []
    out = ["# Pre-registration", "",
           f"{len(entries)} {'entry' if len(entries) == 1 else 'entries'}, {len(frozen)} "
           "frozen. Hashes are sha256; each frozen "
           "entry's hash covers its content, its pins and the previous frozen entry's hash.", ""]
    for r in entries:
        out += [f"## {r['id']}: {r['title']}", ""]
        if r["state"] == "frozen":
            pins = r["pins"] or {}
            out += [f"- frozen: {r['frozen_at']} (lab {r['version']})",
                    f"- sha256: `{r['content_sha256']}`",
                    f"- previous: `{r['prev_sha256']}`",
                    f"- pinned: {len(pins.get('prompts', {}))} prompt files, question sets "
                    + ", ".join(f"{k} `{v[:12]}`"
                                for k, v in pins.get("question_sets", {}).items()),
                    "- data existed at freeze: " + ("; ".join(
                        f"run {d['run']} cell {d['cell']} ({d['episodes']} episodes)"
                        for d in r["data_existed"]) if r["data_existed"] else "no")]
        else:
            out.append("- draft (not frozen)")
        out += ["", r["body"].rstrip() or "_(no body)_", "",
                "Scope: `" + json.dumps(r["scope"]) + "`", ""]
        if r["tests"]:
            out += ["| test | rule |", "|---|---|"]
            out += [f"| {t['id']} | `{json.dumps({k: v for k, v in t.items() if k != 'id'})}` |"
                    for t in r["tests"]]
            out.append("")
        for d in rows.deviations(db, r["id"]):
            out.append(f"- **Deviation {d['id']}** ({d['created_at'][:19]}): {d['text']}")
        out.append("")
    if results:
        out += ["## Outcomes", "", "| doc | test | prediction | verdict | numbers | runs | "
                "episodes after freeze |", "|---|---|---|---|---|---|---|"]
        for o in results:
            after = _after(o)
            cells = [o.amendment, o.id, o.prediction, o.verdict, o.numbers,
                     ", ".join(o.runs) or "–", f"{after} ({o.n_episodes})"]
            out.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(out) + "\n"


def _after(o: Outcome) -> str:
    """The "episodes after freeze" cell: all, none, or how many started before."""
    if o.after_freeze is None:
        return "–"
    if o.after_freeze:
        return "all"
    return "**none**" if o.n_before >= o.n_episodes else f"**{o.n_before} before**"
