"""Where a figure's numbers come from, on the figure itself and in its file: a caption
line ("A1 (frozen 2026-12-04) · run confirm · fresh30 · B8 · main family · n = 30
questions", or "EXPLORATORY · run pilot · …") with what its error bars are, and the
runs, amendments and the sidecar rows' sha256 in the PNG/SVG/PDF metadata.
"""

from __future__ import annotations

from dataclasses import dataclass

from analysis.figures.base import family, ordered
from analysis.figures.select import EXPLORATORY
from analysis.figures.study import RowDict, StudyRows, rows_sha256


@dataclass(frozen=True)
class Provenance:
    """A drawn figure's caption and file metadata.

    Attributes:
        caption: the line printed under the figure.
        runs: the runs drawn.
        amendments: the amendments governing them ("exploratory" for none).
        rows_sha256: sha256 of the sidecar's rows.
    """

    caption: str
    runs: tuple[str, ...]
    amendments: tuple[str, ...]
    rows_sha256: str

    def keywords(self) -> str:
        """The metadata's keywords: runs, amendments and the rows' sha256."""
        return (f"runs={','.join(self.runs)}; amendments={','.join(self.amendments)}; "
                f"rows_sha256={self.rows_sha256}")


def _joined(values: list[str], prefix: str = "") -> str:
    return prefix + ", ".join(values) if values else ""


def provenance(study: StudyRows, rows: list[RowDict], note: str) -> Provenance:
    """The caption and metadata of a figure drawing `rows` of `study`.

    Args:
        study: the study (its amendments' freeze times).
        rows: the rows drawn (the sidecar's).
        note: what the figure shows and what its bars are (`Drawn.note`).

    Returns:
        The Provenance.
    """
    frozen = {str(a["id"]): str(a.get("frozen_at") or "")[:10] for a in study.amendments}
    amendments = ordered(str(r["amendment"]) for r in rows if r.get("amendment"))
    confirm = [a for a in amendments if a != EXPLORATORY]
    runs = ordered(run for r in rows for run in str(r.get("runs") or "").split(",") if run)
    parts = [f"{a} (frozen {frozen[a]})" if frozen.get(a) else a for a in confirm]
    if not confirm and amendments:
        parts.insert(0, "EXPLORATORY")
    elif EXPLORATORY in amendments:
        parts.append("with EXPLORATORY runs")
    parts.append(_joined(runs, "run " if len(runs) == 1 else "runs "))
    parts.append(_joined(ordered(str(r.get("question_set") or r.get("dataset") or "")
                                 for r in rows if r.get("question_set") or r.get("dataset"))))
    budgets = ordered(r.get("budget") for r in rows if r.get("budget") not in (None, ""))
    if budgets and any(r.get("amendment") for r in rows):
        parts.append(", ".join(f"B{b}" for b in budgets))
    families = ordered(family(r) for r in rows if family(r))
    if families:
        parts.append(", ".join(families) + (" family" if len(families) == 1 else
                                            " families"))
    counted = [(int(r["n"]), str(r.get("unit") or "")) for r in rows
               if isinstance(r.get("n"), int)]
    spans = []
    for unit in ordered(u for _, u in counted):  # each unit its own range (Figure 1 right
        ns = [n for n, u in counted if u == unit]  # counts judgments and questions)
        spans.append(f"{min(ns)}" + (f"–{max(ns)}" if max(ns) != min(ns) else "") +
                     (f" {unit}" if unit else ""))
    if spans:
        parts.append("n = " + ", ".join(spans))
    caption = " · ".join(p for p in parts if p)
    if note:
        caption += f". {note[0].upper()}{note[1:]}."
    return Provenance(caption, tuple(runs), tuple(amendments), rows_sha256(rows))
