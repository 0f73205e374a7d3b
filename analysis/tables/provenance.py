"""What a results row says about where it came from: the lab version and the runs'
governing amendments and deviations (JSON/CSV rows, `lab results` headers, the Results
screen's export)."""

from __future__ import annotations

EXTRA_FIELDS = ("version", "provenance")
"""Columns a JSON/CSV row adds to the Row fields: project version and run provenance."""


def row_provenance(row: dict[str, object], provenance: list[dict[str, object]]
                   ) -> dict[str, object]:
    """The version and provenance text of one JSON/CSV row (its own runs only)."""
    from core.version import project_version

    runs = str(row.get("runs") or "").split(",")
    label = "; ".join(f"{p['run']}: {p['amendment'] or 'exploratory'}"
                      + (f" ({len(p['deviations'])} deviations)"  # type: ignore[arg-type]
                         if p["deviations"] else "")
                      for p in provenance if p["run"] in runs)
    return {"version": project_version(), "provenance": label}


def provenance_lines(provenance: list[dict[str, object]]) -> list[str]:
    """One line per run (governed by an amendment, or exploratory) and its deviations."""
    lines = []
    for p in provenance:
        state = f"governed by {p['amendment']}" if p["amendment"] else \
            "EXPLORATORY (no governing amendment)"
        lines.append(f"run {p['run']}: {state}")
        lines += [f"  {d}" for d in p["deviations"]]  # type: ignore[attr-defined]
    return lines
